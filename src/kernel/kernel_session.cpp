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

// The tracepoints a configuration names, sorted. Throws std::invalid_argument.
std::vector<Tracepoint> resolve_events(const std::string &root, const KernelSessionConfig &config)
{
	std::vector<Tracepoint> events;
	const std::vector<Tracepoint> all = list_tracepoints(root);
	for (const std::string &pattern : config.tracepoints) {
		const std::vector<Tracepoint> m = match_tracepoints(all, pattern);
		if (m.empty())
			throw std::invalid_argument("no kernel tracepoint matches '" + pattern + "'");
		events.insert(events.end(), m.begin(), m.end());
	}
	const std::vector<std::string> syscalls = list_syscalls(all);
	const std::vector<std::string> &wanted = config.all_syscalls ? syscalls : config.syscalls;
	for (const std::string &name : wanted) {
		if (!std::binary_search(syscalls.begin(), syscalls.end(), name))
			throw std::invalid_argument("no system call '" + name + "' in this kernel's tracepoints");
		events.push_back({"syscalls", "sys_enter_" + name});
		events.push_back({"syscalls", "sys_exit_" + name});
	}
	std::sort(events.begin(), events.end());
	events.erase(std::unique(events.begin(), events.end()), events.end());
	return events;
}

bool contains(const std::vector<Tracepoint> &sorted, const Tracepoint &tp)
{
	return std::binary_search(sorted.begin(), sorted.end(), tp);
}

} // namespace

const char *trace_clock_for(clock::TickUnit unit) noexcept { return unit == clock::TickUnit::tsc ? "x86-tsc" : "mono"; }

KernelSession::KernelSession(std::string tracefs_root, KernelSessionConfig config)
	: root_(std::move(tracefs_root)), config_(std::move(config)), events_(resolve_events(root_, config_))
{
}

KernelSession::~KernelSession()
{
	try {
		stop();
	} catch (const std::exception &) {
		// The trace is as complete as it could be made.
	}
	try {
		destroy();
	} catch (const std::exception &) {
		// Left behind: the next daemon removes it (stale_instances()).
	}
}

void KernelSession::reconfigure(const KernelSessionConfig &next)
{
	if (started_)
		throw std::logic_error("kernel session '" + config_.session_name + "' is started: stop it first");
	std::vector<Tracepoint> events = resolve_events(root_, next);
	events_ = std::move(events);
	config_.tracepoints = next.tracepoints;
	config_.syscalls = next.syscalls;
	config_.all_syscalls = next.all_syscalls;
	config_.pids = next.pids;
	config_.follow_children = next.follow_children;
}

void KernelSession::create_instance()
{
	instance_.emplace(root_, instance_name(::getpid(), config_.instance_label.empty() ? config_.session_name
	                                                                                  : config_.instance_label));
	const Instance &inst = *instance_;
	inst.set_tracing_on(false);
	inst.set_clock(trace_clock_for(config_.tick_unit));
	inst.set_overwrite(config_.overwrite);
	const uint64_t bytes = config_.subbuf_size * config_.num_subbuf;
	if (bytes != 0)
		inst.set_buffer_size_kb((bytes + 1023) / 1024);
	layout_ = make_page_layout(parse_header_page(read_control(root_ + "/events/header_page")),
	                           parse_header_event(read_control(root_ + "/events/header_event")));
	cpus_ = inst.cpus();
	if (cpus_.empty() || cpus_.back() >= kMaxCpu)
		throw TracefsError("tracefs: no usable per_cpu/cpuN in " + inst.path(), EINVAL);
}

std::vector<EventFormat> KernelSession::apply_events()
{
	std::vector<EventFormat> added;
	for (const Tracepoint &tp : events_) {
		if (contains(formatted_, tp))
			continue;
		added.push_back(parse_event_format(
			read_control(root_ + "/events/" + tp.system + "/" + tp.name + "/format"), tp.system));
	}
	for (const Tracepoint &tp : enabled_)
		if (!contains(events_, tp))
			instance_->enable_event(tp, false);
	for (const Tracepoint &tp : events_)
		if (!contains(enabled_, tp))
			instance_->enable_event(tp);
	enabled_ = events_;
	formats_.insert(formats_.end(), added.begin(), added.end());
	for (const Tracepoint &tp : events_)
		if (!contains(formatted_, tp))
			formatted_.push_back(tp);
	std::sort(formatted_.begin(), formatted_.end());
	return added;
}

std::unique_ptr<KernelTrace> KernelSession::new_trace(const std::string &dir, std::vector<uint64_t> baseline) const
{
	ctf::TraceInfo info;
	info.uuid = config_.trace_uuid;
	info.clock_uuid = config_.clock_uuid;
	info.hostname = host_name();
	info.clock_scale = config_.clock_scale;
	info.env.push_back({"trace_name", config_.session_name});
	FsCreds as_writer(config_.file_uid, config_.file_gid);
	return std::make_unique<KernelTrace>(dir, std::move(info), formats_, cpus_.back() + 1, layout_,
	                                     [this, baseline = std::move(baseline)](uint32_t cpu) {
						     FsCreds as_process(::geteuid(),
		                                                        ::getegid()); // stats are tracefs's
						     const uint64_t total = parse_lost_total(instance_->cpu_stats(cpu));
						     const uint64_t before = cpu < baseline.size() ? baseline[cpu] : 0;
						     return total > before ? total - before : 0;
					     });
}

std::unique_ptr<CpuReaders> KernelSession::start_readers(KernelTrace &trace)
{
	return std::make_unique<CpuReaders>(*instance_, cpus_, layout_,
	                                    [this, &trace](uint32_t cpu, std::span<const uint8_t> page) {
						    // A reader thread writes nothing but the trace: its credentials are
						    // the writer's from its first page on.
						    thread_local bool as_writer = false;
						    if (!as_writer && config_.file_uid != static_cast<uid_t>(-1)) {
							    ::setfsgid(config_.file_gid);
							    ::setfsuid(config_.file_uid);
						    }
						    as_writer = true;
						    trace.write_page(cpu, page);
					    });
}

void KernelSession::drain(std::unique_ptr<CpuReaders> readers, KernelTrace &trace)
{
	readers->stop();
	const std::string error = readers->error();
	readers.reset();
	instance_->clear_notrace_pids();
	FsCreds as_writer(config_.file_uid, config_.file_gid);
	for (const uint32_t cpu : cpus_)
		trace.finish_cpu(cpu);
	if (!error.empty())
		throw std::runtime_error("kernel session '" + config_.session_name + "': " + error);
}

void KernelSession::write_statedump(KernelTrace &trace) const
{
	const clock::TickSource source = clock::tick_source(config_.tick_unit);
	FsCreds as_writer(config_.file_uid, config_.file_gid);
	trace.write_statedump([source] { return clock::ticks(source); });
}

void KernelSession::start()
{
	if (started_)
		throw std::logic_error("kernel session '" + config_.session_name + "' already started");
	const bool first = !instance_;
	try {
		if (first)
			create_instance();
		const std::vector<EventFormat> added = apply_events();
		instance_->set_event_pids(config_.pids, config_.follow_children);
		if (!config_.snapshot) {
			if (!trace_) {
				trace_ = new_trace(trace_dir(), {});
			} else if (!added.empty()) {
				FsCreds as_writer(config_.file_uid, config_.file_gid);
				trace_->add_event_classes(added);
			}
			readers_ = start_readers(*trace_);
		}
		instance_->set_tracing_on(true);
		started_ = true;
		if (trace_)
			write_statedump(*trace_);
	} catch (...) {
		started_ = false;
		try {
			if (instance_)
				instance_->set_tracing_on(false);
			if (readers_)
				drain(std::move(readers_), *trace_);
		} catch (const std::exception &) {
			// The first error is the one to report.
		}
		if (first) {
			trace_.reset();
			instance_.reset();
			enabled_.clear();
			formats_.clear();
			formatted_.clear();
		}
		throw;
	}
}

void KernelSession::stop()
{
	if (!started_)
		return;
	started_ = false;
	instance_->set_tracing_on(false);
	if (readers_)
		drain(std::move(readers_), *trace_);
}

void KernelSession::snapshot(const std::string &dir)
{
	if (!config_.snapshot || !instance_)
		throw std::logic_error("kernel session '" + config_.session_name +
		                       "': a snapshot is for a started snapshot session");
	// What the kernel counted lost before this read is not lost within the
	// snapshot's streams: older events the buffer overwrote.
	std::vector<uint64_t> baseline(cpus_.back() + 1, 0);
	for (const uint32_t cpu : cpus_)
		baseline[cpu] = parse_lost_total(instance_->cpu_stats(cpu));
	std::unique_ptr<KernelTrace> trace = new_trace(dir + "/kernel", std::move(baseline));
	drain(start_readers(*trace), *trace); // stopped at once: each reads what there is
	write_statedump(*trace);
	FsCreds as_writer(config_.file_uid, config_.file_gid);
	trace->close();
}

void KernelSession::destroy()
{
	stop();
	if (trace_) {
		FsCreds as_writer(config_.file_uid, config_.file_gid);
		trace_->close();
		trace_.reset();
	}
	if (instance_) {
		instance_->remove();
		instance_.reset();
	}
}

KernelTraceCounts KernelSession::counts() const { return trace_ ? trace_->counts() : KernelTraceCounts{}; }

} // namespace tracery::kernel
