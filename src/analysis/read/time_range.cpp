// analysis/read/time_range.cpp — times given by the user, read (see
// time_range.hpp).
#include "analysis/read/time_range.hpp"
#include "base/monotonic.hpp"

#include <charconv>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace tracery::analysis {

namespace {

using base::kNsPerS;

// The ns of the digits after a decimal point (1 to 9 of them, up to end).
std::optional<uint64_t> fraction_ns(const char *f, const char *end)
{
	uint64_t frac = 0;
	int digits = 0;
	for (; f < end && *f >= '0' && *f <= '9' && digits < 9; ++f, ++digits)
		frac = frac * 10 + static_cast<uint64_t>(*f - '0');
	if (f != end || digits == 0)
		return std::nullopt;
	for (; digits < 9; ++digits)
		frac *= 10;
	return frac;
}

} // namespace

std::optional<int64_t> parse_time(const std::string &text, std::optional<int64_t> first_ns)
{
	const char *p = text.c_str();
	const char *end = p + text.size();
	if (text.empty())
		return std::nullopt;
	// plain integer (ns) or seconds with a fraction
	{
		bool neg = *p == '-';
		const char *q = neg ? p + 1 : p;
		uint64_t whole = 0;
		auto r = std::from_chars(q, end, whole);
		if (r.ec == std::errc() && r.ptr == end)
			return neg ? -static_cast<int64_t>(whole) : static_cast<int64_t>(whole);
		if (r.ec == std::errc() && *r.ptr == '.' && text.find(':') == std::string::npos) {
			const auto frac = fraction_ns(r.ptr + 1, end);
			if (!frac)
				return std::nullopt;
			const int64_t v = static_cast<int64_t>(whole) * kNsPerS + static_cast<int64_t>(*frac);
			return neg ? -v : v;
		}
	}
	struct tm tm {};
	int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, n = 0;
	const char *rest = nullptr;
	if (sscanf(p, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) == 6) {
		rest = p + n;
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
	} else if (sscanf(p, "%2d:%2d:%2d%n", &h, &mi, &s, &n) == 3) {
		rest = p + n;
		if (!first_ns)
			return std::nullopt;
		const auto t = static_cast<time_t>(*first_ns / kNsPerS);
		if (!localtime_r(&t, &tm))
			return std::nullopt;
	} else {
		return std::nullopt;
	}
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	tm.tm_isdst = -1;
	uint64_t frac = 0;
	if (rest < end) {
		if (*rest != '.')
			return std::nullopt;
		const auto f = fraction_ns(rest + 1, end);
		if (!f)
			return std::nullopt;
		frac = *f;
	}
	const time_t secs = mktime(&tm);
	if (secs == static_cast<time_t>(-1))
		return std::nullopt;
	return static_cast<int64_t>(secs) * kNsPerS + static_cast<int64_t>(frac);
}

TimeBounds time_bounds(const std::string &begin, const std::string &end, int64_t first_ns)
{
	const auto bound = [&](const std::string &s, const char *what) -> std::optional<int64_t> {
		if (s.empty())
			return std::nullopt;
		auto v = parse_time(s, first_ns);
		if (!v)
			throw std::invalid_argument(std::string("cannot read the ") + what + " time '" + s +
			                            "': give HH:MM:SS[.NNNNNNNNN], YYYY-MM-DD HH:MM:SS[.N], "
			                            "SECONDS[.N] from the epoch, or ns from the epoch");
		return v;
	};
	return {bound(begin, "--begin"), bound(end, "--end")};
}

} // namespace tracery::analysis
