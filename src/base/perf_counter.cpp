// perf_event_open() counters of a thread: see perf_counter.hpp.
#include "base/perf_counter.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tracery::base {

int open_thread_counter(uint32_t type, uint64_t config) noexcept
{
	perf_event_attr attr{};
	attr.size = sizeof attr;
	attr.type = type;
	attr.config = config;
	attr.exclude_kernel = 1; // allowed at perf_event_paranoid 2, as LTTng-UST asks
	attr.exclude_hv = 1;
	const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : static_cast<int>(fd);
}

uint64_t read_counter(int fd) noexcept
{
	uint64_t value = 0;
	if (read(fd, &value, sizeof value) != static_cast<ssize_t>(sizeof value))
		return 0;
	return value;
}

std::string counter_open_error(int negative_errno)
{
	const int e = -negative_errno;
	std::string why = std::string("perf_event_open: ") + strerror(e);
	if (e == ENOENT || e == EOPNOTSUPP || e == ENODEV)
		why += " (this machine has no such counter: a virtual machine often has no hardware PMU; software "
		       "counters such as perf:thread:page-fault or task-clock work everywhere)";
	else if (e == EACCES || e == EPERM)
		why += " (see /proc/sys/kernel/perf_event_paranoid, or a seccomp filter of the container)";
	else if (e == ENOSYS)
		why += " (the kernel has no perf events)";
	return why;
}

} // namespace tracery::base
