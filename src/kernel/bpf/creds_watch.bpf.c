/* kernel/bpf/creds_watch.bpf.c — the BPF programs a kernel session that
 * tracks processes by user, group or namespace ids attaches to the moments a
 * thread's ids may change: fork, exec, exit, and the exits of the system
 * calls that change ids or namespaces (setuid, setresuid, setgid, ...,
 * unshare, setns). Each writes a record (creds_record.h) naming the thread
 * into a ring buffer; creds_watcher.cpp reads it, and the session's tracker
 * reads the thread's ids from /proc and brings set_event_pid up to date. A
 * record the ring buffer cannot take is counted in `lost` (the tracker then
 * reads the whole of /proc again).
 * Built by CMake with clang's BPF target; no CO-RE: the fork tracepoint's
 * child_pid is read at the offset its tracefs format gives, passed as the
 * attach cookie. */
#include <linux/bpf.h>
// after linux/bpf.h, whose types it uses
#include <bpf/bpf_helpers.h>

#include "creds_record.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} changes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void send(__u32 kind, __u32 tid, __u32 parent)
{
	struct tracery_creds_record *r = bpf_ringbuf_reserve(&changes, sizeof *r, 0);
	if (!r) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&lost, &zero);
		if (n)
			*n += 1;
		return;
	}
	r->time_ns = bpf_ktime_get_ns();
	r->kind = kind;
	r->tid = tid;
	r->parent = parent;
	r->reserved = 0;
	bpf_ringbuf_submit(r, 0);
}

SEC("tracepoint")
int on_fork(void *ctx)
{
	const __u64 child_offset = bpf_get_attach_cookie(ctx);
	int child = 0;
	if (child_offset > 4096 || bpf_probe_read_kernel(&child, sizeof child, (const char *)ctx + child_offset) != 0)
		return 0;
	send(TRACERY_CREDS_FORK, (__u32)child, (__u32)bpf_get_current_pid_tgid());
	return 0;
}

SEC("tracepoint")
int on_exec(void *ctx)
{
	send(TRACERY_CREDS_EXEC, (__u32)bpf_get_current_pid_tgid(), 0);
	return 0;
}

SEC("tracepoint")
int on_exit(void *ctx)
{
	send(TRACERY_CREDS_EXIT, (__u32)bpf_get_current_pid_tgid(), 0);
	return 0;
}

SEC("tracepoint")
int on_ids(void *ctx)
{
	send(TRACERY_CREDS_IDS, (__u32)bpf_get_current_pid_tgid(), 0);
	return 0;
}
