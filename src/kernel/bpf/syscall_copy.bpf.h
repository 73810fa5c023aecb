/* kernel/bpf/syscall_copy.bpf.h — what the BPF programs of
 * syscall_strings.bpf.c and syscall_events.bpf.c share: the system-call
 * tracepoints' records, the map of the arguments kept for the exits, and
 * the copies of a system call's user memory (its string arguments, a
 * socket address, a buffer) into the slots of a record (syscall_record.h),
 * as its attach cookie says. BPF only; include after bpf_helpers.h and
 * syscall_record.h.
 */
#ifndef TRACERY_KERNEL_BPF_SYSCALL_COPY_BPF_H
#define TRACERY_KERNEL_BPF_SYSCALL_COPY_BPF_H

/* The records of syscalls:sys_enter_NAME and sys_exit_NAME as the
 * programs see them (the tracepoints' format files). */
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

/* The arguments of the calls in progress whose exits read through them,
 * by thread; bounded: the least recently used goes first. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct tracery_kept_entry);
} kept SEC(".maps");

/* `used` masked for the verifier, which may not know its bound where the
 * compiler does (the empty asm keeps the compiler from dropping the mask). */
static __always_inline __u32 bounded(__u32 used)
{
	asm volatile("" : "+r"(used));
	return used & 0x3fff;
}

static __always_inline __u64 argument(const struct tracery_syscall_record *r, __u32 index)
{
	__u64 value = 0;
#pragma unroll
	for (int i = 0; i < 6; i++)
		if (i == index)
			value = r->args[i];
	return value;
}

/* The end of slot `*strings` of `r`, whose copy returned `n` (its bytes,
 * or < 0 the error): its length set, the bytes used and the slots counted
 * on. Returns 1 + the slot. */
static __always_inline __u32 end_slot(struct tracery_syscall_record *r, long n, __u32 *used, __u32 *strings)
{
	r->len[*strings & 3] = (int)n;
	if (n > 0)
		*used += (__u32)n;
	return ++*strings;
}

/* The socket address and the buffer the cookie names, each into the next
 * slot of `r` (its bytes at `data`, which has room for a copy at any
 * offset the verifier sees, used & 0x3fff, of any length it sees,
 * & 0x1fff); `ret`: the call's return value at an exit. Returns the bytes
 * used. */
static __always_inline __u32 copy_memory(struct tracery_syscall_record *r, char *data, __u64 mask, __u32 strings,
                                         __u32 used, long ret)
{
	const __u32 address = (mask >> TRACERY_COOKIE_ADDRESS_SHIFT) & 7;
	const __u32 address_length = (mask >> TRACERY_COOKIE_ADDRESS_LENGTH_SHIFT) & 7;
	r->address = 0;
	r->buffer = 0;
	if (address >= 1 && address <= 6 && address_length < 6 && strings < TRACERY_MAX_USER_STRINGS &&
	    used <= (TRACERY_MAX_USER_STRINGS - 1) * TRACERY_MAX_USER_STRING) {
		const __u64 pointer = argument(r, address - 1);
		__u64 length = argument(r, address_length);
		long n = 0;
		if (mask & TRACERY_COOKIE_LENGTH_POINTER) {
			int value = 0;
			n = bpf_probe_read_user(&value, sizeof(value), (const void *)length);
			length = value < 0 ? 0 : (__u64)value;
#pragma unroll
			for (int i = 0; i < 6; i++)
				if (i == address_length)
					r->args[i] = n == 0 ? (__u64)(long)value : 0;
		}
		if (length > TRACERY_MAX_ADDRESS)
			length = TRACERY_MAX_ADDRESS;
		if (n == 0) {
			n = -22; /* EINVAL: an empty address */
			if (length > 0) {
				n = bpf_probe_read_user(&data[bounded(used)], length & 0xff, (const void *)pointer);
				if (n == 0)
					n = (long)length;
			}
		}
		r->address = end_slot(r, n, &used, &strings);
	}
	const __u32 buffer = (mask >> TRACERY_COOKIE_BUFFER_SHIFT) & 7;
	const __u32 buffer_length = (mask >> TRACERY_COOKIE_BUFFER_LENGTH_SHIFT) & 7;
	__u64 bound = (mask >> TRACERY_COOKIE_BUFFER_BYTES_SHIFT) & 0xffff;
	if (bound > TRACERY_MAX_BUFFER)
		bound = TRACERY_MAX_BUFFER;
	if (buffer >= 1 && buffer <= 6 && strings < TRACERY_MAX_USER_STRINGS &&
	    used <= (TRACERY_MAX_USER_STRINGS - 1) * TRACERY_MAX_USER_STRING) {
		__u64 pointer = argument(r, buffer - 1);
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
			length = argument(r, buffer_length);
		}
		if (length > bound)
			length = bound;
		if (n == 0 && length > 0) {
			n = bpf_probe_read_user(&data[bounded(used)], length & 0x1fff, (const void *)pointer);
			if (n == 0)
				n = (long)length;
		}
		r->buffer = end_slot(r, n, &used, &strings);
	}
	r->strings = strings;
	return used;
}

/* The string arguments the cookie names (its bits 0-5), each into the next
 * slot of `r` from offset 0 of `data`. Returns the bytes used; `*strings`:
 * the slots. */
static __always_inline __u32 copy_strings(struct tracery_syscall_record *r, char *data, __u64 mask, __u32 *strings)
{
	__u32 used = 0;
	__u32 n_strings = 0;
#pragma unroll
	for (int i = 0; i < 6; i++) {
		if (!(mask & (1u << i)) || n_strings >= TRACERY_MAX_USER_STRINGS)
			continue;
		/* used < 3 * TRACERY_MAX_USER_STRING here: room for one more */
		if (used > (TRACERY_MAX_USER_STRINGS - 1) * TRACERY_MAX_USER_STRING)
			break;
		long n = bpf_probe_read_user_str(&data[used], TRACERY_MAX_USER_STRING, (const void *)r->args[i]);
		r->len[n_strings] = (int)n;
		if (n > 0)
			used += (__u32)n;
		n_strings++;
	}
	*strings = n_strings;
	return used;
}

#endif
