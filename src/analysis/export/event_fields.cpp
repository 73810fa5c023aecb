// analysis/export/event_fields.cpp — an event's fields as the exports show
// them (see event_fields.hpp).
#include "analysis/export/event_fields.hpp"

#include "analysis/export/timeline.hpp"
#include "analysis/output/json_text.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;
using reader::Op;
using reader::OpKind;
using reader::Plan;
using reader::Value;

namespace {

bool is_integer(OpKind k)
{
	return k == OpKind::u8 || k == OpKind::u16 || k == OpKind::u32 || k == OpKind::u64 || k == OpKind::integer;
}

// Identity contexts, shown as tracks rather than as fields.
bool identity_field(std::string_view name)
{
	return name == "vpid" || name == "vtid" || name == "procname" || name == "pid" || name == "tid" ||
	       name == "cpu_id";
}

// The members of a scope's plan worth showing, with their types.
void shown_fields(const reader::Item &it, reader::Scope scope, NameTable &names, std::vector<ShownField> &out)
{
	const Plan &plan = plan_of(it, scope);
	if (plan.empty() || plan.ops[0].kind != OpKind::structure)
		return;
	uint32_t c = 1;
	for (uint32_t k = 0; k < plan.ops[0].count; ++k) {
		const Op &m = plan.ops[c];
		if (m.name && m.shown) {
			std::string_view n = *m.name;
			if (!n.empty() && n[0] == '_')
				n.remove_prefix(1);
			if (scope == reader::Scope::payload || !identity_field(n)) {
				ShownField f;
				f.name = names.id(n);
				f.ref = find_field(it, n);
				if (f.ref.scope != scope ||
				    f.ref.op != c) // a payload field of that name wins: skip the context's
					f.ref = {};
				if (f.ref) {
					if (m.type && m.type->kind == reader::TypeKind::enumeration)
						f.type = ShownField::enumeration;
					else if (is_integer(m.kind))
						f.type = m.is_signed ? ShownField::i64 : ShownField::u64;
					else if (m.kind == OpKind::float32 || m.kind == OpKind::float64)
						f.type = ShownField::f64;
					else if (m.kind == OpKind::string || m.kind == OpKind::text_array ||
					         m.kind == OpKind::text_sequence)
						f.type = ShownField::text;
					else
						f.type = ShownField::compound;
					out.push_back(f);
				}
			}
		}
		c = m.next;
	}
}

} // namespace

void shown_fields(const reader::Item &event, NameTable &names, std::vector<ShownField> &out)
{
	shown_fields(event, reader::Scope::payload, names, out);
	shown_fields(event, reader::Scope::event_context, names, out);
	shown_fields(event, reader::Scope::stream_event_context, names, out);
}

FieldValue field_value_of(const reader::Item &event, const ShownField &field, std::string &scratch)
{
	FieldValue r;
	r.type = field.type;
	const Value *v;
	if (field.ref.index >= 0) { // at a fixed index: the common case, without a call
		const std::span<const Value> values = values_of(event, field.ref.scope);
		const auto i = static_cast<size_t>(field.ref.index);
		v = i < values.size() ? &values[i] : nullptr;
	} else {
		v = field_value(event, field.ref);
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
		const Op &op = plan_of(event, field.ref.scope).ops[field.ref.op];
		scratch.clear();
		reader::for_each_enum_label(*op.type, v->u, [&](const std::string &label) {
			if (!scratch.empty())
				scratch += ',';
			scratch += label;
		});
		if (scratch.empty())
			scratch = op.is_signed ? std::to_string(v->i) : std::to_string(v->u);
		r.s = scratch;
		break;
	}
	case ShownField::compound: {
		const Plan &plan = plan_of(event, field.ref.scope);
		const std::span<const Value> values = values_of(event, field.ref.scope);
		scratch.clear();
		append_json_value(scratch, plan, field.ref.op, values, static_cast<size_t>(v - values.data()));
		r.s = scratch;
		break;
	}
	}
	return r;
}

bool counter_field(const reader::Item &event, const FieldRef &ref, bool &integer)
{
	const Value *v = field_value(event, ref);
	const Op *op = ref ? &plan_of(event, ref.scope).ops[ref.op] : nullptr;
	if (!v || !op || !(is_integer(op->kind) || op->kind == OpKind::float32 || op->kind == OpKind::float64))
		return false;
	integer = is_integer(op->kind);
	return true;
}

} // namespace tracery::analysis
