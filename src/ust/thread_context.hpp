// ust/thread_context.hpp — per-thread values recorded as context fields (vpid,
// vtid, procname) and the current CPU. Cached so the hot path makes no system
// call; reset on fork. A thread that renames itself after its first event
// keeps recording the name it had then.
#pragma once

#include <sched.h>
#include <stdint.h>

#include "rseq/rseq.hpp"

namespace tracery::ust {

struct ThreadContext {
	int32_t vtid = 0;
	char procname[17] = {};
};

// The calling thread's context (filled on first use in the thread).
const ThreadContext &thread_context();
// The process id, cached (updated in the child after fork).
int32_t process_vpid();
// Forgets the cached values of this thread and process: after fork.
void reset_context_after_fork();

// The CPU the caller runs on: read from the thread's rseq area, else from
// sched_getcpu() (which may be a system call).
inline uint32_t current_cpu()
{
	int cpu = rseq::current_cpu();
	if (cpu < 0) [[unlikely]]
		cpu = sched_getcpu();
	return cpu < 0 ? 0u : static_cast<uint32_t>(cpu);
}

} // namespace tracery::ust
