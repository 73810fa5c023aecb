// event/fuzz/fuzz_schema.cpp — libFuzzer target: arbitrary bytes as the JSON
// schema of an event, as a traced program sends it to the daemon (hello and
// new_events messages, control/messages.hpp). Checks that OwnedEventDesc
// either refuses it with std::invalid_argument or nlohmann's exceptions, or
// builds a descriptor that passes event_desc_error(), whose EventLayout is
// valid, and whose own schema rebuilds the same descriptor (round trip).
#include "base/fuzz_check.hpp"
#include "event/payload.hpp"
#include "event/schema.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

using namespace tracery::event;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_schema", what); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const nlohmann::json schema =
		nlohmann::json::parse(std::string(reinterpret_cast<const char *>(data), size), nullptr, false);
	if (schema.is_discarded())
		return 0;
	try {
		const OwnedEventDesc owned(schema);
		const tracery_event_desc &d = owned.desc();
		check(event_desc_error(d) == nullptr, "a schema accepted into an invalid descriptor");
		check(EventLayout(d).valid(), "an accepted descriptor without a valid layout");
		const nlohmann::json again = schema_of(d);
		check(schema_of(OwnedEventDesc(again).desc()) == again, "a schema that does not round-trip");
		check(schema_key(again) == schema_key(schema_of(OwnedEventDesc(again).desc())),
		      "an unstable schema key");
	} catch (const std::exception &) {
		// refused, as the daemon refuses it
	}
	return 0;
}
