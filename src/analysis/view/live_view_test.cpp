// Unit tests of `tracery view --live`'s reading (analysis/view/live_view.hpp) on
// packets made by hand: an event waits for every stream that has not hung
// up to have an item or to be quiet past it (INACTIVE, the end of its last
// packet); metadata that grows while an event is held (the event decoded
// again, printed right, the new class read); packets that are not what they
// say refused.
#include "analysis/view/live_view.hpp"

#include "base/byte_order.hpp"
#include "ctf/reader/read_error.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace tracery::analysis {
namespace {

const std::string kMetadata = R"(/* CTF 1.8 */
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace { major = 1; minor = 8; byte_order = le;
	packet.header := struct { uint32_t magic; uint32_t stream_id; }; };
env { hostname = "h"; };
clock { name = c; freq = 1000000000; offset_s = 0; offset = 0; };
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts_t;
stream { id = 0;
	packet.context := struct { ts_t timestamp_begin; ts_t timestamp_end; uint64_t content_size; uint64_t packet_size; };
	event.header := struct { uint32_t id; ts_t timestamp; }; };
event { name = "a"; id = 1; stream_id = 0; fields := struct { uint32_t v; }; };
)";
const std::string kMoreMetadata =
	R"(event { name = "b"; id = 2; stream_id = 0; fields := struct { uint32_t v; uint32_t w; }; };
)";

struct Event {
	uint32_t id;
	uint64_t ts;
	std::vector<uint32_t> fields;
};

std::vector<uint8_t> packet(uint64_t begin, uint64_t end, const std::vector<Event> &events)
{
	std::vector<uint8_t> p(8 + 32);
	for (const Event &e : events) {
		const size_t at = p.size();
		p.resize(at + 12 + 4 * e.fields.size());
		base::store_le<uint32_t>(p.data() + at, e.id);
		base::store_le<uint64_t>(p.data() + at + 4, e.ts);
		for (size_t i = 0; i < e.fields.size(); i++)
			base::store_le<uint32_t>(p.data() + at + 12 + 4 * i, e.fields[i]);
	}
	base::store_le<uint32_t>(p.data(), 0xC1FC1FC1);
	base::store_le<uint32_t>(p.data() + 4, 0);
	base::store_le<uint64_t>(p.data() + 8, begin);
	base::store_le<uint64_t>(p.data() + 16, end);
	base::store_le<uint64_t>(p.data() + 24, p.size() * 8);
	base::store_le<uint64_t>(p.data() + 32, p.size() * 8);
	return p;
}

// A LiveView writing into memory, and what it wrote: the payloads printed.
class Viewed {
public:
	explicit Viewed(std::vector<std::string> fields)
		: fd_(memfd_create("live_view_test", MFD_CLOEXEC)), view_(options(std::move(fields)), fd_, stderr)
	{
	}
	~Viewed() { ::close(fd_); }
	LiveView &view() { return view_; }
	// The "{ ... }" payloads printed so far, in order.
	std::vector<std::string> printed() const
	{
		std::string text(static_cast<size_t>(::lseek(fd_, 0, SEEK_END)), '\0');
		EXPECT_EQ(::pread(fd_, text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
		std::vector<std::string> out;
		for (size_t at = 0; (at = text.find(" h ", at)) != std::string::npos;) {
			const size_t colon = text.find(": {", at), close = text.find('}', colon);
			out.push_back(text.substr(at + 3, colon - at - 3) + " " +
			              text.substr(colon + 2, close - colon - 1));
			at = close;
		}
		return out;
	}

private:
	static ViewOptions options(std::vector<std::string> fields)
	{
		ViewOptions o;
		o.fields = std::move(fields);
		return o;
	}
	int fd_;
	LiveView view_;
};

TEST(LiveView, AnEventWaitsForEveryStreamThatHasNotHungUp)
{
	Viewed out({"v"});
	LiveView &v = out.view();
	v.metadata(1, kMetadata, "ust/uid/0/64-bit");
	v.add_stream(10, 1, "ust/uid/0/64-bit/c_0");
	v.add_stream(11, 1, "ust/uid/0/64-bit/c_1");
	EXPECT_TRUE(v.wants(10));
	v.packet(10, packet(100, 300, {{1, 100, {1}}, {1, 300, {3}}}));
	EXPECT_FALSE(v.wants(10)); // an event queued
	ASSERT_TRUE(v.print());
	EXPECT_TRUE(out.printed().empty()); // stream 11 may have anything
	v.inactive(11, 0, 200);
	ASSERT_TRUE(v.print());
	EXPECT_EQ(out.printed(), std::vector<std::string>{"a { v = 1 }"});
	v.packet(11, packet(250, 260, {{1, 250, {2}}}));
	ASSERT_TRUE(v.print());
	// Stream 11 is past its packet's end (260) only: 300 waits.
	EXPECT_EQ(out.printed(), (std::vector<std::string>{"a { v = 1 }", "a { v = 2 }"}));
	EXPECT_TRUE(v.wants(11));
	v.hang_up(11);
	EXPECT_FALSE(v.wants(11));
	ASSERT_TRUE(v.print());
	EXPECT_EQ(out.printed(), (std::vector<std::string>{"a { v = 1 }", "a { v = 2 }", "a { v = 3 }"}));
	EXPECT_FALSE(v.done());
	v.hang_up(10);
	EXPECT_TRUE(v.done());
	EXPECT_EQ(v.events(), 3u);
}

TEST(LiveView, MetadataThatGrowsWhileAnEventIsHeld)
{
	Viewed out({"v", "w"});
	LiveView &v = out.view();
	v.metadata(1, kMetadata, "k");
	v.add_stream(10, 1, "k/c_0");
	v.add_stream(11, 1, "k/c_1");
	v.packet(10, packet(100, 100, {{1, 100, {7}}}));
	ASSERT_TRUE(v.print()); // held: stream 11 says nothing
	v.metadata(1, kMetadata + kMoreMetadata, "k");
	v.packet(11, packet(150, 150, {{2, 150, {8, 9}}}));
	v.hang_up(10);
	v.hang_up(11);
	ASSERT_TRUE(v.print());
	EXPECT_EQ(out.printed(), (std::vector<std::string>{"a { v = 7 }", "b { v = 8, w = 9 }"}));
	EXPECT_TRUE(v.done());
}

TEST(LiveView, PacketsThatAreNotWhatTheySayAreRefused)
{
	Viewed out({});
	LiveView &v = out.view();
	v.metadata(1, kMetadata, "k");
	v.add_stream(10, 1, "k/c_0");
	EXPECT_THROW(v.add_stream(10, 1, "k/again"), std::runtime_error);
	EXPECT_THROW(v.add_stream(12, 2, "no/metadata"), std::runtime_error);
	std::vector<uint8_t> p = packet(100, 100, {{1, 100, {7}}});
	p.push_back(0); // a byte more than the packet declares
	EXPECT_THROW(v.packet(10, p), ctf::reader::ReadError);
	p = packet(100, 100, {{1, 100, {7}}});
	base::store_le<uint32_t>(p.data(), 0xdeadbeef);
	EXPECT_THROW(v.packet(10, p), ctf::reader::ReadError);
	EXPECT_THROW(v.inactive(10, 5, 100), std::runtime_error); // no stream class 5
	EXPECT_THROW(v.packet(99, packet(1, 1, {})), std::runtime_error);
	EXPECT_THROW(v.metadata(3, "trace { major = ", "bad"), ctf::reader::ReadError);
}

} // namespace
} // namespace tracery::analysis
