// analysis/export/event_fields.cpp — an event's fields as the exports show
// them (see event_fields.hpp).
#include "analysis/export/event_fields.hpp"

#include "analysis/export/timeline.hpp"
#include "analysis/output/json_text.hpp"

#include <span>

namespace tracery::analysis {

namespace reader = ctf::reader;

namespace {

// Identity contexts, shown as tracks rather than as fields.
bool identity_field(std::string_view name)
{
	return name == "vpid" || name == "vtid" || name == "procname" || name == "pid" || name == "tid" ||
	       name == "cpu_id";
}

// The members of a scope worth showing, with their types.
void shown_fields(const reader::Item &it, reader::Scope scope, NameTable &names, std::vector<ShownField> &out)
{
	for (const reader::FieldDecl m : reader::scope_root(it, scope).members()) {
		if (!m.metadata_name() || !m.shown())
			continue;
		const std::string_view n = m.name();
		if (scope != reader::Scope::payload && identity_field(n))
			continue;
		ShownField f;
		f.name = names.id(n);
		f.ref = find_field(it, n);
		if (f.ref.scope != scope ||
		    f.ref.op != m.place()) // a payload field of that name wins: skip the context's
			continue;
		if (m.is_enumeration())
			f.type = ShownField::enumeration;
		else if (m.kind() == reader::FieldKind::integer)
			f.type = m.is_signed() ? ShownField::i64 : ShownField::u64;
		else if (m.kind() == reader::FieldKind::floating)
			f.type = ShownField::f64;
		else if (m.kind() == reader::FieldKind::string)
			f.type = ShownField::text;
		else
			f.type = ShownField::compound;
		out.push_back(f);
	}
}

} // namespace

void shown_fields(const reader::Item &event, NameTable &names, std::vector<ShownField> &out, SymbolEvents *symbols)
{
	shown_fields(event, reader::Scope::payload, names, out);
	shown_fields(event, reader::Scope::event_context, names, out);
	shown_fields(event, reader::Scope::stream_event_context, names, out);
	if (symbols)
		symbols->for_each_address_field(event, [&](std::string_view name, const FieldRef &ref) {
			ShownField f;
			f.name = names.id(name == "ip" ? std::string("debug_info") : std::string(name) + "_debug_info");
			f.type = ShownField::text;
			f.ref = ref;
			f.symbols = symbols;
			out.push_back(f);
		});
}

FieldValue field_value_of(const reader::Item &event, const ShownField &field, std::string &scratch)
{
	FieldValue r;
	r.type = field.type;
	if (field.symbols) {
		scratch = symbol_text(field.symbols->at(event, field.ref));
		r.s = scratch;
		return r;
	}
	const std::span<const reader::Value> values = reader::scope_values(event, field.ref.scope);
	const reader::Value *v;
	size_t at;
	if (field.ref.index >= 0) { // at a fixed index: the common case, without a walk
		at = static_cast<size_t>(field.ref.index);
		v = at < values.size() ? &values[at] : nullptr;
	} else {
		const reader::Field f = reader::field_at(event, field.ref);
		at = f ? f.index() : 0;
		v = f ? &values[at] : nullptr;
	}
	if (!v) {
		r.type = ShownField::text;
		return r;
	}
	switch (field.type) {
	case ShownField::i64:
		r.i = v->i;
		break;
	case ShownField::u64:
		r.u = v->u;
		break;
	case ShownField::f64:
		r.f = v->f;
		break;
	case ShownField::text:
		r.s = {v->s, static_cast<size_t>(v->n)};
		break;
	case ShownField::enumeration: {
		const reader::Field f(reader::decl_of(event, field.ref), values.data(), at);
		scratch.clear();
		f.for_each_label([&](const std::string &label) {
			if (!scratch.empty())
				scratch += ',';
			scratch += label;
		});
		if (scratch.empty())
			scratch = f.is_signed() ? std::to_string(v->i) : std::to_string(v->u);
		r.s = scratch;
		break;
	}
	case ShownField::compound:
		scratch.clear();
		append_json_value(scratch, reader::decl_of(event, field.ref), values, at);
		r.s = scratch;
		break;
	}
	return r;
}

bool counter_field(const reader::Item &event, const FieldRef &ref, bool &integer)
{
	const reader::Field f = reader::field_at(event, ref);
	if (!f || (f.kind() != reader::FieldKind::integer && f.kind() != reader::FieldKind::floating))
		return false;
	integer = f.kind() == reader::FieldKind::integer;
	return true;
}

} // namespace tracery::analysis
