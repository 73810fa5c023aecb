// kernel/cpu_readers.hpp — one thread per CPU draining an instance's
// per_cpu/cpuN/trace_pipe_raw, handing each page read to the caller.
//
// A read() of trace_pipe_raw returns one page: a full one, or the events
// committed so far (a partial page, which the kernel copies out and
// consumes): each page is whole in itself and decodes alone
// (page_decoder.hpp). When a read finds a page less than half full, the
// thread sleeps kQuietPause (2 ms), and when it finds nothing (EAGAIN), the
// caller's empty pause (2 ms unless it says longer), so a quiet CPU costs
// almost nothing and a busy one is read in full pages. The readers' own
// thread ids are written to the instance's set_event_notrace_pid before any
// page is read: their reads do not trace themselves.
//
// stop() is for after tracing_on = 0: each thread reads until its CPU has
// nothing left, then ends, so every page written before the stop is
// delivered.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "kernel/page_decoder.hpp"
#include "kernel/tracefs.hpp"

namespace tracery::kernel {

class CpuReaders {
public:
	static constexpr std::chrono::milliseconds kQuietPause{2};

	// Called on the CPU's reader thread, one page at a time per CPU
	// (threads of different CPUs call it concurrently). `more`: the reader
	// reads the CPU again at once (the page was at least half full, or
	// stop() drains); false when it sleeps next.
	using OnPage = std::function<void(uint32_t cpu, std::span<const uint8_t> page, bool more)>;
	// Called on the CPU's reader thread when a read found nothing: the
	// CPU's buffer held no committed event then (live sessions' beacons).
	using OnIdle = std::function<void(uint32_t cpu)>;
	// Called on the CPU's reader thread before each read but those of
	// stop(): true while the CPU's pages cannot be written (a full disk),
	// and the reader then reads nothing for a while: the kernel's buffer
	// fills and the kernel counts what it drops, instead of pages read and
	// thrown away.
	using Held = std::function<bool(uint32_t cpu)>;

	// Opens trace_pipe_raw of each CPU in `cpus`, starts the threads and
	// excludes their tids from the instance's events. Throws TracefsError
	// (nothing is left running). `empty_pause`: the sleep after a read that
	// found nothing and its on_idle (a caller whose on_idle drains another
	// buffer of the CPU, sized for it, batches more with a longer one: fewer
	// wake-ups and writes per event).
	CpuReaders(const Instance &instance, std::vector<uint32_t> cpus, const PageLayout &layout, OnPage on_page,
	           OnIdle on_idle = {}, Held held = {}, std::chrono::milliseconds empty_pause = kQuietPause);
	~CpuReaders(); // stop()
	CpuReaders(const CpuReaders &) = delete;
	CpuReaders &operator=(const CpuReaders &) = delete;

	// Drains every CPU, then joins the threads. Idempotent.
	void stop();

	const std::vector<pid_t> &tids() const noexcept { return tids_; }
	// The first error a reader met (a read() failing other than EAGAIN,
	// the callback throwing), "" if none; that reader stopped there.
	std::string error() const;

private:
	struct Cpu {
		uint32_t cpu;
		base::Fd fd;
		std::thread thread;
		std::string error;
	};
	void run(Cpu &c);

	PageLayout layout_;
	OnPage on_page_;
	OnIdle on_idle_;
	Held held_;
	std::chrono::milliseconds empty_pause_;
	std::vector<Cpu> cpus_;
	std::vector<pid_t> tids_;
	std::atomic<bool> stopping_{false};
	// The start: threads wait until their tids are excluded.
	enum class Start { waiting, go, abort };
	std::mutex start_mutex_;
	std::condition_variable start_cv_;
	size_t ready_ = 0;
	Start start_ = Start::waiting;
};

} // namespace tracery::kernel
