// A tracing session in the daemon: see trace_session.hpp.
#include "daemon/trace_session.hpp"

#include "base/fs_creds.hpp"
#include "daemon/log.hpp"

#include "clock/trace_clock.hpp"
#include "consumer/file_sink.hpp"
#include "consumer/trace_channel.hpp"
#include "control/wire.hpp"
#include "ctf/trace_dir.hpp"
#include "event/schema.hpp"
#include "filter/compiler.hpp"
#include "filter/parser.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>

namespace tracery::daemon {

using nlohmann::json;

const char *state_name(SessionState s)
{
	// clang-format off
	switch (s) {
	case SessionState::created: return "created";
	case SessionState::started: return "started";
	case SessionState::stopping: return "stopping";
	case SessionState::stopped: return "stopped";
	}
	// clang-format on
	return "?";
}

namespace {

bool is_empty_dir(const std::string &path)
{
	DIR *d = opendir(path.c_str());
	if (!d)
		return false;
	bool empty = true;
	while (dirent *e = readdir(d))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

std::string host_name()
{
	char buf[256] = {};
	gethostname(buf, sizeof buf - 1);
	return buf;
}

std::string now_stamp()
{
	time_t t = time(nullptr);
	tm tm_;
	localtime_r(&t, &tm_);
	char buf[32];
	strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm_);
	return buf;
}

std::vector<std::string> context_names(const event::ContextOptions &c)
{
	std::vector<std::string> out;
	if (c.vpid)
		out.push_back("vpid");
	if (c.vtid)
		out.push_back("vtid");
	if (c.procname)
		out.push_back("procname");
	return out;
}

} // namespace

TraceSession::TraceSession(uint64_t id, std::string name, uid_t owner, gid_t owner_gid, std::string output,
                           bool snapshot, BufferQuota &quota, SessionRelay relay)
	: quota_(quota), id_(id), name_(std::move(name)), owner_(owner), owner_gid_(owner_gid),
	  output_(std::move(output)), snapshot_(snapshot), uuid_(ctf::Uuid::random()),
	  clock_scale_(clock::tick_scale(tick_unit_)), relay_(std::move(relay))
{
	ctf::TraceInfo info;
	info.uuid = uuid_;
	info.hostname = host_name();
	info.clock_scale = clock_scale_;
	info.env.push_back({"tracer_session", name_});
	writer_ = std::make_unique<ctf::MetadataWriter>(info);
	if (!local())
		return; // only sent to the relay
	base::FsCreds as_owner(owner_, owner_gid_);
	struct stat st;
	if (stat(output_.c_str(), &st) == 0 && (!S_ISDIR(st.st_mode) || !is_empty_dir(output_)))
		throw std::runtime_error("output directory '" + output_ +
		                         "' is not empty: give a new or empty directory with --output DIR");
	try {
		ctf::make_directories(output_, 0700);
	} catch (const std::system_error &e) {
		throw std::runtime_error("cannot create output directory '" + output_ +
		                         "': " + strerror(e.code().value()) +
		                         "; choose a writable directory with --output DIR");
	}
	const std::string probe = output_ + "/.tracery-write-check";
	int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		throw std::runtime_error("output directory '" + output_ + "' is not writable: " + strerror(errno) +
		                         "; choose a writable directory with --output DIR");
	close(fd);
	unlink(probe.c_str());
	chmod(output_.c_str(), 0700);
}

consumer::TraceOutput &TraceSession::user_output()
{
	if (!user_output_)
		user_output_.emplace(local() ? user_dir() : "", relay_.link, "ust");
	return *user_output_;
}

Channel *TraceSession::find_channel(const std::string &name)
{
	for (auto &c : channels_)
		if (c->spec().name == name)
			return c.get();
	return nullptr;
}

Channel &TraceSession::add_channel(ChannelSpec spec)
{
	if (find_channel(spec.name))
		throw std::runtime_error("channel '" + spec.name + "' already exists in session '" + name_ + "'");
	if (ever_started())
		throw std::runtime_error("session '" + name_ +
		                         "' has been started: channels are added before the first `tracery start`");
	if (snapshot_)
		spec.mode = ringbuf::Mode::overwrite;
	uint64_t others = 0;
	for (const auto &c : channels_)
		others += c->buffer_bytes();
	const ringbuf::Config config = consumer::trace_channel_config(spec.num_subbuf, spec.subbuf_size, spec.mode);
	if (const std::string refusal = channel_refusal(spec.name, config, others, quota_.limit()); !refusal.empty())
		throw std::runtime_error(refusal);
	channels_.push_back(std::make_unique<Channel>(static_cast<uint32_t>(channels_.size()), std::move(spec)));
	return *channels_.back();
}

Channel &TraceSession::channel_or_default(const std::string &name)
{
	if (Channel *c = find_channel(name.empty() ? "channel0" : name))
		return *c;
	if (!name.empty() && name != "channel0")
		throw std::runtime_error("no channel '" + name + "' in session '" + name_ +
		                         "': create it with `tracery enable-channel -u " + name + "`");
	return add_channel(ChannelSpec{});
}

void TraceSession::write_metadata()
{
	if (metadata_written_)
		return;
	std::string text = writer_->preamble();
	for (const auto &c : channels_)
		text += ctf::MetadataWriter::stream_class(c->index(), c->spec().context);
	text += metadata_; // event classes given before (none in practice)
	if (!snapshot_) {
		base::FsCreds as_owner(owner_, owner_gid_);
		try {
			user_output().create_local();
			user_output().write_metadata(text);
		} catch (const std::system_error &e) {
			throw std::runtime_error("cannot write the trace metadata in '" + output_ +
			                         "': " + strerror(e.code().value()) +
			                         "; free some space or create the session with another --output");
		}
	}
	metadata_ = text;
	metadata_written_ = true;
}

std::map<std::string, uint32_t> TraceSession::ids_for(Channel &ch, const std::map<std::string, json> &events)
{
	std::map<std::string, uint32_t> ids;
	std::string blocks;
	for (const auto &[key, schema] : events) {
		if (!ch.enabled(event::full_name(schema)))
			continue;
		bool is_new = false;
		if (!ch.ids().count(key)) {
			try {
				event::OwnedEventDesc desc(schema);
				blocks += ctf::MetadataWriter::event_class(
					ch.index(), static_cast<uint32_t>(ch.ids().size()), desc.desc());
			} catch (const std::exception &e) {
				log(Level::warn, "session %s: event %s is not traced: %s", name_.c_str(), key.c_str(),
				    e.what());
				continue;
			}
		}
		ids[key] = ch.id_for(key, &is_new);
	}
	if (!blocks.empty()) {
		metadata_ += blocks;
		if (metadata_written_ && !snapshot_) {
			base::FsCreds as_owner(owner_, owner_gid_);
			try {
				user_output().append_metadata(blocks);
			} catch (const std::exception &e) {
				log(Level::error, "session %s: cannot append to the metadata of %s: %s", name_.c_str(),
				    output_.c_str(), e.what());
			}
		}
	}
	return ids;
}

std::map<std::string, std::vector<std::string>> TraceSession::filters_for(const Channel &ch,
                                                                         const std::map<std::string, json> &events)
{
	std::map<std::string, std::vector<std::string>> out;
	for (const auto &[key, schema] : events) {
		const std::string name = event::full_name(schema);
		if (!ch.enabled(name))
			continue;
		std::vector<std::string> programs;
		for (const auto &expression : ch.filters_of(name)) {
			auto [it, is_new] = bytecode_.try_emplace({key, expression});
			if (is_new) {
				filter::Program program{
					{{filter::Op::push_int, 0, 0, 0, 0}, {filter::Op::ret, 0, 0, 0, 0}}, {}};
				filter::Error error;
				try {
					event::OwnedEventDesc desc(schema);
					if (auto compiled = filter::compile_filter(expression, desc.desc(), &error))
						program = std::move(compiled->program);
					else
						log(Level::warn,
						    "session %s: event %s is not recorded: its filter does not apply: %s",
						    name_.c_str(), name.c_str(), error.message.c_str());
				} catch (const std::exception &e) {
					log(Level::warn, "session %s: event %s: %s", name_.c_str(), key.c_str(),
					    e.what());
				}
				it->second = control::to_hex(filter::encode(program));
			}
			programs.push_back(it->second);
		}
		if (!programs.empty())
			out[key] = programs;
	}
	return out;
}

void TraceSession::fix_layout()
{
	if (ever_started())
		return;
	// A failed first start may have begun the kernel trace: it goes on.
	kernel_domain_ = kernel.any_events() || kernel_session_ != nullptr;
	// A failed first start may have made the user trace's output (its buffers, dropped since): same
	// relay trace, the local directory of this layout.
	if (user_output_)
		user_output_->set_local_dir(local() ? user_dir() : "");
}

void TraceSession::start_kernel(const std::string &tracefs_root)
{
	if (!kernel.any_events())
		return;
	kernel::KernelSessionConfig c;
	c.session_name = name_;
	c.instance_label = "u" + std::to_string(owner_) + "-" + name_; // users' session names may be the same
	c.output = output_;
	c.local = local();
	c.relay = relay_.link;
	c.live_period_ns = relay_.live_period_ns;
	c.channel = kernel.channel_name();
	c.tracepoints.assign(kernel.tracepoints.begin(), kernel.tracepoints.end());
	c.syscalls.assign(kernel.syscalls.begin(), kernel.syscalls.end());
	c.all_syscalls = kernel.all_syscalls;
	c.filters = kernel.filters;
	for (const auto &[name, probe] : kernel.probes)
		c.probes.push_back(
			{name, probe.is_return, "/proc/self/fd/" + std::to_string(probe.file->get()), probe.sites});
	c.pids.assign(kernel.pids.begin(), kernel.pids.end());
	c.follow_children = kernel.follow_children;
	c.subbuf_size = kernel.subbuf_size;
	c.num_subbuf = kernel.num_subbuf;
	c.overwrite = kernel.overwrite || snapshot_; // a snapshot session's buffer is a flight recorder
	c.snapshot = snapshot_;
	c.trace_uuid = ctf::Uuid::random();
	c.clock_uuid = uuid_; // the user trace's clock has no uuid of its own: the trace's
	c.tick_unit = tick_unit_;
	c.clock_scale = clock_scale_;
	if (owner_ != geteuid()) {
		c.file_uid = owner_;
		c.file_gid = owner_gid_;
	}
	try {
		if (kernel_session_) { // started before: the same instance and trace go on
			kernel_session_->reconfigure(c);
			kernel_session_->start();
		} else {
			auto k = std::make_unique<kernel::KernelSession>(tracefs_root, std::move(c));
			k->start();
			kernel_session_ = std::move(k);
		}
	} catch (const std::exception &e) {
		throw std::runtime_error(std::string("kernel: ") + e.what());
	}
	log(Level::info, "session %s: kernel tracing in %s (%zu tracepoints)", name_.c_str(),
	    kernel_session_->instance_path().c_str(), kernel_session_->events().size());
}

std::string TraceSession::stop_kernel()
{
	if (!kernel_session_)
		return "";
	try {
		kernel_session_->stop();
	} catch (const std::exception &e) {
		log(Level::error, "session %s: %s", name_.c_str(), e.what());
		return e.what();
	}
	return "";
}

std::string TraceSession::destroy_kernel()
{
	if (!kernel_session_)
		return "";
	std::string error;
	try {
		kernel_session_->destroy();
	} catch (const std::exception &e) {
		log(Level::error, "session %s: kernel instance not removed: %s", name_.c_str(), e.what());
		error = e.what();
	}
	kernel_session_.reset();
	return error;
}

consumer::ChannelConsumer::ProblemReport TraceSession::problem_log(const Channel &ch, const std::string &owner) const
{
	return [where = "session " + name_ + " channel " + ch.spec().name + " buffer " +
	                owner](const std::string &what) { log(Level::warn, "%s: %s", where.c_str(), what.c_str()); };
}

std::string TraceSession::buffer_prefix(const Channel &ch, const std::string &owner) const
{
	std::string base = ch.spec().name + "_" + owner, p = base;
	for (int n = 2; used_prefixes_.count(p); n++)
		p = base + "-" + std::to_string(n);
	return p;
}

Buffer *TraceSession::buffer_for(Channel &ch, uid_t uid, pid_t pid, std::string *refused, std::vector<NewBuffer> *made)
{
	const std::string owner = ch.spec().per_pid ? "pid" + std::to_string(pid) : "uid" + std::to_string(uid);
	if (auto it = ch.buffers.find(owner); it != ch.buffers.end()) {
		const bool quarantined = it->second->ring->quarantined();
		if (!quarantined && it->second->charge.uid() == uid)
			return it->second.get();
		// Its programs wrote over it (ringbuf::Channel::fault), or (per PID)
		// the pid is another user's program's now, while the connection of
		// the one it was made for lingers: later programs get a new one;
		// this one is finished at stop.
		auto old = std::move(it->second);
		ch.buffers.erase(it);
		ch.buffers[(quarantined ? "quarantined-" : "ended-") + owner + "-" + std::to_string(next_instance_++)] =
			std::move(old);
	}
	auto charge = quota_.try_charge(uid, ch.buffer_bytes(), refused);
	if (!charge)
		return nullptr;
	auto b = std::make_unique<Buffer>();
	b->charge = std::move(*charge);
	b->owner = owner;
	try {
		b->ring = ch.make_ring();
	} catch (const std::exception &e) {
		const ringbuf::Config c = ch.ring_config();
		throw std::runtime_error("cannot make the " + base::format_size(ch.buffer_bytes()) +
		                         " buffer of channel '" + ch.spec().name + "' (" + std::to_string(c.num_cpus) +
		                         " CPUs x " + std::to_string(c.num_subbuf) + " x " +
		                         base::format_size(c.subbuf_size) + ") for " + owner + ": " + e.what() +
		                         "; free some memory or define the channel with smaller sizes");
	}
	const std::string prefix = buffer_prefix(ch, owner);
	if (!snapshot_) {
		base::FsCreds as_owner(owner_, owner_gid_); // the consumer thread inherits it
		auto sink = user_output().sink({prefix, ch.index(), next_instance_++ << 16, uuid_},
		                               b->ring->config().num_cpus);
		b->consumer = std::make_unique<consumer::ChannelConsumer>(
			*b->ring, std::move(sink), clock::tick_source(tick_unit_), problem_log(ch, owner));
		b->consumer->set_live_period(relay_.live_period_ns);
		if (ch.spec().mode == ringbuf::Mode::discard)
			b->consumer->start_thread();
	}
	used_prefixes_.insert(prefix);
	if (made)
		made->push_back({&ch, owner, prefix});
	Buffer *out = b.get();
	ch.buffers.emplace(owner, std::move(b));
	return out;
}

void TraceSession::drop_new_buffers(const std::vector<NewBuffer> &made)
{
	for (const NewBuffer &n : made) {
		// Its consumer ends its streams (a live session announced them to the
		// relay with an empty packet each; otherwise nothing was written, and
		// no file is made).
		if (auto it = n.channel->buffers.find(n.owner); it != n.channel->buffers.end() && it->second->consumer)
			it->second->consumer->finish();
		n.channel->buffers.erase(n.owner);
		used_prefixes_.erase(n.prefix);
	}
}

void TraceSession::finish(Retired &r) const
{
	Buffer &b = *r.buffer;
	if (r.recover) {
		auto st = b.ring->recover_after_producer_death();
		if (st.subbufs_repaired)
			log(Level::debug, "session %s channel %s: recovered %u sub-buffers (%llu bytes lost in flight)",
			    name_.c_str(), r.channel->spec().name.c_str(), st.subbufs_repaired,
			    static_cast<unsigned long long>(st.uncommitted_bytes));
	}
	if (b.consumer) {
		base::FsCreds as_owner(owner_, owner_gid_);
		b.consumer->finish();
	}
}

void TraceSession::account(Retired &r)
{
	if (r.buffer->ring->quarantined())
		r.channel->note_quarantined(r.buffer->owner, r.buffer->ring->fault());
	r.channel->lost_done += r.buffer->lost();
	r.buffer.reset(); // gives its quota charge back
}

std::vector<TraceSession::Retired> TraceSession::program_ended(pid_t pid, uid_t uid)
{
	std::vector<Retired> retired;
	for (auto &ch : channels_) {
		if (ch->spec().per_pid) {
			auto it = ch->buffers.find("pid" + std::to_string(pid));
			if (it == ch->buffers.end() || it->second->charge.uid() != uid)
				continue; // none, or another user's program's since the pid was reused
			if (snapshot_) {
				// Kept for `snapshot record`, under a name a new program of this pid cannot take.
				it->second->ring->recover_after_producer_death();
				auto b = std::move(it->second);
				ch->buffers.erase(it);
				ch->buffers["ended-pid" + std::to_string(pid) + "-" +
				            std::to_string(next_instance_++)] = std::move(b);
				continue;
			}
			retired.push_back({ch.get(), std::move(it->second), true});
			ch->buffers.erase(it);
		} else if (auto it = ch->buffers.find("uid" + std::to_string(uid)); it != ch->buffers.end()) {
			it->second->producer_died = true;
		}
	}
	return retired;
}

std::vector<TraceSession::Retired> TraceSession::retire_buffers(bool recover)
{
	std::vector<Retired> retired;
	for (auto &ch : channels_) {
		for (auto it = ch->buffers.begin(); it != ch->buffers.end();) {
			Buffer &b = *it->second;
			const bool rec = recover && b.producer_died;
			if (snapshot_) {
				if (rec)
					b.ring->recover_after_producer_death();
				b.producer_died = false;
				++it;
				continue;
			}
			retired.push_back({ch.get(), std::move(it->second), rec});
			it = ch->buffers.erase(it);
		}
	}
	return retired;
}

TraceSession::SnapshotPlan TraceSession::plan_snapshot()
{
	SnapshotPlan plan{output_ + "/snapshot-" + std::to_string(++snapshots_) + "-" + now_stamp(), metadata_, {}};
	for (auto &ch : channels_)
		for (auto &[owner, b] : ch->buffers)
			plan.parts.push_back({ch.get(), owner, b.get()});
	return plan;
}

std::string TraceSession::write_snapshot(const SnapshotPlan &plan)
{
	const std::string user_dir = kernel_domain_ ? plan.dir + "/ust" : plan.dir;
	try {
		base::FsCreds as_owner(owner_, owner_gid_);
		if (kernel_domain_)
			ctf::TraceDir::create(plan.dir, 0700);
		ctf::TraceDir td = ctf::TraceDir::create(user_dir, 0700);
		td.write_metadata(plan.metadata);
		uint64_t instance = 0;
		for (const auto &part : plan.parts) {
			const Channel &ch = *part.channel;
			auto sink = std::make_unique<consumer::FileSink>(
				user_dir,
				consumer::StreamNames{ch.spec().name + "_" + part.owner, ch.index(), instance++ << 16,
			                              uuid_},
				part.buffer->ring->config().num_cpus);
			consumer::ChannelConsumer copier(*part.buffer->ring, std::move(sink),
			                                 clock::tick_source(tick_unit_), problem_log(ch, part.owner));
			copier.finish();
		}
	} catch (const std::system_error &e) {
		throw std::runtime_error("cannot write snapshot '" + plan.dir + "': " + strerror(e.code().value()) +
		                         "; free some space or check the output directory");
	}
	if (kernel_session_) { // its own credentials: tracefs is the daemon's, the files the owner's
		try {
			kernel_session_->snapshot(plan.dir);
		} catch (const std::exception &e) {
			throw std::runtime_error("cannot write the kernel part of snapshot '" + plan.dir +
			                         "': " + e.what());
		}
	}
	return plan.dir;
}

std::vector<control::ProbeStatus> TraceSession::probes_status() const
{
	std::map<std::string, kernel::KernelSession::ProbeCounts> counts;
	if (kernel_session_) {
		try {
			counts = kernel_session_->probe_counts();
		} catch (const kernel::TracefsError &) {
			// Shown without counts.
		}
	}
	std::vector<control::ProbeStatus> out;
	for (const auto &[name, p] : kernel.probes) {
		control::ProbeStatus probe{name, p.spec, p.sites.size(), {}, p.sites.at(0).args_source, {}, {}};
		for (const kernel::ProbeArg &a : p.sites.at(0).args)
			probe.args.push_back(a.name + (a.c_type.empty() ? "" : " (" + a.c_type + ")"));
		if (const auto c = counts.find(name); c != counts.end()) {
			probe.hits = c->second.hits;
			probe.recorded = c->second.recorded;
		}
		out.push_back(std::move(probe));
	}
	return out;
}

control::StatusReply TraceSession::status() const
{
	control::StatusReply out;
	for (const auto &c : channels_) {
		const ChannelSpec &s = c->spec();
		control::ChannelStatus ch;
		ch.name = s.name;
		ch.subbuf_size = s.subbuf_size;
		ch.num_subbuf = s.num_subbuf;
		ch.mode = s.mode == ringbuf::Mode::overwrite ? "overwrite" : "discard";
		ch.buffers = s.per_pid ? "per-pid" : "per-uid";
		ch.context = context_names(s.context);
		for (const auto &r : c->rules())
			ch.enabled.push_back(r.filter.empty() ? r.pattern : r.pattern + " (filter: " + r.filter + ")");
		ch.disabled = c->disabled_patterns();
		for (const auto &[key, id] : c->ids())
			ch.events.push_back({key.substr(0, key.find('#')), id});
		ch.lost = c->lost();
		ch.buffer_bytes = c->buffer_bytes();
		for (const auto &n : c->not_traced())
			ch.not_traced.push_back({n.pid, n.uid, std::nullopt, n.reason});
		ch.not_traced_total = c->not_traced_total();
		ch.quarantined = c->quarantined();
		out.channels.push_back(std::move(ch));
	}
	out.name = name_;
	out.output = output_;
	out.state = state_name(state);
	out.owner = owner_;
	out.snapshot = snapshot_;
	out.snapshots = snapshots_;
	if (kernel.any_events() || !kernel.pids.empty() || !kernel.channel.empty() || kernel_session_) {
		control::KernelStatus k;
		k.tracepoints.assign(kernel.tracepoints.begin(), kernel.tracepoints.end());
		if (kernel.all_syscalls)
			k.syscalls = {"*"};
		else
			k.syscalls.assign(kernel.syscalls.begin(), kernel.syscalls.end());
		k.filters = kernel.filters;
		k.probes = probes_status();
		k.channel = kernel.channel_name();
		k.subbuf_size = kernel.subbuf_size;
		k.num_subbuf = kernel.num_subbuf;
		k.mode = kernel.overwrite || snapshot_ ? "overwrite" : "discard";
		k.pids.assign(kernel.pids.begin(), kernel.pids.end());
		k.follow_children = kernel.follow_children;
		if (kernel_session_) {
			k.events.emplace();
			for (const kernel::Tracepoint &tp : kernel_session_->events())
				k.events->push_back(tp.full_name());
			const kernel::KernelTraceCounts n = kernel_session_->counts();
			if (!snapshot_) { // a snapshot session's kernel trace is in each snapshot-N-DATE/kernel
				k.written = n.events;
				k.lost = n.discarded;
				k.trace = local() ? kernel_session_->trace_dir() : "kernel/ of the relay's copy";
			}
		}
		out.kernel = std::move(k);
	}
	if (kernel_domain_ && !snapshot_ && local())
		out.user_trace = user_dir();
	out.relay = relay_status();
	return out;
}

std::optional<control::RelayStatus> TraceSession::relay_status() const
{
	if (!relay_.link)
		return std::nullopt;
	const consumer::RelayLink::Counts c = relay_.link->counts();
	control::RelayStatus r;
	r.url = relay_.url;
	r.live_period_ns = relay_.live_period_ns;
	r.connected = c.connected;
	r.path = c.relay_path;
	r.connections = c.connections;
	r.packets_sent = c.packets_sent;
	r.packets_confirmed = c.packets_confirmed;
	r.packets_dropped = c.packets_dropped;
	r.bytes_dropped = c.bytes_dropped;
	r.packets_dropped_counted = c.packets_dropped_counted;
	r.events_dropped = c.events_dropped;
	r.packets_unconfirmed = c.packets_unconfirmed;
	r.packets_queued = c.packets_queued;
	r.error = c.error;
	return r;
}

} // namespace tracery::daemon
