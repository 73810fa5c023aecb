// kernel/bpf/creds_watcher.hpp — the moments a thread's user, group or
// namespace ids may change, as they happen: the BPF programs of
// creds_watch.bpf.c on sched:sched_process_fork, sched_process_exec,
// sched_process_exit and the exits of syscalls:sys_exit_NAME for the calls
// that change ids or namespaces (kIdCalls, those this kernel has), read from
// their BPF ring buffer. Every process on the machine is watched: the
// reader decides which records matter (tracked_processes.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct bpf_object;
struct bpf_link;
struct ring_buffer;

namespace tracery::kernel {

struct CredsChange {
	enum class Kind : uint32_t { fork = 1, exec = 2, exit = 3, ids = 4 };
	Kind kind = Kind::ids;
	pid_t tid = 0;        // the new thread of a fork, else the one that exec'd, exited or called
	pid_t parent = 0;     // a fork's calling thread
	uint64_t time_ns = 0; // CLOCK_MONOTONIC when it happened
};

// The system calls whose exits are watched: they change a thread's real
// ids or its namespaces.
inline constexpr const char *kIdCalls[] = {"setuid",    "setgid",    "setreuid", "setregid",
                                           "setresuid", "setresgid", "unshare",  "setns"};

class CredsWatcher {
public:
	// Loads and attaches the programs; `tracefs_root` gives the fork
	// tracepoint's format and the system calls this kernel has. Throws
	// std::runtime_error (one line: BPF refused, a tracepoint missing).
	explicit CredsWatcher(const std::string &tracefs_root);
	~CredsWatcher();
	CredsWatcher(const CredsWatcher &) = delete;
	CredsWatcher &operator=(const CredsWatcher &) = delete;

	// Readable (poll) when records wait.
	int fd() const;
	// Calls `on` for each record waiting; returns how many.
	size_t consume(const std::function<void(const CredsChange &)> &on);
	// Records the ring buffer could not take (the programs' count), and
	// records read that were malformed.
	uint64_t lost() const;
	uint64_t malformed() const noexcept { return malformed_; }

private:
	void release(); // the links, the ring buffer and the object
	static int on_record(void *self, void *data, size_t size);
	void attach(const char *program, const char *system, const std::string &name, uint64_t cookie);
	bpf_object *object_ = nullptr;
	std::vector<bpf_link *> links_;
	ring_buffer *ring_ = nullptr;
	int lost_map_ = -1;
	uint64_t malformed_ = 0;
	const std::function<void(const CredsChange &)> *on_ = nullptr; // during consume()
};

} // namespace tracery::kernel
