// kernel/kernel_trace.cpp — see kernel_trace.hpp.
#include "kernel/kernel_trace.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <fstream>
#include <sstream>

#include "ctf/event_header.hpp"
#include "kernel/bpf/syscall_events.hpp"
#include "kernel/bpf/user_strings.hpp"

namespace tracery::kernel {

namespace {

constexpr auto kStatsInterval = std::chrono::milliseconds(100);
// A packet the sink refused is offered again this often.
constexpr auto kRetryInterval = std::chrono::milliseconds(250);
constexpr uint32_t kStreamClass = 0;

// lttng-modules' state dump values (src/lttng-statedump-impl.c).
constexpr int32_t kUserThread = 0, kKernelThread = 1;
constexpr int32_t kModeUnknown = 5, kSubmodeNone = 0;
constexpr int32_t kStatusUnnamed = 0, kStatusWaitCpu = 2, kStatusZombie = 4, kStatusWait = 5, kStatusDead = 7;
constexpr uint64_t kPfKthread = 0x00200000; // PF_KTHREAD, in /proc/PID/stat's flags

const std::vector<CtfField> &process_state_fields()
{
	using T = CtfField::Type;
	static const std::vector<CtfField> fields = {
		{"tid", T::integer, 4, true},     {"pid", T::integer, 4, true},
		{"ppid", T::integer, 4, true},    {"name", T::string},
		{"type", T::integer, 4, true},    {"mode", T::integer, 4, true},
		{"submode", T::integer, 4, true}, {"status", T::integer, 4, true},
		{"cpu", T::integer, 4, false},    {"file_table_address", T::integer, 8, false, true},
	};
	return fields;
}

std::vector<int32_t> numeric_entries(const std::string &dir)
{
	std::vector<int32_t> out;
	DIR *d = ::opendir(dir.c_str());
	if (!d)
		return out;
	while (const dirent *e = ::readdir(d)) {
		int32_t n = 0;
		const char *end = e->d_name + std::strlen(e->d_name);
		if (auto [p, ec] = std::from_chars(e->d_name, end, n); ec == std::errc() && p == end && n > 0)
			out.push_back(n);
	}
	::closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

// One thread as /proc/PID/task/TID/stat describes it.
struct ThreadState {
	std::string comm;
	char state = '?';
	int32_t ppid = 0;
	uint64_t flags = 0;
	uint32_t cpu = 0;
};

bool read_thread(int32_t pid, int32_t tid, ThreadState &t)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
	std::string text;
	if (!std::getline(in, text))
		return false;
	// "TID (COMM) S PPID ..." where COMM may hold spaces and parentheses.
	const size_t open = text.find('('), close = text.rfind(')');
	if (open == std::string::npos || close == std::string::npos || close < open)
		return false;
	t.comm = text.substr(open + 1, close - open - 1);
	std::istringstream rest(text.substr(close + 1));
	std::vector<std::string> f; // f[0] is field 3 (state)
	for (std::string w; rest >> w;)
		f.push_back(w);
	if (f.size() < 37)
		return false;
	t.state = f[0].empty() ? '?' : f[0][0];
	t.ppid = static_cast<int32_t>(std::strtol(f[1].c_str(), nullptr, 10));
	t.flags = std::strtoull(f[6].c_str(), nullptr, 10);
	t.cpu = static_cast<uint32_t>(std::strtoul(f[36].c_str(), nullptr, 10));
	return true;
}

int32_t lttng_status(char state)
{
	switch (state) {
	case 'R':
		return kStatusWaitCpu;
	case 'S':
	case 'D':
		return kStatusWait;
	case 'Z':
		return kStatusZombie;
	case 'X':
		return kStatusDead;
	default:
		return kStatusUnnamed;
	}
}

// Whether the page's commit word says events were lost before it.
bool lost_before(const PageLayout &layout, std::span<const uint8_t> page)
{
	if (page.size() < layout.commit_offset + layout.commit_size)
		return false;
	const uint64_t commit = layout.commit_size == 8 ? base::load_le<uint64_t>(page.data() + layout.commit_offset)
	                                                : base::load_le<uint32_t>(page.data() + layout.commit_offset);
	return (commit & kCommitMissedEvents) != 0;
}

void put_header(std::vector<uint8_t> &out, uint32_t id, uint64_t prev, uint64_t ts)
{
	const bool compact = ctf::can_use_compact_header(id, prev, ts);
	uint8_t header[ctf::kExtendedHeaderSize];
	ctf::write_event_header(header, id, ts, compact);
	out.insert(out.end(), header, header + ctf::event_header_size(compact));
}

} // namespace

uint64_t parse_lost_total(std::string_view stats)
{
	uint64_t total = 0;
	bool found = false;
	size_t pos = 0;
	while (pos < stats.size()) {
		size_t end = stats.find('\n', pos);
		if (end == std::string_view::npos)
			end = stats.size();
		const std::string_view line = stats.substr(pos, end - pos);
		pos = end + 1;
		for (const std::string_view key : {"overrun:", "commit overrun:", "dropped events:"}) {
			if (!line.starts_with(key))
				continue;
			std::string_view v = line.substr(key.size());
			while (!v.empty() && v.front() == ' ')
				v.remove_prefix(1);
			uint64_t n = 0;
			if (std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc())
				throw FormatError("per-CPU stats: unreadable line '" + std::string(line) + "'");
			total += n;
			found = true;
		}
	}
	if (!found)
		throw FormatError("per-CPU stats: no overrun or dropped events line");
	return total;
}

namespace {

// What the classes read of user memory: what the session's BPF programs read.
UserMemory user_memory(const UserStrings *strings, const SyscallEvents *events)
{
	if (events)
		return {true, events->buffer_bytes()};
	return {strings != nullptr, strings ? strings->buffer_bytes() : 0};
}

// The BPF record of the call whose tracefs event of class `k` is `payload`,
// joined by `strings`; null if the class has none or it is not there.
const SyscallSlots *joined_record(const KernelEventClass &k, std::span<const uint8_t> payload, UserStrings *strings)
{
	// Per reader thread: its string's memory goes back and forth with the
	// store's slots, so a joined record allocates nothing.
	thread_local UserStringsRecord taken;
	if (k.user_string_args == 0 || !strings ||
	    !(k.exit_record ? strings->take_exit(payload, taken) : strings->take(payload, k.user_string_args, taken)))
		return nullptr;
	return &taken.view();
}

} // namespace

KernelTrace::KernelTrace(consumer::TraceOutput out, const std::string &channel, ctf::TraceInfo info,
                         std::span<const EventFormat> formats, uint32_t num_cpus, const PageLayout &layout,
                         LostTotal lost_total, std::function<uint64_t()> now, TgidOf tgid_of,
                         std::vector<KernelContext> contexts, UserStrings *user_strings, SyscallEvents *syscall_events)
	: out_(std::move(out)), uuid_(info.uuid), now_(std::move(now)), made_(now_()), earliest_(made_),
	  decoder_(layout), lost_total_(std::move(lost_total)), tgid_of_(std::move(tgid_of)),
	  user_strings_(user_strings),
	  contexts_(std::move(contexts)), stream_names_{channel, kStreamClass, 0, info.uuid},
	  syscall_stream_names_{channel + "_syscalls", kStreamClass, uint64_t{num_cpus} + 1, info.uuid},
	  sink_(out_.sink(stream_names_, num_cpus)),
	  syscalls_sink_(syscall_events ? out_.sink(syscall_stream_names_, num_cpus) : nullptr),
	  syscall_events_(syscall_events), cpus_(2 * size_t{num_cpus}), num_cpus_(num_cpus)
{
	if (needs_thread_table(contexts_))
		threads_ = std::make_unique<ThreadTable>(
			std::any_of(contexts_.begin(), contexts_.end(),
		                    [](KernelContext c) { return c >= KernelContext::pid_ns; }));
	out_.create_local();
	info.identity = lttng_kernel_identity();
	const ctf::MetadataWriter writer(std::move(info));
	std::string text = writer.preamble() + ctf::MetadataWriter::stream_class(kStreamClass, {});
	// The CPU streams' context, inserted in the stream class (the state
	// dump's stream is of the same class: its events carry it too, tid 0).
	if (const std::string context = kernel_context_tsdl(contexts_); !context.empty())
		text.insert(text.rfind("};"), context);
	for (const EventFormat &f : formats) {
		classes_.push_back(
			make_event_class(f, static_cast<uint32_t>(classes_.size()),
		                         user_memory(user_strings_.load(std::memory_order_relaxed), syscall_events_)));
		text += classes_.back().tsdl(kStreamClass);
		add_update(f);
	}
	index_classes();
	statedump_id_ = static_cast<uint32_t>(classes_.size());
	next_id_ = statedump_id_ + 3;
	text += event_class_tsdl("lttng_statedump_start", statedump_id_, kStreamClass, {});
	text += event_class_tsdl("lttng_statedump_process_state", statedump_id_ + 1, kStreamClass,
	                         process_state_fields());
	text += event_class_tsdl("lttng_statedump_end", statedump_id_ + 2, kStreamClass, {});
	grow_class_counters();
	out_.write_metadata(text);
}

void KernelTrace::grow_class_counters()
{
	const std::lock_guard lock(counts_mutex_);
	for (Cpu &c : cpus_)
		while (c.class_events.size() < next_id_)
			c.class_events.emplace_back(0);
}

uint64_t KernelTrace::first_begin(uint64_t ts)
{
	const uint64_t begin = std::min(made_, ts);
	uint64_t earliest = earliest_.load(std::memory_order_relaxed);
	while (begin < earliest && !earliest_.compare_exchange_weak(earliest, begin, std::memory_order_relaxed)) {
	}
	return begin;
}

void KernelTrace::index_classes()
{
	uint16_t max_type = 0;
	for (const KernelEventClass &c : classes_)
		max_type = std::max(max_type, c.type);
	by_type_.assign(size_t{max_type} + 1, nullptr);
	for (const KernelEventClass &c : classes_)
		by_type_[c.type] = &c;
}

void KernelTrace::add_update(const EventFormat &f)
{
	if (!threads_ || f.id > UINT16_MAX)
		return;
	if (updates_.size() <= f.id)
		updates_.resize(f.id + 1);
	updates_[f.id] = ThreadUpdate::of(f);
}

void KernelTrace::add_event_classes(std::span<const EventFormat> formats)
{
	std::string text;
	const std::unique_lock pages(classes_mutex_);
	{
		const std::lock_guard lock(counts_mutex_); // events_of() reads classes_
		for (const EventFormat &f : formats) {
			classes_.push_back(make_event_class(
				f, next_id_++,
				user_memory(user_strings_.load(std::memory_order_relaxed), syscall_events_)));
			text += classes_.back().tsdl(kStreamClass);
			add_update(f);
		}
	}
	grow_class_counters();
	index_classes();
	// Before any event of theirs is enabled, so before any is read.
	if (!text.empty())
		out_.append_metadata(text);
}

void KernelTrace::set_unrecorded(std::vector<uint16_t> types)
{
	const std::unique_lock pages(classes_mutex_);
	unrecorded_.assign(by_type_.size(), false);
	for (const uint16_t t : types)
		if (t < unrecorded_.size())
			unrecorded_[t] = true;
}

void KernelTrace::write_page(uint32_t cpu, std::span<const uint8_t> page, bool more)
{
	Cpu &c = cpus_.at(cpu);
	// Pages come while a packet waits only at the end (the reader drains
	// the CPU then): this page is decoded and counted, not written.
	if (c.pending && (std::chrono::steady_clock::now() < c.retry_at || !send(cpu, c, c.pending_info)))
		return count_unwritten(c, page);
	// Events lost before this page: the open packet ends before them.
	if (c.open && lost_before(decoder_.layout(), page)) {
		close_packet(cpu, c);
		if (c.pending)
			return count_unwritten(c, page);
	}
	if (!c.open)
		c.events.clear();
	uint64_t begin = c.open_begin, prev = c.open_end;
	bool first = !c.open;
	KernelTraceCounts n;
	const std::shared_lock classes(classes_mutex_);
	std::unique_lock<std::mutex> table;
	if (threads_)
		table = std::unique_lock(threads_->mutex());
	const PageResult r = decoder_.decode(page, [&](const RawEvent &e) {
		const std::span<const uint8_t> payload(e.payload, e.size);
		const uint16_t type = e.size >= 2 ? base::load_le<uint16_t>(e.payload) : 0;
		const KernelEventClass *k = type < by_type_.size() ? by_type_[type] : nullptr;
		if (!k) {
			++n.unknown;
			return;
		}
		if (e.size < k->fixed_size) {
			++n.malformed;
			return;
		}
		if (threads_ && type < updates_.size())
			threads_->update(updates_[type], payload); // first: an exec's own event has the new name
		if (type < unrecorded_.size() && unrecorded_[type])
			return;
		const uint64_t ts = std::max(e.timestamp, c.last_ts);
		if (first) {
			begin = prev = c.seq == 0 ? first_begin(ts) : ts;
			first = false;
		}
		put_header(c.events, k->id, prev, ts);
		if (!contexts_.empty()) // the tid is common_pid, at offset 4 of every tracefs payload
			put_kernel_context(c.events, contexts_, e.size >= 8 ? base::load_le<int32_t>(e.payload + 4) : 0,
			                   threads_.get());
		encode_payload(*k, payload, tgid_of_, c.events,
		               joined_record(*k, payload, user_strings_.load(std::memory_order_acquire)));
		prev = c.last_ts = ts;
		++n.events;
		std::atomic<uint64_t> &of_class = c.class_events[k->id];
		of_class.store(of_class.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	});
	n.bad_pages = r.error != nullptr;
	if (r.lost_count_known && c.seq > 0)
		c.lost_in_pages += r.lost;
	const auto now = std::chrono::steady_clock::now();
	if ((r.events_lost && !r.lost_count_known) || now - c.last_stats >= kStatsInterval) {
		c.lost_kernel = lost_of(cpu);
		c.last_stats = now;
	}
	if (first) { // no event: the packet spans the page's time
		prev = std::max(r.page_timestamp, c.last_ts);
		begin = c.seq == 0 ? first_begin(prev) : prev;
	}
	c.last_ts = prev;
	c.last_live = now;
	c.open = true;
	c.open_begin = begin;
	c.open_end = prev;
	c.open_events += n.events;
	if (!more || c.events.size() >= kPacketBytes)
		close_packet(cpu, c);
	statedump_live(); // a busy CPU's reader has no idle() turn
	const std::lock_guard lock(counts_mutex_);
	c.counts.events += n.events;
	c.counts.unknown += n.unknown;
	c.counts.malformed += n.malformed;
	c.counts.bad_pages += n.bad_pages;
}

consumer::PacketSink &KernelTrace::sink_of(uint32_t stream) const
{
	return stream < num_cpus_ ? *sink_ : *syscalls_sink_;
}

uint64_t KernelTrace::lost_of(uint32_t stream) const
{
	return stream < num_cpus_ ? lost_total_(stream) : syscall_events_->lost(stream - num_cpus_);
}

void KernelTrace::write_syscall_events(uint32_t cpu)
{
	if (!syscall_events_ || cpu >= num_cpus_)
		return;
	const uint32_t stream = num_cpus_ + cpu;
	Cpu &c = cpus_[stream];
	if (held(stream))
		return;
	const std::span<const SyscallEventView> records = syscall_events_->read(cpu);
	if (records.empty()) {
		syscall_events_->release(cpu);
		return;
	}
	c.events.clear();
	uint64_t begin = 0, prev = 0;
	KernelTraceCounts n;
	{
		const std::shared_lock classes(classes_mutex_);
		std::unique_lock<std::mutex> table;
		if (threads_)
			table = std::unique_lock(threads_->mutex());
		// Each record as the tracefs payload of its event would be (type,
		// common_pid, __syscall_nr, then the arguments or ret), so that it is
		// encoded as tracefs's events are, its slots from the record.
		uint8_t payload[16 + 6 * 8] = {};
		for (const SyscallEventView &v : records) {
			const KernelEventClass *k = v.event_id < by_type_.size() ? by_type_[v.event_id] : nullptr;
			if (!k) {
				++n.unknown;
				continue;
			}
			const uint64_t ts = std::max(v.timestamp, c.last_ts);
			if (n.events == 0)
				begin = prev = c.seq == 0 ? first_begin(ts) : ts;
			put_header(c.events, k->id, prev, ts);
			if (!contexts_.empty())
				put_kernel_context(c.events, contexts_, static_cast<int32_t>(v.call.tid),
				                   threads_.get());
			base::store_le<uint16_t>(payload, k->type);
			base::store_le<uint32_t>(payload + 4, v.call.tid);
			base::store_le<uint32_t>(payload + 8, static_cast<uint32_t>(v.call.nr) & 0xffff);
			size_t size = sizeof payload;
			if (v.call.exit) {
				base::store_le<uint64_t>(payload + 16, static_cast<uint64_t>(v.ret));
				size = 24;
			} else {
				for (size_t i = 0; i < 6; ++i)
					base::store_le<uint64_t>(payload + 16 + 8 * i, v.call.args[i]);
			}
			encode_payload(*k, {payload, size}, tgid_of_, c.events, &v.call);
			prev = c.last_ts = ts;
			++n.events;
			std::atomic<uint64_t> &of_class = c.class_events[k->id];
			of_class.store(of_class.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
		}
	}
	syscall_events_->release(cpu);
	const auto now = std::chrono::steady_clock::now();
	c.lost_kernel = lost_of(stream);
	c.last_stats = c.last_live = now;
	if (n.events > 0)
		write_packet(stream, c, begin, prev, n.events);
	const std::lock_guard lock(counts_mutex_);
	c.counts.events += n.events;
	c.counts.unknown += n.unknown;
}

uint64_t KernelTrace::lost_so_far(const Cpu &c) { return std::max(c.lost_in_pages, c.lost_kernel) + c.unwritten; }

void KernelTrace::write_packet(uint32_t cpu, Cpu &c, uint64_t begin, uint64_t end, uint64_t events)
{
	ctf::PacketInfo info;
	info.events = events;
	info.timestamp_begin = begin;
	info.timestamp_end = end;
	// Readers give no count for a stream's first packet (nothing before it
	// to subtract): it says 0, the next packet carries what was lost.
	info.events_discarded = c.seq == 0 ? 0 : lost_so_far(c);
	info.seq = c.seq;
	info.cpu_id = cpu % num_cpus_;
	c.streams_seen = sink_of(cpu).streams_started();
	send(cpu, c, info);
}

void KernelTrace::close_packet(uint32_t cpu, Cpu &c)
{
	if (!c.open)
		return;
	c.open = false;
	write_packet(cpu, c, c.open_begin, c.open_end, c.open_events);
	c.open_begin = c.open_end = c.open_events = 0;
}

bool KernelTrace::send(uint32_t cpu, Cpu &c, const ctf::PacketInfo &info)
{
	const auto now = std::chrono::steady_clock::now();
	try {
		sink_of(cpu).write_packet(cpu % num_cpus_, info, c.events.empty() ? nullptr : c.events.data(),
		                          c.events.size());
	} catch (const std::exception &e) {
		// Kept, and offered again: the CPU's reader reads no more meanwhile
		// (held), and the kernel counts what its buffer cannot take.
		c.retry_at = now + kRetryInterval;
		const uint64_t lost = lost_of(cpu);
		const std::lock_guard lock(counts_mutex_);
		if (!c.pending) {
			c.pending = true;
			c.pending_info = info;
			c.lost_at_hold = lost;
			reason_ = e.what();
		}
		c.hold_lost_now = lost - std::min(lost, c.lost_at_hold);
		return false;
	}
	if (c.pending) {
		c.lost_kernel = std::max(c.lost_kernel, lost_of(cpu)); // the next packet carries it
		const std::lock_guard lock(counts_mutex_);
		c.hold_lost += c.lost_kernel - std::min(c.lost_kernel, c.lost_at_hold);
		c.hold_lost_now = 0;
		c.pending = false;
	}
	++c.seq;
	c.written_discarded = info.events_discarded;
	const std::lock_guard lock(counts_mutex_);
	c.counts.discarded = info.events_discarded;
	++c.counts.packets;
	c.counts.bytes += ctf::kPacketPrefixSize + c.events.size();
	return true;
}

bool KernelTrace::held(uint32_t cpu)
{
	Cpu &c = cpus_.at(cpu);
	if (!c.pending)
		return false;
	if (std::chrono::steady_clock::now() < c.retry_at)
		return true;
	return !send(cpu, c, c.pending_info);
}

void KernelTrace::count_unwritten(Cpu &c, std::span<const uint8_t> page)
{
	uint64_t events = 0;
	const PageResult r = decoder_.decode(page, [&](const RawEvent &e) {
		const uint16_t type = e.size >= 2 ? base::load_le<uint16_t>(e.payload) : 0;
		const KernelEventClass *k = type < by_type_.size() ? by_type_[type] : nullptr;
		if (k && e.size >= k->fixed_size &&
		    !(type < unrecorded_.size() && unrecorded_[type])) // what write_page would have written
			++events;
		c.last_ts = std::max(c.last_ts, e.timestamp);
	});
	if (r.lost_count_known && c.seq > 0)
		c.lost_in_pages += r.lost;
	const std::lock_guard lock(counts_mutex_);
	c.unwritten += events;
}

void KernelTrace::give_up(uint32_t cpu, Cpu &c)
{
	if (!c.pending || send(cpu, c, c.pending_info))
		return;
	c.lost_kernel = std::max(c.lost_kernel, lost_of(cpu));
	const std::lock_guard lock(counts_mutex_);
	c.unwritten += c.pending_info.events;
	c.hold_lost += c.lost_kernel - std::min(c.lost_kernel, c.lost_at_hold);
	c.hold_lost_now = 0;
	c.pending = false;
}

consumer::WriteLosses KernelTrace::write_losses() const
{
	const std::lock_guard lock(counts_mutex_);
	consumer::WriteLosses w;
	for (const Cpu &c : cpus_) {
		w.events += c.hold_lost + c.hold_lost_now + c.unwritten;
		w.unwritten_events += c.unwritten;
		w.not_in_trace += c.not_in_trace;
		w.refusing = w.refusing || c.pending;
	}
	w.reason = reason_;
	return w;
}

void KernelTrace::set_live_period(std::chrono::nanoseconds period)
{
	live_period_ = period;
	if (period.count() == 0)
		return;
	for (uint32_t cpu = 0; cpu < cpus_.size(); cpu++) {
		Cpu &c = cpus_[cpu];
		if (c.seq > 0 || !active(cpu))
			continue;
		const uint64_t begin = first_begin(now_());
		c.events.clear();
		write_packet(cpu, c, begin, begin, 0);
		c.last_ts = begin;
	}
}

void KernelTrace::idle(uint32_t cpu)
{
	idle_stream(cpu);
	if (syscall_events_)
		idle_stream(num_cpus_ + cpu);
}

void KernelTrace::idle_stream(uint32_t cpu)
{
	Cpu &c = cpus_.at(cpu);
	close_packet(cpu, c);                       // the CPU's buffer is empty: what was read goes out
	if (live_period_.count() == 0 || c.pending) // a refused packet keeps its events
		return;
	statedump_live();
	const auto now = std::chrono::steady_clock::now();
	if (now - c.last_live < live_period_)
		return;
	c.last_live = now;
	if (c.seq == 0)
		return; // no packet yet: a viewer does not know the stream
	const uint64_t ts = std::max(now_(), c.last_ts);
	if (sink_of(cpu).streams_started() > c.streams_seen) {
		// A stream of the session started since this one's last packet: an
		// empty packet rather than a beacon (consumer::PacketSink::streams_started).
		c.events.clear();
		write_packet(cpu, c, ts, ts, 0);
	} else {
		sink_of(cpu).idle(cpu % num_cpus_, ts);
	}
	// The next packet begins there or later, as the beacon promised a viewer
	// (an event read later but stamped earlier is raised to it, as always).
	c.last_ts = ts;
}

void KernelTrace::finish_cpu(uint32_t cpu, bool at_now)
{
	finish_stream(cpu, at_now);
	if (syscall_events_) {
		write_syscall_events(cpu); // the records before the stop
		finish_stream(num_cpus_ + cpu, at_now);
	}
}

void KernelTrace::finish_stream(uint32_t cpu, bool at_now)
{
	Cpu &c = cpus_.at(cpu);
	close_packet(cpu, c);
	give_up(cpu, c); // a packet still refused: its events are counted
	c.lost_kernel = std::max(c.lost_kernel, lost_of(cpu));
	c.events.clear();
	if (!at_now && c.seq == 0)
		return; // its first packet, in a later chunk, begins when the trace was made, as always
	const uint64_t end = at_now ? std::max(now_(), c.last_ts) : c.last_ts;
	if (c.seq == 0) { // every CPU has its stream, beginning with the earliest one, at 0 lost
		write_packet(cpu, c, std::min(earliest_.load(std::memory_order_relaxed), end), end, 0);
		give_up(cpu, c);
		c.last_ts = end;
	}
	// The last packet ends now, with the exact lost total.
	if (c.last_ts != end || lost_so_far(c) != c.written_discarded)
		write_packet(cpu, c, c.last_ts, end, 0);
	give_up(cpu, c);
	c.last_ts = end;
	const std::lock_guard lock(counts_mutex_);
	c.counts.discarded = lost_so_far(c); // all of them, whether the trace says so or not
	c.not_in_trace = c.counts.discarded - std::min(c.counts.discarded, c.written_discarded);
}

void KernelTrace::write_statedump(const std::function<uint64_t()> &now)
{
	// Held throughout: a beacon given meanwhile would promise the next
	// packet a later beginning (statedump_live skips its turn instead).
	const std::lock_guard statedump_lock(statedump_mutex_);
	std::vector<uint8_t> events;
	// The stream's first packet begins with the earliest CPU stream (see the
	// header).
	const uint64_t begin = statedump_packets_ == 0 ? std::min(earliest_.load(std::memory_order_relaxed), now())
	                                               : std::max(now(), statedump_end_); // not before a beacon given
	uint64_t prev = begin;
	// Its events' context is the thread writing them, as LTTng's state dump
	// events carry the context of the thread that runs it.
	const int32_t self = static_cast<int32_t>(::gettid());
	const auto header = [&](uint32_t id) {
		const uint64_t ts = std::max(now(), prev);
		put_header(events, id, prev, ts);
		if (!contexts_.empty()) {
			std::unique_lock<std::mutex> table;
			if (threads_)
				table = std::unique_lock(threads_->mutex());
			put_kernel_context(events, contexts_, self, threads_.get());
		}
		prev = ts;
	};
	header(statedump_id_);
	uint64_t threads = 0;
	for (const int32_t pid : numeric_entries("/proc")) {
		for (const int32_t tid : numeric_entries("/proc/" + std::to_string(pid) + "/task")) {
			ThreadState t;
			if (!read_thread(pid, tid, t))
				continue; // gone meanwhile
			header(statedump_id_ + 1);
			put_integer(events, static_cast<uint32_t>(tid), 4);
			put_integer(events, static_cast<uint32_t>(pid), 4);
			put_integer(events, static_cast<uint32_t>(t.ppid), 4);
			put_string(events, reinterpret_cast<const uint8_t *>(t.comm.data()), t.comm.size());
			put_integer(events, static_cast<uint32_t>((t.flags & kPfKthread) ? kKernelThread : kUserThread),
			            4);
			put_integer(events, static_cast<uint32_t>(kModeUnknown), 4);
			put_integer(events, static_cast<uint32_t>(kSubmodeNone), 4);
			put_integer(events, static_cast<uint32_t>(lttng_status(t.state)), 4);
			put_integer(events, t.cpu, 4);
			put_integer(events, 0, 8); // the files_struct address: not visible from userspace
			++threads;
		}
	}
	header(statedump_id_ + 2);
	if (!statedump_) // statedump_0, instance num_cpus_
		statedump_ = out_.sink({"statedump", kStreamClass, num_cpus_, uuid_}, 1);
	write_statedump_packet(begin, prev, events, threads + 2);
	const std::lock_guard lock(counts_mutex_);
	statedump_events_ = threads;
}

void KernelTrace::write_statedump_packet(uint64_t begin, uint64_t end, std::span<const uint8_t> events, uint64_t count)
{
	ctf::PacketInfo info;
	info.timestamp_begin = begin;
	info.timestamp_end = end;
	info.seq = statedump_packets_++;
	info.events = count;
	statedump_seen_ = statedump_->streams_started();
	statedump_->write_packet(0, info, events.empty() ? nullptr : events.data(), events.size());
	statedump_end_ = end;
}

void KernelTrace::statedump_live()
{
	if (live_period_.count() == 0)
		return;
	const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
	int64_t due = statedump_due_.load(std::memory_order_relaxed);
	if (now < due || !statedump_due_.compare_exchange_strong(due, now + live_period_.count()))
		return; // not yet, or another CPU's reader does it
	const std::unique_lock lock(statedump_mutex_, std::try_to_lock);
	if (!lock.owns_lock() || !statedump_)
		return; // a state dump being written says more
	const uint64_t ts = std::max(now_(), statedump_end_);
	if (statedump_->streams_started() > statedump_seen_) {
		write_statedump_packet(ts, ts, {}, 0); // see idle()
	} else {
		statedump_->idle(0, ts);
		statedump_end_ = ts; // its next packet (the next state dump's, or finish()'s) begins there or later
	}
}

void KernelTrace::finish()
{
	const std::lock_guard lock(statedump_mutex_);
	finish_statedump();
}

void KernelTrace::finish_statedump()
{
	if (!statedump_)
		return;
	uint64_t end = statedump_end_;
	for (const Cpu &c : cpus_)
		end = std::max(end, c.last_ts);
	if (end != statedump_end_)
		write_statedump_packet(statedump_end_, end, {}, 0);
}

void KernelTrace::close()
{
	{
		const std::lock_guard lock(statedump_mutex_);
		if (statedump_) {
			finish_statedump();
			statedump_->close();
			statedump_.reset();
		}
	}
	sink_->close();
	if (syscalls_sink_)
		syscalls_sink_->close();
}

std::string KernelTrace::continue_in(std::string dir)
{
	out_.continue_in(std::move(dir));
	std::string closing; // the old streams' deferred error: reported once the new ones exist
	try {
		close();
	} catch (const std::exception &e) {
		closing = e.what();
	}
	sink_ = out_.sink(stream_names_, num_cpus_);
	if (syscall_events_)
		syscalls_sink_ = out_.sink(syscall_stream_names_, num_cpus_);
	return closing;
}

KernelTraceCounts KernelTrace::counts() const
{
	const std::lock_guard lock(counts_mutex_);
	KernelTraceCounts total;
	for (const Cpu &c : cpus_) {
		total.events += c.counts.events;
		total.discarded += c.counts.discarded;
		total.unknown += c.counts.unknown;
		total.malformed += c.counts.malformed;
		total.bad_pages += c.counts.bad_pages;
		total.packets += c.counts.packets;
		total.bytes += c.counts.bytes;
	}
	total.statedump = statedump_events_;
	return total;
}

std::vector<uint64_t> KernelTrace::events_of(const std::vector<std::string> &names) const
{
	const std::lock_guard lock(counts_mutex_);
	std::vector<uint64_t> out;
	for (const std::string &name : names) {
		uint64_t n = 0;
		for (const KernelEventClass &k : classes_) {
			if (k.name != name)
				continue;
			for (const Cpu &c : cpus_)
				n += c.class_events[k.id].load(std::memory_order_relaxed);
		}
		out.push_back(n);
	}
	return out;
}

} // namespace tracery::kernel
