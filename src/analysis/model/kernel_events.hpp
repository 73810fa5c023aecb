// analysis/model/kernel_events.hpp — LTTng's kernel events as the model knows
// them: the one place where their names (sched_switch, syscall_entry_NAME,
// lttng_statedump_process_state, ...) and their fields' names (prev_tid,
// next_comm, child_pid, ret, ...) are written. A product asks
// KernelEvent::of once per event class (ClassCache) and reads the fields it
// needs with int_field / text_field.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

// Whether the trace is a kernel trace (its env's domain is "kernel").
bool is_kernel_trace(const ctf::reader::TraceClass &trace);

// A kernel event class and where its fields are. Only the fields of its kind
// are set (the others are empty).
struct KernelEvent {
	enum Kind : uint8_t {
		other,
		sched_switch,  // prev_comm, prev_tid, prev_prio, prev_state, next_comm, next_tid, next_prio
		sched_wake,    // sched_waking, sched_wakeup, sched_wakeup_new (wake): comm, tid, prio, target_cpu
		sched_migrate, // sched_migrate_task: tid
		process_fork, // sched_process_fork: tid (child_tid), pid (child_pid), comm (child_comm), ppid (parent_pid)
		process_exec,      // sched_process_exec: tid, file (filename)
		process_exit,      // sched_process_exit: tid, comm
		process_statedump, // lttng_statedump_process_state: tid, pid, comm (name), ppid
		syscall_entry,     // syscall_entry_NAME: call
		syscall_exit,      // syscall_exit_NAME: call, ret
		irq_entry,         // irq_handler_entry: irq, comm (the handler's name)
		irq_exit,          // irq_handler_exit: irq
		softirq_entry,     // softirq_entry: vec
		softirq_exit,      // softirq_exit: vec
	};
	enum Wake : uint8_t { waking, wakeup, wakeup_new };

	Kind kind = other;
	Wake wake = waking;    // sched_wake: which of the three
	std::string_view call; // syscall_entry/exit: the call's name ("read"), part of the class's name
	FieldRef prev_comm, prev_tid, prev_prio, prev_state, next_comm, next_tid, next_prio;
	FieldRef tid, pid, ppid, comm, prio, target_cpu, file, ret, irq, vec;

	// The kind of the event class of that name (from its name alone).
	static Kind kind_of(std::string_view class_name);
	// The event's class and its fields. The names are the kernel's whatever
	// the trace's domain: callers ask for kernel traces (is_kernel_trace).
	static KernelEvent of(const ctf::reader::Item &event);
};

// The kernel's name of a task after sched_process_exec of that file: the
// file's base name, cut to 15 bytes (a view into file).
std::string_view comm_of_exec(std::string_view file);

// The packet context's CPU of an event (cpu_id), the CPU that recorded it;
// its field found once per class.
class CpuOf {
public:
	std::optional<int64_t> operator()(const ctf::reader::Item &event);

private:
	ClassCache<FieldRef> cache_;
};

// The CPU an event is about: a cpu_id field of its payload when it has one
// (power_cpu_idle's, power_cpu_frequency's), else its context's (the CPU
// that recorded it). The timeline exports place a kernel event by this CPU.
FieldRef find_event_cpu(const ctf::reader::Item &event);

// The tid context of an event (add-context -k tid); none when its payload
// has a field named tid (sched_waking's, the woken task's: the context is
// then not looked at).
FieldRef find_tid_context(const ctf::reader::Item &event);

} // namespace tracery::analysis
