// The verbs of a session's trace chunks: see rotation.hpp.
#include "cli/rotation.hpp"

#include "base/sizes.hpp"
#include "cli/client.hpp"
#include "cli/current.hpp"
#include "cli/durations.hpp"

#include <cstdio>

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
		req.timer_ns = parse_duration_ns(a.timer, 1'000); // a bare number: microseconds, as LTTng's PERIODUS
		if (!req.timer_ns || *req.timer_ns == 0)
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

void print_rotation(const control::RotationStatus &r, const char *indent)
{
	printf("%srotation: %s; %llu chunk%s archived; current chunk: %s\n", indent, schedule_text(r).c_str(),
	       static_cast<unsigned long long>(r.rotations), r.rotations == 1 ? "" : "s", r.chunk.c_str());
	if (r.last_archive)
		printf("%s  last archived chunk: %s\n", indent, r.last_archive->c_str());
}

} // namespace tracery::cli
