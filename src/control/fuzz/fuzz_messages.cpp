// control/fuzz/fuzz_messages.cpp — libFuzzer target: a message body (the
// JSON a hostile command or program could send, or a hostile daemon's
// reply) decoded as every message of the control protocol. Checks that the
// decoders throw nothing but DecodeError, with a one-line message naming the
// message, and that what one accepts encodes to a body that decodes to the
// same message.
#include "base/fuzz_check.hpp"
#include "control/messages.hpp"
#include "control/trigger_messages.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace tracery;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_messages", what); }

template <class T>
void try_decode(const nlohmann::json &body)
{
	T message;
	try {
		message = control::decode<T>(body);
	} catch (const control::DecodeError &e) {
		const std::string why = e.what();
		check(!why.empty() && why.find('\n') == std::string::npos, "a decoding error is one line");
		return;
	}
	check(control::is<T>(body), "a decoded body has its message's tag");
	check(control::decode<T>(control::encode(message)) == message, "a decoded message round-trips");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, false);
	if (body.is_discarded())
		return 0;
	std::apply([&](auto... m) { (try_decode<decltype(m)>(body), ...); }, control::AllMessages{});
	std::apply([&](auto... m) { (try_decode<decltype(m)>(body), ...); }, control::TriggerMessages{});
	return 0;
}
