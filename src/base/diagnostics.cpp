// base/diagnostics.cpp — the diagnostic line and where it goes (see
// diagnostics.hpp).
#include "base/diagnostics.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tracery::base {

namespace {

enum class Sink : int { stderr_fd, nowhere, file };

std::atomic<Sink> g_sink{Sink::stderr_fd};
// TRACERY_LOG's file, set once by diagnostics_only_when_asked() before
// g_sink says file (a release store), then only read.
char g_file[4096];

void write_all(int fd, const char *data, size_t size)
{
	while (size > 0) {
		const ssize_t n = ::write(fd, data, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		data += n;
		size -= static_cast<size_t>(n);
	}
}

} // namespace

void diagnostic(const char *format, ...)
{
	const Sink sink = g_sink.load(std::memory_order_acquire);
	if (sink == Sink::nowhere)
		return;
	char line[4096];
	const int prefix = std::snprintf(line, sizeof line, "tracery: ");
	va_list args;
	va_start(args, format);
	const int n = std::vsnprintf(line + prefix, sizeof line - prefix - 1, format, args);
	va_end(args);
	if (n < 0)
		return;
	size_t size = prefix + std::min<size_t>(static_cast<size_t>(n), sizeof line - prefix - 2);
	line[size++] = '\n';
	const int saved_errno = errno;
	if (sink == Sink::stderr_fd) {
		write_all(STDERR_FILENO, line, size);
	} else {
		const int fd = ::open(g_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd >= 0) {
			write_all(fd, line, size);
			::close(fd);
		}
	}
	errno = saved_errno;
}

void diagnostics_only_when_asked()
{
	const char *value = std::getenv("TRACERY_LOG");
	if (!value || !*value) {
		g_sink.store(Sink::nowhere, std::memory_order_release);
	} else if (std::strcmp(value, "stderr") == 0) {
		g_sink.store(Sink::stderr_fd, std::memory_order_release);
	} else if (std::strlen(value) < sizeof g_file) {
		std::strcpy(g_file, value);
		g_sink.store(Sink::file, std::memory_order_release);
	} else {
		g_sink.store(Sink::nowhere, std::memory_order_release); // (no such path: PATH_MAX is 4096)
	}
}

} // namespace tracery::base
