// analysis/export/proto_writer.hpp — protobuf's wire format written by hand into a
// growing byte buffer, for the packets `tracery export --format perfetto`
// writes per event (libprotobuf's generated classes, which the rare packets
// and the tests use, cost an allocation and a size pass per message).
//
// The bytes are those libprotobuf writes for the same fields in the same
// order (minimal varints, int32 sign-extended to ten bytes, little-endian
// doubles): the unit tests compare both. A nested message reserves one byte
// for its length and moves its content when the length needs more.
//
//   ProtoWriter w;
//   const size_t packet = w.begin(1);     // Trace.packet
//   w.uint(8, ts);                        // TracePacket.timestamp
//   w.end(packet);
//   write(fd, w.data(), w.size()); w.clear();
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include "base/utf8.hpp"

namespace tracery::analysis {

class ProtoWriter {
public:
	enum Wire : uint8_t { varint_wire = 0, fixed64_wire = 1, length_wire = 2 };

	ProtoWriter() { grow(4096); }
	const uint8_t *data() const { return buf_.get(); }
	size_t size() const { return size_; }
	void clear() { size_ = 0; }

	static size_t varint_size(uint64_t v)
	{
		size_t n = 1;
		while (v >= 0x80) {
			v >>= 7;
			++n;
		}
		return n;
	}

	void varint(uint64_t v)
	{
		reserve(10);
		uint8_t *p = buf_.get() + size_;
		while (v >= 0x80) {
			*p++ = static_cast<uint8_t>(v | 0x80);
			v >>= 7;
		}
		*p++ = static_cast<uint8_t>(v);
		size_ = static_cast<size_t>(p - buf_.get());
	}
	void tag(uint32_t field, Wire wire) { varint((uint64_t{field} << 3) | wire); }

	// uint32, uint64, enum and bool fields.
	void uint(uint32_t field, uint64_t v)
	{
		tag(field, varint_wire);
		varint(v);
	}
	// int64 fields (two's complement, as libprotobuf).
	void int64(uint32_t field, int64_t v) { uint(field, static_cast<uint64_t>(v)); }
	// int32 fields: the value truncated to 32 bits, then sign-extended.
	void int32(uint32_t field, int64_t v)
	{
		uint(field,
		     static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)))));
	}
	void fixed64(uint32_t field, uint64_t v)
	{
		tag(field, fixed64_wire);
		reserve(8);
		for (int i = 0; i < 8; ++i)
			buf_[size_++] = static_cast<uint8_t>(v >> (8 * i));
	}
	void dbl(uint32_t field, double v)
	{
		uint64_t bits;
		std::memcpy(&bits, &v, 8);
		fixed64(field, bits);
	}
	// A string field, made valid UTF-8 on the way ('?' for bad bytes).
	void string(uint32_t field, std::string_view s)
	{
		tag(field, length_wire);
		varint(s.size());
		reserve(s.size());
		base::copy_utf8(buf_.get() + size_, s.data(), s.size());
		size_ += s.size();
	}
	// Bytes already encoded (a message serialized elsewhere).
	void bytes(uint32_t field, const void *p, size_t n)
	{
		tag(field, length_wire);
		varint(n);
		raw(p, n);
	}
	void raw(const void *p, size_t n)
	{
		reserve(n);
		if (n)
			std::memcpy(buf_.get() + size_, p, n);
		size_ += n;
	}

	// A nested message: begin() returns a mark to give end() after its fields.
	size_t begin(uint32_t field)
	{
		tag(field, length_wire);
		reserve(1);
		buf_[size_] = 0;
		return size_++;
	}
	void end(size_t mark)
	{
		const size_t len = size_ - mark - 1;
		if (len < 0x80) {
			buf_[mark] = static_cast<uint8_t>(len);
			return;
		}
		const size_t extra = varint_size(len) - 1;
		reserve(extra);
		std::memmove(buf_.get() + mark + 1 + extra, buf_.get() + mark + 1, len);
		size_t v = len;
		uint8_t *p = buf_.get() + mark;
		while (v >= 0x80) {
			*p++ = static_cast<uint8_t>(v | 0x80);
			v >>= 7;
		}
		*p = static_cast<uint8_t>(v);
		size_ += extra;
	}

private:
	void reserve(size_t n)
	{
		if (size_ + n > cap_) [[unlikely]]
			grow(size_ + n);
	}
	void grow(size_t need)
	{
		size_t cap = cap_ ? cap_ : 4096;
		while (cap < need)
			cap *= 2;
		std::unique_ptr<uint8_t[]> b(new uint8_t[cap]);
		if (size_)
			std::memcpy(b.get(), buf_.get(), size_);
		buf_ = std::move(b);
		cap_ = cap;
	}

	std::unique_ptr<uint8_t[]> buf_;
	size_t size_ = 0, cap_ = 0;
};

} // namespace tracery::analysis
