// Event descriptions as they travel from a program to the daemon: a JSON
// schema of an event (provider, name, typed fields, enum labels), rebuilt on
// the daemon side into a tracery_event_desc so the CTF metadata writer can
// describe it. The key of a schema names one version of one event: two
// events of one name with different fields get different keys (and ids).
#pragma once

#include <tracery/internal/event_desc.h>

#include "event/json.hpp"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace tracery::event {

nlohmann::json schema_of(const tracery_event_desc &desc);
// "provider:name#<hash of the fields>".
std::string schema_key(const nlohmann::json &schema);
std::string full_name(const nlohmann::json &schema); // "provider:name"
// "name type, name type..." for listings.
std::string fields_summary(const nlohmann::json &schema);
// A schema received from a program, checked as OwnedEventDesc checks it
// (throws std::invalid_argument naming what is wrong) and rebuilt from the
// event it describes: only the keys schema_of() writes are left.
nlohmann::json checked_schema(const nlohmann::json &schema);

// A tracery_event_desc built from a schema, owning its strings and arrays.
class OwnedEventDesc {
public:
	// Throws std::invalid_argument naming what is wrong with the schema.
	explicit OwnedEventDesc(const nlohmann::json &schema);
	OwnedEventDesc(const OwnedEventDesc &) = delete;
	OwnedEventDesc &operator=(const OwnedEventDesc &) = delete;

	const tracery_event_desc &desc() const { return desc_; }

private:
	const char *keep(const std::string &s);

	std::deque<std::string> strings_;
	std::deque<std::vector<tracery_enum_entry>> entries_;
	std::deque<tracery_enum_desc> enums_;
	std::vector<tracery_field_desc> fields_;
	tracery_event_desc desc_{};
};

} // namespace tracery::event
