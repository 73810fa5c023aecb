/* kernel/bpf/syscall_record.h — the record the BPF program of
 * syscall_strings.bpf.c writes into its ring buffer at a system call's
 * entry, read by user_strings.cpp: shared by both sides, C and fixed
 * sizes only.
 *
 *   u64 tid            the calling thread (global id, as tracefs's common_pid)
 *   s32 nr             the system call's number (tracefs's __syscall_nr)
 *   u32 strings        how many strings follow (the cookie's bits, in order)
 *   u64 args[6]        the raw arguments
 *   s32 len[4]         per string: its bytes with the NUL, or < 0 (a fault:
 *                      the error of bpf_probe_read_user_str)
 * followed by the strings, one after the other.
 */
#ifndef TRACERY_KERNEL_BPF_SYSCALL_RECORD_H
#define TRACERY_KERNEL_BPF_SYSCALL_RECORD_H

#define TRACERY_MAX_USER_STRINGS 4
#define TRACERY_MAX_USER_STRING 4096 /* PATH_MAX, with the NUL */

struct tracery_syscall_record {
	unsigned long long tid;
	int nr;
	unsigned int strings;
	unsigned long long args[6];
	int len[TRACERY_MAX_USER_STRINGS];
};

#endif
