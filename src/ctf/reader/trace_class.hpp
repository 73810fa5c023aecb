// ctf/reader/trace_class.hpp — what a trace's TSDL metadata declares, as the
// reader's TSDL parser (tsdl_parser.hpp) builds it: field types, clocks, the
// environment, the trace's packet header, stream classes and event classes.
//
// Plain data, immutable once parsed; types are shared (a typealias used by
// many fields is one FieldType). decoder.hpp compiles it into decode plans.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tracery::ctf::reader {

enum class TypeKind : uint8_t { integer, floating, string, enumeration, structure, variant, array, sequence };
enum class Base : uint8_t { dec = 10, hex = 16, oct = 8, bin = 2 };
enum class Encoding : uint8_t { none, utf8, ascii };
// `native` is the trace's byte order (trace { byte_order }), known only once
// the trace block is read: resolved when decode plans are made.
enum class ByteOrder : uint8_t { native, le, be };

// The scopes of a trace's fields, in the order a packet holds them: the
// packet's header and context, then for each event its header, its stream
// class's event context, its own context and its payload (TSDL's
// trace.packet.header, stream.packet.context, stream.event.header,
// stream.event.context, event.context and event.fields).
enum class Scope : uint8_t {
	packet_header,
	packet_context,
	event_header,
	stream_event_context,
	event_context,
	payload
};
inline constexpr int kScopes = 6;

struct FieldType;
using TypePtr = std::shared_ptr<const FieldType>;

struct EnumRange {
	// Bounds in the container's signedness: for an unsigned container they
	// are uint64 bit patterns.
	int64_t lo = 0, hi = 0;
};

// One label and its ranges, in the order labels first appear (readers list
// the labels of a value in that order).
struct EnumMapping {
	std::string label;
	std::vector<EnumRange> ranges;
};

struct Member {
	std::string name; // as in the metadata (readers show it without one leading '_')
	TypePtr type;
};

struct FieldType {
	TypeKind kind = TypeKind::integer;
	uint32_t align = 8; // bits, a power of two
	// integer, enumeration (its container), floating point
	uint32_t size = 0; // bits (floating: exp_dig + mant_dig)
	bool is_signed = false;
	ByteOrder byte_order = ByteOrder::native;
	Base base = Base::dec;
	Encoding encoding = Encoding::none; // integer (a char array is text), string
	std::string mapped_clock;           // integer: `map = clock.NAME.value`
	uint32_t exp_dig = 0, mant_dig = 0; // floating
	std::vector<EnumMapping> mappings;  // enumeration
	std::vector<Member> members;        // structure, variant (options)
	std::string tag;                    // variant: the tag field's path as written
	TypePtr element;                    // array, sequence
	uint64_t length = 0;                // array
	std::string length_ref;             // sequence: the length field's path as written
	size_t line = 0, offset = 0;        // sequence, variant: where the metadata names that path
};

struct Clock {
	std::string name;
	std::string uuid;
	std::string description;
	uint64_t freq = 1000000000;
	uint64_t precision = 0;
	int64_t offset_s = 0;
	uint64_t offset = 0; // cycles
	bool absolute = false;
};

using EnvValue = std::variant<int64_t, std::string>;

struct EventClass {
	uint64_t id = 0;
	uint64_t stream_id = 0;
	std::string name;
	std::optional<int64_t> loglevel;
	std::string emf_uri;
	TypePtr context; // may be null
	TypePtr fields;  // may be null
};

struct StreamClass {
	uint64_t id = 0;
	TypePtr packet_context; // may be null
	TypePtr event_header;   // may be null
	TypePtr event_context;  // may be null
	// By event id, in the order the metadata declares them.
	std::map<uint64_t, EventClass> events;
};

// What the metadata says that a reader ignores (an unknown attribute, as
// babeltrace2 warns of), where it says it.
struct MetadataWarning {
	size_t line = 0, offset = 0;
	std::string what;
};

struct TraceClass {
	uint32_t major = 0, minor = 0;
	std::string uuid;        // text form, "" when absent
	bool big_endian = false; // trace { byte_order }: what `native` means
	TypePtr packet_header;   // may be null
	std::vector<std::pair<std::string, EnvValue>> env;
	std::vector<Clock> clocks;
	std::map<uint64_t, StreamClass> streams;
	std::vector<MetadataWarning> warnings; // in the order of the text

	const EnvValue *env_value(const std::string &key) const
	{
		for (const auto &[k, v] : env)
			if (k == key)
				return &v;
		return nullptr;
	}
	const Clock *clock(const std::string &name) const
	{
		for (const Clock &c : clocks)
			if (c.name == name)
				return &c;
		return nullptr;
	}
};

} // namespace tracery::ctf::reader
