// event/context.hpp — the optional per-stream event context.
//
// Chosen per channel (stream class), written right after the event header of
// every event of that stream, in this order, each only if enabled:
//   vpid      int32 LE                  4 bytes
//   vtid      int32 LE                  4 bytes
//   procname  char[17], NUL padded     17 bytes (at most 16 bytes of name,
//             cut at the first NUL, then NULs; invalid UTF-8 -> '?')
//   then the contexts of kUserContexts (context_table.hpp) that are set in
//   ContextOptions::more, in the table's order: uint32 or uint64 LE each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "event/context_table.hpp"

#include "base/byte_order.hpp"
#include "base/utf8.hpp"

namespace tracery::event {

inline constexpr size_t kProcnameSize = 17;

struct ContextOptions {
	bool vpid = false;
	bool vtid = false;
	bool procname = false;
	UserContextSet more = 0; // bit i: kUserContexts[i]

	friend bool operator==(const ContextOptions &, const ContextOptions &) = default;
};

inline constexpr size_t context_size(const ContextOptions &o) noexcept
{
	return (o.vpid ? 4 : 0) + (o.vtid ? 4 : 0) + (o.procname ? kProcnameSize : 0) + user_contexts_size(o.more);
}

// Sets the user-space context `name` (add-context -t NAME) in o: false if
// user space has no context of that name.
bool set_user_context(ContextOptions &o, std::string_view name);
// Why a perf counter of o cannot be counted by the calling thread ("" if
// they all can): opens and closes each one, as LTTng-UST does before it
// accepts one.
std::string perf_counters_unavailable(const ContextOptions &o);
// The names of o's contexts, in the order a record carries them.
std::vector<std::string> context_names(const ContextOptions &o);

// Writes the procname context field (17 bytes) from name, which points to
// kProcnameSize readable bytes (a char[17], e.g. from prctl(PR_GET_NAME)) or
// is NULL (empty string). The name is cut at its first NUL or after 16 bytes;
// the rest is NUL-filled so no stale bytes reach the trace.
inline void write_procname(uint8_t *dst, const char *name) noexcept
{
	if (!name) {
		std::memset(dst, 0, kProcnameSize);
		return;
	}
	if constexpr (base::kHostIsLittleEndian) {
		// Two words: find the first NUL (the lowest flagged byte is exact),
		// clear what follows it, check for non-ASCII bytes.
		constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
		uint64_t w[2];
		std::memcpy(w, name, 16);
		for (int i = 0; i < 2; ++i) {
			const uint64_t zero = (w[i] - kOnes) & ~w[i] & kHighs;
			if (zero) {
				const unsigned keep =
					static_cast<unsigned>(__builtin_ctzll(zero)) / 8; // bytes before NUL
				w[i] &= keep ? ~uint64_t{0} >> (64 - 8 * keep) : 0;
				if (i == 0)
					w[1] = 0;
				break;
			}
		}
		std::memcpy(dst, w, 16);
		dst[16] = 0;
		if ((w[0] | w[1]) & kHighs) [[unlikely]]
			base::sanitize_utf8_in_place(dst, strnlen(reinterpret_cast<const char *>(dst), 16));
	} else {
		const size_t n = strnlen(name, kProcnameSize - 1);
		base::copy_utf8(dst, name, n);
		std::memset(dst + n, 0, kProcnameSize - n);
	}
}

// Writes the first context_size(o) - user_contexts_size(o.more) bytes at dst
// (the caller writes those of `more` after them). procname (17 readable bytes, or NULL
// for the empty string) is read only if o.procname: see write_procname().
inline void write_context(uint8_t *dst, const ContextOptions &o, int32_t vpid, int32_t vtid,
                          const char procname[kProcnameSize]) noexcept
{
	if (o.vpid) {
		base::store_le<int32_t>(dst, vpid);
		dst += 4;
	}
	if (o.vtid) {
		base::store_le<int32_t>(dst, vtid);
		dst += 4;
	}
	if (o.procname)
		write_procname(dst, procname);
}

} // namespace tracery::event
