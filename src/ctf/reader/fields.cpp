// ctf/reader/fields.cpp — fields found by name (see fields.hpp).
#include "ctf/reader/fields.hpp"

namespace tracery::ctf::reader {

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

Field detail::field_by_walk(const Item &event, const FieldRef &ref)
{
	if (!ref)
		return {};
	const std::span<const Value> values = scope_values(event, ref.scope);
	const FieldDecl root = scope_root(event, ref.scope);
	if (values.empty() || !root)
		return {};
	for (const Field m : Field(root, values.data(), 0).members())
		if (m.decl().place() == ref.op)
			return m.index() < values.size() ? m : Field();
	return {};
}

} // namespace tracery::ctf::reader
