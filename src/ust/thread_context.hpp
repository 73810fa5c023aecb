// ust/thread_context.hpp — per-thread values recorded as context fields (vpid,
// vtid, procname, pthread_id) and the current CPU. Cached so the hot path
// makes no system call; reset on fork. A thread that renames itself after its
// first event keeps recording the name it had then. The other user-space
// contexts: user_context.hpp.
#pragma once

#include <sched.h>
#include <stdint.h>

#include "rseq/rseq.hpp"

namespace tracery::ust {

struct ThreadContext {
	int32_t vtid = 0;
	char procname[17] = {};
	uint64_t pthread_id = 0;
};

// The calling thread's context (filled on first use in the thread).
const ThreadContext &thread_context();
// The process id, cached (updated in the child after fork).
int32_t process_vpid();
// Forgets the cached values of this thread and process: after fork.
void reset_context_after_fork();

// current_cpu() without an rseq area: sched_getcpu() (which may be a system
// call), 0 if it fails.
uint32_t current_cpu_without_rseq();

// The CPU the caller runs on: read from the thread's rseq area, else from
// current_cpu_without_rseq().
inline uint32_t current_cpu()
{
	const int cpu = rseq::current_cpu();
	if (cpu >= 0) [[likely]]
		return static_cast<uint32_t>(cpu);
	return current_cpu_without_rseq();
}

} // namespace tracery::ust
