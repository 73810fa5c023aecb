// control/codec_impl.hpp — the bodies of codec.hpp's encode() and decode(),
// included only where every message's pair is instantiated once
// (command_codecs.cpp, program_codecs.cpp) and by codec.cpp: a file that
// sends or reads messages links those instead of compiling the JSON
// conversions of each message again.
#pragma once

#include "control/codec.hpp"

namespace tracery::control {

namespace codec_detail {

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

// Compiles encode() and decode() of message M here (inside namespace
// tracery::control).
#define TRACERY_MESSAGE_CODEC(M)                   \
	template nlohmann::json encode(const M &); \
	template M decode(const nlohmann::json &);

} // namespace tracery::control
