/* kernel/bpf/syscall_events.bpf.c — the BPF programs that write each
 * system-call event of a session whole, in place of tracefs's: attached to
 * syscalls:sys_enter_NAME and sys_exit_NAME of the calls whose arguments
 * are in user memory, each writes one record (syscall_record.h,
 * tracery_syscall_event): the time, the thread, its process and name, the
 * call's arguments (an exit's: those its entry kept) and return value, and
 * the slots its attach cookie names (strings, a socket address, a buffer),
 * into the ring buffer of the CPU it runs on (`rings`, one per CPU), which
 * that CPU's reader copies into the trace. Entry and exit are each one
 * record: nothing to join, so no value can be another call's.
 *
 * The time is bpf_ktime_get_ns() (CLOCK_MONOTONIC: tracefs's `mono` trace
 * clock) read after the record's place is reserved, so that a CPU's records
 * are in their times' order but where a program was preempted between the
 * two (the system-call tracepoints may be preempted): the reader sorts what
 * it reads at once.
 *
 * `threads` says whose calls are written: with settings[0] bit 0, only the
 * threads it lists with 1 (the session's tracked processes); a thread it
 * lists with 0 never (the session's own readers); with bit 1, nobody's
 * (the session is stopped). Counted per CPU in
 * `lost`: [0] records a ring buffer could not take, [1] exits whose entry's
 * arguments were not kept (written with TRACERY_RECORD_UNPAIRED), [2]
 * children of listed threads the full `threads` map could not take (their
 * calls not recorded).
 * Built by CMake with clang's BPF target; no CO-RE (see
 * syscall_strings.bpf.c). */
#include <linux/bpf.h>
// after linux/bpf.h, whose types it uses
#include <bpf/bpf_helpers.h>

#include "syscall_record.h"
// after syscall_record.h and bpf_helpers.h, which it uses
#include "syscall_copy.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct scratch {
	struct tracery_syscall_event event;
	char data[TRACERY_MAX_USER_STRINGS * TRACERY_MAX_USER_STRING + 0x2000];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_space SEC(".maps");

struct ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* the loader sets the session's size */
};

/* One ring buffer per CPU, by CPU number (the loader makes them). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* the loader sets the number of CPUs */
	__type(key, __u32);
	__array(values, struct ring);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} settings SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &which);
	if (n)
		*n += 1;
}

/* Whether the calls of thread `tid` are written: not while settings[0]
 * has bit 1 (the session stopped). */
static __always_inline int traced(__u32 tid)
{
	__u32 zero = 0;
	const __u32 *mode = bpf_map_lookup_elem(&settings, &zero);
	if (mode && (*mode & 2))
		return 0;
	const __u8 *listed = bpf_map_lookup_elem(&threads, &tid);
	if (listed)
		return *listed != 0;
	return !(mode && (*mode & 1));
}

/* The event's fields common to entry and exit. */
static __always_inline void begin(struct scratch *s, __u64 pid_tgid, __u64 cookie, int nr)
{
	s->event.pid = (__u32)(pid_tgid >> 32);
	s->event.event_id = (__u32)(cookie >> TRACERY_COOKIE_EVENT_ID_SHIFT);
	s->event.call.tid = (__u32)pid_tgid;
	s->event.call.nr = nr;
	bpf_get_current_comm(s->event.comm, sizeof(s->event.comm));
}

/* The record into this CPU's ring buffer, timed once its place is
 * reserved. */
static __always_inline void submit(struct scratch *s, __u32 used)
{
	__u64 bytes = sizeof(struct tracery_syscall_event) + used;
	/* checked in the register passed on (the compiler would check `used`) */
	asm volatile("" : "+r"(bytes));
	if (bytes > sizeof(*s))
		return;
	const __u32 cpu = bpf_get_smp_processor_id();
	void *ring = bpf_map_lookup_elem(&rings, &cpu);
	if (!ring) {
		count(0);
		return;
	}
	struct bpf_dynptr record;
	if (bpf_ringbuf_reserve_dynptr(ring, bytes, 0, &record) != 0) {
		bpf_ringbuf_discard_dynptr(&record, 0);
		count(0);
		return;
	}
	s->event.timestamp = bpf_ktime_get_ns();
	bpf_dynptr_write(&record, 0, s, bytes, 0);
	bpf_ringbuf_submit_dynptr(&record, 0);
}

/* This CPU's scratch space for a call of a thread the session traces, NULL
 * for another thread's. */
static __always_inline struct scratch *scratch_if_traced(__u32 tid)
{
	if (!traced(tid))
		return 0;
	__u32 zero = 0;
	return bpf_map_lookup_elem(&scratch_space, &zero);
}

/* An exit with no argument of its entry's: its return value alone. */
static __always_inline void submit_without_arguments(struct scratch *s)
{
	__builtin_memset(s->event.call.args, 0, sizeof(s->event.call.args));
	s->event.call.strings = s->event.call.address = s->event.call.buffer = 0;
	submit(s, 0);
}

SEC("tracepoint")
int sys_enter_event(struct sys_enter_context *ctx)
{
	const __u64 pid_tgid = bpf_get_current_pid_tgid();
	struct scratch *s = scratch_if_traced((__u32)pid_tgid);
	if (!s)
		return 0;
	const __u64 mask = bpf_get_attach_cookie(ctx);
	begin(s, pid_tgid, mask, ctx->nr);
	s->event.ret = 0;
	/* Copied, not read from the context (see syscall_strings.bpf.c). */
	if (bpf_probe_read_kernel(s->event.call.args, sizeof(s->event.call.args), ctx->args) != 0)
		__builtin_memset(s->event.call.args, 0, sizeof(s->event.call.args));
	if (mask & TRACERY_COOKIE_KEEP) {
		struct tracery_kept_entry entry = {.nr = ctx->nr};
		__builtin_memcpy(entry.args, s->event.call.args, sizeof(entry.args));
		const __u32 tid = (__u32)pid_tgid;
		bpf_map_update_elem(&kept, &tid, &entry, BPF_ANY);
	}
	__u32 strings = 0;
	const __u32 used = copy_strings(&s->event.call, s->data, mask, &strings);
	submit(s, copy_memory(&s->event.call, s->data, mask, strings, used, 0));
	return 0;
}

SEC("tracepoint")
int sys_exit_event(struct sys_exit_context *ctx)
{
	const __u64 pid_tgid = bpf_get_current_pid_tgid();
	const __u32 tid = (__u32)pid_tgid;
	struct scratch *s = scratch_if_traced(tid);
	if (!s)
		return 0;
	const __u64 mask = bpf_get_attach_cookie(ctx);
	begin(s, pid_tgid, mask, ctx->nr | TRACERY_RECORD_EXIT);
	s->event.ret = ctx->ret;
	const struct tracery_kept_entry *entry = bpf_map_lookup_elem(&kept, &tid);
	if (!(mask & TRACERY_COOKIE_KEEP)) {
		submit_without_arguments(s); /* nothing of the entry's needed */
		return 0;
	}
	if (!entry || entry->nr != ctx->nr) {
		count(1);
		s->event.call.nr |= TRACERY_RECORD_UNPAIRED;
		submit_without_arguments(s);
		return 0;
	}
	__builtin_memcpy(s->event.call.args, entry->args, sizeof(s->event.call.args));
	bpf_map_delete_elem(&kept, &tid);
	submit(s, copy_memory(&s->event.call, s->data, mask, 0, 0, ctx->ret));
	return 0;
}

/* With children followed (settings[0] bit 2): a fork by a listed thread
 * lists the child, as tracefs's event-fork does for set_event_pid. The
 * child's pid is at the offset of this kernel's format, the cookie. */
SEC("tracepoint")
int on_fork(void *ctx)
{
	__u32 zero = 0;
	const __u32 *mode = bpf_map_lookup_elem(&settings, &zero);
	if (!mode || !(*mode & 4))
		return 0;
	const __u32 parent = (__u32)bpf_get_current_pid_tgid();
	const __u8 *listed = bpf_map_lookup_elem(&threads, &parent);
	if (!listed || *listed != 1)
		return 0;
	const __u64 child_offset = bpf_get_attach_cookie(ctx);
	int child = 0;
	if (child_offset > 4096 || bpf_probe_read_kernel(&child, sizeof child, (const char *)ctx + child_offset) != 0)
		return 0;
	const __u32 key = (__u32)child;
	const __u8 one = 1;
	if (bpf_map_update_elem(&threads, &key, &one, BPF_ANY) != 0)
		count(2);
	return 0;
}
