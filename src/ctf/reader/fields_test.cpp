// ctf/reader/fields_test.cpp — the field API over decoded values: shown
// names, kinds, members, elements and options of declarations and values,
// enumeration labels, fields found by name in the scopes' order, and the
// value index of those after a field of variable size.
#include "ctf/reader/fields.hpp"
#include "ctf/reader/test_bytes.hpp"
#include "ctf/reader/tsdl_parser.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace tracery::ctf::reader {
namespace {

const char *kMetadata = R"(
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
trace { major = 1; minor = 8; byte_order = le; };
stream {
	id = 0;
	packet.context := struct { uint32_t cpu_id; uint32_t tid; };
	event.context := struct { int32_t _vtid; };
};
event {
	name = "e"; id = 0; stream_id = 0;
	context := struct { uint8_t level; };
	fields := struct {
		uint8_t n;
		uint32_t seq[n];
		string _comm;
		enum : uint8_t { A = 1, B = 1 ... 2, C = 7 } state;
		variant <state> { uint8_t A; string B; uint32_t C; } v;
		struct { uint8_t x; int32_t y; } pair;
		int32_t tid;
		integer { size = 8; align = 8; signed = false; encoding = UTF8; } text[4];
		integer { size = 8; align = 8; signed = false; base = 16; } hex[2];
		floating_point { exp_dig = 11; mant_dig = 53; align = 8; } ratio;
	};
};
)";

struct Decoded {
	TraceClass tc;
	std::unique_ptr<TracePlans> plans;
	const TracePlans::StreamPlans *stream = nullptr;
	const TracePlans::EventPlans *event = nullptr;
	std::vector<uint8_t> bytes; // strings point into them
	std::vector<Value> values;  // the payload's
};

Decoded decode_payload()
{
	Decoded d;
	d.tc = parse_tsdl(kMetadata);
	d.plans = std::make_unique<TracePlans>(d.tc);
	d.stream = d.plans->stream(0);
	d.event = d.stream->event(0);
	TestBytes b;
	b.put<uint8_t>(2).put<uint32_t>(10).put<uint32_t>(20).str("ls").put<uint8_t>(2).str("opt");
	b.put<uint8_t>(5).put<int32_t>(-6).put<int32_t>(77).raw(std::string("ab\0z", 4));
	b.put<uint8_t>(0xab).put<uint8_t>(0x01).put<double>(0.5);
	d.bytes = b.b;
	DecodeState st;
	st.regs.assign(d.plans->registers(), 0);
	run_plan(d.event->fields, d.bytes.data(), 0, d.bytes.size() * 8, st, &d.values);
	return d;
}

TEST(Fields, ShownNamesDropOneLeadingUnderscore)
{
	EXPECT_EQ(shown_name("_comm"), "comm");
	EXPECT_EQ(shown_name("__x"), "_x");
	EXPECT_EQ(shown_name("x"), "x");
	EXPECT_EQ(shown_name(""), "");
}

TEST(Fields, DeclarationsSayWhatEachMemberIs)
{
	const Decoded d = decode_payload();
	const FieldDecl root = scope_root(*d.stream, d.event, Scope::payload);
	ASSERT_TRUE(root);
	EXPECT_EQ(root.kind(), FieldKind::structure);
	std::vector<std::string> names;
	std::vector<FieldKind> kinds;
	for (const FieldDecl m : root.members()) {
		names.emplace_back(m.name());
		kinds.push_back(m.kind());
	}
	EXPECT_EQ(names,
	          (std::vector<std::string>{"n", "seq", "comm", "state", "v", "pair", "tid", "text", "hex", "ratio"}));
	EXPECT_EQ(kinds,
	          (std::vector<FieldKind>{FieldKind::integer, FieldKind::array, FieldKind::string, FieldKind::integer,
	                                  FieldKind::variant, FieldKind::structure, FieldKind::integer,
	                                  FieldKind::string, FieldKind::array, FieldKind::floating}));
	EXPECT_EQ(*root.member("comm").metadata_name(), "_comm");
	EXPECT_EQ(root.member("_comm"), root.member("comm")); // the name as written works too
	EXPECT_FALSE(root.member("nothing"));
	EXPECT_TRUE(root.member("n").is_plain_unsigned());
	EXPECT_FALSE(root.member("state").is_plain_unsigned()); // an enumeration
	EXPECT_TRUE(root.member("state").is_enumeration());
	EXPECT_TRUE(root.member("tid").is_signed());
	EXPECT_EQ(root.member("tid").bits(), 32u);
	EXPECT_EQ(root.member("hex").element().base(), Base::hex);
	EXPECT_EQ(root.member("hex").fixed_length(), 2u);
	EXPECT_EQ(root.member("seq").fixed_length(), std::nullopt);
	EXPECT_EQ(root.member("seq").value_count(), 0u); // depends on the event
	EXPECT_EQ(root.member("pair").value_count(), 3u);
	EXPECT_EQ(root.member("pair").member_count(), 2u);
	EXPECT_EQ(root.member("v").option_count(), 3u);
	EXPECT_EQ(root.member("v").option(1).name(), "B");
	EXPECT_EQ(root.member("v").option(1).kind(), FieldKind::string);
	EXPECT_TRUE(scope_root(*d.stream, nullptr, Scope::stream_event_context));
	EXPECT_FALSE(scope_root(*d.stream, nullptr, Scope::payload)); // no event class given
}

TEST(Fields, ValuesWalkMembersElementsAndOptions)
{
	const Decoded d = decode_payload();
	const Field root(scope_root(*d.stream, d.event, Scope::payload), d.values.data(), 0);
	EXPECT_EQ(root.end(), d.values.size());
	std::vector<Field> m;
	for (const Field f : root.members())
		m.push_back(f);
	ASSERT_EQ(m.size(), 10u);
	EXPECT_EQ(m[0].as_unsigned(), 2u);
	ASSERT_EQ(m[1].length(), 2u);
	std::vector<uint64_t> seq;
	for (const Field e : m[1].elements())
		seq.push_back(e.as_unsigned());
	EXPECT_EQ(seq, (std::vector<uint64_t>{10, 20}));
	EXPECT_EQ(m[2].text(), "ls");
	std::vector<std::string> labels;
	m[3].for_each_label([&](const std::string &l) { labels.push_back(l); });
	EXPECT_EQ(labels, (std::vector<std::string>{"B"}));
	EXPECT_EQ(m[4].option_index(), 1u);
	EXPECT_EQ(m[4].option().name(), "B");
	EXPECT_EQ(m[4].option().text(), "opt");
	std::vector<int64_t> pair;
	for (const Field f : m[5].members())
		pair.push_back(f.as_signed());
	EXPECT_EQ(pair, (std::vector<int64_t>{5, -6}));
	EXPECT_EQ(m[6].as_signed(), 77);
	EXPECT_EQ(m[7].text(), "ab"); // up to the NUL
	std::vector<uint64_t> hex;
	for (const Field e : m[8].elements())
		hex.push_back(e.as_unsigned());
	EXPECT_EQ(hex, (std::vector<uint64_t>{0xab, 0x01}));
	EXPECT_EQ(m[9].as_double(), 0.5);
	EXPECT_EQ(m[9].end(), d.values.size());
}

TEST(Fields, FoundByNameInTheScopesOrder)
{
	const Decoded d = decode_payload();
	// the payload first, then the event's context, the stream's, the packet's
	const FieldRef tid = find_field(*d.stream, *d.event, "tid");
	EXPECT_EQ(tid.scope, Scope::payload);
	EXPECT_TRUE(tid.integer);
	EXPECT_EQ(tid.index, -1); // after the sequence: found by walking
	const FieldRef ctx_tid = find_context_field(*d.stream, *d.event, "tid");
	EXPECT_EQ(ctx_tid.scope, Scope::packet_context);
	EXPECT_EQ(ctx_tid.index, 2);
	EXPECT_EQ(find_field(*d.stream, *d.event, "vtid").scope, Scope::stream_event_context);
	EXPECT_EQ(find_field(*d.stream, *d.event, "level").scope, Scope::event_context);
	EXPECT_FALSE(find_field(*d.stream, *d.event, "_vtid")); // shown names only
	EXPECT_FALSE(find_field(*d.stream, *d.event, "missing"));
	const FieldRef n = find_field(*d.stream, *d.event, "n");
	EXPECT_EQ(n.index, 1);
	const FieldRef comm = find_field(*d.stream, *d.event, "comm");
	EXPECT_FALSE(comm.integer);
	EXPECT_EQ(comm.index, -1); // after the sequence too
}

} // namespace
} // namespace tracery::ctf::reader
