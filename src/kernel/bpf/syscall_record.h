/* kernel/bpf/syscall_record.h — the record the BPF programs of
 * syscall_strings.bpf.c write into their ring buffer at a system call's
 * entry or exit, read by user_strings.cpp: shared by both sides, C and
 * fixed sizes only.
 *
 *   u64 tid            the calling thread (global id, as tracefs's common_pid)
 *   s32 nr             the system call's number (tracefs's __syscall_nr);
 *                      with TRACERY_RECORD_EXIT set in an exit's record
 *                      (and TRACERY_RECORD_UNPAIRED if its entry's
 *                      arguments were missing)
 *   u32 strings        how many slots follow: the strings (the cookie's
 *                      bits, in order), then the socket address if any,
 *                      then the buffer if any
 *   u64 args[6]        the raw arguments (an exit's: those its entry kept,
 *                      but for a length read through its pointer, see
 *                      TRACERY_COOKIE_LENGTH_POINTER)
 *   s32 len[4]         per slot: its bytes (a string's with its NUL), or
 *                      < 0 (a fault: the error of the read)
 *   u32 address        1 + the slot holding a socket address's bytes (no
 *                      NUL; at most TRACERY_MAX_ADDRESS), 0 if none
 *   u32 buffer         1 + the slot holding a buffer's bytes (no NUL; at
 *                      most TRACERY_MAX_BUFFER; 0 bytes is an empty
 *                      buffer, not a fault), 0 if none
 * followed by the slots' bytes, one after the other.
 */
#ifndef TRACERY_KERNEL_BPF_SYSCALL_RECORD_H
#define TRACERY_KERNEL_BPF_SYSCALL_RECORD_H

#define TRACERY_MAX_USER_STRINGS 4
#define TRACERY_MAX_USER_STRING 4096 /* PATH_MAX, with the NUL */
#define TRACERY_MAX_ADDRESS 128      /* sizeof(struct sockaddr_storage) */
#define TRACERY_MAX_BUFFER 4096      /* the largest buffer capture */

#define TRACERY_RECORD_EXIT 0x40000000 /* in nr: the record of an exit */
/* in an exit's nr: its entry's arguments were not kept (the call began
 * before the program was attached, or the map of calls in progress lost
 * them): no slots, its args 0. Written so that each exit the program sees
 * has a record, and a later call's record is never taken for this one. */
#define TRACERY_RECORD_UNPAIRED 0x20000000

/* The attach cookie: bit i (0-5) argument i is a string; bits 8-10, when
 * not 0: 1 + the argument that points to a socket address, whose length
 * is the argument of bits 12-14; bits 16-18, when not 0: 1 + the argument
 * that points to a buffer, whose length is the argument of bits 20-22
 * (TRACERY_COOKIE_FIXED_LENGTH: the bound itself), at most the bytes of
 * bits 32-47. */
#define TRACERY_COOKIE_STRINGS 0x3fu
#define TRACERY_COOKIE_ADDRESS_SHIFT 8
#define TRACERY_COOKIE_ADDRESS_LENGTH_SHIFT 12
#define TRACERY_COOKIE_BUFFER_SHIFT 16
#define TRACERY_COOKIE_BUFFER_LENGTH_SHIFT 20
#define TRACERY_COOKIE_FIXED_LENGTH 7
#define TRACERY_COOKIE_BUFFER_BYTES_SHIFT 32
/* The buffer argument is an iovec array: its first element's buffer. */
#define TRACERY_COOKIE_IOVEC (1ull << 23)
/* At an entry: keep the arguments for the exit (per thread). */
#define TRACERY_COOKIE_KEEP (1ull << 24)
/* At an exit: the buffer's length is the return value (0 if negative). */
#define TRACERY_COOKIE_LENGTH_RETURN (1ull << 25)
/* At an exit: the address's length argument points to an int, read then
 * (and written into the record's args in place of the pointer). */
#define TRACERY_COOKIE_LENGTH_POINTER (1ull << 26)
/* An exit's cookie: the program writes a record for it. */
#define TRACERY_COOKIE_EXIT (1ull << 27)

struct tracery_syscall_record {
	unsigned long long tid;
	int nr;
	unsigned int strings;
	unsigned long long args[6];
	int len[TRACERY_MAX_USER_STRINGS];
	unsigned int address;
	unsigned int buffer;
};

/* The record of syscall_events.bpf.c: one system-call event whole, written
 * into the ring buffer of the CPU it ran on, followed by its slots' bytes
 * (as after a tracery_syscall_record). */
struct tracery_syscall_event {
	unsigned long long timestamp; /* bpf_ktime_get_ns() after the reservation */
	unsigned int pid;             /* the thread group's id */
	unsigned int event_id;        /* the CTF event class (the cookie's bits 48-63) */
	long long ret;                /* an exit's return value */
	char comm[16];                /* the task's name */
	struct tracery_syscall_record call;
};
#define TRACERY_COOKIE_EVENT_ID_SHIFT 48

/* What an entry keeps for its exit, by thread. */
struct tracery_kept_entry {
	int nr;
	int pad;
	unsigned long long args[6];
};

#endif
