/* kernel/bpf/creds_record.h — the record the BPF programs of
 * creds_watch.bpf.c write into their ring buffer when a thread may have
 * joined or left a tracked set of processes, read by creds_watcher.cpp:
 * shared by both sides, C and fixed sizes only.
 *
 *   u64 time_ns   bpf_ktime_get_ns() (CLOCK_MONOTONIC) when it happened
 *   u32 kind      TRACERY_CREDS_FORK, _EXEC, _EXIT or _IDS
 *   u32 tid       the thread concerned (global id, as tracefs's common_pid):
 *                 the new thread of a fork, else the calling one
 *   u32 parent    a fork's calling thread; 0 otherwise
 *   u32 reserved
 */
#ifndef TRACERY_KERNEL_BPF_CREDS_RECORD_H
#define TRACERY_KERNEL_BPF_CREDS_RECORD_H

#define TRACERY_CREDS_FORK 1 /* sched:sched_process_fork (a new process or thread) */
#define TRACERY_CREDS_EXEC 2 /* sched:sched_process_exec */
#define TRACERY_CREDS_EXIT 3 /* sched:sched_process_exit (each thread) */
#define TRACERY_CREDS_IDS 4  /* the exit of a system call that may change ids or namespaces */

struct tracery_creds_record {
	unsigned long long time_ns;
	unsigned int kind;
	unsigned int tid;
	unsigned int parent;
	unsigned int reserved;
};

#endif
