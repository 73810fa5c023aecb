// tracery/tracepoint.hpp — the C++ instrumentation API.
//
// Fields are declared with their C++ types; the schema is built at compile
// time from those types:
//
//     enum class Op : uint8_t { read, write };
//     TRACERY_CXX_ENUM(Op, {"read", 0, 0}, {"write", 1, 1});
//
//     TRACERY_CXX_EVENT(db, query,
//         (id, uint64_t), (table, std::string_view), (op, Op),
//         (keys, std::span<const int32_t>), (key_bytes, tracery::blob))
//
//     TRACERY_CXX_EMIT(db, query, 42, "users", Op::read, keys, {buf, len});
//
// Supported types: bool, 8/16/32/64-bit signed and unsigned integers (shown
// in hex, as addresses, when declared as tracery::hex<Int>), float,
// double, enumerations labelled with TRACERY_CXX_ENUM, std::string_view (also
// takes const char * and std::string; stops at an embedded NUL),
// std::array<Int, N> (fixed array), std::span<const Int> (sequence) and
// tracery::blob (bytes). No TRACERY_CREATE_EVENTS define is needed in C++.
// While the event is disabled, TRACERY_CXX_EMIT costs one byte load and one
// branch predicted not taken, and does not evaluate its arguments.
#pragma once

// Checked first, so that an older standard gets this message instead of
// errors from inside the header (concepts and std::span need C++20).
#if !defined(__cplusplus)
#error "tracery/tracepoint.hpp is the C++ API: C code includes tracery/tracepoint.h"
#elif __cplusplus < 202002L
#error "tracery/tracepoint.hpp needs C++20: compile with -std=c++20 (CMake: target_compile_features(<target> PRIVATE cxx_std_20))"
#else

#include <tracery/tracepoint.h>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace tracery {

// Raw bytes recorded as a blob field.
struct blob {
	const void *data;
	uint32_t size;
};

// A field of integer type T that readers show in base 16, as an address
// (TRACERY_HEX in tracepoint.h): (ptr, tracery::hex<uintptr_t>). It is
// emitted as a T.
template <class T>
struct hex;

// Specialised by TRACERY_CXX_ENUM for each labelled enumeration.
template <class E>
struct enum_labels;

namespace detail {

template <class T>
constexpr uint8_t integer_type()
{
	static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
	constexpr bool s = std::is_signed_v<T>;
	// clang-format off
	switch (sizeof(T)) {
	case 1: return s ? TRACERY_TYPE_S8 : TRACERY_TYPE_U8;
	case 2: return s ? TRACERY_TYPE_S16 : TRACERY_TYPE_U16;
	case 4: return s ? TRACERY_TYPE_S32 : TRACERY_TYPE_U32;
	default: return s ? TRACERY_TYPE_S64 : TRACERY_TYPE_U64;
	}
	// clang-format on
}

template <class T>
concept Integer = std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) <= 8;

template <class T>
// clang-format off
concept LabelledEnum = std::is_enum_v<T> && requires { enum_labels<T>::desc; };
// clang-format on

} // namespace detail

// field<T>: the descriptor of a field of type T, and how a value becomes an
// argument of tracery_fire().
template <class T>
struct field;

// Every field<T> says whether it is a scalar: an event of scalars alone
// passes its values to its gate as parameters (TRACERY_GATE_PARAMS).
template <detail::Integer T>
struct field<T> {
	static constexpr bool scalar = true;
	using param = T;
	static constexpr tracery_field_desc desc(const char *name)
	{
		return {name, detail::integer_type<T>(), 0, 0, nullptr};
	}
	static tracery_arg arg(const T &v) { return {&v, 0}; }
};

template <detail::Integer T>
struct field<hex<T>> : field<T> {
	static constexpr tracery_field_desc desc(const char *name)
	{
		return {name, detail::integer_type<T>(), TRACERY_FIELD_HEX, 0, nullptr};
	}
};

template <>
struct field<bool> {
	static constexpr bool scalar = true;
	using param = bool;
	static constexpr tracery_field_desc desc(const char *name) { return {name, TRACERY_TYPE_BOOL, 0, 0, nullptr}; }
	static tracery_arg arg(const bool &v) { return {&v, 0}; }
};

template <>
struct field<float> {
	static constexpr bool scalar = true;
	using param = float;
	static constexpr tracery_field_desc desc(const char *name) { return {name, TRACERY_TYPE_FLOAT, 0, 0, nullptr}; }
	static tracery_arg arg(const float &v) { return {&v, 0}; }
};

template <>
struct field<double> {
	static constexpr bool scalar = true;
	using param = double;
	static constexpr tracery_field_desc desc(const char *name)
	{
		return {name, TRACERY_TYPE_DOUBLE, 0, 0, nullptr};
	}
	static tracery_arg arg(const double &v) { return {&v, 0}; }
};

template <detail::LabelledEnum E>
struct field<E> {
	static constexpr bool scalar = true;
	using param = E;
	using U = std::underlying_type_t<E>;
	static constexpr tracery_field_desc desc(const char *name)
	{
		return {name, TRACERY_TYPE_ENUM, detail::integer_type<U>(), 0, &enum_labels<E>::desc};
	}
	// The enumerator's storage has the layout of its underlying type.
	static tracery_arg arg(const E &v) { return {&v, 0}; }
};

template <>
struct field<std::string_view> {
	static constexpr bool scalar = false;
	using param = std::string_view;
	static constexpr tracery_field_desc desc(const char *name)
	{
		return {name, TRACERY_TYPE_STRING, 0, 0, nullptr};
	}
	static tracery_arg arg(const std::string_view &v)
	{
		const std::size_t n = v.size() > UINT32_MAX ? UINT32_MAX : v.size();
		const void *nul = n ? std::memchr(v.data(), 0, n) : nullptr; // the text ends at an embedded NUL
		return {v.data(), static_cast<uint32_t>(nul ? static_cast<const char *>(nul) - v.data() : n)};
	}
};

template <detail::Integer T, std::size_t N>
struct field<std::array<T, N>> {
	static constexpr bool scalar = false;
	using param = const std::array<T, N> &;
	static constexpr tracery_field_desc desc(const char *name)
	{
		return {name, TRACERY_TYPE_ARRAY, detail::integer_type<T>(), static_cast<uint32_t>(N), nullptr};
	}
	static tracery_arg arg(const std::array<T, N> &v) { return {v.data(), static_cast<uint32_t>(N)}; }
};

template <detail::Integer T>
struct field<std::span<const T>> {
	static constexpr bool scalar = false;
	using param = std::span<const T>;
	static constexpr tracery_field_desc desc(const char *name)
	{
		return {name, TRACERY_TYPE_SEQUENCE, detail::integer_type<T>(), 0, nullptr};
	}
	static tracery_arg arg(const std::span<const T> &v)
	{
		return {v.data(), static_cast<uint32_t>(v.size() > UINT32_MAX ? UINT32_MAX : v.size())};
	}
};

template <>
struct field<blob> {
	static constexpr bool scalar = false;
	using param = blob;
	static constexpr tracery_field_desc desc(const char *name) { return {name, TRACERY_TYPE_BLOB, 0, 0, nullptr}; }
	static tracery_arg arg(const blob &v) { return {v.data, v.size}; }
};

} // namespace tracery

// Labels of an enumeration type: TRACERY_CXX_ENUM(Op, {"read", 0, 0}, ...),
// each entry {label, first value, last value}. At namespace scope.
// clang-format off
#define TRACERY_CXX_ENUM(E, ...)                                                               \
	template <>                                                                            \
	struct tracery::enum_labels<E> {                                                       \
		static constexpr tracery_enum_entry entries[] = {__VA_ARGS__};                 \
		static constexpr tracery_enum_desc desc = {                                    \
			#E, entries, sizeof(entries) / sizeof(entries[0])};                    \
	}

#define TRACERY__CXX_TYPE(spec) TRACERY__CXX_TYPE_ spec
#define TRACERY__CXX_TYPE_(n, ...) __VA_ARGS__
#define TRACERY__CXX_NAME(spec) TRACERY__CXX_NAME_ spec
#define TRACERY__CXX_NAME_(n, ...) n
#define TRACERY__CXX_FD(spec) tracery::field<TRACERY__CXX_TYPE(spec)>::desc(TRACERY__CXX_STR(TRACERY__CXX_NAME(spec))),
#define TRACERY__CXX_STR(x) TRACERY__CXX_STR_(x)
#define TRACERY__CXX_STR_(x) #x
#define TRACERY__CXX_PARAM(spec) , tracery::field<TRACERY__CXX_TYPE(spec)>::param TRACERY__CXX_NAME(spec)
#define TRACERY__CXX_ARG(spec) tracery::field<TRACERY__CXX_TYPE(spec)>::arg(TRACERY__CXX_NAME(spec)),
#define TRACERY__CXX_ARGNAME(spec) , TRACERY__CXX_NAME(spec)
#define TRACERY__CXX_SCALAR(spec) &&tracery::field<TRACERY__CXX_TYPE(spec)>::scalar

// Declares event prov:name with (field, Type) pairs; usable in headers. The
// emitter works as in tracepoint.h: an event of scalars alone calls its gate
// with its parameters at the call site, others pass the argument array.
#define TRACERY_CXX_EVENT(prov, name, ...)                                                          \
	inline constexpr tracery_field_desc tracery__fields__##prov##__##name[] = {                 \
		TRACERY__MAP(TRACERY__CXX_FD, __VA_ARGS__)};                                        \
	inline constexpr bool tracery__scalar__##prov##__##name =                                   \
		true TRACERY__MAP(TRACERY__CXX_SCALAR, __VA_ARGS__);                                \
	inline __attribute__((visibility("hidden"))) tracery_event_desc TRACERY__DESC_NAME(prov, name) = { \
		#prov, #name, tracery__fields__##prov##__##name,                                    \
		sizeof(tracery__fields__##prov##__##name) / sizeof(tracery_field_desc), 0, nullptr, nullptr, \
		nullptr, tracery__scalar__##prov##__##name ? TRACERY_GATE_PARAMS : TRACERY_GATE_ARGS}; \
	static tracery_event_desc *const tracery__ptr__##prov##__##name TRACERY__SECTION_ATTR =    \
		&TRACERY__DESC_NAME(prov, name);                                                    \
	TRACERY__EMITTER_WITH(prov, name, tracery__scalar__##prov##__##name, TRACERY__CXX_PARAM,    \
	                      TRACERY__CXX_ARG, TRACERY__CXX_ARGNAME, __VA_ARGS__)

// Emits prov:name (declared with TRACERY_CXX_EVENT).
#define TRACERY_CXX_EMIT(prov, name, ...) TRACERY_EMIT(prov, name, __VA_ARGS__)
// Emits prov:name recording `ip` as its ip context (TRACERY_EMIT_AT in tracepoint.h).
#define TRACERY_CXX_EMIT_AT(ip, prov, name, ...) TRACERY_EMIT_AT(ip, prov, name, __VA_ARGS__)
// clang-format on

#endif // C++20
