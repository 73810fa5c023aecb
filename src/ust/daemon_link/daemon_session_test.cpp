// Tests of a daemon session in a traced program (daemon_session.cpp): filter
// bytecode from the daemon is verified before the event is attached, and
// bytecode that fails is refused with its reason, leaving the event off.
#include <tracery/tracepoint.h>

#include "consumer/ring_config.hpp"
#include "control/messages.hpp"
#include "control/wire.hpp"
#include "event/schema.hpp"
#include "filter/compiler.hpp"
#include "ust/daemon_link/daemon_session.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

TRACERY_EVENT(dstest, ev, TRACERY_U64(a), TRACERY_U32(b))

namespace tracery::ust {
namespace {

using control::ChannelRules;
using Filters = std::vector<std::string>;

// Channel `index` with the ids and filters of these event keys.
ChannelRules rules(uint64_t index, std::map<std::string, uint32_t> ids,
                   std::map<std::string, std::vector<std::string>> filters = {})
{
	return {index, std::move(ids), std::move(filters), std::nullopt, std::nullopt, std::nullopt, std::nullopt};
}

// One channel holding dstest:ev with the given filter bytecode (hex).
class DaemonSessionFilters : public ::testing::Test {
protected:
	std::unique_ptr<DaemonSession> start_with(const Filters &filters)
	{
		const std::string key = event::schema_key(event::schema_of(tracery_event__dstest__ev));
		auto session = std::make_unique<DaemonSession>(std::vector{rules(0, {{key, 0u}}, {{key, filters}})},
		                                               std::vector<int>{dup(ring_->fd())});
		session->start();
		return session;
	}

	std::string hex_of(const filter::Program &p) { return control::to_hex(filter::encode(p)); }

	std::unique_ptr<ringbuf::Channel> ring_ = consumer::create_ring(2, 4096, ringbuf::Mode::discard, "dstest");
};

// The trace's clock comes from the daemon: a unit this program knows is taken,
// another one refuses the session, naming it, rather than write timestamps in
// a unit the trace's metadata does not declare.
TEST_F(DaemonSessionFilters, ClockUnitFromTheDaemon)
{
	std::vector<ChannelRules> channels{rules(0, {})};
	for (const char *unit : {"tsc", "ns"}) {
		channels[0].clock = unit;
		EXPECT_NO_THROW(DaemonSession(channels, std::vector<int>{dup(ring_->fd())})) << unit;
	}
	channels[0].clock = "furlongs";
	try {
		DaemonSession session(channels, std::vector<int>{dup(ring_->fd())});
		ADD_FAILURE() << "a session with an unknown clock unit was accepted";
	} catch (const std::runtime_error &e) {
		EXPECT_NE(std::string(e.what()).find("'furlongs'"), std::string::npos) << e.what();
	}
}

TEST_F(DaemonSessionFilters, VerifiedFilterIsAttached)
{
	filter::Error error;
	auto compiled = filter::compile_filter("a % 3 == 0", tracery_event__dstest__ev, &error);
	ASSERT_TRUE(compiled) << error.message;
	auto session = start_with({hex_of(compiled->program)});
	EXPECT_TRUE(session->take_refusals().empty());
	EXPECT_EQ(tracery_event__dstest__ev.enabled, 1);
	session->stop();
	EXPECT_EQ(tracery_event__dstest__ev.enabled, 0);
}

TEST_F(DaemonSessionFilters, BytecodeThatFailsVerificationIsRefused)
{
	// Loads field 7 of an event with two fields.
	filter::Program bad{{{filter::Op::load_field, TRACERY_TYPE_U64, 7, 0, 0}, {filter::Op::ret, 0, 0, 0, 0}}, {}};
	auto session = start_with({hex_of(bad)});
	const auto refused = session->take_refusals();
	ASSERT_EQ(refused.size(), 1u);
	EXPECT_EQ(refused[0].event, "dstest:ev");
	EXPECT_NE(refused[0].reason.find("insn 0"), std::string::npos) << refused[0].reason;
	EXPECT_EQ(tracery_event__dstest__ev.enabled, 0); // not recorded unfiltered either
	EXPECT_TRUE(session->take_refusals().empty());   // reported once
}

TEST_F(DaemonSessionFilters, GarbageIsRefused)
{
	auto session = start_with({"54524642zz"});
	const auto refused = session->take_refusals();
	ASSERT_EQ(refused.size(), 1u);
	EXPECT_EQ(refused[0].reason, "the bytecode is not hex");
	EXPECT_EQ(tracery_event__dstest__ev.enabled, 0);
}

TEST_F(DaemonSessionFilters, NewFiltersReattachTheEvent)
{
	auto session = start_with({});
	EXPECT_EQ(tracery_event__dstest__ev.enabled, 1);
	const std::string key = event::schema_key(event::schema_of(tracery_event__dstest__ev));
	filter::Program bad{{{filter::Op::ret, 0, 0, 0, 0}}, {}}; // ret with an empty stack
	session->update({rules(0, {{key, 0u}}, {{key, {hex_of(bad)}}})});
	EXPECT_EQ(session->take_refusals().size(), 1u);
	EXPECT_EQ(tracery_event__dstest__ev.enabled, 0);
}

// A channel the daemon sends with "buffer": false (over the buffer quota of
// the program's user) has no buffer and traces nothing; the others trace.
TEST_F(DaemonSessionFilters, ChannelWithoutBufferTracesNothing)
{
	const std::string key = event::schema_key(event::schema_of(tracery_event__dstest__ev));
	{
		std::vector<ChannelRules> none{rules(0, {{key, 0u}})};
		none[0].buffer = false;
		DaemonSession session(none, {});
		session.start();
		EXPECT_EQ(tracery_event__dstest__ev.enabled, 0);
		session.update({rules(0, {{key, 0u}})}); // ignored, no crash
		EXPECT_EQ(tracery_event__dstest__ev.enabled, 0);
		EXPECT_TRUE(session.take_refusals().empty());
	}
	std::vector<ChannelRules> second{rules(0, {{key, 0u}}), rules(1, {{key, 0u}})};
	second[0].buffer = false;
	{
		DaemonSession session(second, std::vector<int>{dup(ring_->fd())}); // the fd is channel 1's
		session.start();
		EXPECT_EQ(tracery_event__dstest__ev.enabled, 1);
		session.stop();
		EXPECT_EQ(tracery_event__dstest__ev.enabled, 0);
	}
	// Buffers and channels that do not match: refused, naming both counts.
	second[0].buffer.reset();
	try {
		DaemonSession session(second, std::vector<int>{dup(ring_->fd())});
		ADD_FAILURE() << "one buffer for two channels was accepted";
	} catch (const std::runtime_error &e) {
		EXPECT_STREQ(e.what(), "the daemon sent 1 buffers for 2 channels");
	}
}

} // namespace
} // namespace tracery::ust
