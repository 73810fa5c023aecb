// base/futex.hpp — the two futex operations the ring buffer's wakeup uses.
//
// The futex word lives in a shared mapping and its waiters and wakers may be
// different processes, so these are the shared (not FUTEX_PRIVATE) forms.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <ctime>

namespace tracery::base {

// Sleeps while *word == expected, at most *timeout (relative; nullptr: no
// limit). Returns as the system call does: 0, or -1 with errno (EAGAIN when
// *word had already changed, ETIMEDOUT, EINTR).
inline long futex_wait(uint32_t *word, uint32_t expected, const timespec *timeout) noexcept
{
	return ::syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout, nullptr, 0);
}

// Wakes every waiter on word. Async-signal-safe.
inline long futex_wake_all(uint32_t *word) noexcept
{
	return ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

} // namespace tracery::base
