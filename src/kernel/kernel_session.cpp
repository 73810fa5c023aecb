// kernel/kernel_session.cpp — see kernel_session.hpp.
#include "kernel/kernel_session.hpp"

#include <sys/fsuid.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace tracery::kernel {

namespace {

constexpr uint32_t kMaxCpu = 1 << 16; // per_cpu/cpuN beyond this is not believed

std::string host_name()
{
	char buf[256] = {};
	::gethostname(buf, sizeof buf - 1);
	return buf;
}

// Filesystem credentials of this thread while it lives, restored after.
// uid (uid_t)-1 changes nothing.
class FsCreds {
public:
	FsCreds(uid_t uid, gid_t gid) : active_(uid != static_cast<uid_t>(-1))
	{
		if (active_) {
			gid_ = static_cast<gid_t>(::setfsgid(gid));
			uid_ = static_cast<uid_t>(::setfsuid(uid));
		}
	}
	~FsCreds()
	{
		if (active_) {
			::setfsuid(uid_);
			::setfsgid(gid_);
		}
	}
	FsCreds(const FsCreds &) = delete;
	FsCreds &operator=(const FsCreds &) = delete;

private:
	bool active_;
	uid_t uid_ = 0;
	gid_t gid_ = 0;
};

} // namespace

const char *trace_clock_for(clock::TickUnit unit) noexcept { return unit == clock::TickUnit::tsc ? "x86-tsc" : "mono"; }

KernelSession::KernelSession(std::string tracefs_root, KernelSessionConfig config)
	: root_(std::move(tracefs_root)), config_(std::move(config))
{
	const std::vector<Tracepoint> all = list_tracepoints(root_);
	for (const std::string &pattern : config_.tracepoints) {
		const std::vector<Tracepoint> m = match_tracepoints(all, pattern);
		if (m.empty())
			throw std::invalid_argument("no kernel tracepoint matches '" + pattern + "'");
		events_.insert(events_.end(), m.begin(), m.end());
	}
	const std::vector<std::string> syscalls = list_syscalls(all);
	const std::vector<std::string> &wanted = config_.all_syscalls ? syscalls : config_.syscalls;
	for (const std::string &name : wanted) {
		if (!std::binary_search(syscalls.begin(), syscalls.end(), name))
			throw std::invalid_argument("no system call '" + name + "' in this kernel's tracepoints");
		events_.push_back({"syscalls", "sys_enter_" + name});
		events_.push_back({"syscalls", "sys_exit_" + name});
	}
	std::sort(events_.begin(), events_.end());
	events_.erase(std::unique(events_.begin(), events_.end()), events_.end());
}

KernelSession::~KernelSession()
{
	try {
		stop();
	} catch (const std::exception &) {
		// The trace is as complete as it could be made.
	}
	instance_.reset(); // removes it, ignoring errors
}

void KernelSession::start()
{
	if (instance_)
		throw std::logic_error("kernel session '" + config_.session_name + "' already started");
	instance_.emplace(root_, instance_name(::getpid(), config_.instance_label.empty() ? config_.session_name
	                                                                                  : config_.instance_label));
	try {
		const Instance &inst = *instance_;
		inst.set_tracing_on(false);
		inst.set_clock(trace_clock_for(config_.tick_unit));
		inst.set_overwrite(config_.overwrite);
		const uint64_t bytes = config_.subbuf_size * config_.num_subbuf;
		if (bytes != 0)
			inst.set_buffer_size_kb((bytes + 1023) / 1024);
		if (!config_.pids.empty())
			inst.set_event_pids(config_.pids, config_.follow_children);
		std::vector<EventFormat> formats;
		for (const Tracepoint &tp : events_) {
			formats.push_back(parse_event_format(
				read_control(root_ + "/events/" + tp.system + "/" + tp.name + "/format"), tp.system));
			inst.enable_event(tp);
		}
		const PageLayout layout =
			make_page_layout(parse_header_page(read_control(root_ + "/events/header_page")),
		                         parse_header_event(read_control(root_ + "/events/header_event")));
		cpus_ = inst.cpus();
		if (cpus_.empty() || cpus_.back() >= kMaxCpu)
			throw TracefsError("tracefs: no usable per_cpu/cpuN in " + inst.path(), EINVAL);
		ctf::TraceInfo info;
		info.uuid = config_.trace_uuid;
		info.clock_uuid = config_.clock_uuid;
		info.hostname = host_name();
		info.clock_scale = config_.clock_scale;
		info.env.push_back({"trace_name", config_.session_name});
		{
			FsCreds as_writer(config_.file_uid, config_.file_gid);
			trace_ = std::make_unique<KernelTrace>(
				trace_dir(), std::move(info), formats, cpus_.back() + 1, layout, [this](uint32_t cpu) {
					FsCreds as_process(::geteuid(), ::getegid()); // stats are tracefs's
					return parse_lost_total(instance_->cpu_stats(cpu));
				});
		}
		readers_ = std::make_unique<CpuReaders>(
			inst, cpus_, layout, [this](uint32_t cpu, std::span<const uint8_t> page) {
				// A reader thread writes nothing but the trace: its
				// credentials are the writer's from its first page on.
				thread_local bool as_writer = false;
				if (!as_writer && config_.file_uid != static_cast<uid_t>(-1)) {
					::setfsgid(config_.file_gid);
					::setfsuid(config_.file_uid);
				}
				as_writer = true;
				trace_->write_page(cpu, page);
			});
		inst.set_tracing_on(true);
		const clock::TickSource source = clock::tick_source(config_.tick_unit);
		FsCreds as_writer(config_.file_uid, config_.file_gid);
		trace_->write_statedump([source] { return clock::ticks(source); });
	} catch (...) {
		readers_.reset();
		trace_.reset();
		instance_.reset();
		throw;
	}
}

void KernelSession::stop()
{
	if (!readers_)
		return;
	instance_->set_tracing_on(false);
	readers_->stop();
	const std::string error = readers_->error();
	std::exception_ptr failure;
	FsCreds as_writer(config_.file_uid, config_.file_gid);
	try {
		for (const uint32_t cpu : cpus_)
			trace_->finish_cpu(cpu);
	} catch (...) {
		failure = std::current_exception();
	}
	try {
		trace_->close();
	} catch (...) {
		if (!failure)
			failure = std::current_exception();
	}
	readers_.reset();
	if (!error.empty())
		throw std::runtime_error("kernel session '" + config_.session_name + "': " + error);
	if (failure)
		std::rethrow_exception(failure);
}

void KernelSession::destroy()
{
	if (instance_) {
		instance_->remove();
		instance_.reset();
	}
}

KernelTraceCounts KernelSession::counts() const { return trace_ ? trace_->counts() : KernelTraceCounts{}; }

} // namespace tracery::kernel
