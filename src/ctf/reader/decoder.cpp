// ctf/reader/decoder.cpp — compiling decode plans (paths resolved to
// registers, roles found by CTF's special names) and running them.
#include "ctf/reader/decoder.hpp"

#include "ctf/reader/tsdl_parser.hpp"

#include <cstring>
#include <iterator>
#include <span>
#include <string_view>

namespace tracery::ctf::reader {

namespace {

constexpr size_t kDenseIds = 65536;
// Bounds on what metadata can make the compiler build (typealiases can
// nest and repeat types without nesting the text).
constexpr size_t kMaxOpsPerPlan = size_t{1} << 18;
constexpr size_t kMaxOpsPerTrace = size_t{1} << 21;
constexpr int kMaxDepth = 128;

constexpr const char *kScopePrefix[kScopes] = {"trace.packet.header.", "stream.packet.context.",
                                               "stream.event.header.", "stream.event.context.",
                                               "event.context.",       "event.fields."};

// bits += the padding to a multiple of align, then more; false on overflow.
bool add_aligned(uint64_t &bits, uint32_t align, uint64_t more)
{
	const uint64_t a = align;
	if (bits > UINT64_MAX - (a - 1))
		return false;
	bits = (bits + a - 1) & ~(a - 1);
	return !__builtin_add_overflow(bits, more, &bits);
}
// The bits of n elements e (skip ops) from a position aligned on e.align;
// false on overflow.
bool elements_bits(const Op &e, uint64_t n, uint64_t &bits)
{
	bits = 0;
	if (n == 0)
		return true;
	uint64_t stride = e.bits;
	return add_aligned(stride, e.align, 0) && !__builtin_mul_overflow(stride, n - 1, &bits) &&
	       !__builtin_add_overflow(bits, e.bits, &bits);
}

struct OpRef {
	Plan *plan;
	uint32_t index;
};

} // namespace

class PlanCompiler {
public:
	PlanCompiler(TracePlans &out) : out_(out), tc_(out.tc_) {}

	void compile()
	{
		compile_scope(out_.packet_header_, out_.tc_.packet_header.get(), Scope::packet_header);
		for (const auto &[id, sc] : tc_.streams) {
			auto sp = std::make_unique<TracePlans::StreamPlans>();
			sp->cls = &sc;
			clear_from(Scope::packet_context);
			compile_scope(sp->packet_context, sc.packet_context.get(), Scope::packet_context);
			compile_scope(sp->event_header, sc.event_header.get(), Scope::event_header);
			sp->event_header.compact_header = is_compact_header(sp->event_header);
			compile_scope(sp->event_context, sc.event_context.get(), Scope::stream_event_context);
			sp->clock = default_clock(sc);
			sp->events.reserve(sc.events.size());
			for (const auto &[eid, ec] : sc.events) {
				clear_from(Scope::event_context);
				TracePlans::EventPlans ep;
				ep.cls = &ec;
				sp->events.push_back(std::move(ep));
				TracePlans::EventPlans &e = sp->events.back();
				compile_scope(e.context, ec.context.get(), Scope::event_context);
				compile_scope(e.fields, ec.fields.get(), Scope::payload);
				const auto index = static_cast<uint32_t>(sp->events.size());
				if (eid < kDenseIds) {
					if (sp->event_index.size() <= eid)
						sp->event_index.resize(eid + 1, 0);
					sp->event_index[eid] = index;
				} else {
					sp->sparse.emplace_back(eid, index);
				}
			}
			out_.streams_.push_back(std::move(sp));
		}
		out_.regs_ = regs_;
		// (registers are given until the last scope names a field of an earlier one)
		size_up(out_.packet_header_);
		for (auto &sp : out_.streams_) {
			for (Plan *p : {&sp->packet_context, &sp->event_header, &sp->event_context})
				size_up(*p);
			for (TracePlans::EventPlans &e : sp->events) {
				size_up(e.context);
				size_up(e.fields);
			}
		}
	}

private:
	[[noreturn]] void fail(const std::string &what) const
	{
		if (resolving_ && resolving_->line)
			throw TsdlError(resolving_->line, resolving_->offset, where_ + ": " + what);
		throw std::runtime_error("metadata: " + where_ + ": " + what);
	}

	const Clock *default_clock(const StreamClass &sc) const
	{
		// The clock the event header's timestamp (or the packet's beginning) maps to.
		std::string name;
		find_clock(sc.event_header.get(), name);
		if (name.empty())
			find_clock(sc.packet_context.get(), name);
		if (name.empty())
			return nullptr;
		const Clock *c = tc_.clock(name);
		if (!c)
			throw std::runtime_error("metadata: stream " + std::to_string(sc.id) +
			                         " maps a field to clock '" + name +
			                         "', which no clock block declares");
		return c;
	}
	static void find_clock(const FieldType *t, std::string &name)
	{
		if (!t || !name.empty())
			return;
		if ((t->kind == TypeKind::integer || t->kind == TypeKind::enumeration) && !t->mapped_clock.empty())
			name = t->mapped_clock;
		for (const Member &m : t->members)
			find_clock(m.type.get(), name);
	}

	void clear_from(Scope s)
	{
		for (int i = static_cast<int>(s); i < kScopes; ++i)
			symbols_[i].clear();
	}

	void compile_scope(Plan &plan, const FieldType *root, Scope scope)
	{
		plan = Plan{};
		if (!root)
			return;
		scope_ = scope;
		where_ = std::string(kScopePrefix[static_cast<int>(scope)]);
		where_.pop_back();
		paths_.assign(1, "");
		emit(plan, *root, nullptr, "", true, 0);
	}

	// Op::values, skip and bits of every op, children before their parents.
	static void size_up(Plan &plan)
	{
		for (size_t i = plan.ops.size(); i-- > 0;) {
			Op &op = plan.ops[i];
			op.values = 1;
			op.skip = false;
			op.bits = 0;
			switch (op.kind) {
			case OpKind::u8:
			case OpKind::u16:
			case OpKind::u32:
			case OpKind::u64:
			case OpKind::integer:
			case OpKind::float32:
			case OpKind::float64:
				op.skip = op.reg < 0 && op.role == Role::none;
				op.bits = op.size;
				break;
			case OpKind::text_array:
				op.skip = true;
				op.bits = uint64_t{op.count} * 8;
				break;
			case OpKind::string:
			case OpKind::text_sequence:
				break;
			case OpKind::structure: {
				op.skip = true;
				uint32_t c = static_cast<uint32_t>(i) + 1;
				for (uint32_t k = 0; k < op.count; ++k) {
					const Op &m = plan.ops[c];
					op.values = op.values && m.values && op.values + m.values <= kMaxValuesPerScope
					                    ? op.values + m.values
					                    : 0;
					op.skip = op.skip && op.values && m.skip && m.align <= op.align &&
					          add_aligned(op.bits, m.align, m.bits);
					c = m.next;
				}
				break;
			}
			case OpKind::array: {
				const Op &e = plan.ops[i + 1];
				uint64_t all = 0;
				op.values = e.values && !__builtin_mul_overflow(e.values, uint64_t{op.count}, &all) &&
				                            all < kMaxValuesPerScope
				                    ? 1 + all
				                    : 0;
				op.skip = op.values && e.skip && e.align <= op.align &&
				          elements_bits(e, op.count, op.bits);
				break;
			}
			case OpKind::sequence:
			case OpKind::variant:
				op.values = 0;
				break;
			}
		}
	}

	// The ops of LTTng's compact event header (see Plan::compact_header).
	static bool is_compact_header(const Plan &p)
	{
		if (p.ops.size() != 8 || p.selectors.size() != 1)
			return false;
		const Op *o = p.ops.data();
		const auto plain = [](const Op &op, OpKind kind, unsigned size, Role role) {
			return op.kind == kind && op.size == size && !op.is_signed && !op.big_endian && op.role == role;
		};
		const Selector &sel = p.selectors[0];
		return o[0].kind == OpKind::structure && o[0].count == 2 && o[0].align == 8 &&
		       plain(o[1], OpKind::integer, 5, Role::event_id) && o[1].align == 1 &&
		       o[2].kind == OpKind::variant && o[2].count == 2 && o[2].src_reg == o[1].reg &&
		       sel.option_ops == std::vector<uint32_t>{3, 5} && sel.ranges.size() == 2 &&
		       sel.ranges[0].lo == 0 && sel.ranges[0].hi == 30 && sel.ranges[0].option == 0 &&
		       sel.ranges[1].lo == 31 && sel.ranges[1].hi == 31 && sel.ranges[1].option == 1 &&
		       o[3].kind == OpKind::structure && o[3].count == 1 && o[3].align == 1 &&
		       plain(o[4], OpKind::integer, 27, Role::timestamp) && o[4].align == 1 && o[4].reg < 0 &&
		       o[5].kind == OpKind::structure && o[5].count == 2 && o[5].align == 8 &&
		       plain(o[6], OpKind::u32, 32, Role::event_id) && o[6].align == 8 && o[6].reg < 0 &&
		       plain(o[7], OpKind::u64, 64, Role::timestamp) && o[7].align == 8 && o[7].reg < 0;
	}

	bool resolve_order(ByteOrder o) const { return o == ByteOrder::native ? tc_.big_endian : o == ByteOrder::be; }

	// CTF's special names: the packet header's and packet context's
	// top-level members, the event header's id and timestamp anywhere in it,
	// and in the other scopes any integer mapped to the clock.
	Role role_of(const std::string &name, const FieldType &t, int depth) const
	{
		struct Named {
			std::string_view name;
			Role role;
		};
		static constexpr Named kPacketHeader[] = {{"magic", Role::magic},
		                                          {"stream_id", Role::stream_id},
		                                          {"stream_instance_id", Role::stream_instance_id}};
		static constexpr Named kPacketContext[] = {
			{"timestamp_begin", Role::packet_begin},      {"timestamp_end", Role::packet_end},
			{"content_size", Role::content_size},         {"packet_size", Role::packet_size},
			{"events_discarded", Role::events_discarded}, {"packet_seq_num", Role::packet_seq_num}};
		static constexpr Named kEventHeader[] = {{"id", Role::event_id}, {"timestamp", Role::timestamp}};
		const auto by_name = [&](std::span<const Named> table) {
			for (const Named &n : table)
				if (n.name == name)
					return n.role;
			return Role::none;
		};
		switch (scope_) {
		case Scope::packet_header:
			return depth == 1 ? by_name(kPacketHeader) : Role::none;
		case Scope::packet_context:
			return depth == 1 ? by_name(kPacketContext) : Role::none;
		case Scope::event_header: {
			const Role r = by_name(kEventHeader);
			return r == Role::none && !t.mapped_clock.empty() ? Role::timestamp : r;
		}
		default:
			return t.mapped_clock.empty() ? Role::none : Role::clock_update;
		}
	}

	// Resolves a sequence length or variant tag path (ref, of t) to the op
	// that decodes it; an error names where the metadata declares t.
	OpRef resolve(const FieldType &t, const std::string &ref)
	{
		resolving_ = &t;
		const OpRef r = resolve(ref);
		resolving_ = nullptr;
		return r;
	}
	OpRef resolve(const std::string &ref)
	{
		for (int s = 0; s < kScopes; ++s) {
			const std::string prefix = kScopePrefix[s];
			if (ref.compare(0, prefix.size(), prefix) == 0) {
				if (s > static_cast<int>(scope_))
					fail("'" + ref + "' names a scope decoded after this one");
				if (auto r = find(s, ref.substr(prefix.size())))
					return *r;
				fail("no field '" + ref + "' before this one");
			}
		}
		for (auto p = paths_.rbegin(); p != paths_.rend(); ++p) {
			const std::string full = p->empty() ? ref : *p + "." + ref;
			if (auto r = find(static_cast<int>(scope_), full))
				return *r;
		}
		for (int s = static_cast<int>(scope_) - 1; s >= 0; --s)
			if (auto r = find(s, ref))
				return *r;
		fail("no field '" + ref + "' before this one");
	}
	std::optional<OpRef> find(int scope, const std::string &path) const
	{
		const auto &syms = symbols_[scope];
		for (auto it = syms.rbegin(); it != syms.rend(); ++it)
			if (it->first == path)
				return it->second;
		return std::nullopt;
	}
	int32_t register_of(OpRef r)
	{
		Op &op = r.plan->ops[r.index];
		if (op.kind == OpKind::structure || op.kind == OpKind::array || op.kind == OpKind::sequence ||
		    op.kind == OpKind::variant || op.kind == OpKind::string || op.kind == OpKind::text_array ||
		    op.kind == OpKind::text_sequence || op.kind == OpKind::float32 || op.kind == OpKind::float64)
			fail("'" + (op.name ? *op.name : std::string("?")) + "' is not an integer");
		if (op.reg < 0)
			op.reg = static_cast<int32_t>(regs_++);
		for (Op &o : r.plan->ops) // the struct holding it is no longer plain
			if (o.kind == OpKind::structure && o.plain &&
			    r.index > static_cast<uint32_t>(&o - r.plan->ops.data()) && r.index < o.next)
				o.plain = false;
		return op.reg;
	}

	static uint64_t fixed_bits(const FieldType &t)
	{
		if ((t.kind == TypeKind::integer || t.kind == TypeKind::enumeration || t.kind == TypeKind::floating) &&
		    t.size % t.align == 0)
			return t.size;
		return 0;
	}

	static bool is_text_element(const FieldType &e)
	{
		return (e.kind == TypeKind::integer) && e.size == 8 && e.align % 8 == 0 && e.encoding != Encoding::none;
	}

	// Emits the ops of t; path is its dotted path in the scope ("" for the
	// root), depth its depth (root 0); in_struct_chain: reachable through
	// structs and variants only (so a path can name it).
	void emit(Plan &plan, const FieldType &t, const std::string *name, const std::string &path,
	          bool in_struct_chain, int depth)
	{
		if (plan.ops.size() >= kMaxOpsPerPlan || ++total_ops_ > kMaxOpsPerTrace)
			fail("too many fields (types nest or repeat too much)");
		if (depth > kMaxDepth)
			fail("types nested deeper than " + std::to_string(kMaxDepth) + " levels");
		const auto index = static_cast<uint32_t>(plan.ops.size());
		plan.ops.emplace_back();
		Op op;
		op.type = &t;
		op.name = name;
		op.align = t.align;
		op.shown = scope_ != Scope::packet_header && scope_ != Scope::event_header;
		switch (t.kind) {
		case TypeKind::integer:
		case TypeKind::enumeration: {
			op.size = static_cast<uint8_t>(t.size);
			op.is_signed = t.is_signed;
			op.big_endian = resolve_order(t.byte_order);
			op.kind = OpKind::integer;
			if (!op.big_endian && !op.is_signed && t.align % 8 == 0 && t.kind == TypeKind::integer) {
				if (t.size == 8)
					op.kind = OpKind::u8;
				else if (t.size == 16)
					op.kind = OpKind::u16;
				else if (t.size == 32)
					op.kind = OpKind::u32;
				else if (t.size == 64)
					op.kind = OpKind::u64;
			}
			if (name)
				op.role = role_of(*name, t, depth);
			if (op.role != Role::none && scope_ == Scope::packet_context)
				op.shown = false;
			break;
		}
		case TypeKind::floating:
			op.kind = t.size == 32 ? OpKind::float32 : OpKind::float64;
			op.size = static_cast<uint8_t>(t.size);
			op.big_endian = resolve_order(t.byte_order);
			break;
		case TypeKind::string:
			op.kind = OpKind::string;
			break;
		case TypeKind::structure: {
			op.kind = OpKind::structure;
			op.count = static_cast<uint32_t>(t.members.size());
			plan.ops[index] = op;
			paths_.push_back(path);
			for (const Member &m : t.members)
				emit(plan, *m.type, &m.name, path.empty() ? m.name : path + "." + m.name,
				     in_struct_chain, depth + 1);
			paths_.pop_back();
			plan.ops[index].next = static_cast<uint32_t>(plan.ops.size());
			plan.ops[index].flat = plan.ops.size() - index - 1 == op.count;
			plan.ops[index].plain = plan.ops[index].flat;
			for (size_t k = index + 1; k < plan.ops.size(); ++k) {
				plan.ops[index].flat &= detail::byte_int(plan.ops[k]);
				// (a register is given later, when a path names the field: plain is checked again then)
				plan.ops[index].plain &=
					(plan.ops[k].kind <= OpKind::u64 || plan.ops[k].kind == OpKind::string) &&
					plan.ops[k].role == Role::none && plan.ops[k].reg < 0;
			}
			return;
		}
		case TypeKind::variant: {
			op.kind = OpKind::variant;
			op.count = static_cast<uint32_t>(t.members.size());
			if (t.tag.empty())
				fail("variant '" + path + "' without a tag");
			const OpRef tag = resolve(t, t.tag);
			const Op &tag_op = tag.plan->ops[tag.index];
			if (tag_op.type->kind != TypeKind::enumeration)
				fail("the tag '" + t.tag + "' of variant '" + path + "' is not an enum");
			op.src_reg = register_of(tag);
			Selector sel;
			sel.is_signed = tag_op.type->is_signed;
			for (const EnumMapping &m : tag_op.type->mappings) {
				uint32_t option = UINT32_MAX;
				for (uint32_t i = 0; i < t.members.size(); ++i)
					if (t.members[i].name == m.label)
						option = i;
				if (option == UINT32_MAX)
					for (uint32_t i = 0; i < t.members.size(); ++i)
						if (t.members[i].name.size() == m.label.size() + 1 &&
						    t.members[i].name[0] == '_' &&
						    t.members[i].name.compare(1, std::string::npos, m.label) == 0)
							option = i;
				if (option == UINT32_MAX)
					continue;
				for (const EnumRange &r : m.ranges)
					sel.ranges.push_back({r.lo, r.hi, option});
			}
			op.table = static_cast<uint32_t>(plan.selectors.size());
			op.align = 1;
			plan.ops[index] = op;
			paths_.push_back(path);
			for (const Member &m : t.members) {
				sel.option_ops.push_back(static_cast<uint32_t>(plan.ops.size()));
				emit(plan, *m.type, &m.name, path.empty() ? m.name : path + "." + m.name,
				     in_struct_chain, depth + 1);
			}
			paths_.pop_back();
			plan.selectors.push_back(std::move(sel));
			plan.ops[index].next = static_cast<uint32_t>(plan.ops.size());
			return;
		}
		case TypeKind::array:
		case TypeKind::sequence: {
			const FieldType &e = *t.element;
			const bool seq = t.kind == TypeKind::sequence;
			if (seq) {
				const OpRef len = resolve(t, t.length_ref);
				op.src_reg = register_of(len);
			} else {
				if (t.length > UINT32_MAX)
					fail("array '" + path + "' of " + std::to_string(t.length) + " elements");
				op.count = static_cast<uint32_t>(t.length);
			}
			op.align = e.align;
			if (is_text_element(e)) {
				op.kind = seq ? OpKind::text_sequence : OpKind::text_array;
				op.elem_bits = 8;
				break;
			}
			op.kind = seq ? OpKind::sequence : OpKind::array;
			op.elem_bits = fixed_bits(e);
			plan.ops[index] = op;
			emit(plan, e, nullptr, path + "[]", false, depth + 1);
			plan.ops[index].next = static_cast<uint32_t>(plan.ops.size());
			return;
		}
		}
		op.next = index + 1;
		plan.ops[index] = op;
		if (in_struct_chain && !path.empty())
			symbols_[static_cast<int>(scope_)].emplace_back(path, OpRef{&plan, index});
	}

	TracePlans &out_;
	const TraceClass &tc_;
	Scope scope_ = Scope::packet_header;
	std::string where_;
	const FieldType *resolving_ = nullptr; // the sequence or variant whose path resolve() looks for
	std::vector<std::string> paths_;
	std::vector<std::pair<std::string, OpRef>> symbols_[kScopes];
	size_t regs_ = 0;
	size_t total_ops_ = 0;
};

TracePlans::TracePlans(const TraceClass &tc) : tc_(tc) { PlanCompiler(*this).compile(); }

const TracePlans::StreamPlans *TracePlans::stream(uint64_t id) const
{
	for (const auto &s : streams_)
		if (s->cls->id == id)
			return s.get();
	return nullptr;
}

const TracePlans::EventPlans *TracePlans::StreamPlans::sparse_event(uint64_t id) const
{
	for (const auto &[eid, i] : sparse)
		if (eid == id)
			return &events[i - 1];
	return nullptr;
}

namespace {

using detail::kNoFit;
using detail::load_byte_int;
using detail::load_le_bytes;
using detail::load_uint;
using detail::string_length;

// Where a packet role's value goes in PacketFields, by Role.
struct PacketSlot {
	uint64_t PacketFields::*value;
	bool PacketFields::*has;
};
constexpr PacketSlot kPacketSlots[] = {
	{nullptr, nullptr}, // none
	{nullptr, nullptr}, // event_id
	{nullptr, nullptr}, // timestamp
	{&PacketFields::magic, &PacketFields::has_magic},
	{&PacketFields::stream_id, &PacketFields::has_stream_id},
	{&PacketFields::stream_instance_id, &PacketFields::has_stream_instance_id},
	{&PacketFields::begin, &PacketFields::has_begin},
	{&PacketFields::end, &PacketFields::has_end},
	{&PacketFields::content_bits, &PacketFields::has_content},
	{&PacketFields::packet_bits, &PacketFields::has_packet},
	{&PacketFields::discarded, &PacketFields::has_discarded},
	{&PacketFields::seq, &PacketFields::has_seq},
	{nullptr, nullptr}, // clock_update
};
static_assert(std::size(kPacketSlots) == static_cast<size_t>(Role::clock_update) + 1);

// What an integer's role does with its value: the event id, the clock
// (a field of fewer bits than the clock updates its low bits, and a value
// below theirs means they wrapped), the packet's fields.
void apply_role(DecodeState &st, const Op &op, uint64_t raw)
{
	switch (op.role) {
	case Role::event_id:
		st.event_id = raw;
		st.has_event_id = true;
		break;
	case Role::timestamp:
	case Role::clock_update:
		if (op.size >= 64) {
			st.clock = raw;
		} else {
			const uint64_t mask = (uint64_t{1} << op.size) - 1;
			uint64_t c = (st.clock & ~mask) | raw;
			if (raw < (st.clock & mask))
				c += uint64_t{1} << op.size;
			st.clock = c;
		}
		break;
	case Role::none:
		break;
	default:
		if (PacketFields *pf = st.packet) {
			const PacketSlot &slot = kPacketSlots[static_cast<size_t>(op.role)];
			pf->*slot.value = raw;
			pf->*slot.has = true;
		}
		break;
	}
}

// kStore: values are appended to *values (else only the state changes: the
// registers, the clock, the roles' results).
template <bool kStore>
class Runner {
public:
	Runner(const Plan &plan, const uint8_t *base, uint64_t pos, uint64_t end, DecodeState &st,
	       std::vector<Value> *values)
		: plan_(plan), base_(base), pos_(pos), end_(end), st_(st), values_(values)
	{
	}

	uint64_t run()
	{
		run_op(0);
		return pos_;
	}

private:
	[[noreturn]] void fail(const std::string &what) const { throw DecodeError(pos_, what); }

	std::string field_name(const Op &op) const
	{
		return op.name ? "'" + *op.name + "'" : std::string("an element");
	}

	void align(uint32_t a)
	{
		const uint64_t p = (pos_ + a - 1) & ~(uint64_t{a} - 1);
		if (p > end_)
			fail("alignment padding runs past the end of the packet's content");
		pos_ = p;
	}
	void need(uint64_t bits, const Op &op) const
	{
		if (bits > end_ - pos_)
			fail("field " + field_name(op) + " (" + std::to_string(bits) +
			     " bits) runs past the end of the packet's content");
	}

	uint64_t read_bits(unsigned size, bool be)
	{
		const uint8_t *p = base_ + (pos_ >> 3);
		const unsigned shift = static_cast<unsigned>(pos_ & 7);
		const unsigned nbytes = (shift + size + 7) / 8;
		uint64_t v;
		if (!be) {
			if (shift == 0 && (size & 7) == 0) {
				v = load_le_bytes(p, size / 8);
			} else {
				v = load_le_bytes(p, nbytes < 8 ? nbytes : 8) >> shift;
				if (nbytes == 9)
					v |= static_cast<uint64_t>(p[8]) << (64 - shift);
			}
		} else {
			unsigned __int128 acc = 0;
			for (unsigned i = 0; i < nbytes; ++i)
				acc = (acc << 8) | p[i];
			v = static_cast<uint64_t>(acc >> (nbytes * 8 - shift - size));
		}
		if (size < 64)
			v &= (uint64_t{1} << size) - 1;
		pos_ += size;
		return v;
	}

	void push(Value v)
	{
		if (++count_ > kMaxValuesPerScope)
			fail("more than " + std::to_string(kMaxValuesPerScope) + " fields in one scope");
		if constexpr (kStore)
			values_->push_back(v);
	}

	void integer_result(const Op &op, uint64_t raw)
	{
		if (op.reg >= 0)
			st_.regs[static_cast<size_t>(op.reg)] = raw;
		if (op.role != Role::none)
			apply_role(op, raw);
		Value v;
		v.u = raw;
		v.n = 0;
		push(v);
	}

	void apply_role(const Op &op, uint64_t raw) { reader::apply_role(st_, op, raw); }

	// A byte_int() op: after align() the position is on a byte.
	void byte_integer(const Op &op)
	{
		align(op.align);
		need(op.size, op);
		const uint8_t *p = base_ + (pos_ >> 3);
		const uint64_t raw = load_byte_int(op, p);
		pos_ += op.size;
		integer_result(op, raw);
	}

	uint64_t length_of(const Op &op)
	{
		const uint64_t n = st_.regs[static_cast<size_t>(op.src_reg)];
		if (n > (uint64_t{1} << 40))
			fail("sequence " + field_name(op) + " of " + std::to_string(n) + " elements");
		return n;
	}

	// Without values: n elements e (after the alignment) stepped over when
	// they are skip ops and fit.
	bool stepped_elements(const Op &e, uint64_t n)
	{
		uint64_t bits = 0, values = 0;
		if (!e.skip || __builtin_mul_overflow(e.values, n, &values) || values > kMaxValuesPerScope - count_ ||
		    !elements_bits(e, n, bits) || bits > end_ - pos_)
			return false;
		pos_ += bits;
		count_ += values;
		return true;
	}

	// Without values: a skip op stepped over when it fits (else its ops say
	// what is wrong).
	bool stepped(const Op &op)
	{
		if (!op.skip || op.values > kMaxValuesPerScope - count_)
			return false;
		align(op.align);
		if (op.bits > end_ - pos_)
			return false;
		pos_ += op.bits;
		count_ += op.values;
		return true;
	}

	uint32_t run_op(uint32_t i)
	{
		const Op &op = plan_.ops[i];
		if constexpr (!kStore)
			if (stepped(op))
				return op.next;
		switch (op.kind) {
		case OpKind::u8:
		case OpKind::u16:
		case OpKind::u32:
		case OpKind::u64:
			byte_integer(op);
			return i + 1;
		case OpKind::integer: {
			align(op.align);
			need(op.size, op);
			uint64_t raw = read_bits(op.size, op.big_endian);
			if (op.is_signed && op.size < 64) {
				const uint64_t m = uint64_t{1} << (op.size - 1);
				raw = (raw ^ m) - m;
			}
			integer_result(op, raw);
			return i + 1;
		}
		case OpKind::float32: {
			align(op.align);
			need(32, op);
			const auto bits = static_cast<uint32_t>(read_bits(32, op.big_endian));
			float f;
			std::memcpy(&f, &bits, 4);
			Value v;
			v.f = static_cast<double>(f);
			v.n = 0;
			push(v);
			return i + 1;
		}
		case OpKind::float64: {
			align(op.align);
			need(64, op);
			const uint64_t bits = read_bits(64, op.big_endian);
			Value v;
			std::memcpy(&v.f, &bits, 8);
			v.n = 0;
			push(v);
			return i + 1;
		}
		case OpKind::string: {
			align(8);
			const uint8_t *p = base_ + (pos_ >> 3);
			const size_t len = string_length(p, static_cast<size_t>((end_ - pos_) >> 3));
			if (len == SIZE_MAX)
				fail("string " + field_name(op) +
				     " has no terminating NUL before the packet's content ends");
			Value v;
			v.s = reinterpret_cast<const char *>(p);
			v.n = len;
			push(v);
			pos_ += (len + 1) * 8;
			return i + 1;
		}
		case OpKind::text_array:
		case OpKind::text_sequence: {
			const uint64_t n = op.kind == OpKind::text_array ? op.count : length_of(op);
			align(op.align);
			if (n > (end_ - pos_) / 8)
				fail("text " + field_name(op) + " of " + std::to_string(n) +
				     " bytes runs past the end of the packet's content");
			Value v{};
			if constexpr (kStore) {
				const uint8_t *p = base_ + (pos_ >> 3);
				const void *nul = std::memchr(p, 0, static_cast<size_t>(n));
				v.s = reinterpret_cast<const char *>(p);
				v.n = nul ? static_cast<uint64_t>(static_cast<const uint8_t *>(nul) - p) : n;
			}
			push(v);
			pos_ += n * 8;
			return i + 1;
		}
		case OpKind::structure: {
			align(op.align);
			Value v;
			v.u = 0;
			v.n = op.count;
			push(v);
			uint32_t c = i + 1;
			if (op.flat) {
				for (uint32_t k = 0; k < op.count; ++k)
					byte_integer(plan_.ops[c + k]);
				return op.next;
			}
			for (uint32_t k = 0; k < op.count; ++k)
				c = run_op(c);
			return op.next;
		}
		case OpKind::array:
		case OpKind::sequence: {
			const uint64_t n = op.kind == OpKind::array ? op.count : length_of(op);
			align(op.align);
			if (op.elem_bits && n > (end_ - pos_) / op.elem_bits)
				fail("array " + field_name(op) + " of " + std::to_string(n) +
				     " elements runs past the end of the packet's content");
			Value v;
			v.u = 0;
			v.n = n;
			push(v);
			const Op &e = plan_.ops[i + 1];
			if constexpr (!kStore) {
				if (stepped_elements(e, n))
					return op.next;
			} else if (e.kind <= OpKind::u64 && e.reg < 0 && e.role == Role::none &&
			           op.elem_bits == e.size) {
				// byte integers one after the other, each aligned when the
				// first is (a UUID): as byte_integer() reads them, in one
				// loop (their room was checked above)
				for (uint64_t k = 0; k < n; ++k) {
					Value ev;
					ev.u = load_uint(e.kind, base_ + (pos_ >> 3));
					ev.n = 0;
					pos_ += e.size;
					push(ev);
				}
				return op.next;
			}
			for (uint64_t k = 0; k < n; ++k)
				run_op(i + 1);
			return op.next;
		}
		case OpKind::variant: {
			const Selector &sel = plan_.selectors[op.table];
			const uint64_t raw = st_.regs[static_cast<size_t>(op.src_reg)];
			uint32_t option = UINT32_MAX;
			for (const Selector::Range &r : sel.ranges) {
				const bool in = sel.is_signed ? static_cast<int64_t>(raw) >= r.lo &&
				                                        static_cast<int64_t>(raw) <= r.hi
				                              : raw >= static_cast<uint64_t>(r.lo) &&
				                                        raw <= static_cast<uint64_t>(r.hi);
				if (in) {
					option = r.option;
					break;
				}
			}
			if (option == UINT32_MAX)
				fail("variant " + field_name(op) + ": its tag's value " +
				     (sel.is_signed ? std::to_string(static_cast<int64_t>(raw)) : std::to_string(raw)) +
				     " selects no option");
			Value v;
			v.u = raw;
			v.n = option;
			push(v);
			run_op(sel.option_ops[option]);
			return op.next;
		}
		}
		return op.next;
	}

	const Plan &plan_;
	const uint8_t *base_;
	uint64_t pos_, end_;
	DecodeState &st_;
	std::vector<Value> *values_;
	size_t count_ = 0;
};

} // namespace

namespace {

// A flat root struct (Op::flat: its members are all byte_int(), roles
// and registers allowed: a packet context) read as the ops would read it,
// without running them; kNoFit when a member does not fit (nothing
// appended: the ops then say what is wrong).
template <bool kStore>
uint64_t run_flat(const Plan &plan, const uint8_t *base, uint64_t bit_pos, uint64_t bit_end, DecodeState &st,
                  std::vector<Value> *values)
{
	const Op &root = plan.ops[0];
	uint64_t pos = (bit_pos + root.align - 1) & ~(uint64_t{root.align} - 1);
	if (pos > bit_end)
		return kNoFit;
	// (checked first: the registers and roles are applied only to a whole struct, as the ops would)
	uint64_t end = pos;
	for (uint32_t k = 0; k < root.count; ++k) {
		const Op &m = plan.ops[1 + k];
		end = (end + m.align - 1) & ~(uint64_t{m.align} - 1);
		if (end > bit_end || m.size > bit_end - end)
			return kNoFit;
		end += m.size;
	}
	if constexpr (kStore)
		values->push_back(Value{{0}, root.count});
	for (uint32_t k = 0; k < root.count; ++k) {
		const Op &m = plan.ops[1 + k];
		pos = (pos + m.align - 1) & ~(uint64_t{m.align} - 1);
		const uint64_t raw = load_byte_int(m, base + (pos >> 3));
		pos += m.size;
		if (m.reg >= 0)
			st.regs[static_cast<size_t>(m.reg)] = raw;
		if (m.role != Role::none)
			apply_role(st, m, raw);
		if constexpr (kStore)
			values->push_back(Value{{raw}, 0});
	}
	return pos;
}

} // namespace

uint64_t detail::run_ops(const Plan &plan, const uint8_t *base, uint64_t bit_pos, uint64_t bit_end, DecodeState &st,
                         std::vector<Value> *values)
{
	if (plan.ops[0].flat)
		if (const uint64_t pos = values ? run_flat<true>(plan, base, bit_pos, bit_end, st, values)
		                                : run_flat<false>(plan, base, bit_pos, bit_end, st, nullptr);
		    pos != kNoFit)
			return pos;
	if (plan.ops[0].plain)
		if (const uint64_t pos = values ? run_plain<true>(plan, base, bit_pos, bit_end, values)
		                                : run_plain<false>(plan, base, bit_pos, bit_end, nullptr);
		    pos != kNoFit)
			return pos;
	if (values)
		return Runner<true>(plan, base, bit_pos, bit_end, st, values).run();
	return Runner<false>(plan, base, bit_pos, bit_end, st, nullptr).run();
}

} // namespace tracery::ctf::reader

namespace tracery::ctf::reader {

size_t skip_values(const Plan &plan, uint32_t i, const Value *values, size_t v)
{
	const Op &op = plan.ops[i];
	switch (op.kind) {
	case OpKind::structure: {
		size_t w = v + 1;
		uint32_t c = i + 1;
		for (uint32_t k = 0; k < op.count; ++k) {
			w = skip_values(plan, c, values, w);
			c = plan.ops[c].next;
		}
		return w;
	}
	case OpKind::array:
	case OpKind::sequence: {
		size_t w = v + 1;
		for (uint64_t k = 0; k < values[v].n; ++k)
			w = skip_values(plan, i + 1, values, w);
		return w;
	}
	case OpKind::variant:
		return skip_values(plan, plan.selectors[op.table].option_ops[values[v].n], values, v + 1);
	default:
		return v + 1;
	}
}

} // namespace tracery::ctf::reader
