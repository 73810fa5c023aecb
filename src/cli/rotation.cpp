// The verbs of a session's trace chunks: see rotation.hpp.
#include "cli/rotation.hpp"

#include "base/sizes.hpp"
#include "cli/client.hpp"
#include "cli/current.hpp"

#include <cstdio>
#include <limits>

namespace tracery::cli {

namespace {

std::string schedule_text(const control::RotationStatus &r)
{
	std::string out;
	if (r.timer_ns)
		out += "every " + std::to_string(*r.timer_ns / 1'000'000) + " ms";
	if (r.size_bytes)
		out += (out.empty() ? "" : ", and ") + std::string("when its chunk holds ") +
		       base::format_size(*r.size_bytes);
	return out.empty() ? "only when asked (`tracery rotate`)" : out;
}

} // namespace

int verb_rotate(const RotationArgs &a)
{
	const control::RotateReply r = request(control::Rotate{session_or_current(a.session), a.no_wait});
	if (r.archive)
		printf("Trace chunk archive for session '%s' is now readable at %s\n", r.session.c_str(),
		       r.archive->c_str());
	else
		printf("Rotation of session '%s' is under way\n", r.session.c_str());
	return 0;
}

int verb_enable_rotation(const RotationArgs &a)
{
	control::EnableRotation req{session_or_current(a.session), std::nullopt, std::nullopt};
	if (!a.timer.empty()) {
		req.timer_ns = parse_rotation_period(a.timer);
		if (!req.timer_ns)
			throw CliError("bad --timer '" + a.timer +
			               "': give a duration, e.g. --timer=30s or --timer=500ms");
	}
	if (!a.size.empty()) {
		req.size_bytes = base::parse_size(a.size);
		if (!req.size_bytes || *req.size_bytes == 0)
			throw CliError("bad --size '" + a.size + "': give a number, optionally with k, M or G");
	}
	if (!req.timer_ns && !req.size_bytes)
		throw CliError("enable-rotation: give --timer=PERIOD, --size=SIZE or both");
	const control::EnableRotationReply r = request(req);
	printf("Session '%s' rotates %s\n", r.session.c_str(), schedule_text(r.rotation).c_str());
	return 0;
}

int verb_disable_rotation(const RotationArgs &a)
{
	const control::DisableRotationReply r =
		request(control::DisableRotation{session_or_current(a.session), a.timer_only, a.size_only});
	printf("Session '%s' rotates %s\n", r.session.c_str(), schedule_text(r.rotation).c_str());
	return 0;
}

int verb_clear(const RotationArgs &a)
{
	const control::ClearReply r = request(control::Clear{{session_or_current(a.session)}});
	printf("Session '%s' cleared (%llu trace files removed)\n", r.session.c_str(),
	       static_cast<unsigned long long>(r.files_removed));
	return 0;
}

std::optional<uint64_t> parse_rotation_period(std::string_view text)
{
	size_t end = 0;
	while (end < text.size() && text[end] >= '0' && text[end] <= '9')
		end++;
	if (end == 0 || end > 12)
		return std::nullopt;
	uint64_t n = 0;
	for (size_t i = 0; i < end; i++)
		n = n * 10 + static_cast<uint64_t>(text[i] - '0');
	const std::string_view unit = text.substr(end);
	uint64_t scale;
	if (unit.empty() || unit == "us")
		scale = 1'000;
	else if (unit == "ms")
		scale = 1'000'000;
	else if (unit == "s")
		scale = 1'000'000'000;
	else if (unit == "m" || unit == "min")
		scale = 60'000'000'000;
	else if (unit == "h")
		scale = 3'600'000'000'000;
	else
		return std::nullopt;
	if (n == 0 || n > std::numeric_limits<uint64_t>::max() / scale)
		return std::nullopt;
	return n * scale;
}

void print_rotation(const control::RotationStatus &r, const char *indent)
{
	printf("%srotation: %s; %llu chunk%s archived; current chunk: %s\n", indent, schedule_text(r).c_str(),
	       static_cast<unsigned long long>(r.rotations), r.rotations == 1 ? "" : "s", r.chunk.c_str());
	if (r.last_archive)
		printf("%s  last archived chunk: %s\n", indent, r.last_archive->c_str());
}

} // namespace tracery::cli
