// ctf/reader/decoder.hpp — decode plans compiled once per scope of a trace
// class (packet header, packet context, event header, stream event context,
// and per event class its context and fields), and the bit reader that runs
// them over a packet's bytes.
//
// A plan is a flat array of ops in the order of the type tree (a compound op
// is followed by its children; `next` skips its subtree). Decoding appends
// one Value per op run (an array's element ops run once per element) to a
// caller-owned vector that is reused from event to event: no allocation and
// no map lookup per event. Sequence lengths and variant tags are read from
// registers that the ops of the fields they name write, resolved when the
// plan is compiled (CTF 1.8 relative and absolute paths).
//
// Every read is bounded by the packet's content end; a value that does not
// fit, a tag selecting no option, a string without its NUL or a field count
// past kMaxValuesPerScope throws DecodeError with the bit offset.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ctf/reader/trace_class.hpp"

namespace tracery::ctf::reader {

// One decoded field. Integers: u (or i, sign-extended); floats: f; strings
// and text arrays: s and n (bytes, no NUL, pointing into the mapped file);
// arrays and sequences: n elements (their values follow); variants: n = the
// selected option's index (its value follows); structs: nothing (members
// follow).
struct Value {
	union {
		uint64_t u;
		int64_t i;
		double f;
		const char *s;
	};
	uint64_t n;
};

inline constexpr size_t kMaxValuesPerScope = size_t{1} << 22;

class DecodeError : public std::runtime_error {
public:
	DecodeError(uint64_t bit_offset, const std::string &what) : std::runtime_error(what), bit_offset_(bit_offset) {}
	uint64_t bit_offset() const noexcept { return bit_offset_; }

private:
	uint64_t bit_offset_;
};

enum class OpKind : uint8_t {
	u8,
	u16,
	u32,
	u64, // byte-aligned little-endian unsigned integers of those sizes (the common case)
	integer,
	float32,
	float64,
	string,
	text_array,
	text_sequence,
	structure,
	array,
	sequence,
	variant,
};

// What a field means to the reader (CTF's special names), besides its value.
enum class Role : uint8_t {
	none,
	event_id,
	timestamp, // event header: the event's timestamp (`size` bits of the clock)
	magic,
	stream_id,
	stream_instance_id,
	packet_begin,
	packet_end,
	content_size,
	packet_size,
	events_discarded,
	packet_seq_num,
	clock_update, // another integer mapped to the clock
};

struct Op {
	OpKind kind = OpKind::integer;
	Role role = Role::none;
	bool is_signed = false;
	bool big_endian = false;
	bool shown = true;  // what babeltrace2 shows: not the fields the reader consumes itself
	bool flat = false;  // structure: its members are all whole-byte integers (byte_int(); decoded in one loop)
	bool plain = false; // members u8/u16/u32/u64 or strings, no role or register: decoded without running ops
	uint8_t size = 0;   // integer bits
	uint32_t align = 1;
	int32_t reg = -1;       // register written with this integer's value
	int32_t src_reg = -1;   // sequence length / variant tag register
	uint32_t next = 0;      // index of the op after this subtree
	uint32_t count = 0;     // struct: members; array / text array: length; variant: options
	uint32_t table = 0;     // variant: index of its selector in Plan::selectors
	uint64_t elem_bits = 0; // array/sequence: bits of one element when fixed and aligned, else 0
	// The values the subtree always takes (0: it depends on the data: a
	// sequence or variant in it, or more than kMaxValuesPerScope).
	uint64_t values = 0;
	// Stepped over by its size when its values are not wanted: its size is
	// fixed (`bits` from a position aligned on `align`: every alignment
	// inside it divides `align`) and it writes no register and has no role.
	bool skip = false;
	uint64_t bits = 0;
	const FieldType *type = nullptr;
	const std::string *name = nullptr; // member name, null for elements and roots
};

// tag value range -> option index
struct Selector {
	struct Range {
		int64_t lo, hi;
		uint32_t option;
	};
	bool is_signed = false;
	std::vector<Range> ranges;
	std::vector<uint32_t> option_ops; // op index of each option
};

struct Plan {
	std::vector<Op> ops; // empty: no such scope
	std::vector<Selector> selectors;
	// An event header of LTTng's compact layout (5-bit id, then a 27-bit
	// timestamp or, for id 31, a 32-bit id and a 64-bit timestamp; little
	// endian), which Tracery and LTTng-UST write: run_plan decodes it without
	// running the ops when no values are wanted.
	bool compact_header = false;
	bool empty() const { return ops.empty(); }
};

// Packet-level results of decoding a packet header and context.
struct PacketFields {
	uint64_t magic = 0;
	bool has_magic = false;
	uint64_t stream_id = 0;
	bool has_stream_id = false;
	uint64_t stream_instance_id = 0;
	bool has_stream_instance_id = false;
	uint64_t begin = 0, end = 0;
	bool has_begin = false, has_end = false;
	uint64_t content_bits = 0, packet_bits = 0;
	bool has_content = false, has_packet = false;
	uint64_t discarded = 0;
	bool has_discarded = false;
	uint64_t seq = 0;
	bool has_seq = false;
	const uint8_t *uuid = nullptr; // 16 bytes of packet.header.uuid, when present
};

// The state a plan runs with: the registers, the clock, roles' results.
struct DecodeState {
	std::vector<uint64_t> regs;
	uint64_t clock = 0;
	uint64_t event_id = 0;
	bool has_event_id = false;
	PacketFields *packet = nullptr; // when decoding a packet header or context
};

// Compiled plans of a whole trace class.
class TracePlans {
public:
	struct EventPlans {
		const EventClass *cls = nullptr;
		Plan context, fields;
	};
	struct StreamPlans {
		const StreamClass *cls = nullptr;
		Plan packet_context, event_header, event_context;
		std::vector<EventPlans> events;    // dense by id when ids are small
		std::vector<uint32_t> event_index; // id -> index in events + 1 (0: none), ids < kDenseIds
		std::vector<std::pair<uint64_t, uint32_t>> sparse; // other ids
		const Clock *clock = nullptr;                      // the default clock, if any
		const EventPlans *event(uint64_t id) const
		{
			if (id < event_index.size()) {
				const uint32_t i = event_index[id];
				return i ? &events[i - 1] : nullptr;
			}
			return sparse_event(id);
		}
		const EventPlans *sparse_event(uint64_t id) const;
	};

	// Throws std::runtime_error naming the field when a path does not resolve
	// or a type cannot be read.
	explicit TracePlans(const TraceClass &tc);

	const TraceClass &trace_class() const { return tc_; }
	const Plan &packet_header() const { return packet_header_; }
	const StreamPlans *stream(uint64_t id) const;
	size_t registers() const { return regs_; }

private:
	const TraceClass &tc_;
	Plan packet_header_;
	std::vector<std::unique_ptr<StreamPlans>> streams_;
	size_t regs_ = 0;
	friend class PlanCompiler;
};

namespace detail {

// run_plan's paths that run ops, or a plain struct's loop: out of line.
uint64_t run_ops(const Plan &plan, const uint8_t *base, uint64_t bit_pos, uint64_t bit_end, DecodeState &st,
                 std::vector<Value> *values);

inline uint64_t load_le_bytes(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	std::memcpy(&v, p, n); // little-endian host
	return v;
}

// The value of a u8/u16/u32/u64 op at p.
inline uint64_t load_uint(OpKind kind, const uint8_t *p)
{
	switch (kind) {
	case OpKind::u8:
		return *p;
	case OpKind::u16:
		return load_le_bytes(p, 2);
	case OpKind::u32:
		return load_le_bytes(p, 4);
	default:
		return load_le_bytes(p, 8);
	}
}

// Whether an integer op is read whole from bytes: a u8/u16/u32/u64 op, or a
// little-endian byte-aligned integer of 8, 16, 32 or 64 bits (signed, an
// enumeration).
inline bool byte_int(const Op &op)
{
	return op.kind <= OpKind::u64 || (op.kind == OpKind::integer && !op.big_endian && op.align % 8 == 0 &&
	                                  (op.size == 8 || op.size == 16 || op.size == 32 || op.size == 64));
}

// The value of a byte_int() op at p (sign-extended when signed), as the
// bit reader gives it.
inline uint64_t load_byte_int(const Op &op, const uint8_t *p)
{
	if (op.kind <= OpKind::u64)
		return load_uint(op.kind, p);
	uint64_t raw = load_le_bytes(p, op.size / 8u);
	if (op.is_signed && op.size < 64) {
		const uint64_t m = uint64_t{1} << (op.size - 1);
		raw = (raw ^ m) - m;
	}
	return raw;
}

// The bytes before the NUL among the avail at p, or SIZE_MAX if none is:
// sixteen bytes at a time where SSE2 is (x86-64), then eight at a time (a
// word has a zero byte when subtracting 1 from each byte borrows into its
// top bit where that byte's top bit was clear), the last few one by one;
// nothing past p + avail is read.
inline size_t string_length(const uint8_t *p, size_t avail)
{
	size_t i = 0;
#if defined(__SSE2__)
	const __m128i zero = _mm_setzero_si128();
	for (; avail - i >= 16; i += 16) {
		const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + i));
		if (const auto nul = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero))))
			return i + static_cast<size_t>(__builtin_ctz(nul));
	}
#endif
	constexpr uint64_t kOnes = 0x0101010101010101, kTops = 0x8080808080808080;
	for (; avail - i >= 8; i += 8) {
		uint64_t w;
		std::memcpy(&w, p + i, 8);
		if (const uint64_t zero = (w - kOnes) & ~w & kTops)
			return i + static_cast<size_t>(__builtin_ctzll(zero)) / 8; // (little-endian host: the first)
	}
	for (; i < avail; ++i)
		if (p[i] == 0)
			return i;
	return SIZE_MAX;
}

// A root struct whose members are u8/u16/u32/u64 or strings, no role or
// register (Op::plain), decoded without running ops: kStore, its values
// appended to *values (else values is null and only the position moves).
// Returns the position after it, or kNoFit when a member does not fit
// (nothing appended; the ops then say what is wrong).
inline constexpr uint64_t kNoFit = UINT64_MAX;
template <bool kStore>
inline uint64_t run_plain(const Plan &plan, const uint8_t *base, uint64_t bit_pos, uint64_t bit_end,
                          std::vector<Value> *values)
{
	const Op &root = plan.ops[0];
	const uint64_t a = root.align;
	uint64_t pos = (bit_pos + a - 1) & ~(a - 1);
	if (pos > bit_end)
		return kNoFit;
	const size_t at = kStore ? values->size() : 0;
	const auto store = [&](uint64_t u, uint64_t n) { // (pushed: resize() would zero them first)
		Value v;
		v.u = u;
		v.n = n;
		values->push_back(v);
	};
	if constexpr (kStore)
		store(0, root.count);
	const auto fail = [&] {
		if constexpr (kStore)
			values->resize(at);
		return kNoFit;
	};
	for (uint32_t k = 0; k < root.count; ++k) {
		const Op &m = plan.ops[1 + k];
		const uint64_t ma = m.align;
		pos = (pos + ma - 1) & ~(ma - 1);
		if (pos > bit_end || m.size > bit_end - pos)
			return fail();
		const uint8_t *p = base + (pos >> 3);
		if (m.kind == OpKind::string) {
			const size_t len = string_length(p, static_cast<size_t>((bit_end - pos) >> 3));
			if (len == SIZE_MAX)
				return fail();
			if constexpr (kStore) {
				Value v;
				v.s = reinterpret_cast<const char *>(p);
				v.n = len;
				values->push_back(v);
			}
			pos += (len + 1) * 8;
			continue;
		}
		pos += m.size;
		if constexpr (kStore)
			store(load_uint(m.kind, p), 0);
	}
	return pos;
}

// The compact event header without its ops; false when the bits left do
// not hold it (the ops then say what is wrong).
inline bool compact_header(const Plan &plan, const uint8_t *base, uint64_t &pos, uint64_t end, DecodeState &st)
{
	const uint64_t p = (pos + 7) & ~uint64_t{7};
	if (p > end || end - p < 32)
		return false;
	uint32_t w;
	std::memcpy(&w, base + (p >> 3), 4); // little-endian host
	const uint32_t tag = w & 31;
	if (plan.ops[1].reg >= 0)
		st.regs[static_cast<size_t>(plan.ops[1].reg)] = tag;
	st.has_event_id = true;
	if (tag != 31) {
		st.event_id = tag;
		constexpr uint64_t kMask = (uint64_t{1} << 27) - 1;
		const uint64_t ts = w >> 5;
		uint64_t c = (st.clock & ~kMask) | ts;
		if (ts < (st.clock & kMask))
			c += uint64_t{1} << 27;
		st.clock = c;
		pos = p + 32;
		return true;
	}
	// extended: the struct after the tag is aligned on a byte
	if (end - p < 104)
		return false;
	uint32_t id;
	std::memcpy(&id, base + (p >> 3) + 1, 4);
	st.event_id = id;
	std::memcpy(&st.clock, base + (p >> 3) + 5, 8);
	pos = p + 104;
	return true;
}

} // namespace detail

// Runs plan over bits [bit_pos, bit_end) of base; appends values (if
// non-null) and returns the bit position after the scope. Throws DecodeError.
// Without values, what has no effect on the state is stepped over: fixed-size
// subtrees (Op::skip) by their size, sequences of them by length times size,
// strings by their NUL, text without looking for its NUL; every bound is
// checked as when decoding, and a damaged scope throws the same error at the
// same offset (the ops are run where a step would not fit).
// Inline: what needs no ops (an empty scope, a fixed-size scope stepped
// over, the compact event header).
inline uint64_t run_plan(const Plan &plan, const uint8_t *base, uint64_t bit_pos, uint64_t bit_end, DecodeState &st,
                         std::vector<Value> *values)
{
	if (plan.ops.empty())
		return bit_pos;
	if (!values) {
		const Op &root = plan.ops[0];
		if (root.skip && root.values <= kMaxValuesPerScope) {
			// a fixed-size scope (the payload of most event classes): one step
			const uint64_t a = root.align;
			const uint64_t pos = (bit_pos + a - 1) & ~(a - 1);
			if (pos <= bit_end && root.bits <= bit_end - pos)
				return pos + root.bits;
		}
		if (plan.compact_header) {
			uint64_t pos = bit_pos;
			if (detail::compact_header(plan, base, pos, bit_end, st))
				return pos;
		}
	}
	return detail::run_ops(plan, base, bit_pos, bit_end, st, values);
}

// Labels of an enumeration type that contain the value (raw bits for
// unsigned containers), in the metadata's order.
template <class F>
void for_each_enum_label(const FieldType &t, uint64_t raw, F &&f)
{
	for (const EnumMapping &m : t.mappings)
		for (const EnumRange &r : m.ranges) {
			const bool in =
				t.is_signed
					? (static_cast<int64_t>(raw) >= r.lo && static_cast<int64_t>(raw) <= r.hi)
					: (raw >= static_cast<uint64_t>(r.lo) && raw <= static_cast<uint64_t>(r.hi));
			if (in) {
				f(m.label);
				break;
			}
		}
}

} // namespace tracery::ctf::reader

namespace tracery::ctf::reader {

// The index of the value after those of op's subtree, whose first value is
// values[v] (as run_plan laid them out).
size_t skip_values(const Plan &plan, uint32_t op, const Value *values, size_t v);

} // namespace tracery::ctf::reader
