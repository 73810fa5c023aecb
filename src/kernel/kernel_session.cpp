// kernel/kernel_session.cpp — see kernel_session.hpp.
#include "kernel/kernel_session.hpp"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "base/fs_creds.hpp"

namespace tracery::kernel {

namespace {

constexpr uint32_t kMaxCpu = 1 << 16; // per_cpu/cpuN beyond this is not believed

std::string host_name()
{
	char buf[256] = {};
	::gethostname(buf, sizeof buf - 1);
	return buf;
}

} // namespace

std::string syscall_rule(const std::string &name) { return "syscall " + name; }

std::string probe_rule(const std::string &name) { return "probe " + name; }

std::vector<filter::KernelField> probe_filter_fields(const ProbeSite &site)
{
	using Kind = filter::KernelField::Kind;
	std::vector<filter::KernelField> out;
	for (const ProbeArg &a : site.args) {
		const Kind kind = a.type == "string" ? Kind::string
		                  : (!a.type.empty() && (a.type[0] == 's' || a.type[0] == 'u' || a.type[0] == 'x'))
		                          ? Kind::integer
		                          : Kind::other;
		out.push_back({a.name, a.name, kind, !a.type.empty() && a.type[0] == 's', 0, false});
	}
	return out;
}

std::vector<std::string> probe_events(const ProbeConfig &probe)
{
	std::vector<std::string> out;
	for (size_t i = 0; i < probe.sites.size(); ++i)
		out.push_back(i == 0 ? probe.name : probe.name + "_" + std::to_string(i + 1));
	return out;
}

KernelEvents resolve_events(const std::string &root, const KernelSessionConfig &config)
{
	KernelEvents out;
	std::map<Tracepoint, std::vector<std::string>> rules;
	const std::vector<Tracepoint> all = list_tracepoints(root);
	for (const std::string &pattern : config.tracepoints) {
		const std::vector<Tracepoint> m = match_tracepoints(all, pattern);
		if (m.empty())
			throw std::invalid_argument("no kernel tracepoint matches '" + pattern + "'");
		for (const Tracepoint &tp : m)
			rules[tp].push_back(pattern);
	}
	const std::vector<std::string> syscalls = list_syscalls(all);
	const std::vector<std::string> &wanted = config.all_syscalls ? syscalls : config.syscalls;
	for (const std::string &name : wanted) {
		if (!std::binary_search(syscalls.begin(), syscalls.end(), name))
			throw std::invalid_argument("no system call '" + name + "' in this kernel's tracepoints");
		const std::string rule = syscall_rule(config.all_syscalls ? "*" : name);
		rules[{"syscalls", "sys_enter_" + name}].push_back(rule);
		rules[{"syscalls", "sys_exit_" + name}].push_back(rule);
	}
	for (auto &[tp, keys] : rules) {
		out.events.push_back(tp);
		out.rules.push_back(std::move(keys));
	}
	return out;
}

std::optional<std::string> event_filter(const Tracepoint &tp, const EventFormat &format,
                                        const std::vector<std::string> &rules,
                                        const std::map<std::string, std::string> &filters, std::string *why_not)
{
	std::vector<std::string> parts;
	for (const std::string &rule : rules) {
		const auto it = filters.find(rule);
		if (it == filters.end() || it->second.empty())
			return ""; // a rule recording all of its events
		filter::Error error{"", 0};
		bool missing_field = false;
		const std::optional<std::string> text = filter::kernel_filter(
			it->second, filter_fields(make_event_class(format, 0)), &error, &missing_field);
		if (text) {
			parts.push_back(*text);
		} else if (missing_field) {
			// This rule records none of this event.
			if (why_not && why_not->empty())
				*why_not = error.message;
		} else {
			throw std::invalid_argument("the filter of '" + rule +
			                            "' cannot be evaluated by the kernel for " + tp.full_name() + ": " +
			                            filter::render_error(it->second, error));
		}
	}
	if (parts.empty())
		return std::nullopt;
	if (parts.size() == 1)
		return parts[0];
	std::string any;
	for (const std::string &p : parts)
		any += (any.empty() ? "(" : " || (") + p + ")";
	return any;
}

std::vector<std::string> check_filters(const std::string &root, const KernelSessionConfig &config)
{
	const KernelEvents events = resolve_events(root, config);
	std::vector<std::string> notes;
	std::map<std::string, size_t> recorded; // filtered rule -> events it records
	std::map<std::string, std::string> first_refusal;
	for (size_t i = 0; i < events.events.size(); ++i) {
		const Tracepoint &tp = events.events[i];
		const EventFormat format = read_format(root, tp);
		for (const std::string &rule : events.rules[i]) {
			if (!config.filters.count(rule))
				continue;
			std::string why_not;
			const bool records = event_filter(tp, format, {rule}, config.filters, &why_not).has_value();
			recorded[rule] += records;
			if (!records) {
				notes.push_back(tp.full_name() + " is not recorded for '" + rule + "': " + why_not);
				first_refusal.try_emplace(rule, config.filters.at(rule) + "': " + why_not);
			}
		}
	}
	for (const auto &[rule, n] : recorded)
		if (n == 0)
			throw std::invalid_argument("the filter of '" + rule + "' applies to none of its events: '" +
			                            first_refusal[rule]);
	return notes;
}

namespace {

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

EventFormat read_format(const std::string &root, const Tracepoint &tp)
{
	return parse_event_format(read_control(root + "/events/" + tp.system + "/" + tp.name + "/format"), tp.system);
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
	KernelEvents events = resolve_events(root_, next);
	events_ = std::move(events);
	config_.filters = next.filters;
	config_.probes = next.probes;
	config_.tracepoints = next.tracepoints;
	config_.syscalls = next.syscalls;
	config_.all_syscalls = next.all_syscalls;
	const ProcessRules processes_before = config_.processes;
	config_.processes = next.processes;
	if (!started_)
		return;
	prepare_user_strings();
	apply_events(define_probes());
	remove_dropped_probes();
	if (processes_before != config_.processes)
		scope_processes(&processes_before);
}

void KernelSession::scope_processes(const ProcessRules *before)
{
	const ProcessRules &rules = config_.processes;
	if (syscall_events_) {
		syscall_events_->record_listed_only(!rules.everyone());
		if (rules.follow_children && !rules.everyone()) {
			const EventFormat fork = parse_event_format(
				read_control(root_ + "/events/sched/sched_process_fork/format"), "sched");
			const FieldFormat *child = fork.field("child_pid");
			if (!child)
				throw TracefsError("tracefs: sched_process_fork has no child_pid", EINVAL);
			syscall_events_->follow_forks(child->offset);
		}
	}
	std::vector<pid_t> threads;
	if (rules.everyone() || rules.pids_only()) {
		if (tracked_) { // its thread and the threads it took out leave the notrace list
			const std::set<pid_t> ids = tracked_->notrace_ids();
			tracked_.reset();
			drop_notrace_ids(*instance_, ids);
		}
		threads = list_process_threads(before);
	} else {
		if (tracked_)
			tracked_->change_rules(rules);
		else {
			tracked_ = std::make_unique<TrackedProcesses>(*instance_, rules, root_);
			const pid_t self[] = {tracked_->thread_id()};
			instance_->add_notrace_pids(self);
		}
		if (rules.pid)
			for (const uint64_t p : *rules.pid)
				threads.push_back(static_cast<pid_t>(p));
		std::sort(threads.begin(), threads.end());
	}
	if (syscall_events_) { // the same threads as set_event_pid
		for (const pid_t t : threads)
			syscall_events_->set_thread(static_cast<uint32_t>(t), true);
		for (const pid_t t : listed_threads_)
			if (!std::binary_search(threads.begin(), threads.end(), t))
				syscall_events_->forget_thread(static_cast<uint32_t>(t));
	}
	listed_threads_ = std::move(threads);
}

std::vector<pid_t> KernelSession::list_process_threads(const ProcessRules *before)
{
	constexpr int kRereadings = 8; // each finds the threads forked since the last
	const ProcessRules &rules = config_.processes;
	if (rules.everyone()) {
		instance_->set_event_pids({}, false);
		return {};
	}
	std::vector<pid_t> threads = listed_process_tasks(rules, "/proc");
	// Between lists of pids, the list is changed, not written again: the
	// kernel's list holds the descendants it added too.
	if (before && before->pids_only() && before->follow_children == rules.follow_children)
		instance_->change_event_pids(listed_threads_, threads);
	else
		instance_->set_event_pids(threads, rules.follow_children);
	for (int i = 0; i < kRereadings; ++i) {
		std::vector<pid_t> listed = instance_->event_pids();
		std::sort(listed.begin(), listed.end());
		std::vector<pid_t> missing;
		for (const pid_t t : listed_process_tasks(rules, "/proc"))
			if (!std::binary_search(listed.begin(), listed.end(), t))
				missing.push_back(t);
		if (missing.empty())
			break;
		instance_->add_event_pids(missing);
		threads.insert(threads.end(), missing.begin(), missing.end());
	}
	std::sort(threads.begin(), threads.end());
	threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
	return threads;
}

std::optional<TrackedProcessesCounts> KernelSession::tracked_counts() const
{
	if (!tracked_)
		return std::nullopt;
	return tracked_->counts();
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

std::map<std::string, KernelSession::ProbeCounts> KernelSession::probe_counts() const
{
	std::map<std::string, ProbeCounts> out;
	if (probes_.empty())
		return out;
	const std::map<Tracepoint, uint64_t> hits = uprobe_hits(root_);
	for (const auto &[name, probe] : probes_) {
		const std::vector<std::string> events = probe_events(probe.config);
		ProbeCounts &c = out[name];
		for (const std::string &event : events) {
			const auto it = hits.find({probe_group_, event});
			c.hits += it == hits.end() ? 0 : it->second;
		}
		if (trace_) {
			const std::vector<uint64_t> recorded = trace_->events_of(events);
			c.recorded = std::accumulate(recorded.begin(), recorded.end(), uint64_t{0});
		}
	}
	return out;
}

KernelEvents KernelSession::define_probes()
{
	if (probe_group_.empty())
		probe_group_ = uprobe_group(::getpid(), config_.instance_label.empty() ? config_.session_name
		                                                                       : config_.instance_label);
	const auto lines = [this](const ProbeConfig &p) {
		std::vector<std::string> out;
		const std::vector<std::string> names = probe_events(p);
		for (size_t i = 0; i < p.sites.size(); ++i)
			out.push_back(uprobe_line(probe_group_, names[i], p.is_return, p.path, p.sites[i]));
		return out;
	};
	KernelEvents out;
	for (const ProbeConfig &p : config_.probes) {
		auto it = probes_.find(p.name);
		if (it != probes_.end() && lines(it->second.config) != lines(p)) {
			// Defined otherwise before: its events go (and their formats:
			// the new definition's are read again).
			for (const UprobeEvent &e : it->second.events) {
				if (contains(enabled_, e.tracepoint()))
					instance_->enable_event(e.tracepoint(), false);
				std::erase(enabled_, e.tracepoint());
				std::erase(filtered_, e.tracepoint());
				formats_.erase(e.tracepoint());
			}
			probes_.erase(it);
			it = probes_.end();
		}
		if (it == probes_.end()) {
			DefinedProbe defined{p, {}};
			const std::vector<std::string> names = probe_events(p);
			const std::vector<std::string> text = lines(p);
			for (size_t i = 0; i < names.size(); ++i)
				defined.events.emplace_back(root_, probe_group_, names[i], text[i]);
			it = probes_.emplace(p.name, std::move(defined)).first;
		}
		for (const UprobeEvent &e : it->second.events) {
			out.events.push_back(e.tracepoint());
			out.rules.push_back({probe_rule(p.name)});
		}
	}
	return out;
}

void KernelSession::remove_dropped_probes()
{
	for (auto it = probes_.begin(); it != probes_.end();) {
		const bool kept = std::any_of(config_.probes.begin(), config_.probes.end(),
		                              [&](const ProbeConfig &p) { return p.name == it->first; });
		if (kept) {
			++it;
			continue;
		}
		for (UprobeEvent &e : it->second.events)
			e.remove();
		it = probes_.erase(it);
	}
}

std::vector<uint16_t> KernelSession::unrecorded_types() const
{
	std::vector<uint16_t> out;
	for (const Tracepoint &tp : bookkeeping_)
		if (const auto it = formats_.find(tp); it != formats_.end() && it->second.id <= UINT16_MAX)
			out.push_back(static_cast<uint16_t>(it->second.id));
	return out;
}

void KernelSession::apply_events(const KernelEvents &probes)
{
	// The configuration's tracepoints and its probes' events, sorted.
	KernelEvents all = events_;
	for (size_t i = 0; i < probes.events.size(); ++i) {
		all.events.push_back(probes.events[i]);
		all.rules.push_back(probes.rules[i]);
	}
	std::vector<size_t> order(all.events.size());
	for (size_t i = 0; i < order.size(); ++i)
		order[i] = i;
	std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return all.events[a] < all.events[b]; });
	KernelEvents sorted;
	for (const size_t i : order) {
		sorted.events.push_back(all.events[i]);
		sorted.rules.push_back(all.rules[i]);
	}
	// The thread table's events the configuration does not record: enabled
	// without a filter, not written.
	std::vector<Tracepoint> bookkeeping;
	if (needs_thread_table(config_.contexts))
		for (const auto &[system, name] : thread_table_events()) {
			const Tracepoint tp{system, name};
			if (!std::binary_search(sorted.events.begin(), sorted.events.end(), tp) &&
			    ::access((root_ + "/events/" + system + "/" + name + "/format").c_str(), F_OK) == 0)
				bookkeeping.push_back(tp);
		}
	std::vector<EventFormat> added;
	for (const std::vector<Tracepoint> *list : {&sorted.events, &bookkeeping})
		for (const Tracepoint &tp : *list)
			if (!formats_.count(tp))
				added.push_back(formats_.emplace(tp, read_format(root_, tp)).first->second);
	// Every filter is translated before the instance's events change, and
	// set before its event is enabled. An event none of whose rules can
	// record it (each filters on a field it lacks) is not enabled.
	std::vector<std::pair<Tracepoint, std::string>> chosen;
	for (size_t i = 0; i < sorted.events.size(); ++i) {
		const Tracepoint &tp = sorted.events[i];
		if (std::optional<std::string> f = event_filter(tp, formats_.at(tp), sorted.rules[i], config_.filters))
			chosen.emplace_back(tp, std::move(*f));
	}
	for (const Tracepoint &tp : bookkeeping)
		chosen.emplace_back(tp, "");
	std::sort(chosen.begin(), chosen.end());
	std::vector<Tracepoint> wanted;
	std::vector<std::string> filters;
	for (auto &[tp, f] : chosen) {
		wanted.push_back(tp);
		filters.push_back(std::move(f));
	}
	// The trace knows every class, and which are not written, before any
	// event changes (while tracing, the readers write what comes next).
	bookkeeping_ = std::move(bookkeeping);
	if (trace_) {
		base::FsCreds as_writer(config_.file_uid, config_.file_gid);
		if (!added.empty())
			trace_->add_event_classes(added);
		trace_->set_unrecorded(unrecorded_types());
	}
	for (const Tracepoint &tp : enabled_)
		if (!contains(wanted, tp)) {
			if (syscall_events_ && tp.system == "syscalls" && syscall_events_->attached(tp.name))
				syscall_events_->detach(tp.name);
			else
				instance_->enable_event(tp, false);
		}
	for (size_t i = 0; i < wanted.size(); ++i) {
		if (write_by_bpf(wanted[i], filters[i]))
			continue;
		if (!filters[i].empty() || contains(filtered_, wanted[i]))
			instance_->set_event_filter(wanted[i], filters[i]);
		if (!contains(enabled_, wanted[i]))
			instance_->enable_event(wanted[i]);
	}
	filtered_.clear();
	for (size_t i = 0; i < wanted.size(); ++i)
		if (!filters[i].empty())
			filtered_.push_back(wanted[i]);
	enabled_ = std::move(wanted);
}

std::unique_ptr<KernelTrace> KernelSession::new_trace(consumer::TraceOutput out, std::vector<uint64_t> baseline) const
{
	ctf::TraceInfo info;
	info.uuid = config_.trace_uuid;
	info.clock_uuid = config_.clock_uuid;
	info.hostname = host_name();
	info.clock_scale = config_.clock_scale;
	info.env.push_back({"trace_name", config_.session_name});
	info.env.insert(info.env.end(), config_.env.begin(), config_.env.end());
	base::FsCreds as_writer(config_.file_uid, config_.file_gid);
	std::vector<EventFormat> formats;
	for (const auto &[tp, format] : formats_)
		formats.push_back(format);
	const clock::TickSource source = clock::tick_source(config_.tick_unit);
	auto trace = std::make_unique<KernelTrace>(
		std::move(out), config_.channel, std::move(info), formats, cpus_.back() + 1, layout_,
		[this, baseline = std::move(baseline)](uint32_t cpu) {
			// The stats are tracefs's.
			base::FsCreds as_process(::geteuid(), ::getegid());
			const uint64_t total = parse_lost_total(instance_->cpu_stats(cpu));
			const uint64_t before = cpu < baseline.size() ? baseline[cpu] : 0;
			return total > before ? total - before : 0;
		},
		[source] { return clock::ticks(source); }, proc_tgid, config_.contexts, user_strings_.get(),
		syscall_events_.get());
	trace->set_unrecorded(unrecorded_types());
	return trace;
}

void KernelSession::prepare_user_strings()
{
	constexpr uint64_t kRingBytes = 4 << 20;
	constexpr std::string_view kEnter = "sys_enter_";
	if (!config_.user_strings || !user_strings_warning_.empty())
		return; // not asked for, or BPF is not available: the pointers' values
	const bool first = !trace_ && !syscall_events_ && !user_strings_;
	if (first && config_.syscalls_by_bpf && !config_.snapshot && config_.tick_unit == clock::TickUnit::ns &&
	    (config_.processes.everyone() || config_.processes.pids_only()) &&
	    std::any_of(events_.events.begin(), events_.events.end(),
	                [](const Tracepoint &tp) { return tp.system == "syscalls"; })) {
		try {
			// The channel's buffer per CPU, as the tracefs buffer is sized.
			const uint64_t channel = config_.subbuf_size * config_.num_subbuf;
			const uint64_t channel_bytes = channel != 0 ? channel : instance_->buffer_size_kb() * 1024;
			syscall_events_ = std::make_unique<SyscallEvents>(
				cpus_.back() + 1,
				ring_bytes_for_channel(channel_bytes, static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))),
				config_.capture_buffers);
		} catch (const std::exception &e) {
			user_strings_warning_ =
				std::string("system-call string arguments are recorded as pointers: ") + e.what();
		}
		return;
	}
	if (syscall_events_)
		return; // attached as apply_events() enables them
	const UserMemory memory{true, config_.capture_buffers};
	for (const Tracepoint &tp : events_.events) {
		if (tp.system != "syscalls" || !tp.name.starts_with(kEnter))
			continue;
		const std::string call = tp.name.substr(kEnter.size());
		if (user_strings_ && user_strings_->attached(call))
			continue;
		uint64_t entry = make_event_class(read_format(root_, tp), 0, memory).user_string_args;
		const Tracepoint exit_tp{tp.system, "sys_exit_" + call};
		const bool has_exit = std::binary_search(events_.events.begin(), events_.events.end(), exit_tp);
		const uint64_t exit =
			has_exit ? make_event_class(read_format(root_, exit_tp), 0, memory).user_string_args : 0;
		if (exit != 0)
			entry |= kCookieKeep;
		if (entry == 0)
			continue;
		if (config_.snapshot) {
			// A thread's records of the calls the overwritten buffer lost
			// would be joined to its later calls: wrong values.
			user_strings_warning_ =
				"system-call string arguments, buffers and exit arguments are recorded as "
				"pointers in snapshot sessions (their BPF records cannot be paired exactly "
				"with the events an overwritten buffer keeps)";
			return;
		}
		if (!user_strings_) {
			try {
				user_strings_ = std::make_unique<UserStrings>(kRingBytes, config_.capture_buffers);
			} catch (const std::exception &e) {
				user_strings_warning_ = std::string("system-call string arguments are recorded as "
				                                    "pointers: ") +
				                        e.what();
				return;
			}
		}
		// The entry first: its exits find their arguments kept.
		user_strings_->attach(call, entry);
		if (exit != 0)
			user_strings_->attach_exit(call, exit);
	}
	if (trace_)
		trace_->set_user_strings(user_strings_.get());
}

bool KernelSession::write_by_bpf(const Tracepoint &tp, const std::string &filter)
{
	constexpr std::string_view kEnter = "sys_enter_", kExit = "sys_exit_";
	if (!syscall_events_ || tp.system != "syscalls")
		return false;
	if (!filter.empty()) { // tracefs's from now on
		syscall_events_->detach(tp.name);
		return false;
	}
	const bool entry = tp.name.starts_with(kEnter);
	const std::string call = tp.name.substr(entry ? kEnter.size() : kExit.size());
	const UserMemory memory{true, syscall_events_->buffer_bytes()};
	const auto cookie = [&](const std::string &name) -> uint64_t {
		const auto it = formats_.find(Tracepoint{tp.system, name});
		return it == formats_.end() ? 0 : make_event_class(it->second, 0, memory).user_string_args;
	};
	const uint64_t entry_cookie = cookie(std::string(kEnter) + call);
	const uint64_t exit_cookie = cookie(std::string(kExit) + call);
	if (entry_cookie == 0 && exit_cookie == 0)
		return false; // nothing to read: tracefs records it
	const uint16_t id = static_cast<uint16_t>(formats_.at(tp).id);
	// The exit reads through the arguments its entry keeps.
	const uint64_t keep = exit_cookie != 0 ? kCookieKeep : 0;
	if (!syscall_events_->attached(tp.name) && contains(enabled_, tp))
		instance_->enable_event(tp, false); // tracefs's until now (it had a filter)
	if (entry)
		syscall_events_->attach_entry(call, entry_cookie | keep, id);
	else
		syscall_events_->attach_exit(call, exit_cookie | keep, id);
	return true;
}

uint64_t KernelSession::syscall_ring_bytes() const { return syscall_events_ ? syscall_events_->ring_bytes() : 0; }

SyscallEventsCounts KernelSession::syscall_events_counts() const
{
	return syscall_events_ ? syscall_events_->counts() : SyscallEventsCounts{};
}

UserStringsCounts KernelSession::user_strings_counts() const
{
	return user_strings_ ? user_strings_->counts() : UserStringsCounts{};
}

std::unique_ptr<CpuReaders> KernelSession::start_readers(KernelTrace &trace)
{
	constexpr unsigned kPagesPerSyscallRead = 16;
	// A reader thread writes nothing but the trace: its credentials are
	// the writer's from its first write on.
	const auto as_writer = [this] {
		thread_local bool done = false;
		if (!done && config_.file_uid != static_cast<uid_t>(-1)) {
			::setfsgid(config_.file_gid);
			::setfsuid(config_.file_uid);
		}
		done = true;
	};
	auto readers = std::make_unique<CpuReaders>(
		*instance_, cpus_, layout_,
		[as_writer, &trace](uint32_t cpu, std::span<const uint8_t> page, bool more) {
			as_writer();
			trace.write_page(cpu, page, more);
			// The system calls BPF wrote meanwhile: when the reader pauses,
			// and every few pages of a CPU read without a pause.
			thread_local unsigned pages = 0;
			if (!more || ++pages % kPagesPerSyscallRead == 0)
				trace.write_syscall_events(cpu);
		},
		[as_writer, &trace](uint32_t cpu) {
			as_writer();
			trace.write_syscall_events(cpu);
			trace.idle(cpu);
		},
		[&trace](uint32_t cpu) { return trace.held(cpu); },
		syscall_events_ ? reader_pause_for_ring(syscall_events_->ring_bytes()) : CpuReaders::kQuietPause);
	if (syscall_events_) // the readers' own calls are not recorded
		for (const pid_t tid : readers->tids())
			syscall_events_->set_thread(static_cast<uint32_t>(tid), false);
	return readers;
}

void KernelSession::drain(std::unique_ptr<CpuReaders> readers, KernelTrace &trace)
{
	readers->stop();
	const std::string error = readers->error();
	readers.reset();
	instance_->clear_notrace_pids();
	base::FsCreds as_writer(config_.file_uid, config_.file_gid);
	for (const uint32_t cpu : cpus_)
		trace.finish_cpu(cpu);
	trace.finish();
	if (!error.empty())
		throw std::runtime_error("kernel session '" + config_.session_name + "': " + error);
}

void KernelSession::write_statedump(KernelTrace &trace) const
{
	const clock::TickSource source = clock::tick_source(config_.tick_unit);
	base::FsCreds as_writer(config_.file_uid, config_.file_gid);
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
		prepare_user_strings();
		apply_events(define_probes());
		remove_dropped_probes();
		scope_processes(nullptr);
		if (!config_.snapshot) {
			if (!trace_) {
				consumer::TraceOutput out(config_.local ? trace_dir() : "", config_.relay, "kernel");
				out.set_tracefile_limit(config_.tracefile);
				trace_ = new_trace(std::move(out), {});
				trace_->set_live_period(std::chrono::nanoseconds(config_.live_period_ns));
			}
			readers_ = start_readers(*trace_);
		}
		if (syscall_events_)
			syscall_events_->set_recording(true);
		instance_->set_tracing_on(true);
		started_ = true;
		if (trace_)
			write_statedump(*trace_);
	} catch (...) {
		started_ = false;
		tracked_.reset();
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
			probes_.clear();
			enabled_.clear();
			filtered_.clear();
			bookkeeping_.clear();
			formats_.clear();
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
	if (syscall_events_)
		syscall_events_->set_recording(false);
	tracked_.reset();
	if (readers_)
		drain(std::move(readers_), *trace_);
	else
		instance_->clear_notrace_pids(); // the tracker's thread (drain() clears the readers' too)
	// A probe enabled costs every process running its site a trap, recorded
	// or not, and keeps an SDT semaphore set: stopped, the probes are off
	// (the next start enables them again).
	for (auto it = enabled_.begin(); it != enabled_.end();) {
		if (it->system == probe_group_) {
			instance_->enable_event(*it, false);
			it = enabled_.erase(it);
		} else {
			++it;
		}
	}
}

void KernelSession::snapshot(consumer::TraceOutput out)
{
	if (!config_.snapshot || !instance_)
		throw std::logic_error("kernel session '" + config_.session_name +
		                       "': a snapshot is for a started snapshot session");
	// What the kernel counted lost before this read is not lost within the
	// snapshot's streams: older events the buffer overwrote.
	std::vector<uint64_t> baseline(cpus_.back() + 1, 0);
	for (const uint32_t cpu : cpus_)
		baseline[cpu] = parse_lost_total(instance_->cpu_stats(cpu));
	std::unique_ptr<KernelTrace> trace = new_trace(std::move(out), std::move(baseline));
	drain(start_readers(*trace), *trace); // stopped at once: each reads what there is
	write_statedump(*trace);
	base::FsCreds as_writer(config_.file_uid, config_.file_gid);
	trace->close();
	if (const consumer::WriteLosses w = trace->write_losses(); !w.reason.empty())
		throw std::runtime_error("incomplete: " + w.reason + "; " + std::to_string(w.events) +
		                         " kernel events not written (a snapshot reads them out of the kernel's "
		                         "buffer: they are gone)");
}

uint64_t KernelSession::buffer_bytes() const
{
	if (!instance_)
		return 0;
	const uint64_t per_cpu = config_.subbuf_size * config_.num_subbuf;
	return (per_cpu != 0 ? per_cpu : instance_->buffer_size_kb() * 1024) * cpus_.size();
}

void KernelSession::rotate(const std::string &output)
{
	if (config_.snapshot)
		throw std::logic_error("kernel session '" + config_.session_name +
		                       "': a snapshot session does not rotate");
	if (!trace_) {
		config_.output = output; // where a trace not begun yet begins
		return;
	}
	// Started: the readers drain the buffers, tracing on, and each CPU's
	// stream ends (stopped, they ended with the stop).
	std::string reader_error;
	if (readers_) {
		const std::vector<pid_t> tids = readers_->tids();
		readers_->stop(); // each reads until its CPU's buffer is empty
		reader_error = readers_->error();
		readers_.reset();
		try {
			drop_notrace_ids(*instance_, std::set<pid_t>(tids.begin(), tids.end()));
		} catch (const TracefsError &e) {
			if (reader_error.empty()) // the new readers are needed all the same
				reader_error = e.what();
		}
		base::FsCreds as_writer(config_.file_uid, config_.file_gid);
		for (const uint32_t cpu : cpus_)
			trace_->finish_cpu(cpu, false);
		trace_->finish();
	}
	std::exception_ptr moving;
	try {
		base::FsCreds as_writer(config_.file_uid, config_.file_gid);
		if (const std::string closing = trace_->continue_in(output + "/kernel");
		    !closing.empty() && reader_error.empty())
			reader_error = closing;
		config_.output = output;
	} catch (...) {
		moving = std::current_exception();
	}
	if (started_)
		readers_ = start_readers(*trace_);
	if (moving)
		std::rethrow_exception(moving);
	if (!reader_error.empty())
		throw std::runtime_error("kernel session '" + config_.session_name + "': " + reader_error);
}

void KernelSession::destroy()
{
	stop();
	if (trace_) {
		base::FsCreds as_writer(config_.file_uid, config_.file_gid);
		trace_->close();
		trace_.reset();
	}
	if (instance_) {
		instance_->remove();
		instance_.reset();
	}
	for (auto &[name, probe] : probes_)
		for (UprobeEvent &e : probe.events)
			e.remove();
	probes_.clear();
}

KernelTraceCounts KernelSession::counts() const { return trace_ ? trace_->counts() : KernelTraceCounts{}; }

consumer::WriteLosses KernelSession::write_losses() const
{
	return trace_ ? trace_->write_losses() : consumer::WriteLosses{};
}

} // namespace tracery::kernel
