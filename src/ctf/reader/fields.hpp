// ctf/reader/fields.hpp — the fields of decoded events, for the code that
// reads them (views, statistics, analyses, exports), without decode plans:
//
//   - FieldDecl: a field as an event class declares it (its name as shown,
//     its kind, signedness, base, enumeration labels, members, element,
//     options), worked out once per event class;
//   - Field: a field's value in one event (integer, float, text, the labels
//     of an enumeration, its members, its elements, a variant's option);
//   - FieldRef: a field found by name, once per event class, then read from
//     each event by index (int_field, text_field: inline, no allocation, no
//     lookup by name).
//
// Names are shown as babeltrace2 shows them: the metadata's name without one
// leading '_' (shown_name; "_comm" is shown "comm"). Items carry the values
// of four scopes (packet context, stream event context, event context,
// payload); the packet and event headers are the reader's own (their
// declarations are reachable, their values are not given).
//
//   // once per event class (analysis/read/event_walk.hpp's ClassCache keeps it)
//   FieldRef tid = find_field(item, "tid");           // payload, then the contexts
//   FieldRef cpu = find_context_field(item, "cpu_id"); // the contexts only
//   // then for each event
//   if (std::optional<int64_t> v = int_field(item, tid)) ...
//   std::string_view comm = text_field(item, comm_ref);
//
//   // every field of a scope, whatever it holds
//   void show(Field f) {
//       switch (f.kind()) {
//       case FieldKind::integer:   // (f.is_enumeration(): f.for_each_label(...))
//           f.is_signed() ? f.as_signed() : f.as_unsigned(); break;
//       case FieldKind::floating:  f.as_double(); break;
//       case FieldKind::string:    f.text(); break;
//       case FieldKind::structure: for (Field m : f.members()) { m.name(); show(m); } break;
//       case FieldKind::array:     for (Field e : f.elements()) show(e); break; // f.length() of them
//       case FieldKind::variant:   show(f.option()); break;
//       }
//   }
//   show(scope_field(item, Scope::payload));          // the root: a structure (empty when none)
//
//   // the declarations only, once per event class (columns, printing programs)
//   for (FieldDecl d : scope_root(item, Scope::event_context).members()) d.name(), d.kind() ...
//
// Every accessor is inline: walking a field costs what walking the decoded
// values costs. A member's or element's successor is found from the values
// its own subtree takes (a constant for fixed-size fields; sequences and
// variants are walked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ctf/reader/decoder.hpp"
#include "ctf/reader/trace_class.hpp"
#include "ctf/reader/trace_reader.hpp"

namespace tracery::ctf::reader {

// A member's name as babeltrace2 shows it: without one leading '_'.
inline std::string_view shown_name(std::string_view metadata_name)
{
	if (!metadata_name.empty() && metadata_name[0] == '_')
		metadata_name.remove_prefix(1);
	return metadata_name;
}

// What a field holds. Text (strings, and arrays and sequences of 8-bit
// encoded integers) is a string; arrays and sequences of anything else are
// arrays; enumerations are integers (is_enumeration()).
enum class FieldKind : uint8_t { integer, floating, string, structure, array, variant };

// A field as its event class declares it: a place in one scope's type tree.
class FieldDecl {
public:
	FieldDecl() = default;
	// The root of a scope (at 0), or a field in it.
	FieldDecl(const Plan &plan, Scope scope, uint32_t at = 0) : plan_(&plan), at_(at), scope_(scope) {}
	// False for a scope the event class does not have.
	explicit operator bool() const { return plan_ && !plan_->empty(); }

	Scope scope() const { return scope_; }
	// Its place in the scope (0: the root), as FieldRef::op holds it, and
	// the field at another place of the same scope.
	uint32_t place() const { return at_; }
	FieldDecl at_place(uint32_t place) const { return {*plan_, scope_, place}; }
	FieldKind kind() const { return kind_of(op().kind); }
	// The name as shown (members; "" for the root, elements and options).
	std::string_view name() const { return op().name ? shown_name(*op().name) : std::string_view(); }
	// The name as the metadata writes it (null for the root and elements).
	const std::string *metadata_name() const { return op().name; }
	// Whether babeltrace2 shows it: not the packet context fields the
	// reader consumes (sizes, timestamps, discarded events), nor headers.
	bool shown() const { return op().shown; }

	// Integers (and enumerations): their signedness, bits, display base.
	bool is_signed() const { return op().is_signed; }
	unsigned bits() const { return op().size; }
	Base base() const { return op().type ? op().type->base : Base::dec; }
	bool is_enumeration() const { return op().type && op().type->kind == TypeKind::enumeration; }
	// An unsigned decimal integer that is no enumeration, of 8, 16, 32 or 64
	// bits in whole little-endian bytes: the commonest field.
	bool is_plain_unsigned() const
	{
		return op().kind <= OpKind::u64 && op().type && op().type->kind == TypeKind::integer &&
		       op().type->base == Base::dec;
	}
	// The metadata's type (enumeration mappings, encodings, clocks).
	const FieldType *type() const { return op().type; }

	// Structures: members (in order); arrays: the element; variants: options.
	uint32_t member_count() const { return op().kind == OpKind::structure ? op().count : 0; }
	class Members;
	Members members() const;
	// The member shown (or, exactly, written) with that name; empty if none.
	FieldDecl member(std::string_view name) const;
	FieldDecl element() const { return {*plan_, scope_, at_ + 1}; }
	// An array's length (a sequence's depends on the event: nullopt).
	std::optional<uint64_t> fixed_length() const
	{
		return op().kind == OpKind::array ? std::optional<uint64_t>(op().count) : std::nullopt;
	}
	uint32_t option_count() const { return op().kind == OpKind::variant ? op().count : 0; }
	FieldDecl option(uint32_t i) const { return {*plan_, scope_, plan_->selectors[op().table].option_ops[i]}; }

	// How many decoded values the field always takes (1 for a scalar);
	// 0 when that depends on the event (a sequence or variant in it).
	uint64_t value_count() const { return op().values; }

	bool operator==(const FieldDecl &o) const { return plan_ == o.plan_ && at_ == o.at_; }

private:
	friend class Field;
	const Op &op() const { return plan_->ops[at_]; }
	static FieldKind kind_of(OpKind k)
	{
		static constexpr FieldKind kKinds[] = {
			FieldKind::integer, FieldKind::integer,  FieldKind::integer,   FieldKind::integer,
			FieldKind::integer, FieldKind::floating, FieldKind::floating,  FieldKind::string,
			FieldKind::string,  FieldKind::string,   FieldKind::structure, FieldKind::array,
			FieldKind::array,   FieldKind::variant,
		};
		return kKinds[static_cast<size_t>(k)];
	}
	// The place after this field's subtree (its next sibling's).
	uint32_t after() const { return op().next; }

	const Plan *plan_ = nullptr;
	uint32_t at_ = 0;
	Scope scope_ = Scope::payload;
};

// The members of a structure's declaration.
class FieldDecl::Members {
public:
	struct End {};
	class Iterator {
	public:
		FieldDecl operator*() const { return d_; }
		Iterator &operator++()
		{
			if (--left_)
				d_.at_ = d_.after();
			return *this;
		}
		bool operator!=(End) const { return left_ != 0; }

	private:
		friend class Members;
		Iterator(FieldDecl first, uint32_t n) : d_(first), left_(n) {}
		FieldDecl d_;
		uint32_t left_;
	};
	Iterator begin() const { return {first_, count_}; }
	End end() const { return {}; }
	uint32_t size() const { return count_; }

private:
	friend class FieldDecl;
	Members(FieldDecl first, uint32_t count) : first_(first), count_(count) {}
	FieldDecl first_;
	uint32_t count_;
};

inline FieldDecl::Members FieldDecl::members() const
{
	return *this ? Members({*plan_, scope_, at_ + 1}, member_count()) : Members({}, 0);
}

inline FieldDecl FieldDecl::member(std::string_view name) const
{
	for (FieldDecl m : members())
		if (m.name() == name || *m.metadata_name() == name)
			return m;
	return {};
}

// A field's value in one event: its declaration and its decoded values.
class Field {
public:
	Field() = default;
	// The field of decl whose first value is values[at].
	Field(FieldDecl decl, const Value *values, size_t at) : decl_(decl), values_(values), at_(at) {}
	explicit operator bool() const { return values_ != nullptr; }

	const FieldDecl &decl() const { return decl_; }
	FieldKind kind() const { return decl_.kind(); }
	std::string_view name() const { return decl_.name(); }
	bool shown() const { return decl_.shown(); }
	bool is_signed() const { return decl_.is_signed(); }
	bool is_enumeration() const { return decl_.is_enumeration(); }

	// Integers: the value (as_signed: sign-extended). Floats: as_double.
	uint64_t as_unsigned() const { return value().u; }
	int64_t as_signed() const { return value().i; }
	double as_double() const { return value().f; }
	// Text: its bytes (no NUL; into the mapped trace).
	std::string_view text() const { return {value().s, static_cast<size_t>(value().n)}; }
	// Enumerations: f(const std::string &label) for each label whose ranges
	// hold the value, in the metadata's order (none: an unknown value).
	template <class F>
	void for_each_label(F &&f) const
	{
		if (const FieldType *t = decl_.type())
			for_each_enum_label(*t, value().u, f);
	}

	// Structures: the members. Arrays and sequences: length() elements.
	class Children;
	Children members() const;
	uint64_t length() const { return value().n; }
	Children elements() const;
	// Element i (< length()): found at once when elements are of fixed size.
	Field element(uint64_t i) const;
	// Variants: the option the tag selected (option_index() among the
	// declaration's options) and its value.
	uint32_t option_index() const { return static_cast<uint32_t>(value().n); }
	Field option() const { return {decl_.option(option_index()), values_, at_ + 1}; }

	// Where its values are among its scope's (values[index()] is its first),
	// and the index after them (the next field's first).
	size_t index() const { return at_; }
	size_t end() const
	{
		if (const uint64_t n = decl_.value_count())
			return at_ + n;
		return skip_values(*decl_.plan_, decl_.at_, values_, at_);
	}

private:
	const Value &value() const { return values_[at_]; }

	FieldDecl decl_;
	const Value *values_ = nullptr;
	size_t at_ = 0;
};

// A structure's members or an array's elements, in order.
class Field::Children {
public:
	struct End {};
	class Iterator {
	public:
		Field operator*() const { return f_; }
		Iterator &operator++()
		{
			if (--left_) {
				const size_t next = f_.end();
				if (!same_decl_)
					f_.decl_.at_ = f_.decl_.after();
				f_.at_ = next;
			}
			return *this;
		}
		bool operator!=(End) const { return left_ != 0; }

	private:
		friend class Children;
		Iterator(Field first, uint64_t n, bool same_decl) : f_(first), left_(n), same_decl_(same_decl) {}
		Field f_;
		uint64_t left_;
		bool same_decl_; // elements: every one of the same declaration
	};
	Iterator begin() const { return {first_, count_, elements_}; }
	End end() const { return {}; }
	uint64_t size() const { return count_; }

private:
	friend class Field;
	Children(Field first, uint64_t count, bool elements) : first_(first), count_(count), elements_(elements) {}
	Field first_;
	uint64_t count_;
	bool elements_;
};

inline Field::Children Field::members() const
{
	return {Field({*decl_.plan_, decl_.scope_, decl_.at_ + 1}, values_, at_ + 1), decl_.member_count(), false};
}

inline Field::Children Field::elements() const
{
	return {Field(decl_.element(), values_, at_ + 1), decl_.kind() == FieldKind::array ? length() : 0, true};
}

inline Field Field::element(uint64_t i) const
{
	const FieldDecl e = decl_.element();
	if (const uint64_t n = e.value_count())
		return {e, values_, at_ + 1 + i * n};
	auto it = elements().begin();
	for (; i > 0; --i)
		++it;
	return *it;
}

// The root of a scope of an event class (a structure; empty when the class
// has no such scope). event may be null for the stream class's scopes; the
// packet header is the trace's (FieldDecl(plans.packet_header(), ...)).
FieldDecl scope_root(const TracePlans::StreamPlans &stream, const TracePlans::EventPlans *event, Scope scope);
inline FieldDecl scope_root(const Item &event, Scope scope)
{
	return scope_root(event.stream->plans(), event.event, scope);
}

// The decoded values of a scope in this event (none for the headers).
inline std::span<const Value> scope_values(const Item &event, Scope scope)
{
	switch (scope) {
	case Scope::packet_context:
		return event.packet_context;
	case Scope::stream_event_context:
		return event.stream_context;
	case Scope::event_context:
		return event.context;
	case Scope::payload:
		return event.fields;
	default:
		return {};
	}
}

// The root of a scope with its values in this event (empty when the class
// has no such scope, or its values were not decoded).
inline Field scope_field(const Item &event, Scope scope)
{
	const std::span<const Value> values = scope_values(event, scope);
	const FieldDecl root = scope_root(event, scope);
	return root && !values.empty() ? Field(root, values.data(), 0) : Field();
}

// A field found by name in an event class: its scope, its place there
// (FieldDecl::place()), and its value's index when every member before it
// takes a fixed number of values. Empty (false) when not found.
struct FieldRef {
	Scope scope = Scope::payload;
	uint32_t op = 0;      // its place: 0 (the root) for none
	int64_t index = -1;   // -1: found by walking the members before it
	bool integer = false; // an integer (or enumeration)
	explicit operator bool() const { return op != 0; }
};

// The member of a scope's root with that shown name.
FieldRef find_member(const FieldDecl &root, std::string_view name);
// The member of that shown name of the event's payload, else its context,
// else its stream's event context, else its packet context.
FieldRef find_field(const TracePlans::StreamPlans &stream, const TracePlans::EventPlans &event, std::string_view name);
inline FieldRef find_field(const Item &event, std::string_view name)
{
	return find_field(event.stream->plans(), *event.event, name);
}
// The same among the contexts only (never the payload).
FieldRef find_context_field(const TracePlans::StreamPlans &stream, const TracePlans::EventPlans &event,
                            std::string_view name);
inline FieldRef find_context_field(const Item &event, std::string_view name)
{
	return find_context_field(event.stream->plans(), *event.event, name);
}

// The declaration ref names in this event's class (empty when ref is).
inline FieldDecl decl_of(const Item &event, const FieldRef &ref)
{
	return ref ? scope_root(event, ref.scope).at_place(ref.op) : FieldDecl();
}

// The field ref names, with its value in this event (empty when ref is,
// or its scope's values were not decoded).
Field field_at(const Item &event, const FieldRef &ref);

// Its integer value (sign-extended when signed); nullopt when ref is empty
// or not an integer.
[[gnu::always_inline]] inline std::optional<int64_t> int_field(const Item &event, const FieldRef &ref)
{
	if (!ref.integer)
		return std::nullopt;
	if (ref.index >= 0) { // the common case, inline
		const std::span<const Value> v = scope_values(event, ref.scope);
		const auto i = static_cast<size_t>(ref.index);
		return i < v.size() ? std::optional<int64_t>(v[i].i) : std::nullopt;
	}
	const Field f = field_at(event, ref);
	return f ? std::optional<int64_t>(f.as_signed()) : std::nullopt;
}

// Its text; empty when ref is empty or not text.
inline std::string_view text_field(const Item &event, const FieldRef &ref)
{
	const Field f = field_at(event, ref);
	return f && f.kind() == FieldKind::string ? f.text() : std::string_view();
}

} // namespace tracery::ctf::reader
