// kernel/cpu_readers.cpp — see cpu_readers.hpp.
#include "kernel/cpu_readers.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <exception>

#include "base/byte_order.hpp"

namespace tracery::kernel {

namespace {

constexpr auto kHeldPause = std::chrono::milliseconds(20);

} // namespace

CpuReaders::CpuReaders(const Instance &instance, std::vector<uint32_t> cpus, const PageLayout &layout, OnPage on_page,
                       OnIdle on_idle, Held held, std::chrono::milliseconds empty_pause)
	: layout_(layout), on_page_(std::move(on_page)), on_idle_(std::move(on_idle)), held_(std::move(held)),
	  empty_pause_(empty_pause)
{
	cpus_.reserve(cpus.size());
	for (const uint32_t cpu : cpus)
		cpus_.push_back({cpu, instance.open_cpu_pipe(cpu), {}, {}});
	tids_.assign(cpus_.size(), 0);
	// Each thread publishes its tid, then waits for the go: the tids are
	// excluded from the trace before any page is read.
	for (size_t i = 0; i < cpus_.size(); ++i)
		cpus_[i].thread = std::thread([this, i] {
			{
				std::unique_lock lock(start_mutex_);
				tids_[i] = static_cast<pid_t>(::syscall(SYS_gettid));
				++ready_;
				start_cv_.notify_all();
				start_cv_.wait(lock, [this] { return start_ != Start::waiting; });
				if (start_ == Start::abort)
					return;
			}
			run(cpus_[i]);
		});
	{
		std::unique_lock lock(start_mutex_);
		start_cv_.wait(lock, [this] { return ready_ == cpus_.size(); });
	}
	std::exception_ptr failure;
	try {
		instance.add_notrace_pids(tids_);
	} catch (...) {
		failure = std::current_exception();
	}
	{
		const std::lock_guard lock(start_mutex_);
		start_ = failure ? Start::abort : Start::go;
	}
	start_cv_.notify_all();
	if (failure) {
		for (Cpu &c : cpus_)
			c.thread.join();
		std::rethrow_exception(failure);
	}
}

CpuReaders::~CpuReaders() { stop(); }

void CpuReaders::stop()
{
	stopping_.store(true);
	for (Cpu &c : cpus_)
		if (c.thread.joinable())
			c.thread.join();
}

std::string CpuReaders::error() const
{
	for (const Cpu &c : cpus_)
		if (!c.error.empty())
			return c.error;
	return "";
}

void CpuReaders::run(Cpu &c)
{
	std::vector<uint8_t> page(layout_.page_size);
	try {
		for (;;) {
			// Read the stop flag before reading: a stop seen here means
			// tracing was off before this read, so EAGAIN is the end.
			const bool last = stopping_.load();
			if (!last && held_ && held_(c.cpu)) {
				std::this_thread::sleep_for(kHeldPause);
				continue;
			}
			const ssize_t n = ::read(c.fd.get(), page.data(), page.size());
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno != EAGAIN) {
				c.error = "read cpu" + std::to_string(c.cpu) + " trace_pipe_raw: " + errno_text(errno);
				return;
			}
			if (n <= 0) {
				if (last)
					return;
				if (on_idle_)
					on_idle_(c.cpu);
				std::this_thread::sleep_for(empty_pause_);
				continue;
			}
			// Less than half a page of events: the CPU is quiet, let it fill.
			const uint64_t used =
				static_cast<size_t>(n) >= layout_.commit_offset + 8
					? (layout_.commit_size == 8
			                           ? base::load_le<uint64_t>(page.data() + layout_.commit_offset)
			                           : base::load_le<uint32_t>(page.data() + layout_.commit_offset)) &
						  kCommitSizeMask
					: 0;
			const bool quiet = !last && used < (layout_.page_size - layout_.data_offset) / 2;
			on_page_(c.cpu, std::span<const uint8_t>(page.data(), static_cast<size_t>(n)), !quiet);
			if (quiet)
				std::this_thread::sleep_for(kQuietPause);
		}
	} catch (const std::exception &e) {
		c.error = "cpu" + std::to_string(c.cpu) + " reader: " + e.what();
	}
}

} // namespace tracery::kernel
