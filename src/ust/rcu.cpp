// ust/rcu.cpp — the records of the readers, their registration and the grace
// period (rcu.hpp).
//
// Records live in chunks of mapped memory, pushed onto a lock-free list and
// never unmapped. A thread claims a free record with a compare-and-swap of its
// owner (0 to the thread's id); a record whose owner has exited (the kernel
// knows no such thread in this process) is taken over the same way, so the
// records of exited threads are reused without any hook at thread exit.
//
// A grace period: a memory barrier on every running thread (membarrier), then
// the epoch advances, then each record is waited for while it is in a section
// entered under an older epoch. A section entered under the new epoch loaded
// the grace period word after the barrier, so it reads only the new pointers;
// a record that was seen outside any section either left its section (its
// release store) or entered it after the barrier.
#include "ust/rcu.hpp"

#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>

namespace tracery::ust::rcu {

__thread Reader *tls_reader __attribute__((tls_model("initial-exec")));
std::atomic<uint64_t> gp{kEpoch | kFence | 1};

namespace {

constexpr size_t kChunkBytes = 16384;

struct alignas(64) Chunk {
	Chunk *next;
	uint32_t count;
	Reader *readers() { return reinterpret_cast<Reader *>(this + 1); }
};

std::atomic<Chunk *> chunks{nullptr};

// Where the next claim looks for records of exited threads, and how many.
std::atomic<uint32_t> reclaim_cursor{0};
constexpr uint32_t kChecks = 16;

// A record being taken back from an exited owner by a writer.
constexpr pid_t kReclaiming = -1;

// Taken by synchronize(), init() and the fork handlers. Never destroyed:
// objects unregister their events (a grace period) after static destruction.
std::mutex &gp_mutex()
{
	static auto *m = new std::mutex;
	return *m;
}

bool initialized = false;    // under gp_mutex
bool use_membarrier = false; // under gp_mutex

// flags 0, so the kernel ignores cpu_id. It is the CPU the call is made on all
// the same: a kernel trace shows the call's arguments, and lttng-analyses
// takes a payload field named cpu_id for the CPU of the event (with 0 there,
// it put the entries of calls made elsewhere on CPU 0's running thread).
long membarrier(int cmd)
{
	const int cpu = sched_getcpu();
	return syscall(__NR_membarrier, cmd, 0, cpu < 0 ? 0 : cpu);
}

// A full memory barrier. GCC's ThreadSanitizer does not model fences
// (-Wtsan): what it checks here is the release and acquire of the records.
inline void full_fence()
{
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wtsan"
#endif
	__atomic_thread_fence(__ATOMIC_SEQ_CST); // the builtin, so that the pragmas apply to it
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

// Under gp_mutex: membarrier if the kernel has it, else readers fence.
void choose_barrier()
{
	const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
	use_membarrier = cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	                 membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
	if (use_membarrier)
		gp.fetch_and(~kFence, std::memory_order_relaxed);
	else
		gp.fetch_or(kFence, std::memory_order_relaxed);
}

// A full memory barrier on every thread of the process that runs now.
void barrier_on_every_thread()
{
	if (!use_membarrier) {
		full_fence(); // the readers fence themselves
		return;
	}
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 || membarrier(MEMBARRIER_CMD_GLOBAL) == 0)
		return;
	// The readers rely on it and cannot be told otherwise now.
	fprintf(stderr, "tracery: membarrier failed (%s): cannot wait for readers\n", strerror(errno));
	abort();
}

template <typename Fn>
void for_each_reader(Fn fn)
{
	for (Chunk *c = chunks.load(std::memory_order_acquire); c; c = c->next)
		for (uint32_t i = 0; i < c->count; i++)
			if (fn(c->readers()[i]))
				return;
}

bool thread_exited(pid_t tid) { return tid > 0 && syscall(SYS_tgkill, getpid(), tid, 0) == -1 && errno == ESRCH; }

// The value of a record outside any section: readers fence while gp says so.
uint64_t idle_value() { return gp.load(std::memory_order_relaxed) & kFence; }

// A free record, one of an exited thread, or one of a new chunk; null if no
// memory could be mapped. Lock-free and malloc-free: it may run in a signal
// handler (errno is kept for the program).
Reader *claim()
{
	const int saved_errno = errno;
	const pid_t me = static_cast<pid_t>(syscall(SYS_gettid));
	Reader *mine = nullptr;
	for_each_reader([&](Reader &r) {
		pid_t free = 0;
		if (r.owner.load(std::memory_order_relaxed) == 0 &&
		    r.owner.compare_exchange_strong(free, me, std::memory_order_acquire))
			mine = &r;
		return mine != nullptr;
	});
	// Exited owners: a bounded number of checks (one system call each), each
	// claim checking the next records round the pool, so that live threads at
	// its head do not hide the exited ones behind them.
	const uint32_t total = mine ? 0 : record_count_for_testing();
	if (total) {
		const uint32_t first = reclaim_cursor.fetch_add(kChecks, std::memory_order_relaxed) % total;
		uint32_t index = 0; // chunks pushed meanwhile only shift which records are checked
		for_each_reader([&](Reader &r) {
			if ((index++ + total - first) % total >= kChecks) // outside first .. first + kChecks - 1
				return false;
			pid_t owner = r.owner.load(std::memory_order_relaxed);
			if (owner > 0 && owner != me && thread_exited(owner) &&
			    r.owner.compare_exchange_strong(owner, me, std::memory_order_acquire))
				mine = &r;
			return mine != nullptr;
		});
	}
	if (!mine) {
		void *m = mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED) {
			auto *c = new (m) Chunk{nullptr, (kChunkBytes - sizeof(Chunk)) / sizeof(Reader)};
			for (uint32_t i = 0; i < c->count; i++)
				new (&c->readers()[i]) Reader{{0}, {0}};
			mine = &c->readers()[0];
			mine->owner.store(me, std::memory_order_relaxed);
			c->next = chunks.load(std::memory_order_relaxed);
			while (!chunks.compare_exchange_weak(c->next, c, std::memory_order_release,
			                                     std::memory_order_relaxed)) {
			}
		}
	}
	if (mine) // outside any section: an exited owner may have left one open
		mine->ctr.store(idle_value(), std::memory_order_relaxed);
	errno = saved_errno;
	return mine;
}

// Waits while `r` is in a section entered before the epoch `current` (a
// reader that stopped for good inside a section, having exited, is freed).
void wait_for(Reader &r, uint64_t current)
{
	for (unsigned spins = 0;; spins++) {
		const uint64_t c = r.ctr.load(std::memory_order_acquire);
		if (!(c & kNestMask) || (c & ~(kEpoch - 1)) == (current & ~(kEpoch - 1)))
			return;
		if (spins < 100) {
			sched_yield();
			continue;
		}
		pid_t owner = r.owner.load(std::memory_order_relaxed);
		if (thread_exited(owner) && r.owner.compare_exchange_strong(owner, kReclaiming)) {
			r.ctr.store(0, std::memory_order_relaxed);
			r.owner.store(0, std::memory_order_release);
			return;
		}
		const timespec pause{0, 1000000}; // 1 ms: the reader is preempted, or in a long probe
		nanosleep(&pause, nullptr);
	}
}

} // namespace

bool read_lock_slow()
{
	Reader *r = tls_reader;
	if (!r) {
		// A signal handler that interrupts this registration registers a
		// record of its own; the thread keeps the one stored last.
		r = claim();
		if (!r)
			return false;
		tls_reader = r;
	}
	const uint64_t c = r->ctr.load(std::memory_order_relaxed);
	if (c & kNestMask) {
		r->ctr.store(c + 1, std::memory_order_release); // the outermost section holds the epoch
		return true;
	}
	const uint64_t g = gp.load(std::memory_order_relaxed);
	r->ctr.store(g, std::memory_order_release);
	if (g & kFence)
		full_fence();
	else
		std::atomic_signal_fence(std::memory_order_seq_cst);
	return true;
}

// The kernel registers a process for membarrier at once while it has one
// thread; with more, it waits for an RCU grace period of its own (10-20 ms
// measured here) before returning. So the registration is made while the
// process is single-threaded (libtracery's constructor calls init() before it
// starts any thread), or else by the first writer that waits for readers:
// until then the readers fence, and no thread of a process that is never
// traced pays for it.
void init()
{
	std::lock_guard lock(gp_mutex());
	if (!initialized && __libc_single_threaded) {
		choose_barrier();
		initialized = true;
	}
}

void synchronize()
{
	std::lock_guard lock(gp_mutex());
	if (!initialized) {
		choose_barrier();
		initialized = true;
	}
	barrier_on_every_thread();
	const uint64_t current = gp.fetch_add(kEpoch, std::memory_order_relaxed) + kEpoch;
	for_each_reader([&](Reader &r) {
		wait_for(r, current);
		return false;
	});
}

uint32_t record_count_for_testing()
{
	uint32_t n = 0;
	for_each_reader([&](Reader &) { return ++n, false; });
	return n;
}

void lock_for_fork() { gp_mutex().lock(); }

void unlock_after_fork() { gp_mutex().unlock(); }

// The registration for membarrier belongs to the address space, which fork()
// copies: the child's barriers work as its parent's did.
void after_fork_child()
{
	std::lock_guard lock(gp_mutex());
	const pid_t me = static_cast<pid_t>(syscall(SYS_gettid));
	for_each_reader([&](Reader &r) {
		if (&r == tls_reader) {
			r.owner.store(me, std::memory_order_relaxed);
		} else {
			r.ctr.store(0, std::memory_order_relaxed);
			r.owner.store(0, std::memory_order_relaxed);
		}
		return false;
	});
}

} // namespace tracery::ust::rcu
