/* kernel/bpf/syscall_strings.bpf.c — the BPF program the kernel session
 * attaches to syscalls:sys_enter_NAME of each enabled system call with
 * string arguments (paths): it copies those strings out of the calling
 * process's memory with bpf_probe_read_user_str into a ring buffer record
 * (syscall_record.h) that user_strings.cpp joins to the tracefs event of the
 * same call. The attach cookie says which arguments are strings (bit i:
 * argument i). A record the ring buffer cannot take is counted in `lost`.
 * Built by CMake with clang's BPF target; no CO-RE: the tracepoint's
 * context is the tracefs record (format: __syscall_nr at 8, arguments from
 * 16), whose layout is the kernel's ABI for syscall events. */
#include <linux/bpf.h>
// after linux/bpf.h, whose types it uses
#include <bpf/bpf_helpers.h>

#include "syscall_record.h"

char LICENSE[] SEC("license") = "GPL";

struct sys_enter_context {
	unsigned long long common; /* common_type, flags, preempt_count, pid */
	int nr;
	int pad;
	unsigned long args[6];
};

struct scratch {
	struct tracery_syscall_record record;
	char data[TRACERY_MAX_USER_STRINGS * TRACERY_MAX_USER_STRING];
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
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

SEC("tracepoint")
int sys_enter_strings(struct sys_enter_context *ctx)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch_space, &zero);
	if (!s)
		return 0;
	const __u64 mask = bpf_get_attach_cookie(ctx);
	s->record.tid = (__u32)bpf_get_current_pid_tgid();
	s->record.nr = ctx->nr;
	__u32 strings = 0;
	__u32 used = 0;
	/* Copied, not read from the context: a call has up to 6 arguments and
	 * the kernel refuses to attach a program that reads the context beyond
	 * the event's record (those beyond it are not compared). */
	if (bpf_probe_read_kernel(s->record.args, sizeof(s->record.args), ctx->args) != 0)
		return 0;
#pragma unroll
	for (int i = 0; i < 6; i++) {
		if (!(mask & (1u << i)) || strings >= TRACERY_MAX_USER_STRINGS)
			continue;
		/* used < 3 * TRACERY_MAX_USER_STRING here: room for one more */
		if (used > (TRACERY_MAX_USER_STRINGS - 1) * TRACERY_MAX_USER_STRING)
			break;
		long n = bpf_probe_read_user_str(&s->data[used], TRACERY_MAX_USER_STRING,
		                                 (const void *)s->record.args[i]);
		s->record.len[strings] = (int)n;
		if (n > 0)
			used += (__u32)n;
		strings++;
	}
	/* A socket address: its length argument's bytes, at most
	 * TRACERY_MAX_ADDRESS. */
	const __u32 address = (mask >> TRACERY_COOKIE_ADDRESS_SHIFT) & 7;
	const __u32 length_arg = (mask >> TRACERY_COOKIE_ADDRESS_LENGTH_SHIFT) & 7;
	s->record.address = 0;
	if (address >= 1 && address <= 6 && length_arg < 6 && strings < TRACERY_MAX_USER_STRINGS &&
	    used <= (TRACERY_MAX_USER_STRINGS - 1) * TRACERY_MAX_USER_STRING) {
		__u64 pointer = 0, length = 0;
#pragma unroll
		for (int i = 0; i < 6; i++) {
			if (i == address - 1)
				pointer = s->record.args[i];
			if (i == length_arg)
				length = s->record.args[i];
		}
		if (length > TRACERY_MAX_ADDRESS)
			length = TRACERY_MAX_ADDRESS;
		long n = -22; /* EINVAL: an empty address */
		if (length > 0) {
			n = bpf_probe_read_user(&s->data[used], length & 0xff, (const void *)pointer);
			if (n == 0)
				n = (long)length;
		}
		s->record.len[strings & 3] = (int)n;
		if (n > 0)
			used += (__u32)n;
		strings++;
		s->record.address = strings;
	}
	s->record.strings = strings;
	const __u64 bytes = sizeof(struct tracery_syscall_record) + used;
	if (bytes > sizeof(*s))
		return 0;
	if (bpf_ringbuf_output(&records, s, bytes, 0) != 0) {
		__u64 *n = bpf_map_lookup_elem(&lost, &zero);
		if (n)
			*n += 1;
	}
	return 0;
}
