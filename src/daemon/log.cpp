// traceryd's log: see log.hpp.
#include "daemon/log.hpp"

#include <cstdarg>
#include <ctime>
#include <mutex>

namespace tracery::daemon {

namespace {
FILE *g_out = stderr;
bool g_journal = false;
Level g_max = Level::info;
std::mutex g_mutex;
constexpr const char *kNames[] = {"error", "warn", "info", "debug"};
constexpr int kJournalPriorities[] = {3, 4, 6, 7}; // LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG
constexpr size_t kMaxMessage = 2048;
} // namespace

bool parse_level(const std::string &s, Level &out)
{
	for (int i = 0; i < 4; i++)
		if (s == kNames[i]) {
			out = static_cast<Level>(i);
			return true;
		}
	return false;
}

void log_to(FILE *f, Level max)
{
	g_out = f;
	g_max = max;
	g_journal = false;
}

void log_to_journal(Level max)
{
	g_out = stderr;
	g_max = max;
	g_journal = true;
}

void log(Level level, const char *fmt, ...)
{
	if (level > g_max)
		return;
	char when[32];
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	tm t;
	localtime_r(&ts.tv_sec, &t);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &t);
	// Messages quote what programs and clients sent: one line each, of at
	// most kMaxMessage bytes, with control characters shown as '?', so that
	// no peer can forge a line or make one without end.
	char message[kMaxMessage + 1];
	va_list ap;
	va_start(ap, fmt);
	const int n = vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	for (char *c = message; *c; ++c)
		if (static_cast<unsigned char>(*c) < 0x20 || *c == 0x7f)
			*c = '?';
	std::lock_guard lock(g_mutex);
	if (g_journal)
		fprintf(g_out, "<%d>%s: %s%s\n", kJournalPriorities[static_cast<int>(level)],
		        kNames[static_cast<int>(level)], message, static_cast<size_t>(n) > kMaxMessage ? " [cut]" : "");
	else
		fprintf(g_out, "%s.%03ld traceryd %s: %s%s\n", when, ts.tv_nsec / 1000000,
		        kNames[static_cast<int>(level)], message, static_cast<size_t>(n) > kMaxMessage ? " [cut]" : "");
	fflush(g_out);
}

} // namespace tracery::daemon
