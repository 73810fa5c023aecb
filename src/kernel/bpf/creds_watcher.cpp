// The watcher of thread id changes: see creds_watcher.hpp.
#include "kernel/bpf/creds_watcher.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "kernel/bpf/tracepoint_link.hpp"
#include "kernel/format.hpp"
#include "kernel/tracefs.hpp"

extern "C" {
#include "kernel/bpf/creds_record.h"
}

// The compiled creds_watch.bpf.c (embed_bpf_object.cmake).
extern const unsigned char tracery_creds_watch_object[];
extern const size_t tracery_creds_watch_object_size;

namespace tracery::kernel {

CredsWatcher::CredsWatcher(const std::string &tracefs_root)
{
	libbpf_set_print(nullptr); // errors are reported by their return values
	// The fork tracepoint's child_pid: at the offset its format gives.
	uint64_t child_offset = 0;
	try {
		const EventFormat fork = parse_event_format(
			read_control(tracefs_root + "/events/sched/sched_process_fork/format"), "sched");
		const FieldFormat *child = fork.field("child_pid");
		if (!child || child->size != 4)
			throw std::runtime_error("no 4-byte child_pid field");
		child_offset = child->offset;
	} catch (const std::exception &e) {
		throw std::runtime_error(std::string("cannot watch forks: sched:sched_process_fork: ") + e.what());
	}
	object_ = bpf_object__open_mem(tracery_creds_watch_object, tracery_creds_watch_object_size, nullptr);
	if (!object_)
		throw std::runtime_error("BPF: cannot open the process ids watcher: " + errno_text(errno));
	try {
		if (const int e = bpf_object__load(object_); e != 0)
			throw std::runtime_error("BPF: the kernel refused the process ids watcher (root and "
			                         "CONFIG_BPF_SYSCALL are needed): " +
			                         errno_text(-e));
		lost_map_ = bpf_object__find_map_fd_by_name(object_, "lost");
		const int changes = bpf_object__find_map_fd_by_name(object_, "changes");
		ring_ = changes < 0 ? nullptr : ring_buffer__new(changes, &CredsWatcher::on_record, this, nullptr);
		if (!ring_ || lost_map_ < 0)
			throw std::runtime_error("BPF: cannot map the process ids watcher's ring buffer: " +
			                         errno_text(errno));
		attach("on_fork", "sched", "sched_process_fork", child_offset);
		attach("on_exec", "sched", "sched_process_exec", 0);
		attach("on_exit", "sched", "sched_process_exit", 0);
		size_t calls = 0;
		for (const char *call : kIdCalls) {
			const std::string name = std::string("sys_exit_") + call;
			struct stat st;
			if (::stat((tracefs_root + "/events/syscalls/" + name).c_str(), &st) != 0)
				continue; // not a system call of this kernel (or of this architecture)
			attach("on_ids", "syscalls", name, 0);
			++calls;
		}
		if (calls == 0)
			throw std::runtime_error("this kernel has no system call tracepoints (CONFIG_FTRACE_SYSCALLS): "
			                         "changes of user and group ids cannot be seen");
	} catch (...) {
		release();
		throw;
	}
}

CredsWatcher::~CredsWatcher() { release(); }

void CredsWatcher::release()
{
	for (bpf_link *link : links_)
		bpf_link__destroy(link);
	links_.clear();
	if (ring_)
		ring_buffer__free(ring_);
	ring_ = nullptr;
	if (object_)
		bpf_object__close(object_);
	object_ = nullptr;
}

void CredsWatcher::attach(const char *program, const char *system, const std::string &name, uint64_t cookie)
{
	links_.push_back(attach_tracepoint(object_, program, system, name, cookie));
}

int CredsWatcher::fd() const { return ring_buffer__epoll_fd(ring_); }

int CredsWatcher::on_record(void *self, void *data, size_t size)
{
	auto *w = static_cast<CredsWatcher *>(self);
	tracery_creds_record r;
	if (size < sizeof r) {
		++w->malformed_;
		return 0;
	}
	std::memcpy(&r, data, sizeof r);
	if (r.kind < TRACERY_CREDS_FORK || r.kind > TRACERY_CREDS_IDS || r.tid == 0) {
		++w->malformed_;
		return 0;
	}
	(*w->on_)({static_cast<CredsChange::Kind>(r.kind), static_cast<pid_t>(r.tid), static_cast<pid_t>(r.parent),
	           r.time_ns});
	return 0;
}

size_t CredsWatcher::consume(const std::function<void(const CredsChange &)> &on)
{
	on_ = &on;
	const int n = ring_buffer__consume(ring_);
	on_ = nullptr;
	return n > 0 ? static_cast<size_t>(n) : 0;
}

uint64_t CredsWatcher::lost() const
{
	const int cpus = libbpf_num_possible_cpus();
	if (cpus <= 0)
		return 0;
	std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
	const uint32_t key = 0;
	uint64_t total = 0;
	if (bpf_map_lookup_elem(lost_map_, &key, per_cpu.data()) == 0)
		for (const uint64_t v : per_cpu)
			total += v;
	return total;
}

} // namespace tracery::kernel
