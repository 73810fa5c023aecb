// Event schemas: see schema.hpp.
#include "event/schema.hpp"

#include "event/payload.hpp"

#include <stdexcept>

namespace tracery::event {

using nlohmann::json;

namespace {

constexpr const char *kTypeNames[] = {"u8",    "u16",    "u32",  "u64",  "s8",     "s16",   "s32",      "s64",
                                      "float", "double", "bool", "enum", "string", "array", "sequence", "blob"};
constexpr int kNumTypes = sizeof kTypeNames / sizeof kTypeNames[0];

const char *type_name(uint8_t t) { return t < kNumTypes ? kTypeNames[t] : "?"; }

uint8_t type_code(const json &j, const char *what)
{
	if (j.is_string())
		for (int i = 0; i < kNumTypes; i++)
			if (j.get<std::string>() == kTypeNames[i])
				return static_cast<uint8_t>(i);
	throw std::invalid_argument(std::string("bad ") + what + " type " + j.dump());
}

bool has_elem(uint8_t t) { return t == TRACERY_TYPE_ENUM || t == TRACERY_TYPE_ARRAY || t == TRACERY_TYPE_SEQUENCE; }

uint64_t fnv1a(const std::string &s)
{
	uint64_t h = 1469598103934665603ull;
	for (unsigned char c : s) {
		h ^= c;
		h *= 1099511628211ull;
	}
	return h;
}

} // namespace

json schema_of(const tracery_event_desc &d)
{
	json fields = json::array();
	for (uint32_t i = 0; i < d.nr_fields; i++) {
		const tracery_field_desc &f = d.fields[i];
		json jf = {{"name", f.name ? f.name : ""}, {"type", type_name(f.type)}};
		if (has_elem(f.type))
			jf["elem"] = type_name(f.elem_type);
		if (is_hex_field(f))
			jf["hex"] = true;
		if (f.type == TRACERY_TYPE_ARRAY)
			jf["length"] = f.length;
		if (f.type == TRACERY_TYPE_ENUM && f.enum_desc) {
			json entries = json::array();
			for (uint32_t e = 0; e < f.enum_desc->nr_entries; e++) {
				const auto &en = f.enum_desc->entries[e];
				entries.push_back(json::array({en.label ? en.label : "", en.start, en.end}));
			}
			jf["enum"] = {{"name", f.enum_desc->name ? f.enum_desc->name : ""}, {"entries", entries}};
		}
		fields.push_back(std::move(jf));
	}
	return {{"provider", d.provider ? d.provider : ""}, {"name", d.name ? d.name : ""}, {"fields", fields}};
}

std::string full_name(const json &schema) { return schema.value("provider", "") + ":" + schema.value("name", ""); }

std::string schema_key(const json &schema)
{
	char hash[17];
	snprintf(hash, sizeof hash, "%016llx",
	         static_cast<unsigned long long>(fnv1a(schema.value("fields", json::array()).dump())));
	return full_name(schema) + "#" + hash;
}

std::string fields_summary(const json &schema)
{
	std::string out;
	for (const auto &f : schema.value("fields", json::array())) {
		if (!out.empty())
			out += ", ";
		out += f.value("name", "") + " " + f.value("type", "");
		if (f.contains("elem"))
			out += '<' + f.value("elem", "") + ">";
		if (f.contains("hex") && f["hex"] == true)
			out += " hex";
	}
	return out;
}

json checked_schema(const json &schema)
{
	const OwnedEventDesc desc(schema);
	return schema_of(desc.desc());
}

const char *OwnedEventDesc::keep(const std::string &s) { return strings_.emplace_back(s).c_str(); }

OwnedEventDesc::OwnedEventDesc(const json &schema)
{
	if (!schema.is_object() || !schema.contains("provider") || !schema["provider"].is_string() ||
	    !schema.contains("name") || !schema["name"].is_string() || !schema.contains("fields") ||
	    !schema["fields"].is_array())
		throw std::invalid_argument("event schema needs provider, name and fields");
	if (schema["fields"].size() > 16)
		throw std::invalid_argument("more than 16 fields");
	for (const auto &f : schema["fields"]) {
		if (!f.is_object() || !f.contains("name") || !f["name"].is_string() || !f.contains("type"))
			throw std::invalid_argument("field needs a name and a type");
		tracery_field_desc fd{};
		fd.name = keep(f["name"].get<std::string>());
		fd.type = type_code(f["type"], "field");
		if (has_elem(fd.type))
			fd.elem_type = type_code(f.value("elem", json()), "element");
		if (f.contains("hex")) {
			if (!f["hex"].is_boolean() || (f["hex"].get<bool>() && !is_integer_type(fd.type)))
				throw std::invalid_argument(
					"\"hex\" is true or false, and true only for an integer field");
			if (f["hex"].get<bool>())
				fd.elem_type = TRACERY_FIELD_HEX;
		}
		if (fd.type == TRACERY_TYPE_ARRAY)
			fd.length = f.value("length", 0u);
		if (fd.type == TRACERY_TYPE_ENUM) {
			const json &e = f.value("enum", json::object());
			auto &entries = entries_.emplace_back();
			for (const auto &en : e.value("entries", json::array())) {
				if (!en.is_array() || en.size() != 3 || !en[0].is_string() ||
				    !en[1].is_number_integer() || !en[2].is_number_integer())
					throw std::invalid_argument("bad enum entry " + en.dump());
				entries.push_back(
					{keep(en[0].get<std::string>()), en[1].get<int64_t>(), en[2].get<int64_t>()});
			}
			enums_.push_back(
				{keep(e.value("name", "")), entries.data(), static_cast<uint32_t>(entries.size())});
			fd.enum_desc = &enums_.back();
		}
		fields_.push_back(fd);
	}
	desc_.provider = keep(schema["provider"].get<std::string>());
	desc_.name = keep(schema["name"].get<std::string>());
	desc_.fields = fields_.data();
	desc_.nr_fields = static_cast<uint32_t>(fields_.size());
	if (const char *why = event::event_desc_error(desc_))
		throw std::invalid_argument(why);
}

} // namespace tracery::event
