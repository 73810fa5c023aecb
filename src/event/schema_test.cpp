// Unit tests of event schemas (schema.hpp): a descriptor round-trips through
// its JSON schema, versions of one event get different keys, and malformed
// schemas are refused.
#include "event/schema.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tracery::event {
namespace {

const tracery_enum_entry kColorEntries[] = {{"red", 0, 0}, {"many", 2, 200}};
const tracery_enum_desc test_color = {"test_color", kColorEntries, 2};
const tracery_field_desc kFields[] = {
	{"id", TRACERY_TYPE_U64, 0, 0, nullptr},
	{"path", TRACERY_TYPE_STRING, 0, 0, nullptr},
	{"arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_S16, 3, nullptr},
	{"seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U32, 0, nullptr},
	{"c", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8, 0, &test_color},
};
tracery_event_desc kDesc = {"app", "req", kFields, 5, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

TEST(EventSchema, RoundTripsThroughJson)
{
	const nlohmann::json schema = schema_of(kDesc);
	OwnedEventDesc owned(nlohmann::json::parse(schema.dump()));
	EXPECT_EQ(schema_of(owned.desc()), schema);
	EXPECT_EQ(full_name(schema), "app:req");
	EXPECT_EQ(fields_summary(schema), "id u64, path string, arr array<s16>, seq sequence<u32>, c enum<u8>");
	EXPECT_STREQ(owned.desc().fields[4].enum_desc->entries[1].label, "many");
	EXPECT_EQ(owned.desc().fields[4].enum_desc->entries[1].end, 200);
}

TEST(EventSchema, KeyTellsVersionsApart)
{
	nlohmann::json a = schema_of(kDesc), b = a;
	b["fields"][0]["type"] = "u32";
	EXPECT_NE(schema_key(a), schema_key(b));
	EXPECT_EQ(schema_key(a).rfind("app:req#", 0), 0u);
}

TEST(EventSchema, RejectsBadSchemas)
{
	nlohmann::json s = schema_of(kDesc);
	s["fields"][0]["type"] = "u128";
	EXPECT_THROW(OwnedEventDesc{s}, std::invalid_argument);
	EXPECT_THROW(OwnedEventDesc{nlohmann::json::object()}, std::invalid_argument);
	nlohmann::json many = schema_of(kDesc);
	for (int i = 0; i < 20; i++)
		many["fields"].push_back({{"name", 'f' + std::to_string(i)}, {"type", "u8"}});
	EXPECT_THROW(OwnedEventDesc{many}, std::invalid_argument);
}

// An integer shown in hex crosses as "hex": true, comes back as
// TRACERY_FIELD_HEX and makes another version of the event; a schema without
// the key (an older program's) is decimal; the key is refused on anything
// but an integer, or when it is no boolean.
TEST(EventSchema, HexFieldsCrossAndAreChecked)
{
	const tracery_field_desc fields[] = {
		{"ptr", TRACERY_TYPE_U64, TRACERY_FIELD_HEX, 0, nullptr},
		{"flags", TRACERY_TYPE_S32, TRACERY_FIELD_HEX, 0, nullptr},
		{"size", TRACERY_TYPE_U64, 0, 0, nullptr},
	};
	const tracery_event_desc desc = {"app", "alloc", fields, 3, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
	const nlohmann::json schema = schema_of(desc);
	EXPECT_EQ(schema["fields"][0]["hex"], true);
	EXPECT_FALSE(schema["fields"][2].contains("hex"));
	EXPECT_EQ(fields_summary(schema), "ptr u64 hex, flags s32 hex, size u64");
	OwnedEventDesc owned(nlohmann::json::parse(schema.dump()));
	EXPECT_EQ(owned.desc().fields[0].elem_type, TRACERY_FIELD_HEX);
	EXPECT_EQ(owned.desc().fields[1].elem_type, TRACERY_FIELD_HEX);
	EXPECT_EQ(owned.desc().fields[2].elem_type, 0);
	EXPECT_EQ(schema_of(owned.desc()), schema);

	nlohmann::json older = schema;
	older["fields"][0].erase("hex");
	older["fields"][1]["hex"] = false;
	EXPECT_NE(schema_key(older), schema_key(schema));
	EXPECT_EQ(OwnedEventDesc(older).desc().fields[0].elem_type, 0);
	EXPECT_EQ(checked_schema(older)["fields"][1].contains("hex"), false);

	for (const nlohmann::json &bad : {nlohmann::json{{"name", "d"}, {"type", "double"}, {"hex", true}},
	                                  nlohmann::json{{"name", "s"}, {"type", "string"}, {"hex", true}},
	                                  nlohmann::json{{"name", "x"}, {"type", "u32"}, {"hex", 1}}}) {
		nlohmann::json s = schema;
		s["fields"].push_back(bad);
		EXPECT_THROW(OwnedEventDesc{s}, std::invalid_argument) << bad.dump();
	}
}

} // namespace
} // namespace tracery::event
