// A session's kernel domain: see kernel_domain.hpp.
#include "daemon/kernel_domain.hpp"

#include "daemon/log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <stdexcept>

namespace tracery::daemon {

kernel::ProcessRules process_rules(const KernelSpec &spec)
{
	kernel::ProcessRules r;
	r.follow_children = spec.follow_children;
	for (const control::ProcessAttrRule &rule : spec.tracking.status().rules) {
		kernel::ProcessRules::Values values;
		if (!rule.all)
			values.emplace(rule.values.begin(), rule.values.end());
		for (auto [name, slot] : {std::pair{"pid", &r.pid},
		                          {"vpid", &r.vpid},
		                          {"uid", &r.uid},
		                          {"vuid", &r.vuid},
		                          {"gid", &r.gid},
		                          {"vgid", &r.vgid}})
			if (rule.attribute == name)
				*slot = values;
	}
	return r;
}

control::DomainTracking kernel_tracking_status(const KernelSpec &spec)
{
	control::DomainTracking t = spec.tracking.status();
	t.follow_children = spec.follow_children;
	return t;
}

kernel::KernelSessionConfig KernelDomain::config() const
{
	const SessionIdentity &s = session_;
	kernel::KernelSessionConfig c;
	c.session_name = s.name;
	// Users' session names may be the same: "u1000-NAME".
	// (built by appending: GCC 12 at -O3 warns of "u" + std::string here, -Wrestrict)
	c.instance_label = std::to_string(s.owner);
	c.instance_label.insert(0, 1, 'u').append(1, '-').append(s.name);
	c.output = chunk_.empty() ? s.output : chunk_;
	c.local = s.local();
	c.relay = s.relay.link;
	c.live_period_ns = s.relay.live_period_ns;
	c.channel = spec_.channel_name();
	c.tracepoints.assign(spec_.tracepoints.begin(), spec_.tracepoints.end());
	c.syscalls.assign(spec_.syscalls.begin(), spec_.syscalls.end());
	c.all_syscalls = spec_.all_syscalls;
	c.filters = spec_.filters;
	for (const auto &[name, probe] : spec_.probes)
		c.probes.push_back(
			{name, probe.is_return, "/proc/self/fd/" + std::to_string(probe.file->get()), probe.sites});
	c.processes = process_rules(spec_);
	c.env = spec_.tracking.tracked_env();
	c.subbuf_size = spec_.subbuf_size;
	c.num_subbuf = spec_.num_subbuf;
	c.tracefile = spec_.tracefile;
	c.overwrite = spec_.overwrite || s.snapshot; // a snapshot session's buffer is a flight recorder
	c.snapshot = s.snapshot;
	c.trace_uuid = ctf::Uuid::random();
	c.clock_uuid = s.uuid; // the user trace's clock has no uuid of its own: the trace's
	c.tick_unit = s.tick_unit;
	c.clock_scale = s.clock_scale;
	if (s.owner != geteuid()) {
		c.file_uid = s.owner;
		c.file_gid = s.owner_gid;
	}
	c.contexts = spec_.contexts;
	c.capture_buffers = spec_.capture_buffers;
	return c;
}

void KernelDomain::apply()
{
	if (!trace_ || !trace_->started())
		return;
	try {
		trace_->reconfigure(config());
	} catch (const std::exception &e) {
		throw std::runtime_error(std::string("kernel: ") + e.what());
	}
}

void KernelDomain::start(const std::string &tracefs_root)
{
	if (!spec_.any_events())
		return;
	const SessionIdentity &s = session_;
	kernel::KernelSessionConfig c = config();
	try {
		if (trace_) { // started before: the same instance and trace go on
			trace_->reconfigure(c);
			trace_->start();
		} else {
			auto k = std::make_unique<kernel::KernelSession>(tracefs_root, std::move(c));
			k->start();
			trace_ = std::move(k);
		}
	} catch (const std::exception &e) {
		throw std::runtime_error(std::string("kernel: ") + e.what());
	}
	if (spec_.disabled)
		set_disabled(true);
	log(Level::info, "session %s: kernel tracing in %s (%zu tracepoints)", s.name.c_str(),
	    trace_->instance_path().c_str(), trace_->events().size());
	if (!trace_->user_strings_warning().empty())
		log(Level::warn, "session %s: %s", s.name.c_str(), trace_->user_strings_warning().c_str());
}

void KernelDomain::set_disabled(bool disabled)
{
	spec_.disabled = disabled;
	if (!trace_ || !trace_->started())
		return;
	const std::string path = trace_->instance_path() + "/tracing_on";
	const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
	const bool written = fd >= 0 && write(fd, disabled ? "0" : "1", 1) == 1;
	const int error = errno;
	if (fd >= 0)
		close(fd);
	if (!written)
		throw std::runtime_error("kernel: cannot turn tracing " + std::string(disabled ? "off" : "on") +
		                         " in " + path + ": " + strerror(error));
}

std::string KernelDomain::stop()
{
	if (!trace_)
		return "";
	try {
		trace_->stop();
	} catch (const std::exception &e) {
		log(Level::error, "session %s: %s", session_.name.c_str(), e.what());
		return e.what();
	}
	return "";
}

std::string KernelDomain::rotate(const std::string &chunk)
{
	std::string error;
	if (trace_) {
		try {
			trace_->rotate(chunk);
		} catch (const std::exception &e) {
			log(Level::error, "session %s: kernel rotation: %s", session_.name.c_str(), e.what());
			error = std::string("kernel: ") + e.what();
		}
	}
	if (!trace_ || trace_->trace_dir() == chunk + "/kernel")
		chunk_ = chunk;
	return error;
}

std::string KernelDomain::destroy()
{
	if (!trace_)
		return "";
	std::string error;
	try {
		trace_->destroy();
	} catch (const std::exception &e) {
		log(Level::error, "session %s: kernel instance not removed: %s", session_.name.c_str(), e.what());
		error = e.what();
	}
	trace_.reset();
	return error;
}

void KernelDomain::snapshot(const std::string &dir, const std::shared_ptr<consumer::RelayLink> &relay)
{
	if (!trace_)
		return;
	// Its own credentials: tracefs is the daemon's, the files the owner's.
	try {
		trace_->snapshot(relay ? consumer::TraceOutput("", relay, dir + "/kernel")
		                       : consumer::TraceOutput(dir + "/kernel", nullptr, ""));
	} catch (const std::exception &e) {
		throw std::runtime_error("cannot write the kernel part of snapshot '" + dir + "': " + e.what());
	}
}

uint64_t KernelDomain::snapshot_bytes() const { return trace_ ? trace_->buffer_bytes() : 0; }

} // namespace tracery::daemon
