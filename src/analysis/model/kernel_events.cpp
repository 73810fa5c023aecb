// analysis/model/kernel_events.cpp — the kernel's event and field names (see
// kernel_events.hpp).
#include "analysis/model/kernel_events.hpp"

#include <string>
#include <variant>

namespace tracery::analysis {

namespace reader = ctf::reader;

bool is_kernel_trace(const reader::TraceClass &trace)
{
	const reader::EnvValue *domain = trace.env_value("domain");
	return domain && std::holds_alternative<std::string>(*domain) && std::get<std::string>(*domain) == "kernel";
}

namespace {

constexpr std::string_view kSyscallEntry = "syscall_entry_", kSyscallExit = "syscall_exit_";

} // namespace

KernelEvent::Kind KernelEvent::kind_of(std::string_view name)
{
	if (name == "sched_switch")
		return sched_switch;
	if (name == "sched_waking" || name == "sched_wakeup" || name == "sched_wakeup_new")
		return sched_wake;
	if (name == "sched_migrate_task")
		return sched_migrate;
	if (name == "sched_process_fork")
		return process_fork;
	if (name == "sched_process_exec")
		return process_exec;
	if (name == "sched_process_exit")
		return process_exit;
	if (name == "lttng_statedump_process_state")
		return process_statedump;
	if (!after_prefix(name, kSyscallEntry).empty())
		return syscall_entry;
	if (!after_prefix(name, kSyscallExit).empty())
		return syscall_exit;
	if (name == "irq_handler_entry")
		return irq_entry;
	if (name == "irq_handler_exit")
		return irq_exit;
	if (name == "softirq_entry")
		return softirq_entry;
	if (name == "softirq_exit")
		return softirq_exit;
	return other;
}

KernelEvent KernelEvent::of(const reader::Item &event)
{
	const std::string &name = event.event->cls->name;
	KernelEvent k;
	k.kind = kind_of(name);
	const auto field = [&](const char *n) { return find_field(event, n); };
	switch (k.kind) {
	case other:
		break;
	case sched_switch:
		k.prev_comm = field("prev_comm");
		k.prev_tid = field("prev_tid");
		k.prev_prio = field("prev_prio");
		k.prev_state = field("prev_state");
		k.next_comm = field("next_comm");
		k.next_tid = field("next_tid");
		k.next_prio = field("next_prio");
		break;
	case sched_wake:
		k.wake = name == "sched_waking" ? waking : name == "sched_wakeup" ? wakeup : wakeup_new;
		k.comm = field("comm");
		k.tid = field("tid");
		k.prio = field("prio");
		k.target_cpu = field("target_cpu");
		break;
	case sched_migrate:
		k.tid = field("tid");
		break;
	case process_fork:
		k.tid = field("child_tid");
		k.pid = field("child_pid");
		k.comm = field("child_comm");
		k.ppid = field("parent_pid");
		break;
	case process_exec:
		k.tid = field("tid");
		k.file = field("filename");
		break;
	case process_exit:
		k.tid = field("tid");
		k.comm = field("comm");
		break;
	case process_statedump:
		k.tid = field("tid");
		k.pid = field("pid");
		k.comm = field("name");
		k.ppid = field("ppid");
		break;
	case syscall_entry:
		k.call = after_prefix(name, kSyscallEntry);
		break;
	case syscall_exit:
		k.call = after_prefix(name, kSyscallExit);
		k.ret = field("ret");
		break;
	case irq_entry:
		k.irq = field("irq");
		k.comm = field("name");
		break;
	case irq_exit:
		k.irq = field("irq");
		break;
	case softirq_entry:
	case softirq_exit:
		k.vec = field("vec");
		break;
	}
	return k;
}

std::string_view comm_of_exec(std::string_view file)
{
	if (const size_t slash = file.rfind('/'); slash != std::string_view::npos)
		file.remove_prefix(slash + 1);
	return file.substr(0, 15);
}

std::optional<int64_t> CpuOf::operator()(const reader::Item &event)
{
	const FieldRef &ref = cache_.get(event, [&] { return find_context_field(event, "cpu_id"); });
	return int_field(event, ref);
}

FieldRef find_event_cpu(const reader::Item &event) { return find_field(event, "cpu_id"); }

FieldRef find_tid_context(const reader::Item &event)
{
	FieldRef tid = find_field(event, "tid");
	if (tid.scope == reader::Scope::payload)
		return {};
	return tid;
}

} // namespace tracery::analysis
