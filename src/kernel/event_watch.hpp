// kernel/event_watch.hpp — a kernel event rule evaluated where the event
// happens, without recording it in any session: the daemon's kernel event
// triggers.
//
// Each EventWatch has a tracefs instance of its own (tracery-PID-LABEL, so
// that a later daemon removes it if this one is killed), with a small
// buffer (kBufferKb per CPU, discard mode, the `mono` clock), in which the
// rule's tracepoints are enabled with the rule's filter translated for the
// kernel (filter/kernel_filter.hpp): an event the filter rejects never
// leaves the kernel, one it accepts is a match. No session's instance is
// touched: a watch outlives any session, and a session's events and
// filters do not change what it sees.
//
// One thread reads every CPU's trace_pipe_raw (non-blocking, at most
// kMaxPagesPerRound pages a CPU a round, then sleeps kPollMs), decodes each
// page (page_decoder.hpp) and hands the round's matches to the caller in
// the order of their timestamps, each with the
// captured fields read from the payload by the trace's field names (as
// the filter names them). Its own thread id is in the instance's
// set_event_notrace_pid. Bounds: at most kMaxMatchesPerSecond matches a
// second reach the caller; the others, and what the kernel dropped when the
// buffer was full (the pages' lost counts), are counted in `dropped` of the
// next match (or of an empty report, when none comes).
#pragma once

#include "base/fd.hpp"
#include "filter/kernel_filter.hpp"
#include "kernel/format.hpp"
#include "kernel/page_decoder.hpp"
#include "kernel/tracefs.hpp"

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace tracery::kernel {

struct WatchRule {
	std::string pattern;               // match_tracepoints(): "sched_process_exec", "syscalls:sys_enter_open*"
	std::string filter;                // a filter expression (filter/parser.hpp), "" for none
	std::vector<std::string> captures; // fields by their trace names
};

// A captured value: absent (the event has no such field, or not an integer
// or string), an integer, or a string.
using CapturedValue = std::variant<std::monostate, int64_t, uint64_t, std::string>;

struct WatchMatch {
	std::string event;    // SYSTEM:NAME; "" in a report of drops alone
	uint64_t time_ns = 0; // CLOCK_REALTIME of the event
	int32_t tid = 0;      // the thread the event happened in
	std::map<std::string, CapturedValue> captures;
	uint64_t dropped = 0; // matches lost since the previous report
};

class EventWatch {
public:
	static constexpr uint64_t kBufferKb = 64;
	static constexpr size_t kMaxEvents = 256; // tracepoints a rule may name
	static constexpr uint32_t kPollMs = 10;
	static constexpr size_t kMaxPagesPerRound = 64;
	static constexpr uint32_t kMaxMatchesPerSecond = 1000;
	static constexpr size_t kMaxCapturedString = 1024;

	using OnMatch = std::function<void(WatchMatch)>;

	// Checks the rule against this kernel without touching it: its pattern
	// names 1 to kMaxEvents tracepoints, the filter translates for at least
	// one of them, every capture is an integer or string field of at least
	// one. Throws std::invalid_argument (one line naming the fault),
	// TracefsError, FormatError.
	static void check(const std::string &root, const WatchRule &rule);

	// Checks the rule, makes the instance (tracery-PID-LABEL), enables the
	// events and starts the thread. Throws as check(), and TracefsError
	// (nothing left behind).
	EventWatch(std::string root, const std::string &label, WatchRule rule, OnMatch on_match);
	~EventWatch(); // stops the thread (on_match is not called after), removes the instance
	EventWatch(const EventWatch &) = delete;
	EventWatch &operator=(const EventWatch &) = delete;

	const std::string &instance_path() const noexcept { return instance_->path(); }
	const std::vector<Tracepoint> &events() const noexcept { return events_; }
	// The first error the reader met ("" if none); it stopped there.
	std::string error() const;

private:
	struct Capture {
		std::string name;
		std::optional<FieldFormat> field; // none: the event has no such integer or string
		filter::KernelField meta;         // its tracefs field, bias, sign
	};
	struct Watched {
		std::string event;
		uint32_t fixed_size = 0;
		std::vector<Capture> captures; // in the rule's order
	};
	void run();
	void on_event(const RawEvent &e, uint64_t realtime_offset);
	bool admit(); // the rate bound

	std::string root_;
	WatchRule rule_;
	OnMatch on_match_;
	std::vector<Tracepoint> events_;
	std::map<uint16_t, Watched> by_type_;
	std::optional<Instance> instance_;
	PageLayout layout_{};
	std::vector<uint32_t> cpus_;
	std::vector<base::Fd> pipes_;
	std::vector<WatchMatch> round_; // a round's matches, at most kMaxPagesPerRound pages a CPU
	uint64_t dropped_ = 0;
	double tokens_ = kMaxMatchesPerSecond;
	uint64_t tokens_at_ns_ = 0;
	mutable std::mutex mutex_;
	std::condition_variable wake_;
	bool stopping_ = false;
	std::string error_;
	// The thread's tid, once its notrace pid is written (the constructor waits).
	std::optional<pid_t> tid_;
	std::thread thread_;
};

} // namespace tracery::kernel
