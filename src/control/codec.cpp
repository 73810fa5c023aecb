// The decoder's errors: see codec.hpp.
#include "control/codec_impl.hpp"

namespace tracery::control::codec_detail {

std::string path_text(const Path *path)
{
	if (!path)
		return "";
	std::string out = path_text(path->parent);
	if (path->key.empty())
		return out + "[" + std::to_string(path->index) + "]";
	return out + (out.empty() ? "" : ".") + std::string(path->key);
}

void fail(const char *message, const std::string &what) { throw DecodeError(std::string(message) + ": " + what); }

void wrong_type(const char *message, const Path *path, const json &value, const std::string &expected)
{
	std::string got;
	switch (value.type()) {
	case json::value_t::null:
		got = "null";
		break;
	case json::value_t::boolean:
		got = value.get<bool>() ? "true" : "false";
		break;
	case json::value_t::string:
		got = "a string";
		break;
	case json::value_t::array:
		got = "an array";
		break;
	case json::value_t::object:
		got = "an object";
		break;
	default: // a number: shown
		got = value.dump();
	}
	fail(message, (path ? "field '" + path_text(path) + "' is " : "the body is ") + got + ", expected " + expected);
}

std::string range_text(long long min, unsigned long long max)
{
	return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

std::string message_name(Tag tag)
{
	switch (tag.kind) {
	case Tag::Kind::reply:
		return std::string(tag.name) + " reply";
	case Tag::Kind::refusal:
		return "error reply";
	default:
		return tag.name;
	}
}

} // namespace tracery::control::codec_detail
