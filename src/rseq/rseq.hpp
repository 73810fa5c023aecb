// rseq.hpp — updates that no preemption can split, through the kernel's restartable sequences (namespace
// tracery::rseq): a 16-byte compare-and-store effective only on a given CPU (the ring buffer's per-CPU write
// position), and a store made only while the TSC is below a deadline (the trace clock's publication).
//
// glibc (2.35 and later) registers an rseq area for every thread; the kernel keeps its cpu_id current and, if the
// thread is preempted, migrated or interrupted by a signal while its instruction pointer is inside a registered
// critical section, restarts it at the section's abort handler. A read-modify-write whose final store is the last
// instruction of such a section is therefore atomic with respect to every other thread *on the same CPU*, in any
// process, at the cost of plain loads and stores, where a `lock cmpxchg16b` costs several times more and, worse,
// stalls the pipeline until earlier stores drain. It is not atomic with respect to other CPUs: a value updated
// this way must only ever be updated on its own CPU, by these functions (see ring_buffer.hpp for how the ring
// buffer keeps to that).
//
// Nothing here is used where it cannot be checked: without a registered rseq area (glibc without rseq, the
// glibc.pthread.rseq=0 tunable, valgrind) and under ThreadSanitizer (which cannot see the stores made by the
// assembly below, so it would miss the synchronisation they carry), every function returns "not done" and the
// caller falls back: the ring buffer to an atomic instruction, the clock to a check followed by a store.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif

#if defined(__SANITIZE_THREAD__)
#define TRACERY_RSEQ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRACERY_RSEQ_TSAN 1
#endif
#endif

#if defined(__x86_64__) && defined(RSEQ_SIG) && !defined(TRACERY_RSEQ_TSAN)
#define TRACERY_HAVE_RSEQ 1
#else
#define TRACERY_HAVE_RSEQ 0
#endif

namespace tracery::rseq {

#if TRACERY_HAVE_RSEQ

// struct rseq: cpu_id_start at 0, cpu_id at 4, rseq_cs at 8 (the kernel's ABI, fixed).
//
// The functions holding a critical section, and those of ring_buffer.hpp that call them, are always inlined: an
// out-of-line copy of an inline function lives in a COMDAT section that the linker drops when another object has
// the same copy, and the section's __rseq_cs descriptor would then point into a dropped section (ld refuses to
// link; seen under AddressSanitizer, whose larger code GCC inlines less).
//
// Layout of each critical section below (asm goto: each path leaves for a C label, so that the caller branches
// on where the section ended rather than on a result code). Label 3: its descriptor (struct rseq_cs: version,
// flags, start_ip, post_commit_offset, abort_ip), which the code publishes in rseq->rseq_cs before entering. 1..2:
// the section; its last instruction is the single store that commits, and falling through label 2 is success. 4:
// the abort handler, out of line in __rseq_failure, preceded by the signature the kernel checks (inside a ud1
// instruction, as librseq does, so that disassemblers stay in sync), which leaves for the C label `aborted`. A
// section that gives up without storing jumps to the C label `gave_up`.
// clang-format off
#define TRACERY_RSEQ_DESCRIPTOR              \
	".pushsection __rseq_cs, \"aw\"\n\t" \
	".balign 32\n\t"                     \
	"3: .long 0x0, 0x0\n\t"              \
	".quad 1f, (2f - 1f), 4f\n\t"        \
	".popsection\n\t"
// Publishes the descriptor (clobbers rax; needs the operand [off] = __rseq_offset); the section starts after it.
#define TRACERY_RSEQ_ENTER          \
	"leaq 3b(%%rip), %%rax\n\t" \
	"movq %%rax, %%fs:8(%[off])\n\t"
// What the function holding a section returns, by where the section ended: 1 after the store, 0 from the C label
// `gave_up`, -1 from `aborted`.
#define TRACERY_RSEQ_RETURN_OUTCOME \
	return 1;                   \
	gave_up:                    \
	return 0;                   \
	aborted:                    \
	return -1
// The section's end (label 2, right after its committing store) and the abort handler.
#define TRACERY_RSEQ_END                          \
	"2:\n\t"                                  \
	".pushsection __rseq_failure, \"ax\"\n\t" \
	".byte 0x0f, 0xb9, 0x3d\n\t"              \
	".long 0x53053053\n\t"                    \
	"4:\n\t"                                  \
	"jmp %l[aborted]\n\t"                     \
	".popsection\n\t"
// clang-format on
static_assert(RSEQ_SIG == 0x53053053, "the abort signature below is glibc's x86-64 RSEQ_SIG");

// The CPU the calling thread runs on, from its rseq area; negative without one (glibc leaves a negative cpu_id
// in the area of a thread whose registration failed).
inline int32_t current_cpu() noexcept
{
	if (__rseq_size == 0)
		return -1;
	int32_t cpu;
	asm volatile("movl %%fs:4(%1), %0" : "=r"(cpu) : "r"(__rseq_offset));
	return cpu;
}

// True if the calling thread has an rseq area the kernel updates.
inline bool registered() noexcept { return current_cpu() >= 0; }

// If the calling thread runs on `cpu`: compare the 16 bytes at p (16-byte aligned) with {e0, e1} and, if equal,
// replace them with {n0, n1}, atomically with respect to every thread on that CPU. The replacement is a single
// 16-byte store, so an abort never leaves half of it behind. Returns 1 if replaced, 0 if the bytes differed,
// -1 if the thread is not on `cpu`, was preempted or interrupted meanwhile, or has no rseq area.
[[gnu::always_inline]] inline int cas16_on_cpu(uint32_t cpu, void *p, uint64_t e0, uint64_t e1, uint64_t n0,
                                               uint64_t n1) noexcept
{
	if (__rseq_size == 0)
		return -1;
	const long off = __rseq_offset;
	// clang-format off
	asm goto(
		TRACERY_RSEQ_DESCRIPTOR
		"movq %[n0], %%xmm0\n\t"
		"movq %[n1], %%xmm1\n\t"
		"punpcklqdq %%xmm1, %%xmm0\n\t"
		TRACERY_RSEQ_ENTER
		"1:\n\t"
		"cmpl %[cpu], %%fs:4(%[off])\n\t"
		"jnz 4f\n\t"
		"cmpq %[e0], 0(%[p])\n\t"
		"jnz %l[gave_up]\n\t"
		"cmpq %[e1], 8(%[p])\n\t"
		"jnz %l[gave_up]\n\t"
		"movdqa %%xmm0, 0(%[p])\n\t"
		TRACERY_RSEQ_END
		:
		: [cpu] "r"(cpu), [off] "r"(off), [p] "r"(p), [e0] "r"(e0), [e1] "r"(e1), [n0] "r"(n0), [n1] "r"(n1)
		: "rax", "xmm0", "xmm1", "memory", "cc"
		: gave_up, aborted);
	// clang-format on
	TRACERY_RSEQ_RETURN_OUTCOME;
}

// If the TSC (read after every earlier instruction, lfence) is below `deadline`: store v at *p, with no
// preemption, migration or signal between that read and the store. Returns 1 if stored, 0 if the TSC had reached
// the deadline (nothing stored), -1 if the sequence was interrupted (nothing stored: try again) or the thread has
// no rseq area. A plain store: the caller orders what follows it. Only an interruption the guest kernel does not
// see, a hypervisor descheduling the vCPU, can still come between the read and the store.
[[gnu::always_inline]] inline int store32_if_tsc_below(uint32_t *p, uint32_t v, uint64_t deadline) noexcept
{
	if (__rseq_size == 0)
		return -1;
	const long off = __rseq_offset;
	// clang-format off
	asm goto(
		TRACERY_RSEQ_DESCRIPTOR
		TRACERY_RSEQ_ENTER
		"1:\n\t"
		"lfence\n\t"
		"rdtsc\n\t"
		"shlq $32, %%rdx\n\t"
		"orq %%rdx, %%rax\n\t"
		"cmpq %[deadline], %%rax\n\t"
		"jae %l[gave_up]\n\t"
		"movl %[v], 0(%[p])\n\t"
		TRACERY_RSEQ_END
		:
		: [off] "r"(off), [p] "r"(p), [v] "r"(v), [deadline] "r"(deadline)
		: "rax", "rdx", "memory", "cc"
		: gave_up, aborted);
	// clang-format on
	TRACERY_RSEQ_RETURN_OUTCOME;
}

#else

inline bool registered() noexcept { return false; }
inline int32_t current_cpu() noexcept { return -1; }
inline int cas16_on_cpu(uint32_t, void *, uint64_t, uint64_t, uint64_t, uint64_t) noexcept { return -1; }
inline int store32_if_tsc_below(uint32_t *, uint32_t, uint64_t) noexcept { return -1; }

#endif

} // namespace tracery::rseq
