// ust/rcu.hpp — the read-copy-update sections that guard the probe arrays
// (registry.cpp): a reader never blocks, a writer waits for the readers.
//
// The scheme of liburcu-bp ("bulletproof": no thread has to be registered by
// the program, a signal handler may open a section anywhere), made for this
// one hot path. Each thread that ever opens a section owns a Reader record in
// memory that is never unmapped (so a writer may read the record of a thread
// that has exited), reached through one initial-exec TLS pointer. Entering the
// outermost section stores the grace period word into the record; leaving
// decrements it. The store-load barrier a section needs after its entry store
// is paid by the writer: membarrier() makes every running thread of the
// process execute one, so a reader pays only compiler barriers. Where the
// kernel has no membarrier, the readers fence themselves (the kFence bit sends
// every section through read_lock_slow).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace tracery::ust::rcu {

// Record and grace period word (gp): bits 0-30 the nesting depth of the
// thread's sections (gp: 1, so that entering the outermost section is one
// store), bit 31 kFence, bits 32-63 the epoch, advanced by each grace period.
inline constexpr uint64_t kNestMask = (uint64_t{1} << 31) - 1;
inline constexpr uint64_t kFence = uint64_t{1} << 31;
inline constexpr uint64_t kEpoch = uint64_t{1} << 32;

struct alignas(64) Reader {
	std::atomic<uint64_t> ctr; // outside any section: the epoch and kFence bits only
	std::atomic<pid_t> owner;  // the thread's id; 0: free
};

// The calling thread's record, null until its first section. Initial-exec: an
// %fs-relative load (when libtracery is dlopen'd, glibc places it in the
// static TLS surplus, as thread_context.cpp's variables).
extern __thread Reader *tls_reader __attribute__((tls_model("initial-exec"), visibility("hidden")));
extern std::atomic<uint64_t> gp __attribute__((visibility("hidden")));

// Enters a section if the thread has a record, is in no section and need not
// fence: the common case, inlined. False: nothing done, call read_lock_slow.
__attribute__((always_inline)) inline bool read_lock_fast()
{
	Reader *const r = tls_reader;
	if (__builtin_expect(r == nullptr, 0))
		return false;
	if (__builtin_expect(r->ctr.load(std::memory_order_relaxed) & (kNestMask | kFence), 0))
		return false;
	// Release: a writer that sees this section's epoch also sees the
	// thread's earlier sections as ended.
	r->ctr.store(gp.load(std::memory_order_relaxed), std::memory_order_release);
	std::atomic_signal_fence(std::memory_order_seq_cst); // the writer's membarrier does the rest
	return true;
}

// Enters a section in the other cases: registers the thread (its first
// section: a record claimed or mapped, with no lock and no malloc, so also from
// a signal handler), nests, or fences. False only if no record could be
// mapped: the caller skips its section.
bool read_lock_slow();

// Leaves the section read_lock_fast() or read_lock_slow() entered on this thread.
__attribute__((always_inline)) inline void read_unlock()
{
	Reader *const r = tls_reader;
	r->ctr.store(r->ctr.load(std::memory_order_relaxed) - 1, std::memory_order_release);
}

// Chooses how readers are ordered (membarrier or their own fences) while the
// process has one thread, where registering for membarrier costs nothing;
// idempotent. Called from libtracery's constructor before it starts a thread.
// In a process that already has threads the choice is left to the first
// synchronize(), and readers fence until then.
void init();

// Returns once every section that might have read a pointer replaced before
// this call has ended. Never from inside a section.
void synchronize();

// How many records the pool holds, claimed or free.
uint32_t record_count_for_testing();

// Held across fork() by the fork handlers (after the registry's lock), so that
// a child never inherits a writer's lock.
void lock_for_fork();
void unlock_after_fork();
// In the child after fork: the records of the threads it does not have are
// freed (a section they were in will never end), the calling thread's record
// takes its new thread id.
void after_fork_child();

} // namespace tracery::ust::rcu
