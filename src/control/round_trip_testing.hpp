// For the messages' unit tests: a message encoded, then decoded from the
// body and from the body's text as on the wire, is the same message.
#pragma once

#include "control/codec.hpp"

#include <gtest/gtest.h>

namespace tracery::control::message_testing {

template <class T>
void round_trip(const T &m)
{
	const nlohmann::json body = encode(m);
	EXPECT_TRUE(is<T>(body)) << body;
	EXPECT_EQ(decode<T>(body), m) << body;
	EXPECT_EQ(decode<T>(nlohmann::json::parse(body.dump())), m) << body; // as on the wire
}

} // namespace tracery::control::message_testing
