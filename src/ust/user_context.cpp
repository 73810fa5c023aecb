// The values of the user-space contexts and their writer: see user_context.hpp.
#include "ust/user_context.hpp"

#include "base/byte_order.hpp"
#include "base/diagnostics.hpp"
#include "base/perf_counter.hpp"
#include "ust/thread_context.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstring>

namespace tracery::ust {

__thread const void *tls_emit_address __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<uint32_t> ip_context_sessions{0};

namespace {

__attribute__((tls_model("initial-exec"))) thread_local ThreadIdentity tls_identity;
__attribute__((tls_model("initial-exec"))) thread_local bool tls_identity_valid = false;

// The thread's perf counters: fd + 1 (0: not opened yet), or -1 when the
// open failed (the context records 0).
__attribute__((tls_model("initial-exec"))) thread_local int tls_perf_fds[event::kPerfCounterCount];
pthread_key_t perf_key; // its destructor closes a thread's counters when it exits
pthread_once_t perf_key_once = PTHREAD_ONCE_INIT;
std::atomic<bool> perf_failure_said{false};

void close_thread_counters(void *)
{
	for (int &fd : tls_perf_fds) {
		if (fd > 0)
			close(fd - 1);
		fd = 0;
	}
}

void make_perf_key() { pthread_key_create(&perf_key, close_thread_counters); }

uint64_t inode_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// Reads at most size - 1 bytes of a file into buf, NUL-terminated; its
// length, or -1.
ssize_t read_small_file(const char *path, char *buf, size_t size)
{
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < size) {
		const ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r <= 0)
			break;
		n += static_cast<size_t>(r);
	}
	close(fd);
	buf[n] = '\0';
	return static_cast<ssize_t>(n);
}

bool is_cgroup2(const char *dir)
{
	struct statfs fs;
	return statfs(dir, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

} // namespace

uint64_t read_cgroup_id()
{
	// The cgroup v2 line is "0::/path".
	char text[4096];
	if (read_small_file("/proc/thread-self/cgroup", text, sizeof text) <= 0)
		return 0;
	const char *line = text;
	while (line && strncmp(line, "0::", 3) != 0) {
		line = strchr(line, '\n');
		if (line)
			++line;
	}
	if (!line)
		return 0;
	const char *rel = line + 3;
	const size_t rel_len = strcspn(rel, "\n");
	const char *mount = nullptr;
	for (const char *candidate : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"})
		if (is_cgroup2(candidate)) {
			mount = candidate;
			break;
		}
	if (!mount)
		return 0;
	char path[4096 + 64];
	const size_t mount_len = strlen(mount);
	if (mount_len + rel_len + 1 > sizeof path)
		return 0;
	memcpy(path, mount, mount_len);
	memcpy(path + mount_len, rel, rel_len);
	path[mount_len + rel_len] = '\0';
	// The kernel's id of the cgroup is its file handle (FILEID_KERNFS).
	struct {
		file_handle head;
		uint64_t id;
	} handle{};
	handle.head.handle_bytes = sizeof handle.id;
	int mount_id = 0;
	if (name_to_handle_at(AT_FDCWD, path, &handle.head, &mount_id, 0) == 0 &&
	    handle.head.handle_bytes == sizeof(uint64_t)) {
		uint64_t id;
		memcpy(&id, handle.head.f_handle, sizeof id);
		return id;
	}
	return inode_of(path); // the same number where file handles are refused
}

const ThreadIdentity &thread_identity()
{
	if (__builtin_expect(!tls_identity_valid, 0)) {
		ThreadIdentity id;
		id.vuid = static_cast<uint32_t>(getuid());
		id.vgid = static_cast<uint32_t>(getgid());
		for (size_t i = 0; i < event::kNamespaceFiles.size(); ++i) {
			char path[64] = "/proc/thread-self/ns/";
			const std::string_view name = event::kNamespaceFiles[i];
			memcpy(path + strlen(path), name.data(), name.size());
			id.ns[i] = inode_of(path);
		}
		id.cgroup_id = read_cgroup_id();
		tls_identity = id;
		tls_identity_valid = true;
	}
	return tls_identity;
}

uint64_t thread_perf_counter(const event::UserContext &c)
{
	int &slot = tls_perf_fds[c.index];
	if (__builtin_expect(slot <= 0, 0)) {
		if (slot < 0)
			return 0;
		const int fd = base::open_thread_counter(c.perf_type, c.perf_config);
		if (fd < 0) {
			slot = -1;
			if (!perf_failure_said.exchange(true))
				base::diagnostic("context %.*s records 0 in this process: %s",
				                 static_cast<int>(c.name.size()), c.name.data(),
				                 base::counter_open_error(fd).c_str());
			return 0;
		}
		pthread_once(&perf_key_once, make_perf_key);
		pthread_setspecific(perf_key, tls_perf_fds); // any non-null value: the destructor runs
		slot = fd + 1;
	}
	return base::read_counter(slot - 1);
}

UserContextPlan UserContextPlan::of(event::UserContextSet set)
{
	UserContextPlan p;
	for (size_t i = 0; i < event::kUserContexts.size(); ++i) {
		if (!(set >> i & 1))
			continue;
		p.entries[p.count++] = static_cast<uint8_t>(i);
		const event::UserContextKind k = event::kUserContexts[i].kind;
		p.needs_identity |= k == event::UserContextKind::vuid || k == event::UserContextKind::vgid ||
		                    k == event::UserContextKind::ns || k == event::UserContextKind::cgroup_id;
	}
	return p;
}

void write_user_contexts(uint8_t *dst, const UserContextPlan &plan)
{
	const ThreadIdentity *id = plan.needs_identity ? &thread_identity() : nullptr;
	for (uint8_t n = 0; n < plan.count; ++n) {
		const event::UserContext &c = event::kUserContexts[plan.entries[n]];
		uint64_t v = 0;
		switch (c.kind) {
		case event::UserContextKind::ip:
			v = reinterpret_cast<uintptr_t>(tls_emit_address);
			break;
		case event::UserContextKind::pthread_id:
			v = thread_context().pthread_id;
			break;
		case event::UserContextKind::vuid:
			v = id->vuid;
			break;
		case event::UserContextKind::vgid:
			v = id->vgid;
			break;
		case event::UserContextKind::ns:
			v = id->ns[c.index];
			break;
		case event::UserContextKind::cgroup_id:
			v = id->cgroup_id;
			break;
		case event::UserContextKind::perf_counter:
			v = thread_perf_counter(c);
			break;
		}
		if (c.size == 4)
			base::store_le<uint32_t>(dst, static_cast<uint32_t>(v));
		else
			base::store_le<uint64_t>(dst, v);
		dst += c.size;
	}
}

void reset_user_context_after_fork()
{
	tls_identity_valid = false;
	close_thread_counters(nullptr);
}

} // namespace tracery::ust
