// Tests of event registration and probe lists (registry.cpp), through the
// public macros of tracepoint.h.
#include <tracery/internal/probe.h>
#include <tracery/tracepoint.h>

#include "ust/registry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

TRACERY_EVENT(regtest, pair, TRACERY_U64(a), TRACERY_S32(b))
TRACERY_EVENT(regtest, text, TRACERY_STRING(s), TRACERY_SEQUENCE(U16, v))

namespace {

struct Seen {
	std::atomic<uint64_t> calls{0};
	std::atomic<uint64_t> sum_a{0};
};

void count_probe(void *priv, const tracery_event_desc *, const tracery_arg *args)
{
	auto *seen = static_cast<Seen *>(priv);
	seen->calls.fetch_add(1, std::memory_order_relaxed);
	seen->sum_a.fetch_add(*static_cast<const uint64_t *>(args[0].ptr), std::memory_order_relaxed);
}

bool is_registered(const tracery_event_desc *d)
{
	for (auto *r : tracery::ust::registered_events())
		if (r == d)
			return true;
	return false;
}

TEST(Registry, SectionEventsAreRegisteredAndListed)
{
	std::vector<std::string> names;
	tracery_list_events(
		[](const tracery_event_desc *d, void *arg) {
			static_cast<std::vector<std::string> *>(arg)->push_back(std::string(d->provider) + ":" +
		                                                                d->name);
		},
		&names);
	EXPECT_NE(std::find(names.begin(), names.end(), "regtest:pair"), names.end());
	EXPECT_NE(std::find(names.begin(), names.end(), "regtest:text"), names.end());
	EXPECT_EQ(tracery_event__regtest__pair.nr_fields, 2u);
	EXPECT_STREQ(tracery_event__regtest__pair.fields[1].name, "b");
	EXPECT_EQ(tracery_event__regtest__pair.fields[1].type, TRACERY_TYPE_S32);
	EXPECT_EQ(tracery_event__regtest__text.fields[1].type, TRACERY_TYPE_SEQUENCE);
	EXPECT_EQ(tracery_event__regtest__text.fields[1].elem_type, TRACERY_TYPE_U16);
}

TEST(Registry, DisabledEventDoesNotEvaluateArguments)
{
	int evaluated = 0;
	auto arg = [&evaluated]() -> uint64_t { return ++evaluated; };
	EXPECT_EQ(tracery_event__regtest__pair.enabled, 0);
	TRACERY_EMIT(regtest, pair, arg(), 1);
	EXPECT_EQ(evaluated, 0);
}

TEST(Registry, ProbesAttachWithPrivateDataAndDetach)
{
	Seen one, two;
	ASSERT_EQ(tracery_probe_attach(&tracery_event__regtest__pair, count_probe, &one), 0);
	EXPECT_EQ(tracery_probe_attach(&tracery_event__regtest__pair, count_probe, &one), -1) << "attached twice";
	ASSERT_EQ(tracery_probe_attach(&tracery_event__regtest__pair, count_probe, &two), 0);
	EXPECT_EQ(tracery_event__regtest__pair.enabled, 1);
	TRACERY_EMIT(regtest, pair, 5, -1);
	ASSERT_EQ(tracery_probe_detach(&tracery_event__regtest__pair, count_probe, &one), 0);
	EXPECT_EQ(tracery_event__regtest__pair.enabled, 1);
	TRACERY_EMIT(regtest, pair, 7, -1);
	ASSERT_EQ(tracery_probe_detach(&tracery_event__regtest__pair, count_probe, &two), 0);
	EXPECT_EQ(tracery_event__regtest__pair.enabled, 0);
	EXPECT_EQ(tracery_probe_detach(&tracery_event__regtest__pair, count_probe, &two), -1);
	TRACERY_EMIT(regtest, pair, 11, -1);
	EXPECT_EQ(one.calls.load(), 1u);
	EXPECT_EQ(one.sum_a.load(), 5u);
	EXPECT_EQ(two.calls.load(), 2u);
	EXPECT_EQ(two.sum_a.load(), 12u);
}

TEST(Registry, StringAndSequenceArguments)
{
	struct Capture {
		std::string s;
		uint32_t count = 0;
		uint16_t last = 0;
	} cap;
	auto probe = [](void *priv, const tracery_event_desc *, const tracery_arg *args) {
		auto *c = static_cast<Capture *>(priv);
		c->s.assign(static_cast<const char *>(args[0].ptr), args[0].len);
		c->count = args[1].len;
		c->last = static_cast<const uint16_t *>(args[1].ptr)[args[1].len - 1];
	};
	ASSERT_EQ(tracery_probe_attach(&tracery_event__regtest__text, probe, &cap), 0);
	const uint16_t v[3] = {1, 2, 65535};
	TRACERY_EMIT(regtest, text, "héllo", v, 3);
	EXPECT_EQ(cap.s, "héllo");
	EXPECT_EQ(cap.count, 3u);
	EXPECT_EQ(cap.last, 65535);
	ASSERT_EQ(tracery_probe_detach(&tracery_event__regtest__text, probe, &cap), 0);
}

// Sessions come and go while threads emit at full speed: no call is lost
// for a probe while it is attached, none happens after detach returns.
TEST(Registry, AttachDetachWhileEmitting)
{
	std::atomic<bool> stop{false};
	std::vector<std::thread> emitters;
	for (int t = 0; t < 2; t++)
		emitters.emplace_back([&stop] {
			while (!stop.load(std::memory_order_relaxed))
				TRACERY_EMIT(regtest, pair, 1, 0);
		});
	for (int round = 0; round < 200; round++) {
		Seen s;
		ASSERT_EQ(tracery_probe_attach(&tracery_event__regtest__pair, count_probe, &s), 0);
		std::this_thread::yield();
		ASSERT_EQ(tracery_probe_detach(&tracery_event__regtest__pair, count_probe, &s), 0);
		const uint64_t after = s.calls.load();
		std::this_thread::yield();
		EXPECT_EQ(s.calls.load(), after) << "probe ran after detach returned";
		EXPECT_EQ(s.sum_a.load(), after);
	}
	stop = true;
	for (auto &t : emitters)
		t.join();
}

TEST(Registry, UnregisterRemovesEventsAndProbes)
{
	static tracery_field_desc fields[] = {{"x", TRACERY_TYPE_U8, 0, 0, nullptr}};
	static tracery_event_desc desc = {"dyn", "ev", fields, 1, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
	tracery_event_desc *const section[] = {&desc, &desc};
	tracery_register_events(section, section + 2);
	EXPECT_TRUE(is_registered(&desc));
	Seen s;
	ASSERT_EQ(tracery_probe_attach(&desc, count_probe, &s), 0);
	tracery_unregister_events(section, section + 1);
	EXPECT_TRUE(is_registered(&desc)) << "still referenced once";
	tracery_unregister_events(section + 1, section + 2);
	EXPECT_FALSE(is_registered(&desc));
	EXPECT_EQ(desc.enabled, 0);
	const uint8_t x = 1;
	const tracery_arg args[] = {{&x, 0}};
	tracery_fire(&desc, args); // as an emitter that read `enabled` before the unregistration
	EXPECT_EQ(s.calls.load(), 0u);
	EXPECT_EQ(tracery_probe_attach(&desc, count_probe, &s), -1) << "unknown event";
}

// An emitter may see `enabled` set by the first attach before it sees that
// attach's probe array: what it reads then is the array the registration
// published, whose probe does nothing.
TEST(Registry, RegisteredEventHasAProbeArrayBeforeAnyAttach)
{
	static tracery_field_desc fields[] = {{"x", TRACERY_TYPE_U64, 0, 0, nullptr}};
	static tracery_event_desc desc = {"dyn", "fresh", fields, 1, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
	tracery_event_desc *const section[] = {&desc};
	ASSERT_EQ(desc.probes, nullptr);
	tracery_register_events(section, section + 1);
	ASSERT_NE(desc.probes, nullptr);
	EXPECT_EQ(desc.enabled, 0);
	const uint64_t x = 3; // count_probe reads a U64
	const tracery_arg args[] = {{&x, 0}};
	tracery_fire(&desc, args);
	Seen s;
	ASSERT_EQ(tracery_probe_attach(&desc, count_probe, &s), 0);
	tracery_fire(&desc, args);
	EXPECT_EQ(s.calls.load(), 1u);
	EXPECT_EQ(s.sum_a.load(), 3u);
	EXPECT_EQ(tracery_probe_detach(&desc, count_probe, &s), 0);
	EXPECT_NE(desc.probes, nullptr);
	tracery_unregister_events(section, section + 1);
}

// A session the daemon ends on its thread while another thread's dlopen
// registers events: remove_listener() waits for the call into the listener
// that runs, and the registration calls no listener removed before it got
// to it, so the listener may be destroyed once removed.
TEST(Registry, ARemovedListenerIsNeitherCalledNorDestroyedUnderACall)
{
	static tracery_field_desc fields[] = {{"x", TRACERY_TYPE_U64, 0, 0, nullptr}};
	static tracery_event_desc desc = {"dyn", "late", fields, 1, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
	tracery_event_desc *const section[] = {&desc};
	struct Blocking : tracery::ust::RegistryListener {
		std::atomic<bool> entered{false}, release{false}, left{false};
		void on_event_registered(tracery_event_desc *d) override
		{
			if (d != &desc)
				return;
			entered = true;
			while (!release)
				std::this_thread::yield();
			left = true;
		}
		void on_event_unregistered(tracery_event_desc *) override {}
	};
	struct Counting : tracery::ust::RegistryListener {
		std::atomic<int> calls{0};
		void on_event_registered(tracery_event_desc *d) override { calls += d == &desc; }
		void on_event_unregistered(tracery_event_desc *) override {}
	};
	auto blocking = std::make_unique<Blocking>();
	auto counting = std::make_unique<Counting>();
	tracery::ust::add_listener(blocking.get());
	tracery::ust::add_listener(counting.get());
	std::thread loader([&] { tracery_register_events(section, section + 1); });
	while (!blocking->entered)
		std::this_thread::yield();
	std::atomic<bool> removed{false};
	std::thread daemon_link([&] {
		tracery::ust::remove_listener(counting.get()); // not called yet: removed at once
		tracery::ust::remove_listener(blocking.get()); // waits for the call that runs
		removed = true;
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	EXPECT_FALSE(removed.load()) << "remove_listener returned while the listener's call ran";
	blocking->release = true;
	daemon_link.join();
	EXPECT_TRUE(blocking->left.load());
	blocking.reset();
	loader.join();
	EXPECT_EQ(counting->calls.load(), 0) << "called after its removal";
	tracery_unregister_events(section, section + 1);
}

// regtest:pair has only scalars: its gate takes the emitter's parameters
// and lets through only events with a even.
int even_a_gate(uint64_t a, int32_t) { return a % 2 == 0; }
const auto even_a = reinterpret_cast<tracery_gate_fn>(&even_a_gate);

tracery_gate_fn current_gate(const tracery_event_desc &desc) { return desc.gate; }

TEST(Registry, GateCallFormFollowsTheFieldKinds)
{
	EXPECT_EQ(tracery_event__regtest__pair.gate_call, TRACERY_GATE_PARAMS);
	EXPECT_EQ(tracery_event__regtest__text.gate_call, TRACERY_GATE_ARGS);
}

// regtest:text has a string: its gate takes the argument array.
int not_no_gate(const tracery_arg *args, const void *reserved)
{
	EXPECT_EQ(reserved, nullptr);
	return std::string(static_cast<const char *>(args[0].ptr), args[0].len) != "no";
}

void collect_text(void *priv, const tracery_event_desc *, const tracery_arg *args)
{
	static_cast<std::vector<std::string> *>(priv)->emplace_back(static_cast<const char *>(args[0].ptr),
	                                                            args[0].len);
}

TEST(Registry, ArgumentArrayGateSeesTheArguments)
{
	auto &desc = tracery_event__regtest__text;
	std::vector<std::string> seen;
	ASSERT_EQ(
		tracery::ust::attach_probe(&desc, collect_text, &seen, reinterpret_cast<tracery_gate_fn>(&not_no_gate)),
		0);
	const uint16_t v[] = {1, 2};
	for (const char *s : {"yes", "no", "no", "maybe"})
		TRACERY_EMIT(regtest, text, s, v, 2);
	ASSERT_EQ(tracery_probe_detach(&desc, collect_text, &seen), 0);
	EXPECT_EQ(seen, (std::vector<std::string>{"yes", "maybe"})) << "the two \"no\" events rejected by the gate";
}

TEST(Registry, GateRunsBeforeTheProbesOnlyWhileItsProbeIsAlone)
{
	auto &desc = tracery_event__regtest__pair;
	Seen gated, plain;
	ASSERT_EQ(tracery::ust::attach_probe(&desc, count_probe, &gated, even_a), 0);
	EXPECT_EQ(current_gate(desc), even_a);
	for (uint64_t a = 0; a < 10; a++)
		TRACERY_EMIT(regtest, pair, a, 0);
	EXPECT_EQ(gated.calls.load(), 5u) << "odd a rejected by the gate before the probe";
	EXPECT_EQ(gated.sum_a.load(), 0u + 2 + 4 + 6 + 8);

	// A second probe: the gate would reject on its behalf, so it is removed.
	ASSERT_EQ(tracery_probe_attach(&desc, count_probe, &plain), 0);
	EXPECT_EQ(current_gate(desc), nullptr);
	for (uint64_t a = 0; a < 10; a++)
		TRACERY_EMIT(regtest, pair, a, 0);
	EXPECT_EQ(plain.calls.load(), 10u);
	EXPECT_EQ(gated.calls.load(), 15u) << "without the gate the gated probe sees every event";

	// Alone again: back.
	ASSERT_EQ(tracery_probe_detach(&desc, count_probe, &plain), 0);
	EXPECT_EQ(current_gate(desc), even_a);
	ASSERT_EQ(tracery_probe_detach(&desc, count_probe, &gated), 0);
	EXPECT_EQ(current_gate(desc), nullptr);
	EXPECT_EQ(desc.enabled, 0);

	// The plain probe alone: no gate.
	ASSERT_EQ(tracery_probe_attach(&desc, count_probe, &plain), 0);
	EXPECT_EQ(current_gate(desc), nullptr);
	ASSERT_EQ(tracery_probe_detach(&desc, count_probe, &plain), 0);
}

// A probe that filters (counts as `filtered`) and its gate_passed_fn, which
// records without filtering (counts as `recorded`).
struct FilteringProbe {
	Seen filtered, recorded;
};

void filtering_probe(void *priv, const tracery_event_desc *desc, const tracery_arg *args)
{
	auto *p = static_cast<FilteringProbe *>(priv);
	count_probe(&p->filtered, desc, args);
	if (*static_cast<const uint64_t *>(args[0].ptr) % 2 == 0)
		count_probe(&p->recorded, desc, args);
}

void record_probe(void *priv, const tracery_event_desc *desc, const tracery_arg *args)
{
	count_probe(&static_cast<FilteringProbe *>(priv)->recorded, desc, args);
}

TEST(Registry, EventTheGateAcceptedSkipsTheProbesFilter)
{
	auto &desc = tracery_event__regtest__pair;
	FilteringProbe p;
	ASSERT_EQ(tracery::ust::attach_probe(&desc, filtering_probe, &p, even_a, record_probe), 0);
	for (uint64_t a = 1; a <= 10; a++)
		TRACERY_EMIT(regtest, pair, a, 0);
	EXPECT_EQ(p.recorded.calls.load(), 5u);
	EXPECT_EQ(p.recorded.sum_a.load(), 2u + 4 + 6 + 8 + 10);
	EXPECT_EQ(p.filtered.calls.load(), 0u) << "the gate ran the filter; the probe must not run it again";

	// An emitter that loaded another gate (the probes changed since): the
	// probe filters as usual.
	const uint64_t a = 12;
	const int32_t b = 0;
	const tracery_arg args[] = {{&a, 0}, {&b, 0}};
	tracery_fire_gate_passed(&desc, args, reinterpret_cast<tracery_gate_fn>(&not_no_gate));
	EXPECT_EQ(p.filtered.calls.load(), 1u);
	EXPECT_EQ(p.recorded.calls.load(), 6u);
	ASSERT_EQ(tracery_probe_detach(&desc, filtering_probe, &p), 0);
}

void collect_text_twice(void *priv, const tracery_event_desc *desc, const tracery_arg *args)
{
	collect_text(priv, desc, args);
	collect_text(priv, desc, args);
}

TEST(Registry, ArgumentArrayEventTheGateAcceptedSkipsTheProbesFilter)
{
	auto &desc = tracery_event__regtest__text;
	std::vector<std::string> seen;
	// fn (which would record each event twice) is never called: the gate
	// accepts or rejects every event.
	ASSERT_EQ(tracery::ust::attach_probe(&desc, collect_text_twice, &seen,
	                                     reinterpret_cast<tracery_gate_fn>(&not_no_gate), collect_text),
	          0);
	const uint16_t v[] = {3};
	for (const char *s : {"no", "yes", "no", "maybe"})
		TRACERY_EMIT(regtest, text, s, v, 1);
	ASSERT_EQ(tracery_probe_detach(&desc, collect_text_twice, &seen), 0);
	EXPECT_EQ(seen, (std::vector<std::string>{"yes", "maybe"}));
}

} // namespace
