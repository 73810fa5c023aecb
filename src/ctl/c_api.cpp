// The C API's errors and argument checks: see c_api.hpp.
#include "ctl/c_api.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tracery::ctl {

namespace {

// The calling thread's last message; out_of_memory when it could not be copied.
thread_local std::string tls_message;
thread_local bool tls_out_of_memory = false;

// More than any later version of a sized struct will hold: a struct_size past it is a mistake.
constexpr uint32_t kLargestStruct = 4096;

} // namespace

void set_error_message(const char *message) noexcept
{
	try {
		tls_message = message;
		tls_out_of_memory = false;
	} catch (...) {
		tls_out_of_memory = true;
	}
}

int error_code(ErrorKind kind)
{
	switch (kind) {
	case ErrorKind::invalid:
		return TRACERY_CTL_ERROR_INVALID;
	case ErrorKind::no_daemon:
		return TRACERY_CTL_ERROR_NO_DAEMON;
	case ErrorKind::permission:
		return TRACERY_CTL_ERROR_PERMISSION;
	case ErrorKind::refused:
		return TRACERY_CTL_ERROR_REFUSED;
	case ErrorKind::connection:
		return TRACERY_CTL_ERROR_CONNECTION;
	case ErrorKind::protocol:
		return TRACERY_CTL_ERROR_PROTOCOL;
	case ErrorKind::again:
		return TRACERY_CTL_ERROR_AGAIN;
	case ErrorKind::closed:
		return TRACERY_CTL_ERROR_CLOSED;
	}
	return TRACERY_CTL_ERROR_PROTOCOL;
}

std::string required(const char *value, const char *argument)
{
	if (!value)
		throw Error(std::string(argument) + " is NULL");
	if (!*value)
		throw Error(std::string(argument) + " is empty");
	return value;
}

std::optional<std::string> optional_text(const char *value, const char *argument)
{
	if (!value)
		return std::nullopt;
	return required(value, argument);
}

std::vector<std::string> strings(const char *const *values, size_t count, const char *argument)
{
	if (count == 0)
		return {};
	if (!values)
		throw Error(std::string(argument) + " is NULL with a count of " + std::to_string(count));
	// Bounded by the daemon's request limit long before memory: a count past it is a caller's mistake.
	if (count > control::kDaemonLimits.command)
		throw Error(std::string(argument) + ": a count of " + std::to_string(count) +
		            " is more than a request can carry");
	std::vector<std::string> out;
	out.reserve(count);
	for (size_t i = 0; i < count; i++)
		out.push_back(required(values[i], (std::string(argument) + "[" + std::to_string(i) + "]").c_str()));
	return out;
}

bool is_kernel(int domain)
{
	if (domain == TRACERY_CTL_DOMAIN_USER)
		return false;
	if (domain == TRACERY_CTL_DOMAIN_KERNEL)
		return true;
	throw Error("unknown domain " + std::to_string(domain) +
	            ": TRACERY_CTL_DOMAIN_USER (0) or TRACERY_CTL_DOMAIN_KERNEL (1)");
}

void check_struct_size(const void *s, uint32_t struct_size, size_t first_size, size_t known_size, const char *argument)
{
	if (struct_size < first_size)
		throw Error(std::string(argument) + "->struct_size is " + std::to_string(struct_size) +
		            ", less than the " + std::to_string(first_size) +
		            " bytes of its first version: set it to sizeof the struct");
	if (struct_size > kLargestStruct)
		throw Error(std::string(argument) + "->struct_size is " + std::to_string(struct_size) +
		            ": no struct of this API is that large; set it to sizeof the struct");
	const auto *bytes = static_cast<const unsigned char *>(s);
	for (size_t i = known_size; i < struct_size; i++)
		if (bytes[i])
			throw Error(std::string(argument) + " sets fields past the " + std::to_string(known_size) +
			            " bytes this libtracery-ctl knows: the program needs a later release of it");
}

void check_flags(uint32_t flags, uint32_t allowed, const char *argument)
{
	if (flags & ~allowed) {
		char text[64];
		snprintf(text, sizeof text, "0x%x", flags & ~allowed);
		throw Error(std::string(argument) + ": unknown flags " + text);
	}
}

void give_string(const std::string &text, char **out)
{
	if (!out)
		return;
	char *copy = static_cast<char *>(malloc(text.size() + 1));
	if (!copy)
		throw std::bad_alloc();
	memcpy(copy, text.c_str(), text.size() + 1);
	*out = copy;
}

void give_json(nlohmann::json document, char **out)
{
	document.erase(control::kOkKey);
	document.erase(control::kTypeKey);
	give_string(document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), out);
}

} // namespace tracery::ctl

extern "C" {

TRACERY_CTL_API const char *tracery_ctl_error_message(void)
{
	return tracery::ctl::tls_out_of_memory ? "out of memory" : tracery::ctl::tls_message.c_str();
}

TRACERY_CTL_API void tracery_ctl_free(void *p) { free(p); }

} // extern "C"
