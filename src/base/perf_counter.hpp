// base/perf_counter.hpp — one perf_event_open() counter of the calling
// thread (user space only, as LTTng-UST opens its perf contexts), read with
// read(): what a traced program records for a perf:thread:NAME context, and
// what the daemon tries before it accepts one.
#pragma once

#include <cstdint>
#include <string>

namespace tracery::base {

// Opens a counter of the calling thread (close-on-exec), counting from 0:
// its fd, or -errno.
int open_thread_counter(uint32_t type, uint64_t config) noexcept;

// The counter's value: one read() system call; 0 if it fails.
uint64_t read_counter(int fd) noexcept;

// Why open_thread_counter() failed, in one line naming the likely cause
// (no PMU in this machine, perf_event_paranoid, a seccomp filter).
std::string counter_open_error(int negative_errno);

} // namespace tracery::base
