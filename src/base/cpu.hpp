// base/cpu.hpp — facts about the machine's CPUs and the spin-wait hint.
#pragma once

#include <cstdint>

namespace tracery::base {

// Tells the CPU that this is a spin-wait loop (pause on x86).
inline void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

// CPUs the kernel may ever bring online (per-CPU buffers are made for each).
uint32_t possible_cpus() noexcept;

// False if CPU `cpu` is offline now (a CPU that cannot be hot-plugged, and so
// has no online file, is online while it is below the online count).
bool cpu_online(uint32_t cpu) noexcept;

} // namespace tracery::base
