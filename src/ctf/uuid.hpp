// ctf/uuid.hpp — 16-byte UUIDs (trace and clock identity) and their text form.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tracery::ctf {

struct Uuid {
	std::array<uint8_t, 16> bytes{};

	// A random (version 4) UUID from getrandom(2); throws std::system_error.
	static Uuid random();
	// Parses "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (either case).
	static std::optional<Uuid> parse(std::string_view text);

	bool is_nil() const noexcept;
	// Lower-case canonical form, 36 characters.
	std::string to_string() const;

	friend bool operator==(const Uuid &, const Uuid &) = default;
};

} // namespace tracery::ctf
