// Unit tests of the serial line's frames and settings (control/serial_frame.hpp,
// control/serial_line.hpp): the CRC's check value, the exact bytes of a
// frame, frames decoded whatever the cuts, and the decoder finding frames
// again after noise, a corrupted byte, bytes lost mid-frame and a length
// that lies, counting what it skipped; the serial:// URL and its refusals.
#include "control/serial_frame.hpp"
#include "control/relay_protocol.hpp"
#include "control/relay_url.hpp"
#include "control/serial_line.hpp"

#include <gtest/gtest.h>

#include <string_view>

namespace tracery::control::serial {
namespace {

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> frame_bytes(Kind kind, uint32_t link, uint32_t sequence, std::string_view payload)
{
	std::vector<uint8_t> out;
	encode(kind, link, sequence, bytes_of(payload), out);
	return out;
}

// Every frame the bytes decode to, fed `piece` bytes at a time.
std::vector<Frame> decode_all(FrameDecoder &d, const std::vector<uint8_t> &bytes, size_t piece)
{
	std::vector<Frame> frames;
	for (size_t at = 0; at < bytes.size(); at += piece) {
		d.feed({bytes.data() + at, std::min(piece, bytes.size() - at)});
		Frame f;
		while (d.next(f))
			frames.push_back(f);
	}
	return frames;
}

Frame frame(Kind kind, uint32_t link, uint32_t sequence, std::string_view payload)
{
	return Frame{kind, link, sequence, bytes_of(payload)};
}

TEST(SerialFrame, CrcIsIeee)
{
	EXPECT_EQ(crc32(bytes_of("123456789")), 0xCBF43926u); // the standard check value
	EXPECT_EQ(crc32({}), 0u);
}

TEST(SerialFrame, ExactBytes)
{
	const std::vector<uint8_t> f = frame_bytes(Kind::data, 0x04030201, 0x0D0C0B0A, "xy");
	const std::vector<uint8_t> head = {0xA5, 0x5A, 'T',  's',  3,    0, 1, 2,   3,
	                                   4,    0x0A, 0x0B, 0x0C, 0x0D, 2, 0, 'x', 'y'};
	ASSERT_EQ(f.size(), head.size() + 4);
	EXPECT_TRUE(std::equal(head.begin(), head.end(), f.begin()));
	const uint32_t crc = crc32({f.data(), head.size()});
	EXPECT_EQ(f[18], crc & 0xFF);
	EXPECT_EQ(f[21], crc >> 24);
}

TEST(SerialFrame, FramesWhateverTheCuts)
{
	std::vector<uint8_t> all;
	const std::vector<Frame> want = {frame(Kind::hello, 7, 0, "\x01"), frame(Kind::data, 7, 0, ""),
	                                 frame(Kind::data, 7, 1, std::string(kMaxPayload, 'p')),
	                                 frame(Kind::close, 7, 2, "")};
	for (const Frame &f : want)
		encode(f.kind, f.link, f.sequence, f.payload, all);
	for (const size_t piece : {size_t{1}, size_t{3}, size_t{17}, all.size()}) {
		FrameDecoder d;
		EXPECT_EQ(decode_all(d, all, piece), want) << "pieces of " << piece;
		EXPECT_EQ(d.bytes_skipped, 0u);
		EXPECT_EQ(d.frames_bad, 0u);
		EXPECT_EQ(d.pending(), 0u);
	}
}

TEST(SerialFrame, NoiseIsSkippedAndCounted)
{
	std::vector<uint8_t> all = bytes_of("line noise\xA5\x5A");
	const auto a = frame_bytes(Kind::data, 1, 0, "first");
	all.insert(all.end(), a.begin(), a.end());
	all.push_back(0xA5); // a marker's first byte, then noise
	all.push_back(0x00);
	const auto b = frame_bytes(Kind::data, 1, 1, "second");
	all.insert(all.end(), b.begin(), b.end());
	FrameDecoder d;
	EXPECT_EQ(decode_all(d, all, 5),
	          (std::vector<Frame>{frame(Kind::data, 1, 0, "first"), frame(Kind::data, 1, 1, "second")}));
	EXPECT_EQ(d.bytes_skipped, 12u + 2u);
	EXPECT_EQ(d.frames_bad, 0u);
}

TEST(SerialFrame, CorruptedByteLosesThatFrameOnly)
{
	auto a = frame_bytes(Kind::data, 1, 0, "payload of the first frame");
	a[20] ^= 0x10;
	const auto b = frame_bytes(Kind::data, 1, 1, "second");
	std::vector<uint8_t> all = a;
	all.insert(all.end(), b.begin(), b.end());
	FrameDecoder d;
	EXPECT_EQ(decode_all(d, all, 7), std::vector<Frame>{frame(Kind::data, 1, 1, "second")});
	EXPECT_EQ(d.frames_bad, 1u);
	EXPECT_EQ(d.bytes_skipped, a.size());
}

TEST(SerialFrame, BytesLostMidFrameThenNextFrameFound)
{
	// The first frame loses 10 bytes of its middle: its length claims bytes
	// of the next frame, whose marker the decoder finds again.
	auto a = frame_bytes(Kind::data, 1, 0, std::string(200, 'a'));
	a.erase(a.begin() + 50, a.begin() + 60);
	const auto b = frame_bytes(Kind::data, 1, 1, std::string(300, 'b'));
	std::vector<uint8_t> all = a;
	all.insert(all.end(), b.begin(), b.end());
	FrameDecoder d;
	EXPECT_EQ(decode_all(d, all, 64), std::vector<Frame>{frame(Kind::data, 1, 1, std::string(300, 'b'))});
	EXPECT_EQ(d.frames_bad, 1u);
	EXPECT_EQ(d.bytes_skipped, a.size());
	EXPECT_EQ(d.pending(), 0u);
}

TEST(SerialFrame, ACutFrameGivenUpLetsWhatFollowsBeRead)
{
	// A line cut mid-frame: the head claims 500 bytes, 100 came, then a
	// HELLO much later. The decoder waits (the HELLO may be the cut frame's
	// body) until the line's end gives the cut frame up.
	auto cut = frame_bytes(Kind::data, 1, 7, std::string(500, 'a'));
	cut.resize(100);
	const auto hello = frame_bytes(Kind::hello, 2, 0, "\x01");
	FrameDecoder d;
	Frame f;
	EXPECT_EQ(d.partial_at(), FrameDecoder::kNoPartial);
	d.feed(std::vector<uint8_t>(3, 0x41)); // noise first: the partial frame is counted from the start
	d.feed(cut);
	d.feed(hello);
	EXPECT_FALSE(d.next(f));
	EXPECT_EQ(d.partial_at(), 3u);
	d.abandon_partial();
	ASSERT_TRUE(d.next(f));
	EXPECT_EQ(f, frame(Kind::hello, 2, 0, "\x01"));
	EXPECT_EQ(d.frames_bad, 1u);
	EXPECT_EQ(d.bytes_skipped, 3u + cut.size());
	EXPECT_EQ(d.partial_at(), FrameDecoder::kNoPartial);
	d.abandon_partial(); // nothing waits: nothing counted
	EXPECT_EQ(d.frames_bad, 1u);
}

TEST(SerialFrame, BadHeadersRefused)
{
	for (const auto &[offset, value] : {std::pair<size_t, uint8_t>{4, 0}, {4, kLastKind + 1}, {5, 1}, {15, 0x04}}) {
		auto a = frame_bytes(Kind::data, 1, 0, "x");
		a[offset] = value; // a kind, a flag or a length (over kMaxPayload) the format does not have
		const auto b = frame_bytes(Kind::close, 1, 1, "");
		a.insert(a.end(), b.begin(), b.end());
		a.resize(a.size() + kMaxFrame, 0); // enough bytes for any length
		FrameDecoder d;
		EXPECT_EQ(decode_all(d, a, a.size()), std::vector<Frame>{frame(Kind::close, 1, 1, "")})
			<< "byte " << offset << " = " << int(value);
		EXPECT_EQ(d.frames_bad, 1u);
	}
}

TEST(SerialFrame, HoldsAtMostAFrameAndAMarkerTail)
{
	FrameDecoder d;
	const std::vector<uint8_t> noise(10000, 0x41);
	Frame f;
	d.feed(noise);
	EXPECT_FALSE(d.next(f));
	EXPECT_LE(d.pending(), sizeof kMarker - 1);
	EXPECT_EQ(d.bytes_skipped, noise.size() - d.pending());
}

TEST(SerialUrl, Parsed)
{
	std::string why;
	auto line = parse_serial_url("serial:///dev/ttyS1?baud=115200", &why);
	ASSERT_TRUE(line) << why;
	EXPECT_EQ(*line, (LineSettings{"/dev/ttyS1", 115200, false}));
	line = parse_serial_url("serial:///dev/ttyUSB0?baud=921600&flow=rtscts", &why);
	ASSERT_TRUE(line) << why;
	EXPECT_EQ(*line, (LineSettings{"/dev/ttyUSB0", 921600, true}));
	EXPECT_EQ(to_url(*line), "serial:///dev/ttyUSB0?baud=921600&flow=rtscts");
	line = parse_serial_url("serial:///dev/pts/3", &why);
	ASSERT_TRUE(line) << why;
	EXPECT_EQ(line->baud, kDefaultBaud);
	EXPECT_EQ(parse_serial_url(to_url(*line), &why), line);

	const auto relay = relay::parse_relay_url("serial:///dev/ttyS1?baud=57600", relay::kDefaultPort, &why);
	ASSERT_TRUE(relay && relay->serial) << why;
	EXPECT_EQ(relay->serial->baud, 57600u);
	EXPECT_EQ(relay::to_string(*relay), "serial:///dev/ttyS1?baud=57600");
}

TEST(SerialUrl, Refused)
{
	const std::pair<const char *, const char *> bad[] = {
		{"serial://dev/ttyS1", "absolute path"},
		{"serial:///dev/ttyS1?baud=12345", "baud '12345' is not one of 9600"},
		{"serial:///dev/ttyS1?baud=", "baud '' is not one of"},
		{"serial:///dev/ttyS1?parity=even", "unknown option 'parity=even'"},
		{"serial:///dev/../etc/passwd", "'..'"},
		{"serial:///dev/tty S1", "a character other than"},
	};
	for (const auto &[url, want] : bad) {
		std::string why;
		EXPECT_FALSE(relay::parse_relay_url(url, relay::kDefaultPort, &why)) << url;
		EXPECT_NE(why.find(want), std::string::npos) << url << ": " << why;
		EXPECT_EQ(why.rfind("bad --set-url '", 0), 0u) << why;
	}
}

} // namespace
} // namespace tracery::control::serial
