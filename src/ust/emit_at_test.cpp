// Tests of TRACERY_EMIT_AT (tracepoint.h) and its entry points
// tracery_fire_at and tracery_fire_gate_passed_at (registry.cpp): the address
// a probe sees as the ip context is the one the emit named, with and without
// a gate, and TRACERY_EMIT's own emitting address otherwise.
#include <tracery/internal/probe.h>
#include <tracery/tracepoint.h>

#include "ust/registry.hpp"
#include "ust/user_context.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

TRACERY_EVENT(emitat, scalars, TRACERY_U64(a))
TRACERY_EVENT(emitat, text, TRACERY_STRING(s))

namespace {

// The ip context each call of the probe would record.
void keep_ip(void *priv, const tracery_event_desc *, const tracery_arg *)
{
	static_cast<std::vector<const void *> *>(priv)->push_back(tracery::ust::tls_emit_address);
}

int odd_a_gate(uint64_t a) { return a % 2 == 1; }
int nonempty_text_gate(const tracery_arg *args, const void *) { return args[0].len != 0; }

// Counts a session recording ip for the test's length, as Session does.
struct RecordingIp {
	RecordingIp() { tracery::ust::ip_context_sessions.fetch_add(1); }
	~RecordingIp() { tracery::ust::ip_context_sessions.fetch_sub(1); }
};

// Two distinct code addresses standing for a wrapper's callers.
__attribute__((noinline)) void caller_one() { asm volatile(""); }
__attribute__((noinline)) void caller_two() { asm volatile(""); }

TEST(EmitAt, ProbeSeesTheNamedAddress)
{
	RecordingIp recording;
	std::vector<const void *> seen;
	ASSERT_EQ(tracery_probe_attach(&tracery_event__emitat__scalars, keep_ip, &seen), 0);
	const void *one = reinterpret_cast<const void *>(&caller_one);
	const void *two = reinterpret_cast<const void *>(&caller_two);
	TRACERY_EMIT_AT(one, emitat, scalars, 1);
	TRACERY_EMIT_AT(two, emitat, scalars, 2);
	TRACERY_EMIT(emitat, scalars, 3);
	TRACERY_EMIT_AT(nullptr, emitat, scalars, 4);
	ASSERT_EQ(tracery_probe_detach(&tracery_event__emitat__scalars, keep_ip, &seen), 0);
	ASSERT_EQ(seen.size(), 4u);
	EXPECT_EQ(seen[0], one);
	EXPECT_EQ(seen[1], two);
	// TRACERY_EMIT and a null ip record where the emit is: this function.
	for (const void *emitted_here : {seen[2], seen[3]}) {
		EXPECT_NE(emitted_here, nullptr);
		EXPECT_NE(emitted_here, one);
		EXPECT_NE(emitted_here, two);
	}
	EXPECT_NE(seen[2], seen[3]);
	// The thread's address is cleared once its outermost event ends.
	EXPECT_EQ(tracery::ust::tls_emit_address, nullptr);
}

TEST(EmitAt, GateAcceptedEventsKeepTheNamedAddress)
{
	RecordingIp recording;
	const void *one = reinterpret_cast<const void *>(&caller_one);
	const void *two = reinterpret_cast<const void *>(&caller_two);

	std::vector<const void *> scalars;
	ASSERT_EQ(tracery::ust::attach_probe(&tracery_event__emitat__scalars, keep_ip, &scalars,
	                                     reinterpret_cast<tracery_gate_fn>(&odd_a_gate)),
	          0);
	for (uint64_t a = 1; a <= 4; a++)
		TRACERY_EMIT_AT(a <= 2 ? one : two, emitat, scalars, a);
	ASSERT_EQ(tracery_probe_detach(&tracery_event__emitat__scalars, keep_ip, &scalars), 0);
	EXPECT_EQ(scalars, (std::vector<const void *>{one, two})) << "a = 1 at one, a = 3 at two";

	std::vector<const void *> texts;
	ASSERT_EQ(tracery::ust::attach_probe(&tracery_event__emitat__text, keep_ip, &texts,
	                                     reinterpret_cast<tracery_gate_fn>(&nonempty_text_gate)),
	          0);
	TRACERY_EMIT_AT(one, emitat, text, "");
	TRACERY_EMIT_AT(two, emitat, text, "x");
	ASSERT_EQ(tracery_probe_detach(&tracery_event__emitat__text, keep_ip, &texts), 0);
	EXPECT_EQ(texts, (std::vector<const void *>{two}));
}

TEST(EmitAt, WithoutAnIpSessionNoAddressIsKept)
{
	std::vector<const void *> seen;
	ASSERT_EQ(tracery_probe_attach(&tracery_event__emitat__scalars, keep_ip, &seen), 0);
	TRACERY_EMIT_AT(reinterpret_cast<const void *>(&caller_one), emitat, scalars, 1);
	ASSERT_EQ(tracery_probe_detach(&tracery_event__emitat__scalars, keep_ip, &seen), 0);
	EXPECT_EQ(seen, (std::vector<const void *>{nullptr}));
}

} // namespace
