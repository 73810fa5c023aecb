// analysis/read/progress.cpp — the progress bar of long reads (see progress.hpp).
#include "analysis/read/progress.hpp"

#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstring>

namespace tracery::analysis {

namespace {

constexpr auto kDelay = std::chrono::seconds(1);
constexpr auto kPeriod = std::chrono::milliseconds(100);

std::string human_bytes(double b)
{
	static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
	int u = 0;
	while (b >= 1000 && u < 4) {
		b /= 1000;
		++u;
	}
	char s[32];
	snprintf(s, sizeof s, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
	return s;
}

std::string clock_time(double seconds)
{
	const auto s = static_cast<uint64_t>(seconds + 0.5);
	char b[32];
	if (s >= 3600)
		snprintf(b, sizeof b, "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
		         static_cast<unsigned long long>(s / 60 % 60), static_cast<unsigned long long>(s % 60));
	else
		snprintf(b, sizeof b, "%llu:%02llu", static_cast<unsigned long long>(s / 60),
		         static_cast<unsigned long long>(s % 60));
	return b;
}

unsigned terminal_width(FILE *f)
{
	struct winsize ws;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

} // namespace

bool Progress::on_terminal(FILE *f)
{
	const char *term = getenv("TERM");
	return isatty(fileno(f)) && !(term && strcmp(term, "dumb") == 0);
}

Progress::Progress(std::string label, uint64_t total) : Progress(std::move(label), total, stderr, on_terminal(stderr))
{
}

Progress::Progress(std::string label, uint64_t total, FILE *out, bool enabled)
	: label_(std::move(label)), total_(total), out_(enabled ? out : nullptr),
	  start_(std::chrono::steady_clock::now()), last_draw_(start_)
{
}

Progress::~Progress() { finish(); }

std::string Progress::line(const std::string &label, uint64_t done, uint64_t total, double seconds, unsigned width)
{
	if (done > total)
		done = total;
	const double share = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
	const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
	std::string tail = "  ";
	char pct[8];
	snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(share * 100));
	tail += pct;
	tail += "  ";
	tail += human_bytes(static_cast<double>(done));
	tail += '/';
	tail += human_bytes(static_cast<double>(total));
	tail += "  ";
	tail += human_bytes(rate);
	tail += "/s  ";
	if (rate > 0)
		tail += clock_time(static_cast<double>(total - done) / rate);
	else
		tail += "?:??";
	tail += " left";
	std::string out = label;
	out += " [";
	// the bar takes what the width leaves, 10 to 40 columns
	const size_t fixed = out.size() + 1 + tail.size();
	size_t bar = width > fixed ? width - fixed : 0;
	if (bar > 40)
		bar = 40;
	if (bar < 10)
		bar = 10;
	const auto full = static_cast<size_t>(share * static_cast<double>(bar));
	out.append(full, '#');
	out.append(bar - full, ' ');
	out += ']';
	out += tail;
	if (out.size() > width)
		out.resize(width);
	return out;
}

void Progress::tick(uint64_t done)
{
	const auto now = std::chrono::steady_clock::now();
	if (now - start_ < kDelay || now - last_draw_ < kPeriod)
		return;
	last_draw_ = now;
	const double seconds = std::chrono::duration<double>(now - start_).count();
	// one column short of the width: no wrap at the last column
	const std::string l = line(label_, done, total_, seconds, terminal_width(out_) - 1);
	fprintf(out_, "\r%s\033[K", l.c_str());
	fflush(out_);
	drawn_ = true;
}

void Progress::clear()
{
	if (out_ && drawn_) {
		fputs("\r\033[K", out_);
		fflush(out_);
	}
	drawn_ = false;
}

void Progress::finish()
{
	clear();
	out_ = nullptr;
}

} // namespace tracery::analysis
