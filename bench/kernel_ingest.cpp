// bench/kernel_ingest.cpp — kernel-ingest-bench: the CPU a kernel trace
// reader spends per event, and the events it loses, while a child process
// makes getpid() system calls as fast as it can. bench/kernel-ingest runs
// both modes alternating and prints the table of docs/performance.md.
//
//   kernel-ingest-bench tracery|libtracefs [--calls N] [--buffer-kb K] [--tmpdir DIR] [--keep]
//                       [--strings | --openat] [--contexts] [--mono] [--join]
//
// --strings: the child makes openat(AT_FDCWD, kMissingPath, O_RDONLY) calls
// instead (failing with ENOENT), traced as syscalls:sys_enter_openat and
// sys_exit_openat: Tracery's session reads each call's path with its BPF
// program (src/kernel/bpf/) which, with the `mono` clock, writes the call's
// entry and exit events whole (else, and with --join, the path is joined
// to tracefs's entry event); libtracefs reads the pointer as tracefs
// records it. --mono: the `mono` trace clock whatever this machine would
// choose (x86-tsc, where BPF's clock cannot be used). --openat: the same calls, the
// pointer only in both modes (the session's user_strings off). --contexts:
// Tracery's events carry the contexts tid, pid, ppid, prio and procname
// (`add-context -k`; its thread table's events enabled beside them).
//
// Both modes trace syscalls:sys_enter_getpid and sys_exit_getpid (what
// `tracery enable-event -k --syscall getpid` enables) in a private tracefs
// instance tracery-PID-kernel-ingest (kernel::instance_name(): a later
// traceryd removes it if this process is killed with SIGKILL), scoped to
// the child's pid, with the trace clock a Tracery session would choose and
// the kernel's default buffer size unless --buffer-kb says otherwise:
//
//   tracery     a kernel::KernelSession, as traceryd runs it: one reader
//               thread per CPU, each page decoded and written as a CTF
//               packet into DIR/kernel (LTTng's kernel layout).
//   libtracefs  one thread calling tracefs_iterate_raw_events() on the
//               instance until the child is done (each call reads what the
//               CPUs hold, full and partial pages, merged in time order);
//               its callback reads the fields Tracery writes (none for the
//               entry, `ret` for the exit) with tep_read_number_field() and
//               appends the timestamp, event id and fields to a buffer
//               written to DIR/events.bin in 64 KiB writes. Between calls
//               the thread sleeps 2 ms, like Tracery's readers on a page
//               less than half full.
//
// The reader's CPU time is the process's (CLOCK_PROCESS_CPUTIME_ID, which
// counts threads that ended) minus the main thread's (which forks the
// child, sets the instance up, waits for the child and stops): the reader
// threads' user and system time, the reads of trace_pipe_raw included,
// from the start of tracing to the end of the final drain. Lost: the
// kernel's count (per_cpu/cpuN/stats: overrun, commit overrun, dropped
// events) and calls × 2 − events read. Prints one JSON line on stdout.
//
// Never touches a global tracefs setting; the instance and the temporary
// directory are removed at exit, also on SIGINT or SIGTERM (which kill the
// child and end the run early, exit status 130).
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "clock/trace_clock.hpp"
#include "ctf/uuid.hpp"
#include "kernel/kernel_session.hpp"
#include "kernel/kernel_trace.hpp"
#include "kernel/tracefs.hpp"

#include "kernel_ingest_libtracefs.h"

namespace kernel = tracery::kernel;

namespace {

constexpr std::string_view kLabel = "kernel-ingest";

std::atomic<pid_t> g_child{0};
std::atomic<bool> g_interrupted{false};

void on_signal(int)
{
	g_interrupted.store(true);
	const pid_t child = g_child.load();
	if (child > 0)
		::kill(child, SIGKILL);
}

void install_signals()
{
	struct sigaction sa = {};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; // no SA_RESTART: waitpid() returns EINTR
	::sigaction(SIGINT, &sa, nullptr);
	::sigaction(SIGTERM, &sa, nullptr);
}

uint64_t cpu_ns(clockid_t id)
{
	timespec ts{};
	::clock_gettime(id, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t mono_ns() { return cpu_ns(CLOCK_MONOTONIC); }

// The process's CPU time less the main thread's: the reader threads'.
struct ReaderCpu {
	uint64_t process = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	uint64_t main = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t elapsed() const
	{
		return (cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - process) - (cpu_ns(CLOCK_THREAD_CPUTIME_ID) - main);
	}
};

// A path no file has: each openat of the workload fails at once.
constexpr const char *kMissingPath = "/tmp/tracery-kernel-ingest/no-such-file";

// The workload: a child that waits for a byte on a pipe, then makes
// `calls` getpid() (or, `strings`, openat()) system calls and exits.
class Workload {
public:
	Workload(uint64_t calls, bool strings)
	{
		int fds[2];
		if (::pipe(fds) != 0)
			throw std::system_error(errno, std::generic_category(), "pipe");
		const pid_t parent = ::getpid();
		const pid_t pid = ::fork();
		if (pid < 0)
			throw std::system_error(errno, std::generic_category(), "fork");
		if (pid == 0) {
			::prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (::getppid() != parent)
				::_exit(1);
			::close(fds[1]);
			char go = 0;
			if (::read(fds[0], &go, 1) != 1)
				::_exit(1);
			for (uint64_t i = 0; i < calls; ++i)
				if (strings)
					::syscall(SYS_openat, AT_FDCWD, kMissingPath, O_RDONLY);
				else
					::syscall(SYS_getpid);
			::_exit(0);
		}
		::close(fds[0]);
		go_ = fds[1];
		pid_ = pid;
		g_child.store(pid);
	}
	~Workload()
	{
		if (pid_ > 0) {
			::kill(pid_, SIGKILL);
			wait();
		}
		if (go_ >= 0)
			::close(go_);
	}
	Workload(const Workload &) = delete;
	Workload &operator=(const Workload &) = delete;

	pid_t pid() const { return pid_; }
	// Starts the calls; returns when the child has exited: the wall time
	// of the calls in ns.
	uint64_t run()
	{
		const uint64_t t0 = mono_ns();
		if (::write(go_, "g", 1) != 1)
			throw std::system_error(errno, std::generic_category(), "write to the workload's pipe");
		::close(go_);
		go_ = -1;
		const int status = wait();
		const uint64_t t1 = mono_ns();
		if (!g_interrupted.load() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
			throw std::runtime_error("the workload child failed");
		return t1 - t0;
	}

private:
	int wait()
	{
		int status = 0;
		while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
		}
		pid_ = -1;
		g_child.store(0);
		return status;
	}
	pid_t pid_ = -1;
	int go_ = -1;
};

struct Options {
	std::string mode;
	uint64_t calls = 1'000'000;
	uint64_t buffer_kb = 0; // 0: the kernel's default
	std::string tmpdir = "/tmp";
	bool keep = false;
	bool openat = false;   // openat calls instead of getpid
	bool strings = false;  // their paths read (tracery)
	bool contexts = false; // tid, pid, ppid, prio and procname on every event (tracery)
	bool mono = false;     // the `mono` clock (ns ticks) whatever this machine prefers
	bool join = false;     // --strings: tracefs's events joined to BPF's records (not written by BPF)
	const char *syscall() const { return openat ? "openat" : "getpid"; }
};

struct Result {
	uint64_t events = 0;      // read (and written)
	uint64_t lost_kernel = 0; // per_cpu/cpuN/stats, summed
	uint64_t lost_pages = 0;  // as the pages said (libtracefs: missed_events)
	uint64_t workload_ns = 0; // wall time of the calls
	uint64_t reader_cpu_ns = 0;
	uint64_t buffer_kb = 0; // the instance's per-CPU buffer
	uint64_t bytes_written = 0;
	std::string clock;
	tracery::kernel::UserStringsCounts strings;   // tracery, --strings, joined
	tracery::kernel::SyscallEventsCounts written; // tracery, --strings, written by BPF
};

uint64_t lost_total(const kernel::Instance &inst)
{
	uint64_t total = 0;
	for (const uint32_t cpu : inst.cpus())
		total += kernel::parse_lost_total(inst.cpu_stats(cpu));
	return total;
}

uint64_t dir_bytes(const std::string &dir)
{
	uint64_t total = 0;
	for (const auto &e : std::filesystem::recursive_directory_iterator(dir))
		if (e.is_regular_file())
			total += e.file_size();
	return total;
}

Result run_tracery(const std::string &root, const Options &opt, const std::string &dir)
{
	Workload workload(opt.calls, opt.openat);
	kernel::KernelSessionConfig config;
	config.user_strings = opt.strings;
	config.syscalls_by_bpf = !opt.join;
	if (opt.contexts)
		config.contexts = {kernel::KernelContext::tid, kernel::KernelContext::pid, kernel::KernelContext::ppid,
		                   kernel::KernelContext::prio, kernel::KernelContext::procname};
	config.session_name = std::string(kLabel);
	config.output = dir;
	config.syscalls = {opt.syscall()};
	config.processes.pid = std::set<uint64_t>{static_cast<uint64_t>(workload.pid())};
	config.tick_unit = opt.mono ? tracery::clock::TickUnit::ns : tracery::clock::preferred_tick_unit();
	config.clock_scale = tracery::clock::tick_scale(config.tick_unit);
	config.trace_uuid = tracery::ctf::Uuid::random();
	config.clock_uuid = tracery::ctf::Uuid::random();
	if (opt.buffer_kb) {
		config.subbuf_size = opt.buffer_kb * 1024;
		config.num_subbuf = 1;
	}
	kernel::KernelSession session(root, config);
	const ReaderCpu cpu;
	session.start();
	Result r;
	r.workload_ns = workload.run();
	session.stop();
	r.reader_cpu_ns = cpu.elapsed();
	const kernel::KernelTraceCounts counts = session.counts();
	r.events = counts.events;
	r.lost_kernel = counts.discarded;
	r.lost_pages = counts.discarded;
	r.strings = session.user_strings_counts();
	r.written = session.syscall_events_counts();
	if (opt.strings && !session.user_strings_warning().empty())
		throw std::runtime_error(session.user_strings_warning());
	r.clock = kernel::trace_clock_for(config.tick_unit);
	r.buffer_kb = std::stoull(kernel::read_control(session.instance_path() + "/buffer_size_kb"));
	session.destroy();
	r.bytes_written = dir_bytes(dir);
	return r;
}

Result run_libtracefs(const std::string &root, const Options &opt, const std::string &dir)
{
	Workload workload(opt.calls, opt.openat);
	kernel::Instance inst(root, kernel::instance_name(::getpid(), kLabel));
	Result r;
	r.clock = kernel::trace_clock_for(tracery::clock::preferred_tick_unit());
	inst.set_tracing_on(false);
	inst.set_clock(r.clock);
	inst.set_overwrite(false);
	if (opt.buffer_kb)
		inst.set_buffer_size_kb(opt.buffer_kb);
	const pid_t pids[] = {workload.pid()};
	inst.set_event_pids(pids, true);
	inst.enable_event({"syscalls", std::string("sys_enter_") + opt.syscall()});
	inst.enable_event({"syscalls", std::string("sys_exit_") + opt.syscall()});
	r.buffer_kb = inst.buffer_size_kb();

	const std::string out = dir + "/events.bin";
	const std::unique_ptr<ingest_libtracefs, decltype(&ingest_libtracefs_close)> reader_state(
		ingest_libtracefs_open(root.c_str(), inst.name().c_str(), out.c_str()), ingest_libtracefs_close);
	if (!reader_state)
		throw std::runtime_error("libtracefs: could not read the formats, the instance or make " + out);
	ingest_libtracefs *const it = reader_state.get();
	std::atomic<bool> stopping{false};
	std::string error;
	const ReaderCpu cpu;
	inst.set_tracing_on(true);
	std::thread reader([&] {
		try {
			for (;;) {
				// As Tracery's readers: a stop seen before a call means
				// tracing was off before it, so this call drains the rest.
				const bool last = stopping.load();
				if (ingest_libtracefs_iterate(it) < 0)
					throw std::runtime_error("tracefs_iterate_raw_events or the write failed");
				if (last)
					break;
				std::this_thread::sleep_for(std::chrono::milliseconds(2));
			}
		} catch (const std::exception &e) {
			error = e.what();
		}
	});
	try {
		r.workload_ns = workload.run();
	} catch (...) {
		inst.set_tracing_on(false);
		stopping.store(true);
		reader.join();
		throw;
	}
	inst.set_tracing_on(false);
	stopping.store(true);
	reader.join();
	r.reader_cpu_ns = cpu.elapsed();
	if (!error.empty())
		throw std::runtime_error(error);
	r.events = ingest_libtracefs_events(it);
	r.lost_pages = ingest_libtracefs_missed(it);
	r.lost_kernel = lost_total(inst);
	r.bytes_written = ingest_libtracefs_bytes(it);
	inst.remove();
	return r;
}

[[noreturn]] void usage(const char *why)
{
	std::fprintf(stderr,
	             "kernel-ingest-bench: %s\n"
	             "usage: kernel-ingest-bench tracery|libtracefs [--calls N] [--buffer-kb K] [--tmpdir DIR] "
	             "[--keep] [--strings | --openat] [--contexts] [--mono] [--join]\n",
	             why);
	std::exit(2);
}

Options parse(int argc, char **argv)
{
	Options opt;
	if (argc < 2)
		usage("a mode is needed");
	opt.mode = argv[1];
	if (opt.mode != "tracery" && opt.mode != "libtracefs")
		usage("the mode is tracery or libtracefs");
	for (int i = 2; i < argc; ++i) {
		const std::string_view a = argv[i];
		const auto value = [&]() -> std::string {
			if (i + 1 >= argc)
				usage("an option lacks its value");
			return argv[++i];
		};
		if (a == "--calls")
			opt.calls = std::stoull(value());
		else if (a == "--buffer-kb")
			opt.buffer_kb = std::stoull(value());
		else if (a == "--tmpdir")
			opt.tmpdir = value();
		else if (a == "--keep")
			opt.keep = true;
		else if (a == "--strings")
			opt.strings = opt.openat = true;
		else if (a == "--openat")
			opt.openat = true;
		else if (a == "--contexts")
			opt.contexts = true;
		else if (a == "--mono")
			opt.mono = true;
		else if (a == "--join")
			opt.join = true;
		else
			usage("unknown option");
	}
	if (opt.calls == 0)
		usage("--calls must be at least 1");
	return opt;
}

} // namespace

int main(int argc, char **argv)
{
	const Options opt = parse(argc, argv);
	if (::geteuid() != 0) {
		std::fprintf(stderr, "kernel-ingest-bench: needs root (it makes a tracefs instance)\n");
		return 77;
	}
	install_signals();
	tracery::clock::init(); // the backend that decides the tick unit, as in traceryd
	std::string dir = opt.tmpdir + "/kernel-ingest-XXXXXX";
	if (!::mkdtemp(dir.data())) {
		std::fprintf(stderr, "kernel-ingest-bench: mkdtemp %s: %s\n", dir.c_str(), std::strerror(errno));
		return 1;
	}
	int status = 0;
	try {
		const kernel::Tracefs tracefs = kernel::open_tracefs(false);
		const Result r = opt.mode == "tracery" ? run_tracery(tracefs.root, opt, dir)
		                                       : run_libtracefs(tracefs.root, opt, dir);
		if (g_interrupted.load()) {
			status = 130;
		} else {
			const uint64_t expected = opt.calls * 2;
			const double events = static_cast<double>(r.events ? r.events : 1);
			std::printf(
				"{\"mode\": \"%s\", \"calls\": %llu, \"events_expected\": %llu, \"events\": %llu, "
				"\"lost_kernel\": %llu, \"lost_pages\": %llu, \"missing\": %llu, "
				"\"reader_cpu_ns\": %llu, \"reader_ns_per_event\": %.2f, \"workload_s\": %.4f, "
				"\"events_per_s\": %.0f, \"buffer_size_kb\": %llu, \"clock\": \"%s\", "
				"\"bytes_written\": %llu, \"strings_joined\": %llu, \"strings_missing\": %llu, "
				"\"strings_lost\": %llu, \"strings_faults\": %llu, \"strings_late\": %llu, "
				"\"strings_records\": %llu, \"strings_unjoined\": %llu, \"bpf_records\": %llu, "
				"\"bpf_lost\": %llu, \"bpf_faults\": %llu}\n",
				opt.mode.c_str(), static_cast<unsigned long long>(opt.calls),
				static_cast<unsigned long long>(expected), static_cast<unsigned long long>(r.events),
				static_cast<unsigned long long>(r.lost_kernel),
				static_cast<unsigned long long>(r.lost_pages),
				static_cast<unsigned long long>(expected > r.events ? expected - r.events : 0),
				static_cast<unsigned long long>(r.reader_cpu_ns),
				static_cast<double>(r.reader_cpu_ns) / events, static_cast<double>(r.workload_ns) / 1e9,
				static_cast<double>(expected) * 1e9 / static_cast<double>(r.workload_ns),
				static_cast<unsigned long long>(r.buffer_kb), r.clock.c_str(),
				static_cast<unsigned long long>(r.bytes_written),
				static_cast<unsigned long long>(r.strings.joined),
				static_cast<unsigned long long>(r.strings.missing),
				static_cast<unsigned long long>(r.strings.lost),
				static_cast<unsigned long long>(r.strings.faults),
				static_cast<unsigned long long>(r.strings.late),
				static_cast<unsigned long long>(r.strings.records),
				static_cast<unsigned long long>(r.strings.unjoined),
				static_cast<unsigned long long>(r.written.records),
				static_cast<unsigned long long>(r.written.lost),
				static_cast<unsigned long long>(r.written.faults));
		}
	} catch (const std::exception &e) {
		std::fprintf(stderr, "kernel-ingest-bench: %s\n", e.what());
		status = g_interrupted.load() ? 130 : 1;
	}
	if (opt.keep)
		std::fprintf(stderr, "kernel-ingest-bench: kept %s\n", dir.c_str());
	else
		std::filesystem::remove_all(dir);
	return status;
}
