// ctf/uuid.cpp — UUID generation, formatting and parsing.
#include "ctf/uuid.hpp"
#include "base/ascii.hpp"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

namespace tracery::ctf {

Uuid Uuid::random()
{
	Uuid u;
	size_t got = 0;
	while (got < u.bytes.size()) {
		ssize_t n = getrandom(u.bytes.data() + got, u.bytes.size() - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			throw std::system_error(errno, std::generic_category(), "tracery ctf: getrandom");
		}
		got += static_cast<size_t>(n);
	}
	u.bytes[6] = static_cast<uint8_t>((u.bytes[6] & 0x0F) | 0x40); // version 4
	u.bytes[8] = static_cast<uint8_t>((u.bytes[8] & 0x3F) | 0x80); // RFC 4122 variant
	return u;
}

bool Uuid::is_nil() const noexcept
{
	for (uint8_t b : bytes)
		if (b)
			return false;
	return true;
}

std::string Uuid::to_string() const
{
	static constexpr char kHex[] = "0123456789abcdef";
	std::string s;
	s.reserve(36);
	for (size_t i = 0; i < bytes.size(); ++i) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			s += '-';
		s += kHex[bytes[i] >> 4];
		s += kHex[bytes[i] & 0xF];
	}
	return s;
}

std::optional<Uuid> Uuid::parse(std::string_view text)
{
	if (text.size() != 36)
		return std::nullopt;
	Uuid u;
	size_t pos = 0;
	for (size_t i = 0; i < 16; ++i) {
		if (i == 4 || i == 6 || i == 8 || i == 10) {
			if (text[pos] != '-')
				return std::nullopt;
			++pos;
		}
		const int hi = base::hex_digit_value(text[pos]), lo = base::hex_digit_value(text[pos + 1]);
		if (hi < 0 || lo < 0)
			return std::nullopt;
		u.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
		pos += 2;
	}
	return u;
}

} // namespace tracery::ctf
