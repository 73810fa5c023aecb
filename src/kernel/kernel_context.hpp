// kernel/kernel_context.hpp — the event context of a kernel trace
// (`add-context -k`): which thread an event is of, written after the event
// header of every event of the kernel stream, as lttng-modules writes its
// contexts (src/lttng-context-*.c): `_tid`, `_pid`, `_ppid`, `_prio` (int32,
// the kernel's prio - 100 as task_prio() gives it), `_procname` (char[16],
// UTF-8) and the namespace inode numbers `_pid_ns`, `_mnt_ns`, `_net_ns`,
// `_user_ns`, `_uts_ns`, `_ipc_ns`, `_cgroup_ns`, `_time_ns` (uint32, as
// lttng-modules declares them: unsigned int), in the order of the
// KernelContext enum.
//
// Where the values come from (tracefs records none of them but the tid):
// - tid: the event's common_pid, exact and free.
// - the others: a table of threads (ThreadTable) the trace keeps, each
//   thread read from /proc/TID/stat, /proc/TID/status and /proc/TID/ns/*
//   when one of its events is first written, then kept up to date by the
//   kernel's own events: sched_process_fork (a child's name, process and
//   parent, its parent's priority and namespaces, when /proc no longer has
//   it), sched_process_exec (the name after exec: the file's base name),
//   task:task_rename (prctl(PR_SET_NAME)), sched_switch (both tasks'
//   priorities). A session with one of these contexts has those events
//   enabled in its instance whether it records them or not (those it does
//   not record update the table only).
// Limits, as the README says: the trace is written some time after the
// events (a page at a time), so a thread first seen once it exec'd, was
// renamed or reparented has its later values on its earlier events; the
// readers of different CPUs share the table, so an exec seen on one CPU
// names the events another CPU's reader writes after it, even those
// recorded before it; a thread gone before its first event is written,
// whose fork the trace did not see, has pid = its tid and 0 or "" for the
// rest; a change of namespace (setns, unshare) or of parent is not seen.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel/format.hpp"

namespace tracery::kernel {

enum class KernelContext : uint8_t {
	tid,
	pid,
	ppid,
	prio,
	procname,
	pid_ns,
	mnt_ns,
	net_ns,
	user_ns,
	uts_ns,
	ipc_ns,
	cgroup_ns,
	time_ns,
};
inline constexpr size_t kKernelContextCount = 13;
inline constexpr size_t kKernelProcnameSize = 16; // lttng-modules: sizeof(current->comm)

// The name add-context -k -t takes, which is also the field's (without '_').
std::string_view kernel_context_name(KernelContext c) noexcept;
// nullopt for a name no kernel context has.
std::optional<KernelContext> parse_kernel_context(std::string_view name) noexcept;
// Every name, in the enum's order.
std::vector<std::string> kernel_context_names();

// The stream class's "event.context := struct { ... };" line ("" for none),
// `contexts` sorted and unique.
std::string kernel_context_tsdl(std::span<const KernelContext> contexts);

// Whether the contexts need the thread table (all but tid).
bool needs_thread_table(std::span<const KernelContext> contexts) noexcept;
// The tracepoints (SYSTEM, NAME) that keep the table up to date.
std::vector<std::pair<std::string, std::string>> thread_table_events();

struct ThreadInfo {
	int32_t pid = 0;
	int32_t ppid = 0;
	int32_t prio = 0;
	char comm[kKernelProcnameSize] = {}; // NUL-padded, invalid UTF-8 replaced
	uint32_t ns[8] = {};                 // pid_ns ... time_ns
};

// One thread's values from /proc (ns only when `with_ns`); false if it is gone.
bool read_proc_thread(int32_t tid, bool with_ns, ThreadInfo &out);

// What an event of a format tells the table (its fields located once).
struct ThreadUpdate {
	enum Kind : uint8_t { none, fork, exec, rename, sched_switch } kind = none;
	FieldFormat a, b, c, d, e; // fork: child_pid, child_comm, parent_pid; exec: pid, old_pid, filename;
				   // rename: pid, newcomm; sched_switch: prev_pid, prev_prio, next_pid,
				   // next_prio, prev_comm
	static ThreadUpdate of(const EventFormat &format);
};

// The threads seen, by tid. Callers hold mutex() around every call.
class ThreadTable {
public:
	using Reader = bool (*)(int32_t tid, bool with_ns, ThreadInfo &out);
	explicit ThreadTable(bool with_ns, Reader read = read_proc_thread) : with_ns_(with_ns), read_(read) {}

	std::mutex &mutex() { return mutex_; }
	const ThreadInfo &get(int32_t tid);
	void update(const ThreadUpdate &u, std::span<const uint8_t> payload);
	size_t size() const { return threads_.size(); }

private:
	ThreadInfo &slot(int32_t tid); // found or read
	bool with_ns_;
	Reader read_;
	std::mutex mutex_;
	std::unordered_map<int32_t, ThreadInfo> threads_;
};

// Appends the context of an event of thread `tid` (contexts sorted, unique).
void put_kernel_context(std::vector<uint8_t> &out, std::span<const KernelContext> contexts, int32_t tid,
                        ThreadTable *table);

} // namespace tracery::kernel
