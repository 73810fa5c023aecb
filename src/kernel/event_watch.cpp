// kernel/event_watch.cpp — a kernel event rule in an instance of its own: see event_watch.hpp.
#include "kernel/event_watch.hpp"

#include "base/byte_order.hpp"
#include "base/monotonic.hpp"
#include "kernel/kernel_events.hpp"
#include "kernel/kernel_session.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>

namespace tracery::kernel {

namespace {

constexpr char kRule[] = "trigger";

struct Resolved {
	Tracepoint tp;
	EventFormat format;
	std::string filter; // kernel filter text, "" for none
	std::vector<filter::KernelField> fields;
};

// The rule's events, each with its kernel filter and fields; the events a
// filter cannot record (a field they lack) left out. Throws as check().
std::vector<Resolved> resolve(const std::string &root, const WatchRule &rule)
{
	const std::vector<Tracepoint> matched = match_tracepoints(list_tracepoints(root), rule.pattern);
	if (matched.empty())
		throw std::invalid_argument("no kernel tracepoint matches '" + rule.pattern +
		                            "': see `tracery list -k` (SYSTEM:NAME or NAME, '*' wildcards)");
	if (matched.size() > EventWatch::kMaxEvents)
		throw std::invalid_argument("'" + rule.pattern + "' matches " + std::to_string(matched.size()) +
		                            " tracepoints; a kernel trigger takes at most " +
		                            std::to_string(EventWatch::kMaxEvents) + ": narrow the pattern");
	std::map<std::string, std::string> filters;
	if (!rule.filter.empty())
		filters[kRule] = rule.filter;
	std::vector<Resolved> out;
	std::string why_not;
	for (const Tracepoint &tp : matched) {
		EventFormat format = read_format(root, tp);
		std::optional<std::string> text = event_filter(tp, format, {kRule}, filters, &why_not);
		if (!text)
			continue;
		std::vector<filter::KernelField> fields = filter_fields(make_event_class(format, 0));
		out.push_back({tp, std::move(format), std::move(*text), std::move(fields)});
	}
	if (out.empty())
		throw std::invalid_argument("the filter applies to none of the events '" + rule.pattern +
		                            "' names: " + why_not);
	for (const std::string &name : rule.captures) {
		const bool somewhere = std::any_of(out.begin(), out.end(), [&](const Resolved &r) {
			return std::any_of(r.fields.begin(), r.fields.end(), [&](const filter::KernelField &f) {
				return f.name == name && f.kind != filter::KernelField::Kind::other;
			});
		});
		if (!somewhere)
			throw std::invalid_argument("cannot capture '" + name + "': no event '" + rule.pattern +
			                            "' names has an integer or string field of that name (see the "
			                            "event's fields in a kernel trace)");
	}
	return out;
}

uint64_t clock_ns(clockid_t id)
{
	timespec ts{};
	clock_gettime(id, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// An integer field of `size` bytes at `p`.
uint64_t load_scalar(const uint8_t *p, uint32_t size)
{
	switch (size) {
	case 1:
		return *p;
	case 2:
		return base::load_le<uint16_t>(p);
	case 4:
		return base::load_le<uint32_t>(p);
	default:
		return base::load_le<uint64_t>(p);
	}
}

int64_t sign_extend(uint64_t v, unsigned bits)
{
	return bits >= 64 ? static_cast<int64_t>(v) : static_cast<int64_t>(v << (64 - bits)) >> (64 - bits);
}

// The field's string within the payload: up to its NUL, its length, the
// payload's end and kMaxCapturedString.
std::string load_string(const FieldFormat &f, std::span<const uint8_t> payload)
{
	size_t begin = f.offset, length = 0;
	switch (f.kind) {
	case FieldKind::array:
		length = size_t{f.array_length} * f.elem_size;
		break;
	case FieldKind::data_loc:
	case FieldKind::rel_loc: {
		const uint32_t loc = base::load_le<uint32_t>(payload.data() + f.offset);
		begin = (loc & 0xffff) + (f.kind == FieldKind::rel_loc ? size_t{f.offset} + f.size : 0);
		length = loc >> 16;
		break;
	}
	case FieldKind::trailing:
		length = payload.size();
		break;
	case FieldKind::scalar:
		return {};
	}
	if (begin >= payload.size())
		return {};
	length = std::min({length, payload.size() - begin, EventWatch::kMaxCapturedString});
	const auto *p = reinterpret_cast<const char *>(payload.data() + begin);
	return std::string(p, strnlen(p, length));
}

} // namespace

void EventWatch::check(const std::string &root, const WatchRule &rule) { resolve(root, rule); }

EventWatch::EventWatch(std::string root, const std::string &label, WatchRule rule, OnMatch on_match)
	: root_(std::move(root)), rule_(std::move(rule)), on_match_(std::move(on_match))
{
	const std::vector<Resolved> resolved = resolve(root_, rule_);
	for (const Resolved &r : resolved) {
		Watched w{r.tp.full_name(), r.format.fixed_size(), {}};
		for (const std::string &name : rule_.captures) {
			Capture c{name, std::nullopt, {}};
			const auto it = std::find_if(r.fields.begin(), r.fields.end(),
			                             [&](const filter::KernelField &f) { return f.name == name; });
			if (it != r.fields.end() && it->kind != filter::KernelField::Kind::other) {
				c.meta = *it;
				if (const FieldFormat *f = r.format.field(it->tracefs))
					c.field = *f;
			}
			w.captures.push_back(std::move(c));
		}
		by_type_.emplace(static_cast<uint16_t>(r.format.id), std::move(w));
		events_.push_back(r.tp);
	}
	instance_.emplace(root_, instance_name(::getpid(), label));
	try {
		const Instance &inst = *instance_;
		inst.set_tracing_on(false);
		inst.set_clock(trace_clock_for(clock::TickUnit::ns));
		inst.set_overwrite(false);
		inst.set_buffer_size_kb(kBufferKb);
		layout_ = make_page_layout(parse_header_page(read_control(root_ + "/events/header_page")),
		                           parse_header_event(read_control(root_ + "/events/header_event")));
		cpus_ = inst.cpus();
		for (const Resolved &r : resolved) {
			inst.set_event_filter(r.tp, r.filter);
			inst.enable_event(r.tp);
		}
		for (uint32_t cpu : cpus_)
			pipes_.push_back(inst.open_cpu_pipe(cpu));
		tokens_at_ns_ = base::monotonic_ns();
		thread_ = std::thread([this] { run(); });
		std::unique_lock lock(mutex_);
		wake_.wait(lock, [&] { return tid_.has_value(); });
		const pid_t tid = *tid_;
		lock.unlock();
		inst.add_notrace_pids({&tid, 1});
		inst.set_tracing_on(true);
	} catch (...) {
		if (thread_.joinable()) {
			{
				std::lock_guard lock(mutex_);
				stopping_ = true;
			}
			wake_.notify_all();
			thread_.join();
		}
		pipes_.clear();
		instance_.reset(); // removes it
		throw;
	}
}

EventWatch::~EventWatch()
{
	{
		std::lock_guard lock(mutex_);
		stopping_ = true;
	}
	wake_.notify_all();
	if (thread_.joinable())
		thread_.join();
	pipes_.clear();
	try {
		instance_->remove();
	} catch (const std::exception &) {
		// The Instance's destructor tries again; a later daemon removes it as stale.
	}
}

std::string EventWatch::error() const
{
	std::lock_guard lock(mutex_);
	return error_;
}

bool EventWatch::admit()
{
	const uint64_t now = base::monotonic_ns();
	tokens_ = std::min<double>(kMaxMatchesPerSecond,
	                           tokens_ + kMaxMatchesPerSecond * static_cast<double>(now - tokens_at_ns_) / 1e9);
	tokens_at_ns_ = now;
	if (tokens_ < 1) {
		dropped_++;
		return false;
	}
	tokens_ -= 1;
	return true;
}

void EventWatch::on_event(const RawEvent &e, uint64_t realtime_offset)
{
	if (e.size < 8)
		return;
	const auto it = by_type_.find(base::load_le<uint16_t>(e.payload));
	if (it == by_type_.end() || e.size < it->second.fixed_size || !admit())
		return;
	const Watched &w = it->second;
	const std::span<const uint8_t> payload(e.payload, e.size);
	WatchMatch m{w.event, e.timestamp + realtime_offset, base::load_le<int32_t>(e.payload + 4), {}, dropped_};
	dropped_ = 0;
	for (const Capture &c : w.captures) {
		CapturedValue &v = m.captures[c.name];
		if (!c.field)
			continue;
		const FieldFormat &f = *c.field;
		if (c.meta.kind == filter::KernelField::Kind::string) {
			v = load_string(f, payload);
			continue;
		}
		if (f.kind != FieldKind::scalar || f.offset + f.size > payload.size() || f.size == 0 || f.size > 8)
			continue;
		const uint64_t raw = load_scalar(e.payload + f.offset, f.size);
		if (c.meta.computed) {
			v = int64_t{proc_tgid(static_cast<int32_t>(raw))};
		} else if (c.meta.signed_bits) {
			v = sign_extend(raw, c.meta.signed_bits) + c.meta.bias;
		} else if (f.is_signed || c.meta.bias) {
			v = sign_extend(raw, f.size * 8) + c.meta.bias;
		} else {
			v = raw;
		}
	}
	round_.push_back(std::move(m));
}

void EventWatch::run()
{
	pthread_setname_np(pthread_self(), "kernel-trigger");
	{
		std::lock_guard lock(mutex_);
		tid_ = static_cast<pid_t>(syscall(SYS_gettid));
	}
	wake_.notify_all();
	const PageDecoder decoder(layout_);
	std::vector<uint8_t> page(layout_.page_size);
	std::unique_lock lock(mutex_);
	while (!stopping_) {
		lock.unlock();
		const uint64_t realtime_offset = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
		std::string failed;
		for (size_t i = 0; i < pipes_.size() && failed.empty(); i++) {
			for (size_t n = 0; n < kMaxPagesPerRound; n++) {
				const ssize_t got = read(pipes_[i].get(), page.data(), page.size());
				if (got < 0 && errno == EINTR)
					continue;
				if (got < 0 && errno != EAGAIN) {
					failed = "reading CPU " + std::to_string(cpus_[i]) + "'s trace_pipe_raw of " +
					         instance_->path() + ": " + errno_text(errno);
					break;
				}
				if (got <= 0)
					break;
				const PageResult r =
					decoder.decode(std::span<const uint8_t>(page.data(), static_cast<size_t>(got)),
				                       [&](const RawEvent &e) { on_event(e, realtime_offset); });
				if (r.events_lost)
					dropped_ += r.lost_count_known ? r.lost : 1;
			}
		}
		// In the order they happened: a round reads the CPUs one after the other.
		std::stable_sort(round_.begin(), round_.end(),
		                 [](const WatchMatch &a, const WatchMatch &b) { return a.time_ns < b.time_ns; });
		for (WatchMatch &m : round_)
			on_match_(std::move(m));
		round_.clear();
		// Drops that no match carried: reported alone.
		if (dropped_ != 0) {
			WatchMatch alone;
			alone.time_ns = clock_ns(CLOCK_REALTIME);
			alone.dropped = dropped_;
			dropped_ = 0;
			on_match_(std::move(alone));
		}
		lock.lock();
		if (!failed.empty()) {
			error_ = failed;
			return;
		}
		wake_.wait_for(lock, std::chrono::milliseconds(kPollMs), [&] { return stopping_; });
	}
}

} // namespace tracery::kernel
