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

char LICENSE[] SEC("license") = "GPL";

struct sys_enter_context {
	unsigned long long common; /* common_type, flags, preempt_count, pid */
	int nr;
	int pad;
	unsigned long args[6];
};

struct sys_exit_context {
	unsigned long long common;
	int nr;
	int pad;
	long ret;
};

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

/* The arguments of the calls in progress whose exits read through them,
 * by thread; bounded: the least recently used goes first. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct tracery_kept_entry);
} kept SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&lost, &which);
	if (n)
		*n += 1;
}

/* `used` masked for the verifier, which may not know its bound where the
 * compiler does (the empty asm keeps the compiler from dropping the mask). */
static __always_inline __u32 bounded(__u32 used)
{
	asm volatile("" : "+r"(used));
	return used & 0x3fff;
}

static __always_inline __u64 argument(const struct scratch *s, __u32 index)
{
	__u64 value = 0;
#pragma unroll
	for (int i = 0; i < 6; i++)
		if (i == index)
			value = s->record.args[i];
	return value;
}

/* The socket address and the buffer the cookie names, each into the next
 * slot; `ret`: the call's return value at an exit. Returns the bytes used. */
static __always_inline __u32 copy_memory(struct scratch *s, __u64 mask, __u32 strings, __u32 used, long ret)
{
	const __u32 address = (mask >> TRACERY_COOKIE_ADDRESS_SHIFT) & 7;
	const __u32 address_length = (mask >> TRACERY_COOKIE_ADDRESS_LENGTH_SHIFT) & 7;
	s->record.address = 0;
	s->record.buffer = 0;
	if (address >= 1 && address <= 6 && address_length < 6 && strings < TRACERY_MAX_USER_STRINGS &&
	    used <= (TRACERY_MAX_USER_STRINGS - 1) * TRACERY_MAX_USER_STRING) {
		const __u64 pointer = argument(s, address - 1);
		__u64 length = argument(s, address_length);
		long n = 0;
		if (mask & TRACERY_COOKIE_LENGTH_POINTER) {
			int value = 0;
			n = bpf_probe_read_user(&value, sizeof(value), (const void *)length);
			length = value < 0 ? 0 : (__u64)value;
#pragma unroll
			for (int i = 0; i < 6; i++)
				if (i == address_length)
					s->record.args[i] = n == 0 ? (__u64)(long)value : 0;
		}
		if (length > TRACERY_MAX_ADDRESS)
			length = TRACERY_MAX_ADDRESS;
		if (n == 0) {
			n = -22; /* EINVAL: an empty address */
			if (length > 0) {
				n = bpf_probe_read_user(&s->data[bounded(used)], length & 0xff, (const void *)pointer);
				if (n == 0)
					n = (long)length;
			}
		}
		s->record.len[strings & 3] = (int)n;
		if (n > 0)
			used += (__u32)n;
		strings++;
		s->record.address = strings;
	}
	const __u32 buffer = (mask >> TRACERY_COOKIE_BUFFER_SHIFT) & 7;
	const __u32 buffer_length = (mask >> TRACERY_COOKIE_BUFFER_LENGTH_SHIFT) & 7;
	__u64 bound = (mask >> TRACERY_COOKIE_BUFFER_BYTES_SHIFT) & 0xffff;
	if (bound > TRACERY_MAX_BUFFER)
		bound = TRACERY_MAX_BUFFER;
	if (buffer >= 1 && buffer <= 6 && strings < TRACERY_MAX_USER_STRINGS &&
	    used <= (TRACERY_MAX_USER_STRINGS - 1) * TRACERY_MAX_USER_STRING) {
		__u64 pointer = argument(s, buffer - 1);
		__u64 length = bound;
		long n = 0;
		if (mask & TRACERY_COOKIE_IOVEC) {
			__u64 iov[2] = {0, 0}; /* struct iovec: base, length */
			n = bpf_probe_read_user(iov, sizeof(iov), (const void *)pointer);
			pointer = iov[0];
			length = iov[1];
		} else if (mask & TRACERY_COOKIE_LENGTH_RETURN) {
			length = ret > 0 ? (__u64)ret : 0;
		} else if (buffer_length < 6) {
			length = argument(s, buffer_length);
		}
		if (length > bound)
			length = bound;
		if (n == 0 && length > 0) {
			n = bpf_probe_read_user(&s->data[bounded(used)], length & 0x1fff, (const void *)pointer);
			if (n == 0)
				n = (long)length;
		}
		s->record.len[strings & 3] = (int)n;
		if (n > 0)
			used += (__u32)n;
		strings++;
		s->record.buffer = strings;
	}
	s->record.strings = strings;
	return used;
}

static __always_inline void submit(struct scratch *s, __u32 used)
{
	const __u64 bytes = sizeof(struct tracery_syscall_record) + used;
	if (bytes > sizeof(*s))
		return;
	if (bpf_ringbuf_output(&records, s, bytes, 0) != 0)
		count(0);
}

SEC("tracepoint")
int sys_enter_strings(struct sys_enter_context *ctx)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch_space, &zero);
	if (!s)
		return 0;
	const __u64 mask = bpf_get_attach_cookie(ctx);
	const __u32 tid = (__u32)bpf_get_current_pid_tgid();
	s->record.tid = tid;
	s->record.nr = ctx->nr;
	__u32 strings = 0;
	__u32 used = 0;
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
	submit(s, copy_memory(s, mask, strings, used, 0));
	return 0;
}

SEC("tracepoint")
int sys_exit_outputs(struct sys_exit_context *ctx)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch_space, &zero);
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
	submit(s, copy_memory(s, mask, 0, 0, ctx->ret));
	return 0;
}
