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
#pragma once

#include <nlohmann/json.hpp>

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

template <class T>
struct Optional : std::false_type {
};
template <class V>
struct Optional<std::optional<V>> : std::true_type {
};
template <class T>
struct Vector : std::false_type {
};
template <class V>
struct Vector<std::vector<V>> : std::true_type {
};
template <class T>
struct StringMap : std::false_type {
};
template <class V>
struct StringMap<std::map<std::string, V>> : std::true_type {
};

// Where the decoder is, for its errors: "channels[2].name". Built only when
// one is thrown.
struct Path {
	const Path *parent = nullptr;
	std::string_view key; // a field's or a map entry's; empty: an element
	size_t index = 0;
};

std::string path_text(const Path *path);
[[noreturn]] void fail(const char *message, const std::string &what);
[[noreturn]] void wrong_type(const char *message, const Path *path, const json &value, const std::string &expected);
std::string range_text(long long min, unsigned long long max);

template <class V>
void read(const char *message, const Path *path, const json &j, V &out);

template <class Obj, class T, class M>
void read_field(const char *message, const Path *path, const json &j, Obj &out, const Field<T, M> &f, size_t &known)
{
	const Path here{path, f.key};
	const auto it = j.find(f.key);
	if (it == j.end()) {
		if (f.presence == Presence::required)
			fail(message, "missing field '" + path_text(&here) + "'");
		return;
	}
	known++;
	read(message, &here, *it, out.*(f.member));
}

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

// The key of `j` that no field names, once their count says there is one.
template <class T>
[[noreturn]] void unknown_field(const char *message, const Path *path, const json &j)
{
	for (const auto &item : j.items()) {
		const std::string &key =
			item.key(); // (not a structured binding: clang 14 does not let a lambda capture one)
		bool named = false;
		std::apply([&](const auto &...f) { ((named = named || key == f.key), ...); }, T::kFields);
		if constexpr (Message<T>)
			named = named || key == tag_key(T::tag);
		const Path here{path, key};
		if (!named)
			fail(message, "unknown field '" + path_text(&here) + "'");
	}
	fail(message, "unknown field"); // not reached: a key is left over
}

template <class V>
void read(const char *message, const Path *path, const json &j, V &out)
{
	if constexpr (std::is_same_v<V, json>) {
		out = j;
	} else if constexpr (std::is_same_v<V, bool>) {
		if (!j.is_boolean())
			wrong_type(message, path, j, "true or false");
		out = j.get<bool>();
	} else if constexpr (std::is_integral_v<V>) {
		using L = std::numeric_limits<V>;
		bool fits = j.is_number_unsigned() && j.get<uint64_t>() <= static_cast<uint64_t>(L::max());
		if constexpr (std::is_signed_v<V>)
			fits = fits || (j.is_number_integer() && !j.is_number_unsigned() &&
			                j.get<int64_t>() >= static_cast<int64_t>(L::min()));
		if (!fits)
			wrong_type(message, path, j,
			           range_text(static_cast<long long>(L::min()),
			                      static_cast<unsigned long long>(L::max())));
		out = j.get<V>();
	} else if constexpr (std::is_same_v<V, std::string>) {
		if (!j.is_string())
			wrong_type(message, path, j, "a string");
		out = j.get_ref<const std::string &>();
	} else if constexpr (Optional<V>::value) {
		if (j.is_null()) {
			out.reset();
		} else {
			out.emplace();
			read(message, path, j, *out);
		}
	} else if constexpr (Vector<V>::value) {
		if (!j.is_array())
			wrong_type(message, path, j, "an array");
		out.clear();
		out.resize(j.size());
		for (size_t i = 0; i < j.size(); i++) {
			const Path here{path, {}, i};
			read(message, &here, j[i], out[i]);
		}
	} else if constexpr (StringMap<V>::value) {
		if (!j.is_object())
			wrong_type(message, path, j, "an object");
		out.clear();
		for (const auto &[key, value] : j.items()) {
			const Path here{path, key};
			read(message, &here, value, out[key]);
		}
	} else {
		static_assert(Record<V>, "a message's member of a type the codec does not know");
		if (!j.is_object())
			wrong_type(message, path, j, "an object");
		size_t known = 0;
		if constexpr (Message<V>) {
			const auto it = j.find(tag_key(V::tag));
			if (it == j.end() || *it != tag_value(V::tag))
				fail(message,
				     std::string("field '") + tag_key(V::tag) + "' is not " + tag_value(V::tag).dump());
			known++;
		}
		std::apply([&](const auto &...f) { (read_field(message, path, j, out, f, known), ...); }, V::kFields);
		if (known != j.size())
			unknown_field<V>(message, path, j);
	}
}

template <class V>
json write(const V &v);

template <class Obj, class T, class M>
void write_field(json &out, const Obj &v, const Field<T, M> &f)
{
	if constexpr (Optional<M>::value)
		if (f.presence == Presence::optional && !(v.*(f.member)))
			return;
	out[f.key] = write(v.*(f.member));
}

template <class V>
json write(const V &v)
{
	if constexpr (Optional<V>::value) {
		return v ? write(*v) : json();
	} else if constexpr (Vector<V>::value) {
		json out = json::array();
		for (const auto &e : v)
			out.push_back(write(e));
		return out;
	} else if constexpr (StringMap<V>::value) {
		json out = json::object();
		for (const auto &[key, e] : v)
			out[key] = write(e);
		return out;
	} else if constexpr (Record<V>) {
		json out = json::object();
		if constexpr (Message<V>)
			out[tag_key(V::tag)] = tag_value(V::tag);
		std::apply([&](const auto &...f) { (write_field(out, v, f), ...); }, V::kFields);
		return out;
	} else {
		return json(v);
	}
}

// "create", "create reply", "error reply".
std::string message_name(Tag tag);

} // namespace codec_detail

// The body of a message.
template <codec_detail::Message T>
nlohmann::json encode(const T &message)
{
	return codec_detail::write(message);
}

// A message read from its body; throws DecodeError (see above).
template <codec_detail::Message T>
T decode(const nlohmann::json &body)
{
	static const std::string name = codec_detail::message_name(T::tag);
	T out;
	codec_detail::read(name.c_str(), nullptr, body, out);
	return out;
}

// Whether a body is of this message: its tag is there (its fields may still
// be wrong: decode says).
template <codec_detail::Message T>
bool is(const nlohmann::json &body)
{
	const auto it = body.find(codec_detail::tag_key(T::tag));
	return it != body.end() && *it == codec_detail::tag_value(T::tag);
}

} // namespace tracery::control
