// control/codec.hpp — the one encoder and the one strict decoder of every
// message of the control protocol (messages.hpp), written once for all.
//
// A message is a plain struct that lists its fields once:
//
//   struct Start {
//           static constexpr Tag tag = command(cmd::kStart);
//           std::string session;
//           static constexpr auto kFields = std::tuple{field("session", &Start::session)};
//   };
//
// encode(const T &) makes its JSON body; decode<T>(body) reads one back and
// throws DecodeError, one line naming the message and the field, for a body
// that is not exactly a T: a field it does not know, a required field
// missing, a field of another JSON type (or a number out of its member's
// range). Members are bool, integers, std::string, nlohmann::json (kept as
// it came: event schemas), std::optional, std::vector, std::map keyed by
// string, and structs that list their own fields (nested, without a tag).
//
// Their bodies are in codec_impl.hpp, compiled once per message in
// command_codecs.cpp or program_codecs.cpp: a new message is listed there,
// else whatever sends or reads it fails to link.
#pragma once

#include "event/json.hpp"

#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace tracery::control {

// Keys that say what a message is.
inline constexpr char kCmdKey[] = "cmd";   // a command request: its Command
inline constexpr char kTypeKey[] = "type"; // a message between the daemon and a program: its type
inline constexpr char kOkKey[] = "ok";     // a reply to a command: true, or false with an error

struct DecodeError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// What names a message on the wire, and in the decoder's errors.
struct Tag {
	enum class Kind {
		command, // "cmd": name
		program, // "type": name
		reply,   // "ok": true, the reply to the command `name`
		refusal, // "ok": false, with the error
	};
	Kind kind;
	const char *name;
};
constexpr Tag command(const char *cmd) { return {Tag::Kind::command, cmd}; }
constexpr Tag program_message(const char *type) { return {Tag::Kind::program, type}; }
constexpr Tag reply_to(const char *cmd) { return {Tag::Kind::reply, cmd}; }
constexpr Tag refusal() { return {Tag::Kind::refusal, "error"}; }

// How a field is present in a body.
enum class Presence {
	required, // always there (a std::optional member: null when empty)
	optional, // a std::optional member: missing when empty
};

template <class T, class M>
struct Field {
	const char *key;
	M T::*member;
	Presence presence;
};

template <class T, class M>
constexpr Field<T, M> field(const char *key, M T::*member)
{
	return {key, member, Presence::required};
}
template <class T, class M>
constexpr Field<T, std::optional<M>> optional_field(const char *key, std::optional<M> T::*member)
{
	return {key, member, Presence::optional};
}

namespace codec_detail {

using nlohmann::json;

template <class T>
concept Record = requires
{
	T::kFields;
};
template <class T>
concept Message = Record<T> && requires
{
	{
		T::tag
		} -> std::convertible_to<Tag>;
};

inline const char *tag_key(Tag tag)
{
	switch (tag.kind) {
	case Tag::Kind::command:
		return kCmdKey;
	case Tag::Kind::program:
		return kTypeKey;
	default:
		return kOkKey;
	}
}

inline json tag_value(Tag tag)
{
	switch (tag.kind) {
	case Tag::Kind::command:
	case Tag::Kind::program:
		return tag.name;
	case Tag::Kind::reply:
		return true;
	default:
		return false;
	}
}

} // namespace codec_detail

// The body of a message.
template <codec_detail::Message T>
nlohmann::json encode(const T &message);

// A message read from its body; throws DecodeError (see above).
template <codec_detail::Message T>
T decode(const nlohmann::json &body);

// Whether a body is of this message: its tag is there (its fields may still
// be wrong: decode says).
template <codec_detail::Message T>
bool is(const nlohmann::json &body)
{
	const auto it = body.find(codec_detail::tag_key(T::tag));
	return it != body.end() && *it == codec_detail::tag_value(T::tag);
}

} // namespace tracery::control
