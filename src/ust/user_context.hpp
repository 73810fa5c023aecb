// ust/user_context.hpp — the values of the user-space contexts beyond vpid,
// vtid and procname (event/context_table.hpp), as a traced thread records
// them, and their writer on the hot path.
//
// When each value is read (the hot path makes no system call but for the
// perf counters):
// - ip: the return address of the emitting function's call into libtracery,
//   or the address TRACERY_EMIT_AT named (tracery_fire_at), kept in a
//   thread-local by tracery_fire while a session records ip (an event that
//   entered tracery_fire just before such a session attached its probe may
//   record 0).
// - pthread_id: cached with the thread's vtid (thread_context.hpp).
// - vuid, vgid, the namespaces and the cgroup id: read on the thread's first
//   event that records one of them (getuid, getgid, stat of
//   /proc/thread-self/ns/*, /proc/thread-self/cgroup), then cached for the
//   thread. A new thread reads its own; a fork child reads them again. A
//   thread that changes them later (setuid, setns, unshare, a move to another
//   cgroup) keeps recording the values of its first event: LTTng-UST
//   refreshes them only through the wrappers of its preloaded
//   liblttng-ust-fork, which Tracery does not have.
// - perf:thread:NAME: a perf_event_open() counter per thread and counter,
//   opened on the thread's first event that records it (counting from 0
//   there, as LTTng-UST's), read with read() on every event (software
//   counters have no user-space reading; for hardware ones rdpmc would save
//   the system call, but this is not done: it cannot be tested without a
//   PMU), closed when the thread exits, closed and reopened in a fork child
//   (the inherited fd counts the parent's thread). A counter that cannot be
//   opened records 0, said once per process (where TRACERY_LOG says).
#pragma once

#include "event/context_table.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tracery::ust {

// Where tracery_fire keeps the emitting address while ip_context_sessions
// is not 0 (null otherwise, and in a thread's outermost event once it ends).
extern __thread const void *tls_emit_address __attribute__((tls_model("initial-exec")));
// How many sessions of this process record the ip context.
extern std::atomic<uint32_t> ip_context_sessions;

inline bool recording_emit_address() noexcept { return ip_context_sessions.load(std::memory_order_relaxed) != 0; }

// The contexts of a channel beyond vpid, vtid and procname: indexes in
// event::kUserContexts, in its order.
struct UserContextPlan {
	std::array<uint8_t, event::kUserContexts.size()> entries{};
	uint8_t count = 0;
	bool needs_identity = false; // vuid, vgid, a namespace or the cgroup id
	static UserContextPlan of(event::UserContextSet set);
};

// Writes the plan's values at dst: event::user_contexts_size(set) bytes.
void write_user_contexts(uint8_t *dst, const UserContextPlan &plan);

// The calling thread's ids, as the contexts record them (read on first use).
struct ThreadIdentity {
	uint32_t vuid = 0, vgid = 0;
	std::array<uint64_t, event::kNamespaceFiles.size()> ns{}; // 0: no such namespace file
	uint64_t cgroup_id = 0;                                   // 0: no cgroup v2 found
};
const ThreadIdentity &thread_identity();

// The id of the cgroup v2 that /proc/thread-self/cgroup names, through
// name_to_handle_at() on its directory under /sys/fs/cgroup (systemd's unified
// layout) or /sys/fs/cgroup/unified (its hybrid one); 0 if neither is a
// cgroup2 mount. No allocation: a signal handler may call it.
uint64_t read_cgroup_id();

// The calling thread's value of one perf counter (kind perf_counter).
uint64_t thread_perf_counter(const event::UserContext &c);

// After fork, in the child: forget the identity and close the inherited perf
// counters of the thread that forked.
void reset_user_context_after_fork();

} // namespace tracery::ust
