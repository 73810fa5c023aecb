// base/cpu.cpp — see cpu.hpp.
#include "base/cpu.hpp"

#include <fcntl.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstdio>

namespace tracery::base {

uint32_t possible_cpus() noexcept { return static_cast<uint32_t>(get_nprocs_conf()); }

bool cpu_online(uint32_t cpu) noexcept
{
	char path[64];
	std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%u/online", cpu);
	const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cpu < static_cast<uint32_t>(::sysconf(_SC_NPROCESSORS_ONLN));
	char c = '1';
	const bool online = ::read(fd, &c, 1) != 1 || c != '0';
	::close(fd);
	return online;
}

} // namespace tracery::base
