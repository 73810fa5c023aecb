// Tests of events defined at run time (runtime_event.cpp,
// runtime_event_definition.cpp): every rule a definition is checked against,
// with its errno and reason; identical definitions sharing a handle, also
// from racing threads; the values an emit hands to the probes, encoded as
// the trace records them; the checks of emitted values; the gate. Traces
// written and read back are tests/runtime_events_test.py's.
#include <tracery/internal/probe.h>
#include <tracery/runtime_event.h>

#include "event/payload.hpp"
#include "ust/registry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

bool is_registered(const tracery_runtime_event *ev)
{
	for (auto *d : tracery::ust::registered_events())
		if (d == &ev->desc)
			return true;
	return false;
}

bool is_registered_name(const std::string &provider, const std::string &name)
{
	for (auto *d : tracery::ust::registered_events())
		if (provider == d->provider && name == d->name)
			return true;
	return false;
}

tracery_event_field field(const char *name, uint8_t type, uint8_t elem = 0, uint32_t length = 0)
{
	tracery_event_field f{};
	f.name = name;
	f.type = type;
	f.elem_type = elem;
	f.length = length;
	return f;
}

tracery_event_field enum_field(const char *name, uint8_t elem, const tracery_enum_entry *entries, uint32_t n)
{
	tracery_event_field f = field(name, TRACERY_TYPE_ENUM, elem);
	f.enum_entries = entries;
	f.nr_enum_entries = n;
	return f;
}

struct BadDefinition {
	const char *what;
	std::string provider, name;
	std::vector<tracery_event_field> fields;
	const char *reason; // a part of tracery_last_error()
	bool null_provider = false, null_fields = false;
};

const tracery_enum_entry kColors[] = {{"red", 0, 0}, {"green", 1, 1}};
const tracery_enum_entry kWide[] = {{"wide", 0, 256}};
const tracery_enum_entry kLowS8[] = {{"low", -129, 0}};
const tracery_enum_entry kBackwards[] = {{"back", 5, 4}};
const tracery_enum_entry kNoLabel[] = {{nullptr, 0, 0}};
const tracery_enum_entry kEmptyLabel[] = {{"", 0, 0}};
const std::string kLongLabel(TRACERY_EVENT_MAX_ENUM_LABEL + 1, 'l');
const tracery_enum_entry kTooLongLabel[] = {{kLongLabel.c_str(), 0, 0}};

std::vector<BadDefinition> bad_definitions()
{
	const tracery_event_field u8 = field("x", TRACERY_TYPE_U8);
	std::vector<tracery_event_field> seventeen;
	static const char *const kNames[] = {"f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8",
	                                     "f9", "fa", "fb", "fc", "fd", "fe", "ff", "fg"};
	for (const char *n : kNames)
		seventeen.push_back(field(n, TRACERY_TYPE_U8));
	tracery_event_field flagged = u8;
	flagged.flags = 2;
	tracery_event_field hex_string = field("s", TRACERY_TYPE_STRING);
	hex_string.flags = TRACERY_EVENT_FIELD_HEX;
	tracery_event_field hex_enum = enum_field("e", TRACERY_TYPE_U8, kColors, 2);
	hex_enum.flags = TRACERY_EVENT_FIELD_HEX;
	tracery_event_field string_with_labels = field("s", TRACERY_TYPE_STRING);
	string_with_labels.enum_entries = kColors;
	string_with_labels.nr_enum_entries = 2;
	static const std::string long_field(TRACERY_EVENT_MAX_FIELD_NAME + 1, 'f');
	return {
		{"no provider", "", "ev", {u8}, "the provider is NULL", true},
		{"empty provider", "", "ev", {u8}, "the provider must be 1 to 64 bytes long"},
		{"long provider", std::string(65, 'p'), "ev", {u8}, "the provider must be 1 to 64 bytes long"},
		{"provider with a dot", "a.b", "ev", {u8}, "the provider 'a.b' must begin with a letter or '_'"},
		{"provider with a digit first", "9p", "ev", {u8}, "the provider '9p' must begin"},
		{"empty name", "p", "", {u8}, "the event name must be 1 to 200 bytes long"},
		{"long name", "p", std::string(201, 'n'), {u8}, "the event name must be 1 to 200 bytes long"},
		{"name with a space", "p", "a b", {u8}, "the event name 'a b' must begin"},
		{"name with a colon", "p", "a:b", {u8}, "hold only letters, digits, '_', '.', '$' and '-'"},
		{"name with a wildcard", "p", "a*", {u8}, "must begin with a letter or '_'"},
		{"name with a dot first", "p", ".a", {u8}, "must begin with a letter or '_'"},
		{"17 fields", "p", "ev", seventeen, "p:ev: 17 fields, at most 16 allowed"},
		{"no field array", "p", "ev", {u8, u8}, "p:ev: the field array is NULL", false, true},
		{"field without a name", "p", "ev", {field(nullptr, TRACERY_TYPE_U8)}, "field 0: its name is NULL"},
		{"empty field name", "p", "ev", {field("", TRACERY_TYPE_U8)}, "field 0: its name must be 1 to 64"},
		{"long field name",
	         "p",
	         "ev",
	         {field(long_field.c_str(), TRACERY_TYPE_U8)},
	         "its name must be 1 to 64"},
		{"field name not an identifier",
	         "p",
	         "ev",
	         {u8, field("a.b", TRACERY_TYPE_U8)},
	         "field 1: its name 'a.b' must begin with a letter or '_' and hold only letters, digits and '_'"},
		{"repeated field name",
	         "p",
	         "ev",
	         {u8, field("y", TRACERY_TYPE_U8), u8},
	         "p:ev: field 2 ('x'): another field has this name"},
		{"unknown type", "p", "ev", {field("x", 16)}, "field 0 ('x'): unknown type 16"},
		{"unknown flags",
	         "p",
	         "ev",
	         {flagged},
	         "field 0 ('x'): flags holds bits other than TRACERY_EVENT_FIELD_HEX"},
		{"hex string",
	         "p",
	         "ev",
	         {hex_string},
	         "TRACERY_EVENT_FIELD_HEX is for an integer field (u8 to s64), not a string"},
		{"hex enum", "p", "ev", {hex_enum}, "not a enum"},
		{"elem_type of a scalar",
	         "p",
	         "ev",
	         {field("x", TRACERY_TYPE_U32, TRACERY_TYPE_S8)},
	         "elem_type must be 0 for a u32"},
		{"length of a scalar", "p", "ev", {field("x", TRACERY_TYPE_U32, 0, 4)}, "length must be 0 for a u32"},
		{"labels of a string", "p", "ev", {string_with_labels}, "enum_entries must be NULL and 0 for a string"},
		{"enum of floats",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_FLOAT, kColors, 2)},
	         "an enum's elem_type must be an integer type (u8 to s64), not float"},
		{"enum without labels",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_U8, kColors, 0)},
	         "an enum needs 1 to 1024 entries"},
		{"enum with NULL entries",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_U8, nullptr, 1)},
	         "enum_entries is NULL"},
		{"label NULL",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_U8, kNoLabel, 1)},
	         "enum entry 0: its label must be 1 to 255 bytes long"},
		{"label empty",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_U8, kEmptyLabel, 1)},
	         "its label must be 1 to 255"},
		{"label too long",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_U8, kTooLongLabel, 1)},
	         "its label must be 1 to 255"},
		{"label beyond u8",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_U8, kWide, 1)},
	         "enum entry 0 ('wide'): its range 0 to 256 is empty or outside the values of u8"},
		{"label below s8",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_S8, kLowS8, 1)},
	         "its range -129 to 0 is empty or outside the values of s8"},
		{"label range backwards",
	         "p",
	         "ev",
	         {enum_field("e", TRACERY_TYPE_S64, kBackwards, 1)},
	         "its range 5 to 4 is empty"},
		{"array of strings",
	         "p",
	         "ev",
	         {field("a", TRACERY_TYPE_ARRAY, TRACERY_TYPE_STRING, 2)},
	         "the elem_type of an array must be a scalar type (u8 to s64, float, double, bool), not string"},
		{"sequence of enums",
	         "p",
	         "ev",
	         {field("a", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_ENUM)},
	         "the elem_type of an sequence must be a scalar type"},
		{"empty array",
	         "p",
	         "ev",
	         {field("a", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U8, 0)},
	         "an array's length must be 1 to 65536 elements of u8"},
		{"array over the payload",
	         "p",
	         "ev",
	         {field("a", TRACERY_TYPE_ARRAY, TRACERY_TYPE_DOUBLE, 8193)},
	         "an array's length must be 1 to 8192 elements of double"},
		{"arrays over the payload",
	         "p",
	         "ev",
	         {field("a", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U8, 40000),
	          field("b", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U8, 40000)},
	         "p:ev: its fields take 80000 bytes before any value, more than 65536"},
	};
}

TEST(RuntimeEvent, BadDefinitionsAreRefusedWithAReason)
{
	for (const BadDefinition &bad : bad_definitions()) {
		SCOPED_TRACE(bad.what);
		errno = 0;
		const tracery_runtime_event *ev = tracery_event_define(
			bad.null_provider ? nullptr : bad.provider.c_str(), bad.name.c_str(),
			bad.null_fields ? nullptr : bad.fields.data(), static_cast<uint32_t>(bad.fields.size()));
		EXPECT_EQ(ev, nullptr);
		EXPECT_EQ(errno, EINVAL);
		EXPECT_NE(std::string(tracery_last_error()).find(bad.reason), std::string::npos)
			<< "reason: " << tracery_last_error();
		EXPECT_FALSE(is_registered_name(bad.provider, bad.name));
	}
}

TEST(RuntimeEvent, LimitsThemselvesAreAccepted)
{
	static const tracery_enum_entry kAllOfU64[] = {{"top", -1, -1}, {"all", 0, -1}};
	static const tracery_enum_entry kEdgesOfS8[] = {{"min", -128, -128}, {"max", 127, 127}};
	const std::string provider(TRACERY_EVENT_MAX_PROVIDER, 'p');
	std::string name(TRACERY_EVENT_MAX_NAME, '.');
	name[0] = 'n';
	const tracery_event_field fields[] = {
		enum_field("u", TRACERY_TYPE_U64, kAllOfU64, 2), enum_field("s", TRACERY_TYPE_S8, kEdgesOfS8, 2),
		field("a", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U8, TRACERY_EVENT_MAX_PAYLOAD - 9), // 65536 bytes in all
	};
	tracery_runtime_event *ev = tracery_event_define(provider.c_str(), name.c_str(), fields, 3);
	ASSERT_NE(ev, nullptr) << tracery_last_error();
	EXPECT_TRUE(is_registered(ev));
	EXPECT_EQ(ev->desc.nr_fields, 3u);
	EXPECT_STREQ(ev->desc.fields[0].enum_desc->entries[0].label, "top");
	EXPECT_EQ(ev->desc.gate_call, TRACERY_GATE_ARGS);
	tracery_event_field hex = field("addr", TRACERY_TYPE_U64);
	hex.flags = TRACERY_EVENT_FIELD_HEX;
	const tracery_runtime_event *with_hex = tracery_event_define("hex", "ev", &hex, 1);
	ASSERT_NE(with_hex, nullptr) << tracery_last_error();
	EXPECT_EQ(with_hex->desc.fields[0].elem_type, TRACERY_FIELD_HEX);
	hex.flags = 0;
	errno = 0;
	EXPECT_EQ(tracery_event_define("hex", "ev", &hex, 1), nullptr) << "decimal is other fields";
	EXPECT_EQ(errno, EEXIST);
	const tracery_event_field java_like[] = {field("x", TRACERY_TYPE_U8)};
	EXPECT_NE(tracery_event_define("java", "com.example.Outer$Inner-1", java_like, 1), nullptr);
	EXPECT_NE(tracery_event_define("python", "_app.db", java_like, 1), nullptr);
	EXPECT_NE(tracery_event_define("empty", "no_fields", nullptr, 0), nullptr);
}

TEST(RuntimeEvent, SameFieldsSameHandleOtherFieldsRefused)
{
	static const tracery_enum_entry kOther[] = {{"red", 0, 0}, {"blue", 1, 1}};
	const tracery_event_field fields[] = {field("id", TRACERY_TYPE_U64),
	                                      enum_field("c", TRACERY_TYPE_U8, kColors, 2)};
	tracery_runtime_event *first = tracery_event_define("same", "ev", fields, 2);
	ASSERT_NE(first, nullptr) << tracery_last_error();
	// A copy of the definition, with strings of its own: compared by value.
	const std::string id = "id", red = "red", green = "green";
	const tracery_enum_entry colors[] = {{red.c_str(), 0, 0}, {green.c_str(), 1, 1}};
	const tracery_event_field again[] = {field(id.c_str(), TRACERY_TYPE_U64),
	                                     enum_field("c", TRACERY_TYPE_U8, colors, 2)};
	EXPECT_EQ(tracery_event_define("same", "ev", again, 2), first);
	size_t listed = 0;
	for (auto *d : tracery::ust::registered_events())
		listed += d == &first->desc;
	EXPECT_EQ(listed, 1u);

	const tracery_event_field other_labels[] = {field("id", TRACERY_TYPE_U64),
	                                            enum_field("c", TRACERY_TYPE_U8, kOther, 2)};
	const tracery_event_field other_type[] = {field("id", TRACERY_TYPE_S64),
	                                          enum_field("c", TRACERY_TYPE_U8, kColors, 2)};
	for (const tracery_event_field *other : {other_labels, other_type}) {
		errno = 0;
		EXPECT_EQ(tracery_event_define("same", "ev", other, 2), nullptr);
		EXPECT_EQ(errno, EEXIST);
		EXPECT_STREQ(tracery_last_error(), "same:ev is already defined with other fields");
	}
	errno = 0;
	EXPECT_EQ(tracery_event_define("same", "ev", fields, 1), nullptr);
	EXPECT_EQ(errno, EEXIST);
	EXPECT_NE(tracery_event_define("same", "ev2", other_type, 2), nullptr) << "another name is another event";
}

// Threads racing to define the same event all get the one handle; one that
// defines it with other fields is refused, whenever it comes.
TEST(RuntimeEvent, RacingDefinitionsShareOneHandle)
{
	constexpr int kThreads = 6, kRounds = 20;
	const tracery_event_field fields[] = {field("n", TRACERY_TYPE_U32), field("s", TRACERY_TYPE_STRING)};
	const tracery_event_field other[] = {field("n", TRACERY_TYPE_U64)};
	std::atomic<bool> go{false};
	std::vector<tracery_runtime_event *> got(kThreads * kRounds);
	std::atomic<int> refused{0}, own{0};
	std::vector<std::thread> threads;
	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([&, t] {
			while (!go.load())
				std::this_thread::yield();
			const std::string mine = "own" + std::to_string(t);
			for (int r = 0; r < kRounds; r++) {
				got[t * kRounds + r] = tracery_event_define("race", "ev", fields, 2);
				errno = 0;
				if (!tracery_event_define("race", "ev", other, 1) && errno == EEXIST)
					refused++;
				own += tracery_event_define("race", mine.c_str(), other, 1) != nullptr;
			}
		});
	go = true;
	for (auto &t : threads)
		t.join();
	ASSERT_NE(got[0], nullptr);
	for (auto *h : got)
		EXPECT_EQ(h, got[0]);
	EXPECT_EQ(refused.load(), kThreads * kRounds);
	EXPECT_EQ(own.load(), kThreads * kRounds);
	EXPECT_TRUE(is_registered(got[0]));
}

// What the probes get: each value encoded as the trace records it.
struct Recorded {
	std::atomic<int> calls{0};
	std::vector<uint8_t> payload;
};

void record_probe(void *priv, const tracery_event_desc *desc, const tracery_arg *args)
{
	auto *r = static_cast<Recorded *>(priv);
	r->payload.assign(tracery::event::payload_size(*desc, args), 0);
	tracery::event::write_payload(r->payload.data(), *desc, args);
	r->calls++;
}

template <typename T>
void put(std::vector<uint8_t> &out, T v)
{
	const auto *b = reinterpret_cast<const uint8_t *>(&v); // x86-64: little-endian, as the trace
	out.insert(out.end(), b, b + sizeof v);
}

class Emit : public ::testing::Test {
protected:
	void SetUp() override
	{
		static const tracery_enum_entry kLevels[] = {{"low", -5, -1}, {"high", 1, 100}};
		const tracery_event_field fields[] = {
			field("u8", TRACERY_TYPE_U8),
			field("u16", TRACERY_TYPE_U16),
			field("u32", TRACERY_TYPE_U32),
			field("u64", TRACERY_TYPE_U64),
			field("s8", TRACERY_TYPE_S8),
			field("s16", TRACERY_TYPE_S16),
			field("s32", TRACERY_TYPE_S32),
			field("s64", TRACERY_TYPE_S64),
			field("f", TRACERY_TYPE_FLOAT),
			field("d", TRACERY_TYPE_DOUBLE),
			field("b", TRACERY_TYPE_BOOL),
			enum_field("e", TRACERY_TYPE_S16, kLevels, 2),
			field("s", TRACERY_TYPE_STRING),
			field("a", TRACERY_TYPE_ARRAY, TRACERY_TYPE_S16, 2),
			field("q", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_FLOAT),
			field("blob", TRACERY_TYPE_BLOB),
		};
		ev = tracery_event_define("emit_test", "all", fields, 16);
		ASSERT_NE(ev, nullptr) << tracery_last_error();
		for (auto &v : values)
			v = tracery_value{};
		values[0].v.u64 = 200;
		values[1].v.u64 = 60000;
		values[2].v.u64 = 4000000000u;
		values[3].v.u64 = UINT64_MAX;
		values[4].v.i64 = -100;
		values[5].v.i64 = -30000;
		values[6].v.i64 = INT32_MIN;
		values[7].v.i64 = INT64_MIN;
		values[8].v.f64 = 0.1;
		values[9].v.f64 = -2.5;
		values[10].v.u64 = 7; // true
		values[11].v.i64 = -3;
		values[12].v.ptr = "hi\xff";
		values[12].len = TRACERY_VALUE_NUL_TERMINATED;
		values[13].v.ptr = pair;
		values[13].len = 2;
		values[14].v.ptr = reals;
		values[14].len = 2;
		values[15].v.ptr = bytes;
		values[15].len = 3;
	}
	void TearDown() override
	{
		if (attached) {
			EXPECT_EQ(tracery_probe_detach(&ev->desc, record_probe, &recorded), 0);
		}
	}
	void attach()
	{
		ASSERT_EQ(tracery_probe_attach(&ev->desc, record_probe, &recorded), 0);
		attached = true;
	}

	tracery_runtime_event *ev = nullptr;
	tracery_value values[16];
	const int16_t pair[2] = {-7, 7};
	const float reals[2] = {1.25f, -0.5f};
	const uint8_t bytes[3] = {1, 0, 255};
	Recorded recorded;
	bool attached = false;
};

TEST_F(Emit, EveryKindIsRecordedAsTheTraceEncodesIt)
{
	EXPECT_FALSE(tracery_event_enabled(ev));
	EXPECT_EQ(tracery_event_is_enabled(ev), 0);
	EXPECT_EQ(tracery_event_emit(ev, values, 16), 0);
	EXPECT_EQ(recorded.calls.load(), 0) << "nothing attached";
	attach();
	EXPECT_TRUE(tracery_event_enabled(ev));
	EXPECT_EQ(tracery_event_is_enabled(ev), 1);
	ASSERT_EQ(tracery_event_emit(ev, values, 16), 0) << tracery_last_error();
	ASSERT_EQ(recorded.calls.load(), 1);
	std::vector<uint8_t> want;
	put<uint8_t>(want, 200);
	put<uint16_t>(want, 60000);
	put<uint32_t>(want, 4000000000u);
	put<uint64_t>(want, UINT64_MAX);
	put<int8_t>(want, -100);
	put<int16_t>(want, -30000);
	put<int32_t>(want, INT32_MIN);
	put<int64_t>(want, INT64_MIN);
	put<float>(want, 0.1f);
	put<double>(want, -2.5);
	put<uint8_t>(want, 1);
	put<int16_t>(want, -3);
	want.insert(want.end(), {'h', 'i', '?', 0}); // invalid UTF-8 recorded as '?'
	put<int16_t>(want, -7);
	put<int16_t>(want, 7);
	put<uint32_t>(want, 2);
	put<float>(want, 1.25f);
	put<float>(want, -0.5f);
	put<uint32_t>(want, 3);
	want.insert(want.end(), {1, 0, 255});
	EXPECT_EQ(recorded.payload, want);
}

TEST_F(Emit, StringsByLengthNullAndEmpty)
{
	attach();
	values[12].v.ptr = "abc\0def";
	values[12].len = 7; // a NUL within len is recorded as '?'
	values[14].len = 0;
	values[15].v.ptr = nullptr;
	values[15].len = 0;
	ASSERT_EQ(tracery_event_emit(ev, values, 16), 0) << tracery_last_error();
	const size_t at = 1 + 2 + 4 + 8 + 1 + 2 + 4 + 8 + 4 + 8 + 1 + 2;
	ASSERT_GE(recorded.payload.size(), at + 8);
	EXPECT_EQ(std::string(reinterpret_cast<const char *>(&recorded.payload[at]), 8), std::string("abc?def\0", 8));
	EXPECT_EQ(recorded.payload.size(), at + 8 + 4 + 4 + 4) << "empty sequence and NULL blob: counts of 0";
	values[12].v.ptr = nullptr;
	values[12].len = 5;
	ASSERT_EQ(tracery_event_emit(ev, values, 16), 0);
	EXPECT_EQ(recorded.payload[at], 0) << "NULL records \"\"";
	EXPECT_EQ(recorded.payload.size(), at + 1 + 4 + 4 + 4);
}

TEST_F(Emit, BadValuesAreRefusedAndNothingIsRecorded)
{
	struct Case {
		int field;
		uint64_t value; // put in v.u64 (v.i64 for a signed field)
		int error;
		const char *reason;
	};
	const Case cases[] = {
		{0, 256, ERANGE, "emit_test:all: field 0 ('u8'): the integer does not fit the field's type"},
		{1, 65536, ERANGE, "field 1 ('u16'): the integer does not fit"},
		{2, uint64_t{1} << 32, ERANGE, "field 2 ('u32')"},
		{4, static_cast<uint64_t>(int64_t{-129}), ERANGE, "field 4 ('s8')"},
		{4, 128, ERANGE, "field 4 ('s8')"},
		{5, static_cast<uint64_t>(int64_t{-32769}), ERANGE, "field 5 ('s16')"},
		{6, uint64_t{1} << 31, ERANGE, "field 6 ('s32')"},
		{11, 40000, ERANGE, "field 11 ('e')"},
	};
	attach();
	for (const Case &c : cases) {
		SCOPED_TRACE(c.reason);
		tracery_value bad[16];
		memcpy(bad, values, sizeof bad);
		bad[c.field].v.u64 = c.value;
		EXPECT_EQ(tracery_event_emit(ev, bad, 16), -c.error);
		EXPECT_NE(std::string(tracery_last_error()).find(c.reason), std::string::npos) << tracery_last_error();
	}
	tracery_value bad[16];
	memcpy(bad, values, sizeof bad);
	bad[13].len = 3;
	EXPECT_EQ(tracery_event_emit(ev, bad, 16), -EINVAL);
	EXPECT_STREQ(tracery_last_error(),
	             "emit_test:all: field 13 ('a'): an array's value needs a pointer and len equal to its length");
	memcpy(bad, values, sizeof bad);
	bad[13].v.ptr = nullptr;
	EXPECT_EQ(tracery_event_emit(ev, bad, 16), -EINVAL);
	memcpy(bad, values, sizeof bad);
	bad[14].v.ptr = nullptr;
	EXPECT_EQ(tracery_event_emit(ev, bad, 16), -EINVAL);
	EXPECT_STREQ(tracery_last_error(), "emit_test:all: field 14 ('q'): a NULL pointer with a non-zero len");
	EXPECT_EQ(tracery_event_emit(ev, values, 15), -EINVAL);
	EXPECT_STREQ(tracery_last_error(), "emit_test:all: 15 values for 16 fields");
	EXPECT_EQ(tracery_event_emit(ev, nullptr, 16), -EINVAL);
	EXPECT_EQ(tracery_event_emit(nullptr, values, 16), -EINVAL);
	EXPECT_STREQ(tracery_last_error(), "tracery_event_emit: the event is NULL");
	EXPECT_EQ(recorded.calls.load(), 0);
	// Edges accepted: the extremes of each type, and any non-zero bool.
	values[4].v.i64 = -128;
	values[5].v.i64 = 32767;
	values[10].v.u64 = 256;
	EXPECT_EQ(tracery_event_emit(ev, values, 16), 0) << tracery_last_error();
	EXPECT_EQ(recorded.calls.load(), 1);
}

TEST_F(Emit, RecordsLargerThanTheMaximumAreRefused)
{
	attach();
	// Fixed part: 1+2+4+8+1+2+4+8+4+8+1+2 scalars, a NUL, 4 array bytes, two counts.
	const uint32_t fixed = 45 + 1 + 4 + 4 + 4;
	std::vector<uint8_t> big(TRACERY_EVENT_MAX_PAYLOAD + 2, 'x');
	values[12].v.ptr = nullptr;
	values[14].len = 0;
	values[15].v.ptr = big.data();
	values[15].len = TRACERY_EVENT_MAX_PAYLOAD - fixed;
	ASSERT_EQ(tracery_event_emit(ev, values, 16), 0) << tracery_last_error();
	EXPECT_EQ(recorded.payload.size(), size_t{TRACERY_EVENT_MAX_PAYLOAD}) << "exactly the maximum";
	values[15].len++;
	EXPECT_EQ(tracery_event_emit(ev, values, 16), -EMSGSIZE);
	EXPECT_STREQ(tracery_last_error(), "emit_test:all: its values take more than 65536 bytes");
	// A NUL-terminated string is measured only up to the bound.
	big.back() = 0;
	values[15].len = 0;
	values[12].v.ptr = big.data();
	values[12].len = TRACERY_VALUE_NUL_TERMINATED;
	EXPECT_EQ(tracery_event_emit(ev, values, 16), -EMSGSIZE);
	EXPECT_EQ(recorded.calls.load(), 1);
}

// The event's gate runs on the emitted values (the argument form, as for a
// compiled event with a string), before any probe.
int reject_u8_13(const tracery_arg *args, const void *) { return *static_cast<const uint8_t *>(args[0].ptr) != 13; }

std::atomic<int> gate_passed_calls{0};
void gate_passed_probe(void *, const tracery_event_desc *, const tracery_arg *) { gate_passed_calls++; }

TEST_F(Emit, TheGateFiltersOnRunTimeFields)
{
	ASSERT_EQ(tracery::ust::attach_probe(&ev->desc, record_probe, &recorded,
	                                     reinterpret_cast<tracery_gate_fn>(reject_u8_13), gate_passed_probe),
	          0);
	attached = true;
	ASSERT_NE(__atomic_load_n(&ev->desc.gate, __ATOMIC_ACQUIRE), nullptr);
	values[0].v.u64 = 13;
	EXPECT_EQ(tracery_event_emit(ev, values, 16), 0);
	EXPECT_EQ(gate_passed_calls.load(), 0);
	values[0].v.u64 = 12;
	EXPECT_EQ(tracery_event_emit(ev, values, 16), 0);
	EXPECT_EQ(gate_passed_calls.load(), 1) << "accepted by the gate: the probe's gate-passed entry";
	EXPECT_EQ(recorded.calls.load(), 0);
}

} // namespace
