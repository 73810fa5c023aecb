// base/sizes.hpp — sizes as people write and read them ("512k", "4M", "1G";
// "512 KiB", "2.50 GiB") and the
// one set of default channel sizes that the daemon, the command line and
// daemonless mode share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tracery::base {

// Default sub-buffer size and count of a channel, per CPU (LTTng's defaults
// for per-user UST channels are the same order: 4 x 512 KiB).
inline constexpr uint32_t kDefaultSubbufSize = 512 * 1024;
inline constexpr uint32_t kDefaultNumSubbuf = 4;

// "65536", "512k", "4M", "1G" -> the number they mean. Suffixes are binary
// multiples, either case: k = 2^10, M = 2^20, G = 2^30. nullopt for an empty
// string, a sign, spaces, any other suffix, or a value beyond uint64_t.
std::optional<uint64_t> parse_size(std::string_view text) noexcept;

// For messages: "1 byte", "512 bytes", "4 KiB", "512 MiB", "1 GiB" when the
// size is a whole number of its largest unit (up to TiB), else two decimals
// ("64.01 MiB").
std::string format_size(uint64_t bytes);

inline constexpr bool is_power_of_two(uint64_t v) noexcept { return v && !(v & (v - 1)); }

} // namespace tracery::base
