// control/fuzz/fuzz_wire.cpp — libFuzzer target: arbitrary bytes arriving on
// a control socket, as a hostile client or program could send them to the
// daemon. The bytes go to control::FrameDecoder with the daemon's limits
// twice: in pieces of sizes drawn from the input's hash (as recv() may cut
// them: inside headers, bodies, across frames) and in the largest pieces it
// takes. Checks that both give the same messages and the same error, that
// every message accepted is a JSON object, that an error says why, that the
// decoder never holds much more than it received, and that the event
// schemas a program's hello or new_events message carries (event/schema.hpp,
// rebuilt by the daemon) either build a descriptor that passes
// event_desc_error() and round-trips, or are refused with an exception.
// Then the same bytes go through a socket pair to recv_message(), the
// clients' blocking reader, which must stop at an error or the end.
#include "base/fuzz_check.hpp"
#include "control/messages.hpp"
#include "control/wire.hpp"
#include "event/payload.hpp"
#include "event/schema.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

using namespace tracery;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_wire", what); }

// The schemas of a hello or new_events message, as the daemon takes them
// (none if the message does not decode).
std::vector<nlohmann::json> schemas_of(const nlohmann::json &body)
{
	try {
		if (control::is<control::Hello>(body))
			return control::decode<control::Hello>(body).events;
		if (control::is<control::NewEvents>(body))
			return control::decode<control::NewEvents>(body).events;
	} catch (const control::DecodeError &) {
		// refused: the daemon disconnects the program
	}
	return {};
}

void check_schemas(const nlohmann::json &body)
{
	for (const auto &schema : schemas_of(body)) {
		try {
			const event::OwnedEventDesc owned(schema);
			check(event::event_desc_error(owned.desc()) == nullptr,
			      "a schema accepted into an invalid descriptor");
			check(event::schema_of(owned.desc()) ==
			              event::schema_of(event::OwnedEventDesc(event::schema_of(owned.desc())).desc()),
			      "a schema does not round-trip");
		} catch (const std::exception &) {
			// refused: what the daemon does with it
		}
	}
}

struct Outcome {
	std::vector<std::string> messages; // each parsed body, or "!" and why it was refused
	std::string error;
	bool operator==(const Outcome &) const = default;
};

// Feeds data in pieces of at most next_piece() bytes.
template <typename Pieces>
Outcome decode(const uint8_t *data, size_t size, Pieces next_piece)
{
	Outcome out;
	control::FrameDecoder d(control::kDaemonLimits);
	size_t at = 0, frame_start = 0;
	while (at < size && d.state() != control::FrameDecoder::State::error) {
		const std::span<char> space = d.space();
		check(!space.empty(), "no space while reading a frame");
		const size_t n = std::min({space.size(), size - at, next_piece()});
		memcpy(space.data(), data + at, n);
		at += n;
		if (d.received(n) != control::FrameDecoder::State::complete) {
			check(d.buffered() <= std::max<size_t>(2 * (at - frame_start), 64 * 1024) + 64,
			      "the decoder holds much more than it received");
			continue;
		}
		frame_start = at;
		control::Message m;
		std::string why;
		if (control::parse_frame(d.take(), m, &why)) {
			check(m.body.is_object(), "a message body that is not an object");
			out.messages.push_back(m.body.dump());
			check_schemas(m.body);
		} else {
			check(!why.empty(), "a refused body without a reason");
			out.messages.push_back("!" + why);
		}
		check(out.messages.size() <= size / control::kHeaderSize, "more messages than headers in the input");
	}
	if (d.state() == control::FrameDecoder::State::error) {
		check(!d.error().empty(), "an error without a reason");
		out.error = d.error();
	}
	return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024) // stays within the socket's buffer: one write, no second thread
		return 0;
	const Outcome cut = decode(data, size, base::FuzzCuts(data, size, 23, 13, 70000));
	const Outcome whole = decode(data, size, [] { return SIZE_MAX; });
	check(cut == whole, "the messages depend on how the bytes were cut");

	int sv[2];
	check(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	if (size)
		check(::write(sv[0], data, size) == static_cast<ssize_t>(size), "write");
	::shutdown(sv[0], SHUT_WR);
	for (size_t messages = 0;; messages++) {
		control::Message m;
		std::string why;
		const control::RecvStatus st = control::recv_message(sv[1], control::Kind::program, m, &why);
		if (st == control::RecvStatus::eof)
			break;
		if (st == control::RecvStatus::error) {
			check(!why.empty(), "an error without a reason");
			break;
		}
		check(m.body.is_object(), "a message body that is not an object");
		check(messages < size / control::kHeaderSize, "more messages than headers in the input");
	}
	::close(sv[0]);
	::close(sv[1]);
	return 0;
}
