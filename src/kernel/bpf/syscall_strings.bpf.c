/* kernel/bpf/syscall_strings.bpf.c — the BPF programs the kernel session
 * attaches to syscalls:sys_enter_NAME and sys_exit_NAME of each enabled
 * system call whose arguments are in user memory: at the entry, string
 * arguments (paths) copied with bpf_probe_read_user_str, a socket address
 * and a buffer being written copied with bpf_probe_read_user; at the exit,
 * what the call wrote (a buffer read, an fd pair, an accepted address)
 * through the pointers its entry kept in a per-thread map. Each goes into a
 * ring buffer record (syscall_record.h) that user_strings.cpp joins to the
 * tracefs event of the same call. The attach cookie says what to copy. A
 * record the ring buffer cannot take is counted in `lost[0]`, an exit whose
 * entry's arguments were not kept (the map full: its oldest entry went; or
 * the entry came before the program) in `lost[1]`, and written as a record
 * marked TRACERY_RECORD_UNPAIRED.
 * Built by CMake with clang's BPF target; no CO-RE: the tracepoint's
 * context is the tracefs record (format: __syscall_nr at 8, arguments from
 * 16), whose layout is the kernel's ABI for syscall events. */
#include <linux/bpf.h>
// after linux/bpf.h, whose types it uses
#include <bpf/bpf_helpers.h>

#include "syscall_record.h"
// after syscall_record.h and bpf_helpers.h, which it uses
#include "syscall_copy.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct scratch {
	struct tracery_syscall_record record;
	/* room for a copy at any offset the verifier sees (used & 0x3fff, which
	 * is used: at most 3 slots' worth) of any length it sees (& 0x1fff) */
	char data[TRACERY_MAX_USER_STRINGS * TRACERY_MAX_USER_STRING + 0x2000];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_space SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* the loader sets the session's size */
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &which);
	if (n)
		*n += 1;
}

static __always_inline void submit(struct scratch *s, __u32 used)
{
	const __u64 bytes = sizeof(struct tracery_syscall_record) + used;
	if (bytes > sizeof(*s))
		return;
	if (bpf_ringbuf_output(&records, s, bytes, 0) != 0)
		count(0);
}

/* This CPU's scratch space (the one entry of a per-CPU array: NULL never,
 * but the verifier wants it checked). */
static __always_inline struct scratch *this_cpu_scratch(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&scratch_space, &zero);
}

SEC("tracepoint")
int sys_enter_strings(struct sys_enter_context *ctx)
{
	struct scratch *s = this_cpu_scratch();
	if (!s)
		return 0;
	const __u64 mask = bpf_get_attach_cookie(ctx);
	const __u32 tid = (__u32)bpf_get_current_pid_tgid();
	s->record.tid = tid;
	s->record.nr = ctx->nr;
	__u32 strings = 0;
	/* Copied, not read from the context: a call has up to 6 arguments and
	 * the kernel refuses to attach a program that reads the context beyond
	 * the event's record (those beyond it are not compared). */
	if (bpf_probe_read_kernel(s->record.args, sizeof(s->record.args), ctx->args) != 0)
		return 0;
	if (mask & TRACERY_COOKIE_KEEP) {
		struct tracery_kept_entry entry = {.nr = ctx->nr};
		__builtin_memcpy(entry.args, s->record.args, sizeof(entry.args));
		bpf_map_update_elem(&kept, &tid, &entry, BPF_ANY);
	}
	if ((mask & ~TRACERY_COOKIE_KEEP) == 0)
		return 0; /* nothing to copy at the entry */
	const __u32 used = copy_strings(&s->record, s->data, mask, &strings);
	submit(s, copy_memory(&s->record, s->data, mask, strings, used, 0));
	return 0;
}

SEC("tracepoint")
int sys_exit_outputs(struct sys_exit_context *ctx)
{
	struct scratch *s = this_cpu_scratch();
	if (!s)
		return 0;
	const __u64 mask = bpf_get_attach_cookie(ctx);
	const __u32 tid = (__u32)bpf_get_current_pid_tgid();
	const struct tracery_kept_entry *entry = bpf_map_lookup_elem(&kept, &tid);
	if (!entry || entry->nr != ctx->nr) {
		/* Its event says the arguments are missing; the record says so
		 * too, so that the reader, joining exits by thread and call,
		 * never gives this exit the record of the thread's next call. */
		count(1);
		__builtin_memset(&s->record, 0, sizeof(s->record));
		s->record.tid = tid;
		s->record.nr = ctx->nr | TRACERY_RECORD_EXIT | TRACERY_RECORD_UNPAIRED;
		submit(s, 0);
		return 0;
	}
	__builtin_memcpy(s->record.args, entry->args, sizeof(s->record.args));
	bpf_map_delete_elem(&kept, &tid);
	s->record.tid = tid;
	s->record.nr = ctx->nr | TRACERY_RECORD_EXIT;
	submit(s, copy_memory(&s->record, s->data, mask, 0, 0, ctx->ret));
	return 0;
}
