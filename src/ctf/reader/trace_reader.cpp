// ctf/reader/trace_reader.cpp — opening traces (metadata, mapped stream
// files), iterating a stream's packets (each indexed and checked when
// reached) and events, and the merge of all streams.
#include "ctf/reader/trace_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>

#include "base/fd.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/tsdl_parser.hpp"

namespace tracery::ctf::reader {

namespace fs = std::filesystem;

constexpr uint32_t kCtfMagic = 0xC1FC1FC1;

ClockConverter::ClockConverter(const Clock &c) : freq_(c.freq), ghz_(c.freq == 1000000000)
{
	// babeltrace2 first moves whole seconds of the offset into offset_s.
	int64_t offset_s = c.offset_s;
	uint64_t offset = c.offset;
	if (offset >= c.freq) {
		offset_s += static_cast<int64_t>(offset / c.freq);
		offset %= c.freq;
	}
	const uint64_t offset_ns =
		ghz_ ? offset
		     : static_cast<uint64_t>((1e9 * static_cast<double>(offset)) / static_cast<double>(c.freq));
	base_ns_ = static_cast<int64_t>(static_cast<uint64_t>(offset_s) * 1000000000u + offset_ns);
	// ns() below known_: 1e9 c / freq < about 2^61, base_ns_ within 2^62 of 0.
	constexpr int64_t kBase = int64_t{1} << 62;
	if (freq_ == 0 || base_ns_ > kBase || base_ns_ < -kBase) {
		known_ = 0;
	} else {
		const double k = 0x1p61 * static_cast<double>(freq_) / 1e9;
		known_ = k >= 0x1p62 ? uint64_t{1} << 62 : static_cast<uint64_t>(k);
	}
}

ClockConverter::Before ClockConverter::before(int64_t t) const
{
	Before b;
	b.t = t;
	b.known = known_;
	const auto lt = [&](uint64_t c) { return ns(c) < t; };
	if (known_ == 0 || !lt(0)) // (ns(0) is the least: none is before t)
		return b;
	if (lt(known_ - 1)) {
		b.below = known_;
		return b;
	}
	// The first value not before t, between lo (before) and hi (not): from
	// the inverse's estimate by doubling steps, then halving.
	uint64_t lo = 0, hi = known_ - 1;
	const double e = (static_cast<double>(t) - static_cast<double>(base_ns_)) * static_cast<double>(freq_) / 1e9;
	const uint64_t guess = e <= 0 ? 0 : e >= static_cast<double>(hi) ? hi : static_cast<uint64_t>(e);
	if (lt(guess)) {
		lo = guess;
		for (uint64_t step = 1; step < hi - lo; step *= 2) {
			if (!lt(lo + step)) {
				hi = lo + step;
				break;
			}
			lo += step;
		}
	} else {
		hi = guess;
		for (uint64_t step = 1; step < hi - lo; step *= 2) {
			if (lt(hi - step)) {
				lo = hi - step;
				break;
			}
			hi -= step;
		}
	}
	while (hi - lo > 1) {
		const uint64_t m = lo + (hi - lo) / 2;
		(lt(m) ? lo : hi) = m;
	}
	b.below = hi;
	return b;
}

class StreamFile {
public:
	StreamFile(std::string path, const uint8_t *data, uint64_t size) : path(std::move(path)), data(data), size(size)
	{
	}
	~StreamFile()
	{
		if (data && size)
			munmap(const_cast<uint8_t *>(data), size);
	}
	StreamFile(const StreamFile &) = delete;
	StreamFile &operator=(const StreamFile &) = delete;

	// The bytes before `offset` are read: their whole pages leave this
	// process's memory (the page cache keeps them), so that reading a trace
	// of any size takes about a packet and kReleaseBatch per stream
	// (packets smaller than a page included: what was released is
	// remembered). Batched, unless `all`: a madvise() per small packet
	// costs more than reading it.
	void release_before(uint64_t offset, bool all = false) const
	{
		static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
		const uint64_t end = std::min(offset, size) / page * page;
		if (end > released && (all || end - released >= kReleaseBatch)) {
			// A fault maps a whole large folio of the page cache (up to
			// 2 MiB), maybe starting before what was released already.
			const uint64_t from = released > kFolioMax ? released - kFolioMax : 0;
			madvise(const_cast<uint8_t *>(data) + from, end - from, MADV_DONTNEED);
			released = end;
		}
	}

	// The bytes [from, to) are about to be read: their pages, and those up to
	// kPopulate bytes from `from`, are mapped in one call (MADV_POPULATE_READ)
	// rather than by a page fault every few pages (small packets touch every
	// page). Where the kernel cannot, the faults map them as before. 256 KiB
	// takes as few faults as 1 MiB did, and 1.5 MiB less peak RSS for two
	// streams.
	void populate(uint64_t from, uint64_t to) const
	{
		if (to <= populated || from >= size)
			return;
		static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
		const uint64_t start = std::max(populated, from) / page * page;
		populated = std::min(size, std::max(to, start + kPopulate));
		madvise(const_cast<uint8_t *>(data) + start, populated - start, MADV_POPULATE_READ);
	}

	std::string path;
	const uint8_t *data;
	uint64_t size;
	PacketEntry first; // its first packet's (add_trace, append_packet)
	const TracePlans::StreamPlans *plans = nullptr;
	mutable uint64_t released = 0;  // bytes [0, released) were given back (release_before)
	mutable uint64_t populated = 0; // bytes [.., populated) were mapped (populate)
	static constexpr uint64_t kReleaseBatch = uint64_t{1} << 20;
	static constexpr uint64_t kFolioMax = uint64_t{2} << 20;
	static constexpr uint64_t kPopulate = uint64_t{1} << 18;
};

namespace {

bool parse_uuid(const std::string &s, uint8_t out[16])
{
	size_t k = 0;
	for (size_t i = 0; i < s.size() && k < 32; ++i) {
		const char c = s[i];
		if (c == '-')
			continue;
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		if (k % 2 == 0)
			out[k / 2] = static_cast<uint8_t>(d << 4);
		else
			out[k / 2] = static_cast<uint8_t>(out[k / 2] | d);
		++k;
	}
	return k == 32;
}

std::string hex32(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof b, "0x%08llX", static_cast<unsigned long long>(v));
	return b;
}

// Whether op c of the packet header is its `uuid`: 16 bytes.
bool is_uuid(const Plan &plan, uint32_t c)
{
	const Op &op = plan.ops[c];
	return op.name && *op.name == "uuid" && op.kind == OpKind::array && op.count == 16 &&
	       (plan.ops[c + 1].kind == OpKind::u8 || plan.ops[c + 1].kind == OpKind::integer) &&
	       plan.ops[c + 1].size == 8;
}

// The 16 bytes of the packet header's `uuid` array, if it has one.
bool uuid_bytes(const Plan &plan, const std::vector<Value> &values, uint8_t out[16])
{
	if (plan.empty() || values.empty())
		return false;
	const Op &root = plan.ops[0];
	size_t v = 1;
	uint32_t c = 1;
	for (uint32_t k = 0; k < root.count; ++k) {
		if (is_uuid(plan, c)) {
			for (int i = 0; i < 16; ++i)
				out[i] = static_cast<uint8_t>(values[v + 1 + static_cast<size_t>(i)].u);
			return true;
		}
		v = skip_values(plan, c, values.data(), v);
		c = plan.ops[c].next;
	}
	return false;
}

// Where the packet header's `uuid` is (Trace::uuid_at): at a byte offset
// when the members before it are integers (their sizes fixed), and it is
// byte-aligned there.
int64_t uuid_place(const Plan &plan)
{
	if (plan.empty() || plan.ops[0].kind != OpKind::structure)
		return Trace::kNoUuid;
	uint64_t bits = 0;
	bool fixed = true;
	uint32_t c = 1;
	for (uint32_t k = 0; k < plan.ops[0].count; ++k) {
		const Op &op = plan.ops[c];
		if (fixed)
			bits = (bits + op.align - 1) & ~(uint64_t{op.align} - 1);
		if (is_uuid(plan, c))
			return fixed && bits % 8 == 0 ? static_cast<int64_t>(bits / 8) : Trace::kUuidInValues;
		fixed = fixed &&
		        (op.kind <= OpKind::integer || op.kind == OpKind::float32 || op.kind == OpKind::float64);
		bits += op.size;
		c = op.next;
	}
	return Trace::kNoUuid;
}

// Reads the header and context of the packet at data + off (the file or
// buffer holding size bytes from data) into pe, checked as a reader must:
// magic, trace UUID, stream class, sizes; the context's values into
// `values` unless null. Returns the packet's stream class. Throws ReadError
// naming path and the offset.
const TracePlans::StreamPlans *index_packet(const Trace &t, const std::string &path, const uint8_t *data, uint64_t off,
                                            uint64_t size, PacketEntry &pe, DecodeState &st,
                                            std::vector<Value> &scratch, std::vector<Value> *values)
{
	const TracePlans &plans = *t.plans;
	// Positions are bits from the packet's start (CTF aligns within a packet).
	pe = PacketEntry{};
	pe.offset = off;
	st.packet = &pe.f;
	const uint8_t *pkt = data + off;
	const uint64_t left = (size - off) * 8;
	uint64_t pos = 0;
	try {
		scratch.clear(); // (its values: for a UUID found in them)
		pos = run_plan(plans.packet_header(), pkt, pos, left, st,
		               t.has_uuid && t.uuid_at == Trace::kUuidInValues ? &scratch : nullptr);
	} catch (const DecodeError &e) {
		throw ReadError(path, off + e.bit_offset() / 8, std::string("packet header: ") + e.what());
	}
	if (pe.f.has_magic && pe.f.magic != kCtfMagic)
		throw ReadError(path, off,
		                "bad packet magic " + hex32(pe.f.magic) + " (a CTF packet starts with 0xC1FC1FC1)");
	if (t.has_uuid) {
		uint8_t u[16];
		const bool found = t.uuid_at >= 0 ? (std::memcpy(u, pkt + t.uuid_at, 16), true) // (in the header read)
		                                  : uuid_bytes(plans.packet_header(), scratch, u);
		if (found && std::memcmp(u, t.uuid, 16) != 0)
			throw ReadError(path, off + 4,
			                "the packet's trace UUID is not the metadata's (" + t.cls.uuid + ")");
	}
	const TracePlans::StreamPlans *sp = nullptr;
	if (pe.f.has_stream_id) {
		sp = plans.stream(pe.f.stream_id);
		if (!sp)
			throw ReadError(path, off,
			                "the packet is of stream class " + std::to_string(pe.f.stream_id) +
			                        ", which the metadata does not declare");
	} else if (t.cls.streams.size() == 1) {
		sp = plans.stream(t.cls.streams.begin()->first);
	} else {
		throw ReadError(path, off,
		                "the packet has no stream_id and the metadata declares " +
		                        std::to_string(t.cls.streams.size()) + " stream classes");
	}
	try {
		pos = run_plan(sp->packet_context, pkt, pos, left, st, values);
	} catch (const DecodeError &e) {
		throw ReadError(path, off + e.bit_offset() / 8, std::string("packet context: ") + e.what());
	}
	pe.packet_bits = pe.f.has_packet ? pe.f.packet_bits : pe.f.has_content ? pe.f.content_bits : left;
	pe.content_bits = pe.f.has_content ? pe.f.content_bits : pe.packet_bits;
	if (pe.packet_bits == 0 || pe.packet_bits % 8 != 0 || pe.content_bits > pe.packet_bits)
		throw ReadError(path, off,
		                "impossible packet sizes (content " + std::to_string(pe.content_bits) +
		                        " bits, packet " + std::to_string(pe.packet_bits) + " bits)");
	if (pe.packet_bits > left)
		throw ReadError(path, off,
		                "the packet there declares " + std::to_string(pe.packet_bits / 8) + " bytes but only " +
		                        std::to_string(size - off) + " remain");
	if (pos > pe.content_bits)
		throw ReadError(path, off,
		                "the packet's header and context (" + std::to_string(pos) +
		                        " bits) are larger than its content (" + std::to_string(pe.content_bits) +
		                        " bits)");
	pe.data_bit = pos;
	st.packet = nullptr;
	return sp;
}

// Sets the trace's class and what comes of it: plans, UUID, host name.
void describe(Trace &t, TraceClass cls)
{
	t.cls = std::move(cls);
	try {
		t.plans = std::make_unique<TracePlans>(t.cls);
	} catch (const TsdlError &e) {
		throw ReadError(t.metadata_path, e.offset(), t.metadata_path + ": metadata " + e.what(), true);
	} catch (const std::runtime_error &e) {
		throw ReadError(t.metadata_path, 0, t.metadata_path + ": " + e.what(), true);
	}
	if (!t.cls.uuid.empty()) {
		if (!parse_uuid(t.cls.uuid, t.uuid))
			throw ReadError(t.metadata_path, 0,
			                t.metadata_path + ": metadata: bad trace uuid '" + t.cls.uuid + "'", true);
		t.has_uuid = true;
	}
	t.uuid_at = uuid_place(t.plans->packet_header());
	if (const EnvValue *h = t.cls.env_value("hostname"); h && std::holds_alternative<std::string>(*h)) {
		t.hostname = std::get<std::string>(*h);
		t.has_hostname = true;
	}
}

} // namespace

TraceSet::TraceSet() = default;
TraceSet::~TraceSet() = default;

void TraceSet::add_trace(const std::string &dir, const std::string &name_suffix)
{
	auto t = std::make_unique<Trace>();
	t->dir = dir;
	t->metadata_path = (fs::path(dir) / "metadata").string();
	describe(*t, load_metadata(t->metadata_path));
	t->name = t->hostname;
	if (!name_suffix.empty()) {
		if (t->has_hostname)
			t->name += "/";
		t->name += name_suffix;
	}

	// The stream files: every regular file but metadata and hidden ones.
	std::vector<std::string> paths;
	std::error_code ec;
	for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
		const std::string fname = e.path().filename().string();
		if (fname.empty() || fname[0] == '.' || fname == "metadata")
			continue;
		std::error_code ec2;
		if (!fs::is_regular_file(e.symlink_status(ec2)))
			continue;
		paths.push_back(fs::absolute(e.path(), ec2).lexically_normal().string());
	}
	if (ec)
		throw ReadError(dir, 0, "cannot read the directory: " + ec.message());
	std::sort(paths.begin(), paths.end());

	const TracePlans &plans = *t->plans;
	// (stream class, instance id) -> files, for grouping
	std::map<std::pair<uint64_t, uint64_t>, std::vector<StreamFile *>> groups;
	std::vector<std::pair<uint64_t, StreamFile *>> singles;
	DecodeState st;
	st.regs.assign(plans.registers(), 0);
	std::vector<Value> scratch;
	for (const std::string &path : paths) {
		base::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
		if (!fd)
			throw ReadError(path, 0, std::string("cannot open: ") + strerror(errno));
		struct stat sb;
		if (fstat(fd.get(), &sb) != 0)
			throw ReadError(path, 0, std::string("cannot stat: ") + strerror(errno));
		const auto size = static_cast<uint64_t>(sb.st_size);
		if (size == 0) {
			empty_files_.push_back(path);
			continue;
		}
		void *m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
		if (m == MAP_FAILED)
			throw ReadError(path, 0, std::string("cannot map: ") + strerror(errno));
		madvise(m, size, MADV_SEQUENTIAL);
		files_.push_back(std::make_unique<StreamFile>(path, static_cast<const uint8_t *>(m), size));
		StreamFile &f = *files_.back();
		// Its first packet: its stream class and instance (the others are
		// indexed when the reading reaches them, load_packet).
		f.plans = index_packet(*t, path, f.data, 0, size, f.first, st, scratch, nullptr);
		bytes_total_ += size;
		if (f.first.f.has_stream_instance_id)
			groups[{f.plans->cls->id, f.first.f.stream_instance_id}].push_back(&f);
		else
			singles.emplace_back(f.plans->cls->id, &f);
	}

	const Trace &trace = *t;
	auto make_stream = [&](const TracePlans::StreamPlans *sp, uint64_t id, std::vector<StreamFile *> fl) {
		// A stream's files in the order of their first packets' beginnings.
		std::stable_sort(fl.begin(), fl.end(), [](const StreamFile *a, const StreamFile *b) {
			return a->first.f.begin < b->first.f.begin;
		});
		auto s = std::make_unique<Stream>();
		s->trace_ = &trace;
		s->plans_ = sp;
		s->id_ = id;
		s->name_ = fl.front()->path;
		if (sp->clock)
			s->clock_ = ClockConverter(*sp->clock);
		s->files_.assign(fl.begin(), fl.end());
		s->st_.regs.assign(plans.registers(), 0);
		s->order_ = streams_.size();
		streams_.push_back(std::move(s));
	};
	for (auto &[key, fl] : groups)
		make_stream(plans.stream(key.first), key.second, fl);
	std::map<uint64_t, uint64_t> next_id; // babeltrace2 numbers streams without an instance id per class
	for (auto &[cls, f] : singles)
		make_stream(plans.stream(cls), next_id[cls]++, {f});
	traces_.push_back(std::move(t));
}

// The stream's next packet, indexed and checked here (index_packet), its
// context's values decoded; false when it has no more (yet, if in memory).
bool TraceSet::load_packet(Stream &s)
{
	while (!s.file_ || s.next_offset_ >= s.file_->size) {
		if (s.next_file_ >= s.files_.size())
			return false;
		if (s.file_)
			s.file_->release_before(s.file_->size, true);
		s.file_ = s.files_[s.next_file_++];
		s.next_offset_ = 0;
	}
	const StreamFile &f = *s.file_;
	const uint64_t off = s.next_offset_;
	f.release_before(off);
	// (a kernel trace's packets are small: mapped a MiB at a time)
	f.populate(off, off + 1);
	if (s.packet_) {
		s.prev_entry_ = s.entry_;
		s.prev_packet_ = &s.prev_entry_;
	}
	s.packet_values_.clear();
	if (index_packet(*s.trace_, f.path, f.data, off, f.size, s.entry_, s.st_, scratch_, &s.packet_values_) !=
	    f.plans)
		throw ReadError(f.path, off, "the file's packets are of different stream classes");
	s.packet_ = &s.entry_;
	++s.packets_reached_;
	const PacketEntry &p = s.entry_;
	s.next_offset_ = off + p.packet_bits / 8;
	bytes_done_ += p.packet_bits / 8;
	f.populate(off, off + p.content_bits / 8);
	if (p.f.has_begin)
		s.st_.clock = p.f.begin;
	s.pos_ = p.data_bit;
	s.end_ = p.content_bits;

	const PacketEntry *prev = s.prev_packet_;
	s.pending_packets_msg_ = prev && p.f.has_seq && prev->f.has_seq && p.f.seq > prev->f.seq + 1;
	if (p.f.has_discarded)
		s.pending_events_msg_ = prev ? p.f.discarded != prev->f.discarded : p.f.discarded != 0;
	else
		s.pending_events_msg_ = false;
	return true;
}

void TraceSet::decode_event(Stream &s)
{
	const PacketEntry &p = *s.packet_;
	const uint8_t *base = s.file_->data + p.offset;
	DecodeState &st = s.st_;
	Item &it = s.item_;
	try {
		st.has_event_id = false;
		uint64_t pos = run_plan(s.plans_->event_header, base, s.pos_, s.end_, st, nullptr);
		uint64_t id = st.event_id;
		if (!st.has_event_id) {
			if (s.plans_->events.size() != 1)
				throw DecodeError(s.pos_, "the event header has no id and the stream class has " +
				                                  std::to_string(s.plans_->events.size()) +
				                                  " event classes");
			id = s.plans_->events.front().cls->id;
		}
		const TracePlans::EventPlans *ep = s.plans_->event(id);
		if (!ep)
			throw DecodeError(s.pos_, "event id " + std::to_string(id) +
			                                  " is not in the metadata (stream class " +
			                                  std::to_string(s.plans_->cls->id) + ")");
		const Stream::ClassStep &step = s.steps_[static_cast<size_t>(ep - s.plans_->events.data())];
		const uint64_t stepped = (pos + step.align - 1) & ~(step.align - 1);
		if (step.simple && stepped <= s.end_ && step.bits <= s.end_ - stepped) {
			pos = stepped + step.bits;
			it.stream_context = it.context = it.fields = {};
		} else {
			s.stream_values_.clear();
			s.context_values_.clear();
			s.field_values_.clear();
			const bool contexts = !step.counted;
			pos = run_plan(s.plans_->event_context, base, pos, s.end_, st,
			               contexts ? &s.stream_values_ : nullptr);
			pos = run_plan(ep->context, base, pos, s.end_, st, contexts ? &s.context_values_ : nullptr);
			pos = run_plan(ep->fields, base, pos, s.end_, st, step.fields ? &s.field_values_ : nullptr);
			it.stream_context = s.stream_values_;
			it.context = s.context_values_;
			it.fields = s.field_values_;
		}
		if (pos == s.pos_)
			throw DecodeError(s.pos_, "an event of no bits");
		it.kind = ItemKind::event;
		it.event = ep;
		it.cycles = st.clock;
		it.bits = pos - s.pos_;
		s.pos_ = pos;
		it.ns = s.clock_.ns(st.clock);
		it.packet_context = s.packet_values_;
	} catch (const DecodeError &e) {
		throw ReadError(s.file_->path, p.offset + e.bit_offset() / 8,
		                std::string(e.what()) + " (in the packet at offset " + std::to_string(p.offset) + ")");
	}
}

bool TraceSet::advance(Stream &s)
{
	while (true) {
		Item &it = s.item_;
		if (s.pending_events_msg_) {
			s.pending_events_msg_ = false;
			const PacketEntry &p = *s.packet_;
			const PacketEntry *prev = s.prev_packet_;
			it = Item{};
			it.kind = ItemKind::discarded_events;
			it.count = p.f.discarded - (prev ? prev->f.discarded : 0);
			it.has_range = s.has_clock() && p.f.has_end && (prev ? prev->f.has_end : p.f.has_begin);
			it.begin_cycles = prev ? prev->f.end : p.f.begin;
			it.end_cycles = p.f.end;
			it.ns = s.clock_.ns(it.begin_cycles);
			it.end_ns = s.clock_.ns(it.end_cycles);
			return true;
		}
		if (s.pending_packets_msg_) {
			s.pending_packets_msg_ = false;
			const PacketEntry &p = *s.packet_, &prev = *s.prev_packet_;
			it = Item{};
			it.kind = ItemKind::discarded_packets;
			it.count = p.f.seq - prev.f.seq - 1;
			it.has_range = s.has_clock() && prev.f.has_end && p.f.has_begin;
			it.begin_cycles = prev.f.end;
			it.end_cycles = p.f.begin;
			it.ns = s.clock_.ns(it.begin_cycles);
			it.end_ns = s.clock_.ns(it.end_cycles);
			return true;
		}
		if (s.packet_ && s.pos_ < s.end_) {
			decode_event(s);
			return true;
		}
		if (!load_packet(s))
			return false;
	}
}

namespace {

int type_weight(ItemKind k)
{
	switch (k) {
	case ItemKind::event:
		return 5;
	case ItemKind::discarded_events:
		return 4;
	case ItemKind::discarded_packets:
		return 1;
	case ItemKind::counted: // (never merged)
		return 0;
	}
	return 0;
}

template <class T>
int cmp(T a, T b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

} // namespace

// babeltrace2's muxer order: time, then trace UUID and name, stream class
// and stream ids, message type, event class id and name, stream name.
inline bool TraceSet::less(const Stream *a, const Stream *b) const
{
	const int64_t x = a->item_.ns, y = b->item_.ns;
	return x != y ? x < y : tie_less(a, b);
}

bool TraceSet::before(const Stream &a, const Stream &b) const { return less(&a, &b); }

// less() of items of the same time.
bool TraceSet::tie_less(const Stream *a, const Stream *b) const
{
	const Item &x = a->item_, &y = b->item_;
	int c = 0;
	const Trace &ta = *a->trace_, &tb = *b->trace_;
	if (ta.has_uuid != tb.has_uuid)
		return ta.has_uuid;
	if (ta.has_uuid && (c = std::memcmp(ta.uuid, tb.uuid, 16)) != 0)
		return c < 0;
	if ((c = ta.name.compare(tb.name)) != 0)
		return c < 0;
	if ((c = cmp(a->class_id(), b->class_id())) != 0)
		return c < 0;
	if ((c = cmp(a->id_, b->id_)) != 0)
		return c < 0;
	if (x.kind != y.kind)
		return type_weight(x.kind) > type_weight(y.kind);
	if (x.kind == ItemKind::event) {
		const EventClass &ea = *x.event->cls, &eb = *y.event->cls;
		if ((c = cmp(ea.id, eb.id)) != 0)
			return c < 0;
		if ((c = ea.name.compare(eb.name)) != 0)
			return c < 0;
		if (ea.loglevel.has_value() != eb.loglevel.has_value())
			return ea.loglevel.has_value();
		if (ea.loglevel && (c = cmp(*ea.loglevel, *eb.loglevel)) != 0)
			return c < 0;
		if ((c = ea.emf_uri.compare(eb.emf_uri)) != 0)
			return c < 0;
		if ((c = a->name_.compare(b->name_)) != 0)
			return c < 0;
	} else {
		if ((c = a->name_.compare(b->name_)) != 0)
			return c < 0;
		if ((c = cmp(x.begin_cycles, y.begin_cycles)) != 0)
			return c < 0;
		if ((c = cmp(x.end_cycles, y.end_cycles)) != 0)
			return c < 0;
		if ((c = cmp(x.count, y.count)) != 0)
			return c < 0;
	}
	return a->order_ < b->order_;
}

void TraceSet::sift_down(size_t i)
{
	const size_t n = heap_.size();
	while (true) {
		size_t m = i;
		const size_t l = 2 * i + 1, r = l + 1;
		if (l < n && less(heap_[l], heap_[m]))
			m = l;
		if (r < n && less(heap_[r], heap_[m]))
			m = r;
		if (m == i)
			return;
		std::swap(heap_[i], heap_[m]);
		i = m;
	}
}

inline void TraceSet::settle_top(bool more)
{
	if (!more) {
		heap_.front() = heap_.back();
		heap_.pop_back();
	}
	if (heap_.size() > 1)
		sift_down(0);
}

void TraceSet::sift_up(size_t i)
{
	while (i > 0) {
		const size_t p = (i - 1) / 2;
		if (!less(heap_[i], heap_[p]))
			return;
		std::swap(heap_[i], heap_[p]);
		i = p;
	}
}

void TraceSet::plan_steps(Stream &s) const
{
	// A plain struct's layout as ClassStep::one_string says, if it is so.
	const auto one_string_layout = [](const Plan &plan, Stream::ClassStep &step) {
		const Op &root = plan.ops[0];
		uint64_t head = 0, tail = 0;
		int strings = 0;
		for (uint32_t k = 0; k < root.count; ++k) {
			const Op &m = plan.ops[1 + k];
			if (m.kind == OpKind::string) {
				if (m.align > 8)
					return;
				++strings;
			} else if (strings == 0 && root.align % m.align == 0)
				head = ((head + m.align - 1) & ~(uint64_t{m.align} - 1)) + m.size;
			else if (strings == 1 && m.align <= 8 && m.size % 8 == 0)
				tail += m.size;
			else
				return;
		}
		if (strings != 1 || head % 8 != 0)
			return;
		step.one_string = true;
		step.bits = head;
		step.tail = tail;
	};
	s.steps_.clear();
	for (const TracePlans::EventPlans &e : s.plans_->events) {
		Stream::ClassStep &step = s.steps_.emplace_back();
		step.counted = counted_ && counted_(*s.trace_, *s.plans_, e);
		step.noted = step.counted && noted_ && noted_(*s.trace_, *s.plans_, e);
		step.fields = !step.counted && (!fields_wanted_ || fields_wanted_(*s.trace_, *e.cls));
		const Op *root = e.fields.empty() ? nullptr : &e.fields.ops[0];
		step.simple = s.plans_->event_context.empty() && e.context.empty() &&
		              (!root || (!step.fields && root->skip && root->values <= kMaxValuesPerScope));
		step.plain = step.counted && !step.simple && s.plans_->event_context.empty() && e.context.empty() &&
		             root && root->kind == OpKind::structure && root->plain;
		step.align = root && (step.simple || step.plain) ? root->align : 1;
		step.bits = root && step.simple ? root->bits : 0;
		if (step.plain)
			one_string_layout(e.fields, step);
		step.repeat = step.counted && !step.noted && (step.simple || step.one_string) &&
		              s.plans_->event_header.compact_header && e.cls->id < 31;
	}
	if (counted_)
		s.tallies_.resize(s.steps_.size());
	s.compact_.fill(0);
	const std::vector<uint32_t> &index = s.plans_->event_index;
	if (s.plans_->event_header.compact_header)
		for (size_t id = 0; id < 31 && id < index.size(); ++id)
			s.compact_[id] = index[id];
}

void TraceSet::start()
{
	heap_.clear();
	last_ = nullptr;
	for (auto &s : streams_)
		if (s->plans_)
			plan_steps(*s);
	for (auto &s : streams_)
		if (advance(*s)) {
			heap_.push_back(s.get());
			sift_up(heap_.size() - 1);
		}
}

const Item *TraceSet::next()
{
	if (counted_)
		return next_counting();
	if (last_) {
		Stream &s = *last_;
		// (the common case of advance(): the next event of the same packet)
		const bool more = s.pos_ < s.end_ && s.packet_ && !s.pending_events_msg_ && !s.pending_packets_msg_
		                          ? (decode_event(s), true)
		                          : advance(s);
		settle_top(more);
		last_ = nullptr;
	}
	if (heap_.empty())
		return nullptr;
	last_ = heap_.front();
	Item &it = last_->item_;
	it.stream = last_;
	if (it.kind == ItemKind::event)
		it.seq = ++seq_;
	return &it;
}

namespace {

// The clock after a compact event header (w: its 32 bits): the 27-bit
// timestamp replaces the clock's low bits, carrying over when it is less.
inline uint64_t compact_clock(uint64_t clock, uint32_t w)
{
	constexpr uint64_t kMask = (uint64_t{1} << 27) - 1;
	return clock + (((w >> 5) - clock) & kMask);
}

} // namespace

// Counts s's current event (of a counted class) and the events after it in
// its packet while they are of counted classes and come before every other
// stream's current item. Returns true when s's current item is counted
// (s is at its packet's end: advance it), false when it is the first event
// not counted, decoded.
//
// The events whose header is compact and whose rest is one step or a plain
// struct are read here, in locals; decode_event reads the others (and those
// again, the same, when they do not fit: it says what is wrong).
bool TraceSet::count_run(Stream &s)
{
	const Stream *rival = heap_.size() < 2                                ? nullptr
	                      : heap_.size() == 2 || less(heap_[1], heap_[2]) ? heap_[1]
	                                                                      : heap_[2];
	// an event before the rival's time comes before it (every one, without a rival)
	const ClockConverter::Before before_rival =
		rival ? s.clock_.before(rival->item_.ns) : ClockConverter::Before{0, UINT64_MAX, UINT64_MAX};
	const TracePlans::StreamPlans &sp = *s.plans_;
	const uint32_t *compact = s.compact_.data();
	const uint8_t *base = s.file_->data + s.packet_->offset;
	const Stream::ClassStep *steps = s.steps_.data();
	Stream::Tally *tallies = s.tallies_.data();
	DecodeState &st = s.st_;
	Item &it = s.item_;
	const uint64_t end = s.end_;
	const uint64_t first_seq = seq_ + 1;
	if (!s.run_events_) {
		s.run_first_seq_ = first_seq;
		runs_.push_back(&s);
		s.noted_.clear();
	}
	// the current event (its class, clock value and size), and the position after it
	size_t k = static_cast<size_t>(it.event - sp.events.data());
	uint64_t clock = st.clock, bits = it.bits, pos = s.pos_;
	const uint64_t from = pos - bits; // (the run's bits: from here to its end)
	uint64_t seq = seq_;
	// The next event when its header is compact (not extended) and its rest
	// one step or a plain struct: k, clock, bits and pos moved to it; false
	// when it is not so or does not fit. (The register of the header's 5-bit
	// id is not written: only the header's variant reads it, and
	// decode_event reads the id again before.)
	const auto next_compact = [&]() -> bool {
		const uint64_t p = (pos + 7) & ~uint64_t{7};
		if (p > end || end - p < 32)
			return false;
		uint32_t w;
		std::memcpy(&w, base + (p >> 3), 4); // little-endian host
		const uint32_t c1 = compact[w & 31];
		if (!c1)
			return false;
		const size_t ki = c1 - 1;
		const Stream::ClassStep &step = steps[ki];
		uint64_t q = (p + 32 + step.align - 1) & ~(step.align - 1);
		if (q > end)
			return false;
		if (step.simple) {
			if (step.bits > end - q)
				return false;
			q += step.bits;
		} else if (step.one_string) {
			if (step.bits > end - q)
				return false;
			q += step.bits;
			const size_t len = detail::string_length(base + (q >> 3), static_cast<size_t>((end - q) >> 3));
			if (len == SIZE_MAX || step.tail > end - q - (len + 1) * 8)
				return false;
			q += (len + 1) * 8 + step.tail;
		} else if (!step.plain || (q = detail::run_plain<false>(sp.events[ki].fields, base, q, end, nullptr)) ==
		                                  detail::kNoFit) {
			return false;
		}
		k = ki;
		clock = compact_clock(clock, w);
		bits = q - pos;
		pos = q;
		return true;
	};
	// After two events of class k (ClassStep::repeat) in a row, the events
	// of that class that follow, as
	// next_compact reads them, in a loop of their own: few enough locals
	// for the registers, the tally added to once. It stops at the first
	// event of another class, one that does not fit, or one not before the
	// rival (the main loop reads those again).
	const auto same_class = [&](uint32_t id, const Stream::ClassStep &step) {
		const uint64_t align = step.align, fixed = step.bits, tail = step.tail;
		const bool one_string = step.one_string;
		const uint64_t start = pos;
		uint64_t n = 0;
		while (true) {
			const uint64_t p = (pos + 7) & ~uint64_t{7};
			if (p > end || end - p < 32)
				break;
			uint32_t w;
			std::memcpy(&w, base + (p >> 3), 4); // little-endian host
			if ((w & 31) != id)
				break;
			uint64_t q = (p + 32 + align - 1) & ~(align - 1);
			if (q > end || fixed > end - q)
				break;
			q += fixed;
			if (one_string) {
				const size_t len =
					detail::string_length(base + (q >> 3), static_cast<size_t>((end - q) >> 3));
				if (len == SIZE_MAX || tail > end - q - (len + 1) * 8)
					break;
				q += (len + 1) * 8 + tail;
			}
			const uint64_t c = compact_clock(clock, w);
			if (!before_rival(s.clock_, c))
				break;
			++n;
			bits = q - pos;
			clock = c;
			pos = q;
		}
		if (n) {
			Stream::Tally &t = tallies[k];
			seq += n;
			t.events += n;
			t.bits += pos - start;
			t.last_cycles = clock;
			t.last_seq = seq;
		}
	};
	size_t before = SIZE_MAX; // the class of the event before the current one
	bool counted = true;
	while (true) {
		Stream::Tally &t = tallies[k];
		++seq;
		if (!t.events) {
			t.first_cycles = clock;
			t.first_seq = seq;
		}
		++t.events;
		t.bits += bits;
		t.last_cycles = clock;
		t.last_seq = seq;
		if (steps[k].noted)
			s.noted_.push_back({static_cast<uint32_t>(k), seq, bits, clock});
		if (k == before && steps[k].repeat)
			same_class(static_cast<uint32_t>(sp.events[k].cls->id), steps[k]);
		before = k;
		if (pos >= end)
			break;
		if (next_compact()) {
			const Stream::ClassStep &step = steps[k];
			if (step.counted && before_rival(s.clock_, clock))
				continue;
			// the item, given or compared
			st.clock = clock;
			st.event_id = sp.events[k].cls->id;
			st.has_event_id = true;
			s.pos_ = pos;
			it.event = &sp.events[k];
			it.cycles = clock;
			it.bits = bits;
			it.ns = s.clock_.ns(clock);
			if (!step.counted) // (as decode_event gives it)
				it.stream_context = it.context = it.fields = {};
		} else {
			st.clock = clock;
			s.pos_ = pos;
			try {
				decode_event(s);
			} catch (const ReadError &) {
				// the events counted before it: a run owed before the error
				seq_ = seq;
				s.run_events_ += seq - first_seq + 1;
				s.run_bits_ += pos - from;
				throw;
			}
			k = static_cast<size_t>(it.event - sp.events.data());
			clock = st.clock;
			bits = it.bits;
			pos = s.pos_;
		}
		if (!steps[k].counted || (rival && !less(&s, rival))) {
			counted = false;
			break;
		}
	}
	st.clock = clock;
	s.pos_ = pos;
	seq_ = seq;
	s.run_events_ += seq - first_seq + 1;
	s.run_bits_ += pos - from - (counted ? 0 : bits);
	return counted;
}

// The `counted` item of s's run, which ends.
const Item *TraceSet::run_item(Stream &s)
{
	Item &it = run_item_;
	it = Item{};
	it.kind = ItemKind::counted;
	it.stream = &s;
	it.count = s.run_events_;
	it.bits = s.run_bits_;
	it.seq = s.run_first_seq_;
	it.packet_context = s.packet_values_;
	it.noted = s.noted_;
	s.run_events_ = s.run_bits_ = 0;
	return &it;
}

// next() when counting: next_counting_merge(); after a damaged packet, the
// items of the runs counted before it, then its error.
const Item *TraceSet::next_counting()
{
	if (failed_) {
		if (owed_.empty())
			throw *failed_;
		Stream &s = *owed_.back();
		owed_.pop_back();
		return run_item(s);
	}
	try {
		return next_counting_merge();
	} catch (const ReadError &e) {
		// A damaged packet: the runs counted before it, then the error.
		failed_.emplace(e);
		owed_.insert(owed_.end(), runs_.begin(), runs_.end());
		runs_.clear();
		return next_counting();
	}
}

// The merge of next(), in which each stream's runs of counted events are
// counted where they come (count_run), and their items given at the end of
// their packets and before any other item.
const Item *TraceSet::next_counting_merge()
{
	while (true) {
		if (!owed_.empty()) {
			Stream &s = *owed_.back();
			owed_.pop_back();
			return run_item(s);
		}
		if (held_)
			return std::exchange(held_, nullptr);
		if (last_) {
			Stream &s = *last_;
			const bool in_packet =
				s.packet_ && s.pos_ < s.end_ && !s.pending_events_msg_ && !s.pending_packets_msg_;
			if (!in_packet && s.run_events_) { // its packet ends: its run with it
				runs_.erase(std::find(runs_.begin(), runs_.end(), &s));
				return run_item(s);
			}
			settle_top(in_packet ? (decode_event(s), true) : advance(s));
			last_ = nullptr;
		}
		if (heap_.empty())
			return nullptr;
		Stream &top = *heap_.front();
		Item &it = top.item_;
		if (it.kind == ItemKind::event &&
		    top.steps_[static_cast<size_t>(it.event - top.plans_->events.data())].counted) {
			if (count_run(top))
				last_ = &top;
			else if (heap_.size() > 1)
				sift_down(0);
			continue;
		}
		last_ = &top;
		it.stream = &top;
		if (it.kind == ItemKind::event)
			it.seq = ++seq_;
		if (runs_.empty())
			return &it;
		owed_.swap(runs_);
		held_ = &it;
	}
}

// Live reading: see the header.

namespace {

// A copy of bytes in memory of its own, which a StreamFile unmaps.
const uint8_t *map_copy(std::span<const uint8_t> bytes, const std::string &label)
{
	void *m = mmap(nullptr, bytes.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		throw ReadError(label, 0,
		                std::string("cannot map ") + std::to_string(bytes.size()) +
		                        " bytes: " + strerror(errno));
	std::memcpy(m, bytes.data(), bytes.size());
	return static_cast<const uint8_t *>(m);
}

} // namespace

Trace &TraceSet::add_text_trace(const std::string &metadata, const std::string &label, const std::string &name)
{
	auto t = std::make_unique<Trace>();
	t->metadata_path = label;
	t->name = name;
	describe(*t, parse_metadata(metadata, label));
	traces_.push_back(std::move(t));
	return *traces_.back();
}

Trace &TraceSet::update_text_trace(Trace &old, const std::string &metadata)
{
	auto t = std::make_unique<Trace>();
	t->metadata_path = old.metadata_path;
	t->name = old.name;
	describe(*t, parse_metadata(metadata, old.metadata_path));
	for (const auto &s : streams_)
		if (s->trace_ == &old && s->plans_ && !t->plans->stream(s->plans_->cls->id))
			throw ReadError(old.metadata_path, 0,
			                "the metadata no longer declares stream class " +
			                        std::to_string(s->plans_->cls->id) + ", which " + s->name_ + " has");
	for (const auto &s : streams_) {
		if (s->trace_ != &old)
			continue;
		s->trace_ = t.get();
		if (s->plans_) {
			s->plans_ = t->plans->stream(s->plans_->cls->id);
			s->st_.regs.resize(t->plans->registers(), 0);
			plan_steps(*s);
		}
	}
	// The old trace's classes and plans stay: the items given refer to them.
	const auto slot = std::find_if(traces_.begin(), traces_.end(), [&](const auto &p) { return p.get() == &old; });
	retired_traces_.push_back(std::move(*slot));
	*slot = std::move(t);
	return **slot;
}

void TraceSet::redecode(Stream &s)
{
	if (s.item_.kind != ItemKind::event || !s.packet_)
		return;
	// The stream's clock is the event's own time: a compact timestamp read
	// again against it gives that time again.
	s.pos_ -= s.item_.bits;
	decode_event(s);
}

Stream &TraceSet::add_memory_stream(Trace &t, const std::string &name)
{
	auto s = std::make_unique<Stream>();
	s->trace_ = &t;
	s->name_ = name;
	s->order_ = streams_.size();
	streams_.push_back(std::move(s));
	return *streams_.back();
}

void TraceSet::append_packet(Stream &s, std::span<const uint8_t> packet)
{
	if (packet.empty())
		throw ReadError(s.name_, 0, "an empty packet");
	// The packets the stream has left behind (all but the current one: the
	// one before it, which the discarded counts compare with, is a copy) are
	// dropped.
	const size_t keep_from = s.next_file_ >= 1 ? s.next_file_ - 1 : 0;
	if (keep_from > 0) {
		for (size_t i = 0; i < keep_from; ++i) {
			const StreamFile *f = s.files_[i];
			std::erase_if(files_, [&](const std::unique_ptr<StreamFile> &o) { return o.get() == f; });
		}
		s.files_.erase(s.files_.begin(), s.files_.begin() + static_cast<std::ptrdiff_t>(keep_from));
		s.next_file_ -= keep_from;
	}
	const Trace &t = *s.trace_;
	auto f = std::make_unique<StreamFile>(s.name_, map_copy(packet, s.name_), packet.size());
	DecodeState st;
	st.regs.assign(t.plans->registers(), 0);
	PacketEntry &pe = f->first;
	const TracePlans::StreamPlans *sp = index_packet(t, s.name_, f->data, 0, f->size, pe, st, scratch_, nullptr);
	if (pe.packet_bits != f->size * 8)
		throw ReadError(s.name_, 0,
		                "the packet declares " + std::to_string(pe.packet_bits / 8) + " bytes, not the " +
		                        std::to_string(f->size) + " that came");
	if (s.plans_ && s.plans_ != sp)
		throw ReadError(s.name_, 0, "the stream's packets are of different stream classes");
	if (!s.plans_) {
		s.plans_ = sp;
		if (sp->clock)
			s.clock_ = ClockConverter(*sp->clock);
		s.st_.regs.assign(t.plans->registers(), 0);
		s.id_ = pe.f.has_stream_instance_id ? pe.f.stream_instance_id : next_memory_id_[{&t, sp->cls->id}]++;
		plan_steps(s);
	}
	f->plans = sp;
	bytes_total_ += packet.size();
	s.files_.push_back(f.get());
	files_.push_back(std::move(f));
}

const Item *TraceSet::next_of(Stream &s)
{
	if (!advance(s))
		return nullptr;
	s.item_.stream = &s;
	return &s.item_;
}

} // namespace tracery::ctf::reader
