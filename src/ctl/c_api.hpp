// What the C entry points (ctl.h) share: each runs its body through
// c_call(), which turns the client's errors into the call's error code and
// the calling thread's message; and the checks of the arguments they take
// (a NULL, an empty name, an unknown domain or flag is TRACERY_CTL_ERROR_INVALID
// with a message naming the argument, and nothing is sent).
#pragma once

#include "ctl/client.hpp"
#include "ctl/request_inputs.hpp"

#include "control/wire.hpp"

#include <tracery/ctl.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tracery::ctl {

// Sets the calling thread's message ("" after a success).
void set_error_message(const char *message) noexcept;

// A required string argument: not NULL, not empty.
std::string required(const char *value, const char *argument);
// An optional string argument: NULL is none (empty is wrong).
std::optional<std::string> optional_text(const char *value, const char *argument);
// COUNT strings (COUNT 0: none, then values may be NULL).
std::vector<std::string> strings(const char *const *values, size_t count, const char *argument);
// The domain, or Error.
bool is_kernel(int domain);
// A sized struct: its struct_size at least the first version's size
// (first_size), and the bytes past what this library knows (known_size: a
// caller built against a later one) all zero, as the kernel's extensible
// structs (openat2, clone3) are; else Error.
void check_struct_size(const void *s, uint32_t struct_size, size_t first_size, size_t known_size, const char *argument);
// A struct that has had one version so far.
template <class Struct>
void check_struct_size(const Struct &s, const char *argument)
{
	check_struct_size(&s, s.struct_size, sizeof(Struct), sizeof(Struct), argument);
}
// Whether a struct the caller sized holds the field that ends at field_end
// (offsetof + sizeof): fields a later version added are read only then.
inline bool has_field(uint32_t struct_size, size_t field_end) { return struct_size >= field_end; }
// Flags within allowed, or Error.
void check_flags(uint32_t flags, uint32_t allowed, const char *argument);
// Sets *out (when out is not NULL) to a copy of text the caller frees with tracery_ctl_free.
void give_string(const std::string &text, char **out);
// A reply as the C API hands it out: its JSON body without the protocol's
// tag ("ok": true; "type" of a notification), copied into *out.
void give_json(nlohmann::json document, char **out);
template <class Reply>
void give_reply(const Reply &reply, char **out)
{
	give_json(control::encode(reply), out);
}

int error_code(ErrorKind kind);

// Runs body (which returns nothing and throws Error on failure): the call's
// return value.
template <class Body>
int c_call(Body &&body) noexcept
{
	try {
		body();
		set_error_message("");
		return TRACERY_CTL_OK;
	} catch (const Error &e) {
		set_error_message(e.what());
		return error_code(e.kind);
	} catch (const std::bad_alloc &) {
		set_error_message("out of memory");
		return TRACERY_CTL_ERROR_NO_MEMORY;
	} catch (const std::exception &e) {
		set_error_message(e.what());
		return TRACERY_CTL_ERROR_PROTOCOL;
	}
}

} // namespace tracery::ctl
