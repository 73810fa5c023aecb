// ctf/reader/test_bytes.hpp — for tests: the bytes of CTF fields written one
// after the other with their alignment (little-endian host), to decode.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tracery::ctf::reader {

struct TestBytes {
	std::vector<uint8_t> b;
	// Padding (0xEE) to a multiple of align bytes.
	TestBytes &pad(size_t align)
	{
		while (b.size() % align)
			b.push_back(0xEE);
		return *this;
	}
	// align: in bytes; 1 is CTF's usual `align = 8` (bits).
	template <class T>
	TestBytes &put(T v, size_t align = 1)
	{
		pad(align);
		uint8_t raw[sizeof(T)];
		std::memcpy(raw, &v, sizeof(T));
		b.insert(b.end(), raw, raw + sizeof(T));
		return *this;
	}
	// The bytes of s as they are (a NUL only if s has one).
	TestBytes &raw(const std::string &s)
	{
		b.insert(b.end(), s.begin(), s.end());
		return *this;
	}
	// A CTF string: s and its NUL.
	TestBytes &str(const std::string &s)
	{
		raw(s);
		b.push_back(0);
		return *this;
	}
};

} // namespace tracery::ctf::reader
