/* kernel/bpf/syscall_record.h — the record the BPF program of
 * syscall_strings.bpf.c writes into its ring buffer at a system call's
 * entry, read by user_strings.cpp: shared by both sides, C and fixed
 * sizes only.
 *
 *   u64 tid            the calling thread (global id, as tracefs's common_pid)
 *   s32 nr             the system call's number (tracefs's __syscall_nr)
 *   u32 strings        how many slots follow: the strings (the cookie's
 *                      bits, in order), then the socket address if any
 *   u64 args[6]        the raw arguments
 *   s32 len[4]         per slot: its bytes (a string's with its NUL), or
 *                      < 0 (a fault: the error of the read)
 *   u32 address        1 + the slot holding a socket address's bytes (no
 *                      NUL; at most TRACERY_MAX_ADDRESS), 0 if none
 *   u32 reserved
 * followed by the strings, one after the other.
 */
#ifndef TRACERY_KERNEL_BPF_SYSCALL_RECORD_H
#define TRACERY_KERNEL_BPF_SYSCALL_RECORD_H

#define TRACERY_MAX_USER_STRINGS 4
#define TRACERY_MAX_USER_STRING 4096 /* PATH_MAX, with the NUL */
#define TRACERY_MAX_ADDRESS 128      /* sizeof(struct sockaddr_storage) */

/* The attach cookie: bit i (0-5) argument i is a string; bits 8-10, when
 * not 0: 1 + the argument that points to a socket address, whose length
 * is the argument of bits 12-14. */
#define TRACERY_COOKIE_STRINGS 0x3fu
#define TRACERY_COOKIE_ADDRESS_SHIFT 8
#define TRACERY_COOKIE_ADDRESS_LENGTH_SHIFT 12

struct tracery_syscall_record {
	unsigned long long tid;
	int nr;
	unsigned int strings;
	unsigned long long args[6];
	int len[TRACERY_MAX_USER_STRINGS];
	unsigned int address;
	unsigned int reserved;
};

#endif
