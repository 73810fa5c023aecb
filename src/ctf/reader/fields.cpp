// ctf/reader/fields.cpp — scopes' roots and fields found by name (see
// fields.hpp).
#include "ctf/reader/fields.hpp"

namespace tracery::ctf::reader {

FieldDecl scope_root(const TracePlans::StreamPlans &stream, const TracePlans::EventPlans *event, Scope scope)
{
	switch (scope) {
	case Scope::packet_context:
		return {stream.packet_context, scope};
	case Scope::event_header:
		return {stream.event_header, scope};
	case Scope::stream_event_context:
		return {stream.event_context, scope};
	case Scope::event_context:
		return event ? FieldDecl(event->context, scope) : FieldDecl();
	case Scope::payload:
		return event ? FieldDecl(event->fields, scope) : FieldDecl();
	default:
		return {};
	}
}

FieldRef find_member(const FieldDecl &root, std::string_view name)
{
	if (!root || root.kind() != FieldKind::structure)
		return {};
	std::optional<int64_t> index = 1; // (the root's own value is the first)
	for (const FieldDecl m : root.members()) {
		if (m.metadata_name() && m.name() == name)
			return {root.scope(), m.place(), index ? *index : -1, m.kind() == FieldKind::integer};
		if (index)
			index = m.value_count() ? std::optional<int64_t>(*index + static_cast<int64_t>(m.value_count()))
			                        : std::nullopt;
	}
	return {};
}

namespace {

FieldRef find_in(const TracePlans::StreamPlans &stream, const TracePlans::EventPlans &event,
                 std::initializer_list<Scope> scopes, std::string_view name)
{
	for (const Scope s : scopes)
		if (const FieldRef r = find_member(scope_root(stream, &event, s), name))
			return r;
	return {};
}

} // namespace

FieldRef find_field(const TracePlans::StreamPlans &stream, const TracePlans::EventPlans &event, std::string_view name)
{
	return find_in(stream, event,
	               {Scope::payload, Scope::event_context, Scope::stream_event_context, Scope::packet_context},
	               name);
}

FieldRef find_context_field(const TracePlans::StreamPlans &stream, const TracePlans::EventPlans &event,
                            std::string_view name)
{
	return find_in(stream, event, {Scope::event_context, Scope::stream_event_context, Scope::packet_context}, name);
}

Field field_at(const Item &event, const FieldRef &ref)
{
	if (!ref)
		return {};
	const std::span<const Value> values = scope_values(event, ref.scope);
	const FieldDecl root = scope_root(event, ref.scope);
	if (values.empty() || !root)
		return {};
	if (ref.index >= 0)
		return static_cast<size_t>(ref.index) < values.size()
		               ? Field(root.at_place(ref.op), values.data(), static_cast<size_t>(ref.index))
		               : Field();
	for (const Field m : Field(root, values.data(), 0).members())
		if (m.decl().place() == ref.op)
			return m.index() < values.size() ? m : Field();
	return {};
}

} // namespace tracery::ctf::reader
