// Tests of the C++ instrumentation API (include/tracery/tracepoint.hpp): the
// schema built from C++ types and the arguments handed to probes.
#include <tracery/internal/probe.h>
#include <tracery/tracepoint.hpp>

#include "ust/registry.hpp"

#include <gtest/gtest.h>

#include <array>
#include <span>
#include <string>
#include <vector>

enum class Mode : int16_t { off = -1, on = 1 };
TRACERY_CXX_ENUM(Mode, {"off", -1, -1}, {"on", 1, 1});

TRACERY_CXX_EVENT(cxx, all, (flag, bool), (small, int8_t), (big, uint64_t), (ratio, float), (precise, double),
                  (mode, Mode), (name, std::string_view), (fixed, std::array<int32_t, 2>),
                  (values, std::span<const uint16_t>), (raw, tracery::blob))
TRACERY_CXX_EVENT(cxx, scalars, (n, int32_t), (mode, Mode), (x, double))
TRACERY_CXX_EVENT(cxx, addresses, (ptr, tracery::hex<uintptr_t>), (flags, tracery::hex<int32_t>), (size, uint64_t))

namespace {

struct Captured {
	std::vector<tracery_arg> args;
	std::string name;
	uint64_t big = 0;
	int16_t mode = 0;
};

void capture(void *priv, const tracery_event_desc *, const tracery_arg *args)
{
	auto *c = static_cast<Captured *>(priv);
	c->args.assign(args, args + 10);
	c->name.assign(static_cast<const char *>(args[6].ptr), args[6].len);
	c->big = *static_cast<const uint64_t *>(args[2].ptr);
	c->mode = *static_cast<const int16_t *>(args[5].ptr);
}

TEST(CxxApi, SchemaComesFromTypes)
{
	const tracery_event_desc &d = tracery_event__cxx__all;
	ASSERT_EQ(d.nr_fields, 10u);
	EXPECT_STREQ(d.provider, "cxx");
	EXPECT_STREQ(d.name, "all");
	const uint8_t want[] = {TRACERY_TYPE_BOOL,     TRACERY_TYPE_S8,   TRACERY_TYPE_U64,    TRACERY_TYPE_FLOAT,
	                        TRACERY_TYPE_DOUBLE,   TRACERY_TYPE_ENUM, TRACERY_TYPE_STRING, TRACERY_TYPE_ARRAY,
	                        TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_BLOB};
	for (uint32_t i = 0; i < d.nr_fields; i++)
		EXPECT_EQ(d.fields[i].type, want[i]) << d.fields[i].name;
	EXPECT_STREQ(d.fields[5].name, "mode");
	EXPECT_EQ(d.fields[5].elem_type, TRACERY_TYPE_S16);
	ASSERT_NE(d.fields[5].enum_desc, nullptr);
	EXPECT_EQ(d.fields[5].enum_desc->nr_entries, 2u);
	EXPECT_STREQ(d.fields[5].enum_desc->entries[0].label, "off");
	EXPECT_EQ(d.fields[7].elem_type, TRACERY_TYPE_S32);
	EXPECT_EQ(d.fields[7].length, 2u);
	EXPECT_EQ(d.fields[8].elem_type, TRACERY_TYPE_U16);
}

// tracery::hex<Int> is an integer field of Int's type that readers show in
// hex, emitted as an Int; a plain integer has no such hint.
TEST(CxxApi, HexFieldsCarryTheHint)
{
	const tracery_event_desc &d = tracery_event__cxx__addresses;
	ASSERT_EQ(d.nr_fields, 3u);
	EXPECT_EQ(d.fields[0].type, TRACERY_TYPE_U64);
	EXPECT_EQ(d.fields[0].elem_type, TRACERY_FIELD_HEX);
	EXPECT_EQ(d.fields[1].type, TRACERY_TYPE_S32);
	EXPECT_EQ(d.fields[1].elem_type, TRACERY_FIELD_HEX);
	EXPECT_EQ(d.fields[2].elem_type, 0);
	EXPECT_EQ(d.gate_call, TRACERY_GATE_PARAMS);

	struct Seen {
		uintptr_t ptr = 0;
		int32_t flags = 0;
	} seen;
	const auto probe = [](void *priv, const tracery_event_desc *, const tracery_arg *args) {
		auto *s = static_cast<Seen *>(priv);
		s->ptr = *static_cast<const uintptr_t *>(args[0].ptr);
		s->flags = *static_cast<const int32_t *>(args[1].ptr);
	};
	ASSERT_EQ(tracery_probe_attach(&tracery_event__cxx__addresses, probe, &seen), 0);
	int local = 0;
	TRACERY_CXX_EMIT(cxx, addresses, reinterpret_cast<uintptr_t>(&local), -2, 64);
	ASSERT_EQ(tracery_probe_detach(&tracery_event__cxx__addresses, probe, &seen), 0);
	EXPECT_EQ(seen.ptr, reinterpret_cast<uintptr_t>(&local));
	EXPECT_EQ(seen.flags, -2);
}

TEST(CxxApi, ArgumentsReachProbes)
{
	Captured c;
	ASSERT_EQ(tracery_probe_attach(&tracery_event__cxx__all, capture, &c), 0);
	std::string name = "embedded";
	std::vector<uint16_t> values = {7, 8, 9};
	const unsigned char raw[2] = {1, 2};
	TRACERY_CXX_EMIT(cxx, all, true, -5, 1ull << 40, 0.5f, 0.25, Mode::off, name, std::array<int32_t, 2>{3, 4},
	                 values, tracery::blob{raw, 2});
	ASSERT_EQ(tracery_probe_detach(&tracery_event__cxx__all, capture, &c), 0);
	ASSERT_EQ(c.args.size(), 10u);
	EXPECT_EQ(c.name, "embedded");
	EXPECT_EQ(c.big, 1ull << 40);
	EXPECT_EQ(c.mode, -1);
	EXPECT_EQ(c.args[7].len, 2u);
	EXPECT_EQ(c.args[8].len, 3u);
	EXPECT_EQ(c.args[9].len, 2u);
	EXPECT_EQ(c.args[9].ptr, raw);
}

TEST(CxxApi, StringViewEndsAtAnEmbeddedNul)
{
	EXPECT_EQ(tracery::field<std::string_view>::arg(std::string_view("ab\0cd", 5)).len, 2u);
	EXPECT_EQ(tracery::field<std::string_view>::arg(std::string_view("abcd", 4)).len, 4u);
	EXPECT_EQ(tracery::field<std::string_view>::arg(std::string_view()).len, 0u);
}

// The gate of an all-scalar event takes its parameters (enumerations as
// their underlying integer).
int positive_n_gate(int32_t n, Mode mode, double x) { return n > 0 && mode == Mode::on && x == 0.5; }

void count_n(void *priv, const tracery_event_desc *, const tracery_arg *args)
{
	auto *seen = static_cast<std::vector<int32_t> *>(priv);
	seen->push_back(*static_cast<const int32_t *>(args[0].ptr));
}

TEST(CxxApi, ScalarEventGateTakesTheParameters)
{
	EXPECT_EQ(tracery_event__cxx__scalars.gate_call, TRACERY_GATE_PARAMS);
	EXPECT_EQ(tracery_event__cxx__all.gate_call, TRACERY_GATE_ARGS);
	std::vector<int32_t> seen;
	ASSERT_EQ(tracery::ust::attach_probe(&tracery_event__cxx__scalars, count_n, &seen,
	                                     reinterpret_cast<tracery_gate_fn>(&positive_n_gate)),
	          0);
	for (int32_t n : {-1, 2, 0, 5})
		TRACERY_CXX_EMIT(cxx, scalars, n, Mode::on, 0.5);
	TRACERY_CXX_EMIT(cxx, scalars, 7, Mode::off, 0.5);
	TRACERY_CXX_EMIT(cxx, scalars, 8, Mode::on, 0.25);
	ASSERT_EQ(tracery_probe_detach(&tracery_event__cxx__scalars, count_n, &seen), 0);
	EXPECT_EQ(seen, (std::vector<int32_t>{2, 5})) << "the gate saw every parameter";
}

TEST(CxxApi, DisabledEmitEvaluatesNothing)
{
	int calls = 0;
	auto count = [&calls] { return ++calls; };
	TRACERY_CXX_EMIT(cxx, all, true, 0, static_cast<uint64_t>(count()), 0.f, 0., Mode::on, "", {}, {}, {});
	EXPECT_EQ(calls, 0);
}

} // namespace
