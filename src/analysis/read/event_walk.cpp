// analysis/read/event_walk.cpp — fields by name and the walk over merged items
// (see event_walk.hpp).
#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;
using reader::Op;
using reader::OpKind;
using reader::Plan;
using reader::Value;

namespace {

std::string_view shown(const std::string &name)
{
	std::string_view n = name;
	if (!n.empty() && n[0] == '_')
		n.remove_prefix(1);
	return n;
}

} // namespace

FieldRef find_member(const Plan &plan, FieldRef::Scope scope, std::string_view name)
{
	if (plan.empty() || plan.ops[0].kind != OpKind::structure)
		return {};
	uint32_t c = 1;
	std::optional<int64_t> index = 1;
	for (uint32_t k = 0; k < plan.ops[0].count; ++k) {
		const Op &m = plan.ops[c];
		if (m.name && shown(*m.name) == name) {
			const bool integer = m.kind == OpKind::u8 || m.kind == OpKind::u16 || m.kind == OpKind::u32 ||
			                     m.kind == OpKind::u64 || m.kind == OpKind::integer;
			return {scope, c, index ? *index : -1, integer};
		}
		if (index)
			index = m.values ? std::optional<int64_t>(*index + static_cast<int64_t>(m.values))
			                 : std::nullopt;
		c = m.next;
	}
	return {};
}

const Plan &plan_of(const reader::Item &it, FieldRef::Scope scope)
{
	switch (scope) {
	case FieldRef::Scope::packet_context:
		return it.stream->plans().packet_context;
	case FieldRef::Scope::stream_context:
		return it.stream->plans().event_context;
	case FieldRef::Scope::context:
		return it.event->context;
	default:
		return it.event->fields;
	}
}

std::span<const Value> values_of(const reader::Item &it, FieldRef::Scope scope)
{
	switch (scope) {
	case FieldRef::Scope::packet_context:
		return it.packet_context;
	case FieldRef::Scope::stream_context:
		return it.stream_context;
	case FieldRef::Scope::context:
		return it.context;
	default:
		return it.fields;
	}
}

FieldRef find_field(const reader::Item &event, std::string_view name)
{
	using S = FieldRef::Scope;
	for (S s : {S::fields, S::context, S::stream_context, S::packet_context})
		if (FieldRef r = find_member(plan_of(event, s), s, name))
			return r;
	return {};
}

FieldRef find_context_field(const reader::Item &event, std::string_view name)
{
	using S = FieldRef::Scope;
	for (S s : {S::context, S::stream_context, S::packet_context})
		if (FieldRef r = find_member(plan_of(event, s), s, name))
			return r;
	return {};
}

const Value *field_value(const reader::Item &event, const FieldRef &ref)
{
	if (!ref)
		return nullptr;
	const std::span<const Value> values = values_of(event, ref.scope);
	if (ref.index >= 0)
		return static_cast<size_t>(ref.index) < values.size() ? &values[static_cast<size_t>(ref.index)]
		                                                      : nullptr;
	const Plan &plan = plan_of(event, ref.scope);
	size_t v = 1;
	for (uint32_t c = 1; c != ref.op; c = plan.ops[c].next)
		v = reader::skip_values(plan, c, values.data(), v);
	return v < values.size() ? &values[v] : nullptr;
}

std::string_view text_field(const reader::Item &event, const FieldRef &ref)
{
	const Value *v = field_value(event, ref);
	if (!v)
		return {};
	switch (plan_of(event, ref.scope).ops[ref.op].kind) {
	case OpKind::string:
	case OpKind::text_array:
	case OpKind::text_sequence:
		return {v->s, static_cast<size_t>(v->n)};
	default:
		return {};
	}
}

uint64_t EventWalk::open(reader::TraceSet &set, const std::vector<ViewInput> &inputs,
                         reader::TraceSet::FieldsWanted fields, reader::TraceSet::Counted counted)
{
	for (const ViewInput &in : inputs)
		set.add_trace(in.dir, in.name_suffix);
	if (fields)
		set.decode_fields_of(std::move(fields));
	if (counted)
		set.count_events_of(std::move(counted));
	set.start();
	return set.bytes_total();
}

EventWalk::EventWalk(const std::vector<ViewInput> &inputs, const std::string &label,
                     reader::TraceSet::FieldsWanted fields, reader::TraceSet::Counted counted)
	: progress_(label, open(set_, inputs, std::move(fields), std::move(counted)))
{
}

} // namespace tracery::analysis
