// Unit tests of the relay's live side: the viewer protocol's parser and
// replies (control/live_protocol.hpp), the stream class read from TSDL, and
// LiveViewer's answers over a session fed as the writer thread feeds it
// (relay/live_session.hpp): RETRY, INACTIVE from beacons, OK in order, HUP,
// a trace dropped and given again, GET_PACKET bounds, the metadata's
// signature at the start of each batch; several viewers of one session, each
// at its own position, up to the cap; which viewer sees which session (plain
// port: those marked public; authenticated: its identity's); the index
// dropped once its sender and its viewers are gone.
#include "control/live_protocol.hpp"
#include "relay/live_session.hpp"

#include "base/test_temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

namespace tracery::relay {
namespace {

namespace cr = control::relay;
using live::Command;
using live::Request;

live::ParseStatus parse(const std::vector<uint8_t> &bytes, Request *r, size_t *used, std::string *why)
{
	return live::parse_request(bytes, r, used, why);
}

TEST(LiveProtocol, EveryCommandRoundTrips)
{
	const std::vector<Request> all = {
		{.cmd = Command::connect, .id = 7, .major = 2, .minor = 15, .type = 1},
		{.cmd = Command::list_sessions},
		{.cmd = Command::attach_session, .id = 3, .offset = 9, .seek = 2},
		{.cmd = Command::get_next_index, .id = 11},
		{.cmd = Command::get_packet, .id = 12, .offset = 4096, .length = 256 * 1024},
		{.cmd = Command::get_metadata, .id = 13},
		{.cmd = Command::get_new_streams, .id = 3},
		{.cmd = Command::create_session},
		{.cmd = Command::detach_session, .id = 3},
	};
	for (const Request &want : all) {
		const std::vector<uint8_t> bytes = live::encode_request(want);
		ASSERT_EQ(bytes.size(), live::kHeaderSize + live::payload_size(want.cmd));
		Request got;
		size_t used = 0;
		std::string why;
		for (size_t cut = 0; cut < bytes.size(); cut++)
			ASSERT_EQ(parse({bytes.begin(), bytes.begin() + static_cast<long>(cut)}, &got, &used, &why),
			          live::ParseStatus::needs_more)
				<< cut;
		std::vector<uint8_t> more = bytes;
		more.push_back(0xAA); // the next request's first byte is left alone
		ASSERT_EQ(parse(more, &got, &used, &why), live::ParseStatus::request) << why;
		EXPECT_EQ(got, want);
		EXPECT_EQ(used, bytes.size());
	}
	// Big-endian on the wire: GET_NEXT_INDEX of stream 0x0102.
	const std::vector<uint8_t> idx = live::encode_request({.cmd = Command::get_next_index, .id = 0x0102});
	EXPECT_EQ(idx, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2}));
}

TEST(LiveProtocol, RefusesWhatIsNotARequest)
{
	Request r;
	size_t used = 0;
	std::string why;
	std::vector<uint8_t> bytes(16, 0);
	bytes[11] = 42; // command 42
	EXPECT_EQ(parse(bytes, &r, &used, &why), live::ParseStatus::error);
	EXPECT_EQ(why, "unknown command 42");
	bytes[11] = 0;
	EXPECT_EQ(parse(bytes, &r, &used, &why), live::ParseStatus::error);
	EXPECT_EQ(why, "unknown command 0");
	// A size other than the command's, even one too big to ever arrive: refused at once.
	bytes = live::encode_request({.cmd = Command::list_sessions});
	bytes[0] = 0x40;
	EXPECT_EQ(parse(bytes, &r, &used, &why), live::ParseStatus::error);
	EXPECT_EQ(why, "LIST_SESSIONS with a payload of 4611686018427387904 bytes, not 0");
	bytes = live::encode_request({.cmd = Command::get_metadata, .id = 1});
	bytes[7] = 7;
	EXPECT_EQ(parse(bytes, &r, &used, &why), live::ParseStatus::error);
	EXPECT_EQ(why, "GET_METADATA with a payload of 7 bytes, not 8");
	for (uint32_t len : {0u, live::kMaxPacketRead + 1}) {
		bytes = live::encode_request({.cmd = Command::get_packet, .id = 1, .length = len});
		EXPECT_EQ(parse(bytes, &r, &used, &why), live::ParseStatus::error);
		EXPECT_EQ(why, "GET_PACKET of " + std::to_string(len) + " bytes");
	}
}

TEST(LiveProtocol, SingleStreamClass)
{
	EXPECT_EQ(single_stream_class("trace { major = 1; };\nstream {\n\tid = 3;\n\tevent.header := struct h;\n};\n"
	                              "event { name = \"a\"; id = 9; stream_id = 3; };"),
	          3u);
	EXPECT_EQ(single_stream_class("stream { event.context := struct { int32_t id; }; };"), 0u); // no id: 0
	EXPECT_EQ(single_stream_class("stream { id = 0; };\nstream { id = 1; };"), std::nullopt);
	EXPECT_EQ(single_stream_class("/* stream { id = 5; }; */ stream { id = 2; };"), 2u);
	EXPECT_EQ(single_stream_class("event { stream_id = 0; };"), std::nullopt);
	EXPECT_EQ(single_stream_class("stream { id = 4; event.context := struct {"), std::nullopt); // cut short
}

// A live session on disk, fed as the writer thread feeds it, and one viewer.
struct Live {
	base::TestTempDir tmp{"tracery-live-unit"};
	LiveRegistry registry;
	std::shared_ptr<LiveSession> s = std::make_shared<LiveSession>();
	LiveViewer viewer{registry, "viewer test", {}};
	uint64_t offset = 0;

	Live()
	{
		s->id = registry.next_id++;
		s->hostname = "h";
		s->name = "s";
		s->dir = tmp.path();
		s->live_period_ns = 1000000;
		s->public_live = true;
		registry.sessions.emplace(s->id, s);
		std::filesystem::create_directories(tmp.path() + "/t");
		feed(cr::Trace{.id = 1, .path = "t"});
	}
	void feed(const cr::Frame &f, uint64_t size = 0)
	{
		Written w{.frame = f, .offset = offset, .size = size, .packets = 0};
		s->apply(w, registry.next_id);
	}
	void metadata(const std::string &text)
	{
		std::ofstream(tmp.path() + "/t/metadata", std::ios::app) << text;
		feed(cr::Metadata{.trace_id = 1, .text = {}}, text.size());
	}
	void stream(uint32_t id, const std::string &file)
	{
		std::ofstream(tmp.path() + "/t/" + file);
		feed(cr::Stream{.id = id, .trace_id = 1, .file = file});
	}
	void packet(uint32_t stream, const std::string &file, uint64_t bytes, uint64_t begin, uint64_t end)
	{
		std::ofstream(tmp.path() + "/t/" + file, std::ios::app) << std::string(bytes, 'p');
		offset = std::filesystem::file_size(tmp.path() + "/t/" + file) - bytes;
		feed(cr::Packet{.stream_id = stream,
		                .index = {.packet_size_bits = bytes * 8,
		                          .content_size_bits = bytes * 8 - 8,
		                          .timestamp_begin = begin,
		                          .timestamp_end = end,
		                          .stream_class_id = 5},
		                .bytes = {}},
		     bytes);
	}
	std::vector<uint8_t> ask(const Request &r, std::string *why = nullptr, LiveViewer::FileRange *file = nullptr)
	{
		std::vector<uint8_t> out;
		LiveViewer::FileRange f;
		const std::string w = viewer.handle(r, out, file ? file : &f);
		if (why)
			*why = w;
		else
			EXPECT_EQ(w, "");
		return out;
	}
	// The viewer ids of the streams an ATTACH or GET_NEW_STREAMS reply lists (status and count first).
	static std::vector<std::pair<uint64_t, bool>> streams_of(const std::vector<uint8_t> &reply)
	{
		std::vector<std::pair<uint64_t, bool>> out;
		for (size_t at = 8; at + live::kStreamEntrySize <= reply.size(); at += live::kStreamEntrySize)
			out.emplace_back(live::get_be64(&reply[at]), live::get_be32(&reply[at + 16]) == 1);
		return out;
	}
	struct Index {
		uint64_t offset, size, end, cls;
		uint32_t status, flags;
	};
	Index index(uint64_t vid)
	{
		const std::vector<uint8_t> r = ask({.cmd = Command::get_next_index, .id = vid});
		EXPECT_EQ(r.size(), live::kIndexReplySize);
		return {live::get_be64(&r[0]),  live::get_be64(&r[8]),  live::get_be64(&r[32]),
		        live::get_be64(&r[48]), live::get_be32(&r[56]), live::get_be32(&r[60])};
	}
	std::vector<std::pair<uint64_t, bool>> attach(uint32_t seek)
	{
		ask({.cmd = Command::connect, .major = 2, .minor = 4, .type = 1});
		ask({.cmd = Command::create_session});
		const std::vector<uint8_t> r = ask({.cmd = Command::attach_session, .id = s->id, .seek = seek});
		EXPECT_EQ(live::get_be32(&r[0]), 1u);
		return streams_of(r);
	}
};

constexpr uint32_t kOk = 1, kRetry = 2, kHup = 3, kInactive = 5;

TEST(LiveViewer, IndexStatusesInOrder)
{
	Live l;
	l.stream(1, "c_0");
	EXPECT_TRUE(l.attach(live::kSeekBeginning).empty()); // no metadata yet: nothing to show
	l.metadata("stream { id = 5; };\n");
	const std::vector<uint8_t> ns = l.ask({.cmd = Command::get_new_streams, .id = l.s->id});
	const auto given = Live::streams_of(ns);
	ASSERT_EQ(given.size(), 2u);
	EXPECT_TRUE(given[0].second); // the metadata stream first
	const uint64_t data = given[1].first;

	Live::Index i = l.index(data);
	EXPECT_EQ(i.status, kRetry); // no packet, no beacon
	EXPECT_EQ(i.flags, live::kFlagNewMetadata);
	l.feed(cr::Beacon{.stream_id = 1, .timestamp = 500});
	i = l.index(data);
	EXPECT_EQ(i.status, kInactive);
	EXPECT_EQ(i.end, 500u);
	EXPECT_EQ(i.cls, 5u); // from the metadata: its only stream class
	const cr::Packet early{.stream_id = 1,
	                       .index = {.packet_size_bits = 512, .timestamp_begin = 450, .timestamp_end = 460},
	                       .bytes = {}};
	EXPECT_EQ(l.s->apply({.frame = early, .offset = 0, .size = 0, .packets = 0}, l.registry.next_id),
	          "stream c_0: a packet begins at 450, before its beacon at 500 (a live viewer given the beacon cannot "
	          "read it; said once per stream)");
	l.s->streams.at(1).entries.clear(); // (that one has no bytes on disk)
	l.stream(2, "c_1");
	const cr::Packet twin{.stream_id = 2,
	                      .index = {.packet_size_bits = 512, .timestamp_begin = 900, .timestamp_end = 910},
	                      .bytes = {}};
	EXPECT_EQ(l.s->apply({.frame = twin, .offset = 0, .size = 0, .packets = 0}, l.registry.next_id),
	          "stream c_1: packets of stream instance 0 (class 0) as another stream of its trace sent (a live "
	          "viewer takes them for one stream; said once per stream)");
	l.s->streams.erase(2);
	l.feed(cr::Beacon{.stream_id = 1, .timestamp = 500});
	l.packet(1, "c_0", 64, 600, 700);
	l.packet(1, "c_0", 32, 700, 800);
	l.feed(cr::Beacon{.stream_id = 1, .timestamp = 650}); // older than what it will have been given
	i = l.index(data);
	EXPECT_EQ(i.status, kOk);
	EXPECT_EQ(i.offset, 0u);
	EXPECT_EQ(i.size, 64u * 8);
	i = l.index(data);
	EXPECT_EQ(i.status, kOk);
	EXPECT_EQ(i.offset, 64u);
	i = l.index(data);
	EXPECT_EQ(i.status, kInactive);
	EXPECT_EQ(i.end, 800u); // never below the end of a packet given
	l.feed(cr::CloseStream{.stream_id = 1});
	EXPECT_EQ(l.index(data).status, kHup);

	// The metadata, then nothing new.
	LiveViewer::FileRange f;
	std::vector<uint8_t> m = l.ask({.cmd = Command::get_metadata, .id = given[0].first}, nullptr, &f);
	EXPECT_EQ(live::get_be64(&m[0]), 20u);
	EXPECT_EQ(f.size, 20u);
	m = l.ask({.cmd = Command::get_metadata, .id = given[0].first});
	EXPECT_EQ(live::get_be32(&m[8]), static_cast<uint32_t>(live::MetadataStatus::no_new));
}

TEST(LiveViewer, SeekLastAndPacketBounds)
{
	Live l;
	l.metadata("stream { id = 5; };\n");
	l.stream(1, "c_0");
	l.packet(1, "c_0", 64, 100, 200);
	const auto given = l.attach(live::kSeekLast);
	ASSERT_EQ(given.size(), 2u);
	const uint64_t data = given[1].first;
	EXPECT_EQ(l.index(data).status, kRetry); // the packet before the attach is not given
	l.packet(1, "c_0", 32, 200, 300);
	const Live::Index i = l.index(data);
	EXPECT_EQ(i.status, kOk);
	EXPECT_EQ(i.offset, 64u);

	LiveViewer::FileRange f;
	std::vector<uint8_t> r =
		l.ask({.cmd = Command::get_packet, .id = data, .offset = 70, .length = 26}, nullptr, &f);
	EXPECT_EQ(live::get_be32(&r[0]), static_cast<uint32_t>(live::PacketStatus::ok));
	EXPECT_EQ(f.offset, 70u);
	EXPECT_EQ(f.size, 26u);
	EXPECT_GE(f.fd, 0);
	std::string why;
	l.ask({.cmd = Command::get_packet, .id = data, .offset = 60, .length = 8}, &why); // across two packets
	EXPECT_EQ(why, "GET_PACKET of 8 bytes at 60 of stream " + std::to_string(data) +
	                       ": not inside a packet of its index");
	l.ask({.cmd = Command::get_packet, .id = data, .offset = 96, .length = 1}, &why); // past the last
	EXPECT_NE(why, "");
	l.ask({.cmd = Command::get_packet, .id = data + 100, .offset = 0, .length = 1}, &why);
	EXPECT_NE(why, "");
}

TEST(LiveViewer, TraceEmptiedIsGivenAgainWithItsMetadata)
{
	Live l;
	l.metadata("stream { id = 5; };\n");
	l.stream(1, "a_0");
	auto given = l.attach(live::kSeekBeginning);
	ASSERT_EQ(given.size(), 2u);
	l.packet(1, "a_0", 64, 100, 200);
	l.feed(cr::CloseStream{.stream_id = 1});
	EXPECT_EQ(l.index(given[1].first).status, kOk);
	EXPECT_EQ(l.index(given[1].first).status, kHup); // the trace's last stream: the viewer drops the trace
	l.stream(2, "b_0");
	// The first GET_NEW_STREAMS after that may come before the viewer dropped it: not given yet.
	std::vector<uint8_t> r = l.ask({.cmd = Command::get_new_streams, .id = l.s->id});
	EXPECT_EQ(live::get_be32(&r[0]), static_cast<uint32_t>(live::NewStreamsStatus::no_new));
	r = l.ask({.cmd = Command::get_new_streams, .id = l.s->id});
	given = Live::streams_of(r);
	ASSERT_EQ(given.size(), 2u);
	EXPECT_TRUE(given[0].second); // the metadata stream again ...
	LiveViewer::FileRange f;
	r = l.ask({.cmd = Command::get_metadata, .id = given[0].first}, nullptr, &f);
	EXPECT_EQ(f.offset, 0u);  // ... from its start,
	EXPECT_EQ(r.size(), 12u); // the file's own signature first (none added)
	l.feed(cr::Bye{});
	l.feed(cr::CloseStream{.stream_id = 2});
	EXPECT_EQ(l.index(given[1].first).status, kHup);
	r = l.ask({.cmd = Command::get_new_streams, .id = l.s->id});
	EXPECT_EQ(live::get_be32(&r[0]), static_cast<uint32_t>(live::NewStreamsStatus::hup));
}

// Each batch of metadata replies (up to NO_NEW) after the first begins with
// the signature (babeltrace2 2.0.4 reads a version there), then the file's
// bytes from where the last batch ended; a batch over several replies has it
// once.
TEST(LiveViewer, MetadataBatchesBeginWithTheSignature)
{
	Live l;
	const std::string head = "/* CTF 1.8 */\nstream { id = 5; };\n";
	l.metadata(head);
	l.stream(1, "c_0");
	const auto given = l.attach(live::kSeekBeginning);
	ASSERT_EQ(given.size(), 2u);
	const uint64_t meta = given[0].first;
	const auto get = [&](LiveViewer::FileRange *f) {
		*f = {};
		const std::vector<uint8_t> r = l.ask({.cmd = Command::get_metadata, .id = meta}, nullptr, f);
		EXPECT_GE(r.size(), 12u);
		return std::pair{live::get_be64(&r[0]), std::string(r.begin() + 12, r.end())};
	};
	LiveViewer::FileRange f;
	EXPECT_EQ(get(&f), std::pair(uint64_t{head.size()}, std::string())); // the file's own signature
	EXPECT_EQ(f.offset, 0u);
	EXPECT_EQ(get(&f).first, 0u); // NO_NEW: the batch is over

	const std::string events = "event { name = \"a\"; stream_id = 5; };\n";
	l.metadata(events);
	EXPECT_EQ(get(&f), std::pair(uint64_t{14 + events.size()}, std::string("/* CTF 1.8 */\n")));
	EXPECT_EQ(f.offset, head.size());
	EXPECT_EQ(f.size, events.size());
	l.metadata(events); // within the batch (no NO_NEW between): no signature
	EXPECT_EQ(get(&f), std::pair(uint64_t{events.size()}, std::string()));
	EXPECT_EQ(f.offset, head.size() + events.size());
	EXPECT_EQ(get(&f).first, 0u);
	EXPECT_EQ(get(&f).first, 0u); // NO_NEW again: still nothing to send

	// A batch larger than one reply: the signature on its first reply only, the
	// whole reply (signature included) at most kMaxMetadataReply.
	const std::string big(live::kMaxMetadataReply + 100, ' ');
	l.metadata(big);
	EXPECT_EQ(get(&f).first, live::kMaxMetadataReply);
	EXPECT_EQ(f.size, live::kMaxMetadataReply - 14);
	EXPECT_EQ(get(&f), std::pair(uint64_t{114}, std::string()));
	EXPECT_EQ(f.offset + f.size, head.size() + 2 * events.size() + big.size());
}

// Another viewer of the registry: CONNECT and CREATE_SESSION done.
std::unique_ptr<LiveViewer> connected(LiveRegistry &registry, const std::string &name, ViewerAccess access = {})
{
	auto v = std::make_unique<LiveViewer>(registry, name, std::move(access));
	std::vector<uint8_t> out;
	LiveViewer::FileRange f;
	EXPECT_EQ(v->handle({.cmd = Command::connect, .major = 2, .minor = 4, .type = 1}, out, &f), "");
	EXPECT_EQ(v->handle({.cmd = Command::create_session}, out, &f), "");
	return v;
}

// ATTACH_SESSION from v: its status, and why v is closed ("" if it is not).
std::pair<uint32_t, std::string> attach(const std::unique_ptr<LiveViewer> &v, uint64_t session,
                                        uint32_t seek = live::kSeekBeginning)
{
	std::vector<uint8_t> out;
	LiveViewer::FileRange f;
	std::string why = v->handle({.cmd = Command::attach_session, .id = session, .seek = seek}, out, &f);
	return {live::get_be32(&out[0]), why};
}

// The (hostname/name, viewers) of each session LIST_SESSIONS gives v.
std::vector<std::pair<std::string, uint32_t>> listed(const std::unique_ptr<LiveViewer> &v)
{
	std::vector<uint8_t> out;
	LiveViewer::FileRange f;
	EXPECT_EQ(v->handle({.cmd = Command::list_sessions}, out, &f), "");
	std::vector<std::pair<std::string, uint32_t>> got;
	const uint32_t count = live::decode_session_count({out.data(), live::kCountReplySize});
	EXPECT_EQ(out.size(), live::kCountReplySize + count * live::kSessionEntrySize);
	for (uint32_t i = 0; i < count; i++) {
		const live::SessionEntry e = live::decode_session_entry(
			{out.data() + live::kCountReplySize + i * live::kSessionEntrySize, live::kSessionEntrySize});
		got.emplace_back(e.hostname + "/" + e.name, e.clients);
	}
	return got;
}

TEST(LiveViewer, DetachLetsAnotherViewerAttach)
{
	Live l;
	l.metadata("stream { id = 5; };\n");
	l.stream(1, "c_0");
	const auto given = l.attach(live::kSeekBeginning);
	ASSERT_EQ(given.size(), 2u);
	EXPECT_EQ(l.s->viewers, 1u);
	std::vector<uint8_t> r = l.ask({.cmd = Command::detach_session, .id = l.s->id});
	EXPECT_EQ(live::get_be32(&r[0]), static_cast<uint32_t>(live::DetachStatus::ok));
	EXPECT_EQ(l.s->viewers, 0u);
	r = l.ask({.cmd = Command::detach_session, .id = l.s->id});
	EXPECT_EQ(live::get_be32(&r[0]), static_cast<uint32_t>(live::DetachStatus::unknown));
	std::string why;
	l.ask({.cmd = Command::get_next_index, .id = given[1].first}, &why); // no longer this viewer's
	EXPECT_NE(why, "");

	auto other = connected(l.registry, "other");
	EXPECT_EQ(attach(other, l.s->id, live::kSeekLast),
	          std::pair(static_cast<uint32_t>(live::AttachStatus::ok), std::string()));
}

TEST(LiveViewer, SeveralViewersEachFromItsOwnPosition)
{
	Live l;
	l.metadata("stream { id = 5; };\n");
	l.stream(1, "c_0");
	l.packet(1, "c_0", 64, 100, 200);
	const auto given = l.attach(live::kSeekBeginning);
	ASSERT_EQ(given.size(), 2u);
	auto other = connected(l.registry, "other");
	EXPECT_EQ(attach(other, l.s->id).first, static_cast<uint32_t>(live::AttachStatus::ok));
	EXPECT_EQ(l.s->viewers, 2u);
	EXPECT_EQ(listed(other), (std::vector<std::pair<std::string, uint32_t>>{{"h/s", 2}}));
	const auto other_index = [&] {
		std::vector<uint8_t> out;
		LiveViewer::FileRange f;
		EXPECT_EQ(other->handle({.cmd = Command::get_next_index, .id = given[1].first}, out, &f), "");
		return std::pair(live::get_be64(&out[0]), live::get_be32(&out[56]));
	};
	// The first viewer reads both packets; the other still gets the first one, then the second.
	l.packet(1, "c_0", 32, 200, 300);
	EXPECT_EQ(l.index(given[1].first).offset, 0u);
	EXPECT_EQ(l.index(given[1].first).offset, 64u);
	EXPECT_EQ(l.index(given[1].first).status, kRetry);
	EXPECT_EQ(other_index(), std::pair(uint64_t{0}, kOk));
	// One viewer detaching leaves the other where it was.
	l.ask({.cmd = Command::detach_session, .id = l.s->id});
	EXPECT_EQ(l.s->viewers, 1u);
	EXPECT_EQ(other_index(), std::pair(uint64_t{64}, kOk));
	EXPECT_EQ(other_index().second, kRetry);
	l.feed(cr::CloseStream{.stream_id = 1});
	EXPECT_EQ(other_index().second, kHup);
}

TEST(LiveViewer, ViewersPerSessionAreCapped)
{
	Live l;
	l.registry.max_viewers_per_session = 2;
	l.attach(live::kSeekLast);
	auto second = connected(l.registry, "second");
	EXPECT_EQ(attach(second, l.s->id).first, static_cast<uint32_t>(live::AttachStatus::ok));
	// The same viewer twice, and a third one: refused, closed, the others kept.
	EXPECT_EQ(attach(second, l.s->id), std::pair(static_cast<uint32_t>(live::AttachStatus::already),
	                                             "ATTACH_SESSION of session " + std::to_string(l.s->id) +
	                                                     ", which this viewer has attached already"));
	auto third = connected(l.registry, "third");
	EXPECT_EQ(attach(third, l.s->id),
	          std::pair(static_cast<uint32_t>(live::AttachStatus::already),
	                    "ATTACH_SESSION of session " + std::to_string(l.s->id) +
	                            ", which has 2 viewers already (the most a session may have)"));
	EXPECT_EQ(l.s->viewers, 2u);
	second.reset(); // a viewer that goes away (closed) leaves its place
	auto fourth = connected(l.registry, "fourth");
	EXPECT_EQ(attach(fourth, l.s->id).first, static_cast<uint32_t>(live::AttachStatus::ok));
	EXPECT_EQ(l.s->viewers, 2u);
}

TEST(LiveViewer, WhoSeesWhichSession)
{
	Live l; // h/s: public, sent by no identity
	const auto add = [&](const std::string &name, bool is_public, const std::string &identity) {
		auto s = std::make_shared<LiveSession>();
		s->id = l.registry.next_id++;
		s->hostname = "h";
		s->name = name;
		s->dir = l.tmp.path();
		s->public_live = is_public;
		s->identity = identity;
		l.registry.sessions.emplace(s->id, s);
		return s->id;
	};
	const uint64_t alice_private = add("alice-private", false, "alice");
	const uint64_t alice_public = add("alice-public", true, "alice");
	const uint64_t bob_private = add("bob-private", false, "bob");
	using List = std::vector<std::pair<std::string, uint32_t>>;

	auto plain = connected(l.registry, "plain");
	EXPECT_EQ(listed(plain), (List{{"h/s", 0}, {"h/alice-public", 0}}));
	EXPECT_EQ(attach(plain, alice_private),
	          std::pair(static_cast<uint32_t>(live::AttachStatus::unknown),
	                    "ATTACH_SESSION of session " + std::to_string(alice_private) +
	                            ", which this viewer may not see (not marked public)"));
	auto alice = connected(l.registry, "alice", {.plain = false, .identity = "alice"});
	EXPECT_EQ(listed(alice), (List{{"h/alice-private", 0}, {"h/alice-public", 0}}));
	EXPECT_EQ(attach(alice, alice_private).first, static_cast<uint32_t>(live::AttachStatus::ok));
	auto alice_again = connected(l.registry, "alice again", {.plain = false, .identity = "alice"});
	EXPECT_EQ(attach(alice_again, bob_private),
	          std::pair(static_cast<uint32_t>(live::AttachStatus::unknown),
	                    "ATTACH_SESSION of session " + std::to_string(bob_private) +
	                            ", which this viewer may not see (sent under another identity)"));
	auto bob = connected(l.registry, "bob", {.plain = false, .identity = "bob"});
	EXPECT_EQ(listed(bob), (List{{"h/bob-private", 0}}));
	EXPECT_EQ(attach(bob, alice_public).first, static_cast<uint32_t>(live::AttachStatus::unknown));
	// A session of a sender that did not authenticate: on the plain port only, if public.
	auto nobody = connected(l.registry, "nobody", {.plain = false, .identity = ""});
	EXPECT_EQ(listed(nobody), List{});
	EXPECT_EQ(attach(nobody, l.s->id).first, static_cast<uint32_t>(live::AttachStatus::unknown));
}

TEST(LiveViewer, IndexDroppedOnceSenderAndViewersAreGone)
{
	Live l;
	std::weak_ptr<LiveSession> index = l.s;
	l.attach(live::kSeekBeginning);
	auto other = connected(l.registry, "other");
	EXPECT_EQ(attach(other, l.s->id).first, static_cast<uint32_t>(live::AttachStatus::ok));
	// The sender goes: no longer listed, still read by its two viewers.
	l.registry.sessions.clear();
	l.s.reset();
	EXPECT_FALSE(index.expired());
	l.ask({.cmd = Command::detach_session, .id = index.lock()->id});
	EXPECT_FALSE(index.expired());
	EXPECT_EQ(index.lock()->viewers, 1u);
	other.reset(); // the last viewer vanishes
	EXPECT_TRUE(index.expired());
}

TEST(LiveViewer, RefusesOutOfOrder)
{
	Live l;
	std::string why;
	l.ask({.cmd = Command::list_sessions}, &why);
	EXPECT_EQ(why, "LIST_SESSIONS before CONNECT");
	auto other = connected(l.registry, "other");
	EXPECT_EQ(attach(other, 999), std::pair(static_cast<uint32_t>(live::AttachStatus::unknown),
	                                        std::string("ATTACH_SESSION of unknown session 999")));
}

} // namespace
} // namespace tracery::relay
