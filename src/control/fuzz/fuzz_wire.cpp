// control/fuzz/fuzz_wire.cpp — libFuzzer target: arbitrary bytes arriving on
// a control socket, as a hostile client or program could send them to the
// daemon. The bytes go into one end of a socket pair; recv_message() reads
// messages from the other until end of stream or an error. Checks that every
// message it accepts is a JSON object, that an error says why, that it never
// reads more messages than 12-byte headers fit in the input, and that the
// event schemas a program's hello or new_events message carries
// (event/schema.hpp, rebuilt by the daemon) either build a descriptor that
// passes event_desc_error() and round-trips, or are refused with an
// exception.
#include "base/fuzz_check.hpp"
#include "control/messages.hpp"
#include "control/wire.hpp"
#include "event/payload.hpp"
#include "event/schema.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

using namespace tracery;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_wire", what); }

void check_schemas(const nlohmann::json &body)
{
	const auto events = body.find("events");
	if (events == body.end() || !events->is_array())
		return;
	for (const auto &schema : *events) {
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

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024) // stays within the socket's buffer: one write, no second thread
		return 0;
	int sv[2];
	check(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	if (size)
		check(::write(sv[0], data, size) == static_cast<ssize_t>(size), "write");
	::shutdown(sv[0], SHUT_WR);
	size_t messages = 0;
	for (;;) {
		control::Message m;
		std::string why;
		const control::RecvStatus st = control::recv_message(sv[1], m, &why);
		if (st == control::RecvStatus::eof)
			break;
		if (st == control::RecvStatus::error) {
			check(!why.empty(), "an error without a reason");
			break;
		}
		check(m.body.is_object(), "a message body that is not an object");
		check(++messages <= size / 12, "more messages than headers in the input");
		if (m.body.value(control::kTypeKey, "") == control::msg::kHello ||
		    m.body.value(control::kTypeKey, "") == control::msg::kNewEvents)
			check_schemas(m.body);
	}
	::close(sv[0]);
	::close(sv[1]);
	return 0;
}
