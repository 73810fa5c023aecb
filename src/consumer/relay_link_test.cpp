// Unit tests of RelayLink (relay_link.hpp) against a relay played by the
// test on loopback (it decodes what the link sends with the protocol's
// decoder and answers HELLO and SYNC): producer threads queueing packets at
// once (the stress test of the send queue, run under ThreadSanitizer too:
// label tsan), every packet either delivered or refused back to its caller; a
// relay that goes away and comes back gets a new HELLO and the whole
// metadata again; a relay that is not there is a clear error; packets the
// link drops are counted, with their events when they were counted, which
// the stream's next packets carry as discarded events; a relay whose disk
// refuses gets no packets until it takes writes again, and at the end is
// asked to drop what it did not write, the events of which are counted; a
// rotation's traces are declared with their first packet or their archive,
// never when the rotation failed, and each archive names its chunk's traces.
#include "consumer/relay_link.hpp"
#include "consumer/relay_sink.hpp"
#include "consumer/sink.hpp"

#include "control/relay_protocol.hpp"
#include "ctf/packet.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tracery::consumer {
namespace {

namespace cr = control::relay;

// A relay on 127.0.0.1: one connection at a time; counts what it gets.
class FakeRelay {
public:
	FakeRelay()
	{
		listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		EXPECT_EQ(::bind(listen_, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
		EXPECT_EQ(::listen(listen_, 4), 0);
		socklen_t len = sizeof a;
		::getsockname(listen_, reinterpret_cast<sockaddr *>(&a), &len);
		port = ntohs(a.sin_port);
		thread_ = std::thread([this] { serve(); });
	}
	~FakeRelay()
	{
		stop_ = true;
		::shutdown(listen_, SHUT_RDWR);
		if (const int c = conn_.load(); c >= 0)
			::shutdown(c, SHUT_RDWR);
		thread_.join();
		::close(listen_);
	}
	// Waits (at most 10 s) until a BYE has been read: the link sends it and
	// closes, the relay reads it on its own thread.
	void wait_for_bye()
	{
		for (int i = 0; i < 1000; i++) {
			{
				const std::lock_guard lock(mutex);
				if (byes > 0)
					return;
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		}
	}
	// Sends a NOTICE on the current connection.
	void notice(const cr::Notice &n)
	{
		const std::lock_guard lock(mutex);
		if (const int c = conn_.load(); c >= 0)
			reply(c, n);
	}
	// Ends the current connection (as a relay that dies would).
	void drop_connection()
	{
		if (const int c = conn_.load(); c >= 0)
			::shutdown(c, SHUT_RDWR);
	}

	uint16_t port = 0;
	std::mutex mutex;
	uint64_t packets = 0, hellos = 0, beacons = 0, closes = 0, byes = 0;
	// Set before the link connects: NOTICEs sent after each HELLO reply;
	// whether to close the connection right after it (a relay that fails at once).
	std::vector<cr::Notice> notices_after_hello;
	bool close_after_hello = false;
	// Set before the link connects: the packets it writes; those after are
	// held (a disk that refuses: NOTICE write_failed, SYNCs not answered)
	// until DROP_UNWRITTEN, answered with the packets written.
	uint64_t write_limit = UINT64_MAX;
	uint64_t held = 0, drops = 0, after_drop = 0;
	std::map<uint64_t, std::string> metadata; // by connection (hello count)
	std::vector<std::string> traces;          // "PATH" of each TRACE, "ARCHIVE PATH" of each ARCHIVE_TRACE
	std::map<uint32_t, std::string> trace_paths;
	std::map<std::string, std::string> trace_metadata; // by path
	std::vector<cr::Packet> got;                       // the first packets
	std::vector<std::string> errors;

private:
	void serve()
	{
		while (!stop_) {
			const int c = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
			if (c < 0)
				return;
			conn_ = c;
			talk(c);
			conn_ = -1;
			::close(c);
		}
	}
	void reply(int c, const cr::Frame &f)
	{
		const auto b = cr::encode(f);
		if (::send(c, b.data(), b.size(), MSG_NOSIGNAL) < 0)
			return;
	}
	void talk(int c)
	{
		cr::Decoder d;
		uint8_t buf[65536];
		uint64_t written = 0;
		for (;;) {
			const ssize_t n = ::recv(c, buf, sizeof buf, 0);
			if (n <= 0)
				return;
			d.feed({buf, static_cast<size_t>(n)});
			cr::Frame f;
			cr::Decoder::Status st;
			while ((st = d.next(f)) == cr::Decoder::Status::frame) {
				const std::lock_guard lock(mutex);
				if (drops > 0) {
					after_drop++;
				} else if (const auto *drop = std::get_if<cr::DropUnwritten>(&f)) {
					drops++;
					reply(c, cr::SyncReply{drop->token, written});
				} else if (std::holds_alternative<cr::Packet>(f) && written == write_limit) {
					if (held++ == 0)
						reply(c, cr::Notice{cr::NoticeKind::write_failed, "disk full"});
				} else if (std::holds_alternative<cr::Sync>(f) && held > 0) {
					// answered once written: never, here
				} else if (std::holds_alternative<cr::Hello>(f)) {
					hellos++;
					reply(c, cr::HelloReply{true, "testhost/s-" + std::to_string(hellos)});
					for (const cr::Notice &n : notices_after_hello)
						reply(c, n);
					if (close_after_hello)
						return;
				} else if (const auto *m = std::get_if<cr::Metadata>(&f)) {
					metadata[hellos] += m->text;
					trace_metadata[trace_paths[m->trace_id]] += m->text;
				} else if (const auto *t = std::get_if<cr::Trace>(&f)) {
					traces.push_back(t->path);
					trace_paths[t->id] = t->path;
				} else if (const auto *a = std::get_if<cr::ArchiveTrace>(&f)) {
					traces.push_back(a->archive + " " + trace_paths[a->trace_id]);
				} else if (const auto *p = std::get_if<cr::Packet>(&f)) {
					packets++;
					written++;
					if (got.size() < 16)
						got.push_back(*p);
				} else if (std::holds_alternative<cr::Beacon>(f)) {
					beacons++;
				} else if (std::holds_alternative<cr::CloseStream>(f)) {
					closes++;
				} else if (const auto *s = std::get_if<cr::Sync>(&f)) {
					reply(c, cr::SyncReply{s->token, written});
				} else if (std::holds_alternative<cr::Bye>(f)) {
					byes++;
				}
			}
			if (st == cr::Decoder::Status::error) {
				const std::lock_guard lock(mutex);
				errors.push_back(d.error());
				return;
			}
		}
	}

	int listen_ = -1;
	std::atomic<int> conn_{-1};
	std::atomic<bool> stop_{false};
	std::thread thread_;
};

RelayLinkConfig config(uint16_t port, size_t queue_bytes)
{
	RelayLinkConfig c;
	c.host = "127.0.0.1";
	c.port = port;
	// Constructed, not assigned: GCC 12 -O3 warns falsely (-Wrestrict, bug 105651) on assigning "s".
	c.hello = cr::Hello{.creation_time_ns = 1, .hostname = "testhost", .session = "s"};
	c.queue_bytes = queue_bytes;
	return c;
}

cr::PacketIndex index_of(size_t bytes, uint64_t seq)
{
	cr::PacketIndex i;
	i.packet_size_bits = i.content_size_bits = bytes * 8;
	i.packet_seq_num = seq;
	return i;
}

TEST(RelayLink, ConcurrentProducersEveryPacketDeliveredOrCounted)
{
	FakeRelay relay;
	// A small queue: the producers fill it faster than loopback drains it, so some packets are refused.
	RelayLink link(config(relay.port, 256 * 1024));
	ASSERT_EQ(link.open(2000), "");
	const uint32_t trace = link.add_trace("ust");
	link.append_metadata(trace, "/* CTF 1.8 */\n");
	constexpr int kThreads = 4, kPackets = 2000;
	std::vector<uint32_t> streams;
	for (int t = 0; t < kThreads; t++)
		streams.push_back(link.add_stream(trace, "chan_" + std::to_string(t)));
	std::atomic<uint64_t> accepted{0}, refused{0};
	std::atomic<uint64_t> streams_used{0}; // a stream none of whose packets was queued is never declared
	EXPECT_EQ(link.streams_started(), 0u);
	std::vector<std::thread> producers;
	for (int t = 0; t < kThreads; t++) {
		producers.emplace_back([&, t] {
			std::vector<uint8_t> events(4000, static_cast<uint8_t>(t));
			const uint8_t head[84] = {};
			uint64_t mine = 0;
			for (int i = 0; i < kPackets; i++) {
				switch (link.send_packet(streams[t], index_of(sizeof head + events.size(), i), head,
				                         events)) {
				case RelayLink::Sent::queued:
					mine++;
					break;
				case RelayLink::Sent::full:
					refused++; // the caller's to offer again: a RelaySink's consumer does
					break;
				case RelayLink::Sent::dropped:
					break;
				}
				if (i % 100 == 0)
					link.beacon(streams[t], static_cast<uint64_t>(i));
				if (i % 8 == 0) // bursts, as sub-buffers come: the sender drains some between them
					std::this_thread::sleep_for(std::chrono::microseconds(50));
			}
			link.close_stream(streams[t]);
			accepted += mine;
			streams_used += mine > 0;
		});
	}
	for (auto &p : producers)
		p.join();
	EXPECT_EQ(link.flush(10000), "");
	const RelayLink::Counts c = link.counts();
	EXPECT_EQ(c.packets_sent, accepted.load());
	EXPECT_EQ(c.packets_dropped, 0u); // none larger than the queue
	EXPECT_EQ(c.packets_sent + refused.load(), uint64_t{kThreads} * kPackets);
	EXPECT_EQ(c.packets_confirmed, c.packets_sent);
	EXPECT_EQ(c.packets_unconfirmed, 0u);
	EXPECT_EQ(c.packets_queued, 0u);
	EXPECT_EQ(c.bytes_queued, 0u);
	EXPECT_EQ(link.bye(5000), "");
	relay.wait_for_bye();
	const std::lock_guard lock(relay.mutex);
	EXPECT_EQ(relay.packets, accepted.load());
	EXPECT_EQ(relay.closes, streams_used.load());
	EXPECT_EQ(link.streams_started(), streams_used.load()); // each stream counted once, when first queued
	EXPECT_GT(accepted.load(), 0u);                         // how many depends on the machine's load
	EXPECT_EQ(relay.byes, 1u);
	EXPECT_TRUE(relay.errors.empty());
}

TEST(RelaySink, DroppedPacketsCountedWithTheirEventsWhereKnown)
{
	FakeRelay relay;
	auto link = std::make_shared<RelayLink>(config(relay.port, 1024));
	ASSERT_EQ(link->open(2000), "");
	const uint32_t trace = link->add_trace("kernel");
	link->append_metadata(trace, "/* CTF 1.8 */\n");
	RelaySink sink(link, trace, StreamNames{"chan", 0, 0, {}}, 1);
	const std::vector<uint8_t> big(2000, 1), small(16, 2);
	ctf::PacketInfo info{};
	info.events_discarded = 3;
	info.events = 7;                                    // a kernel packet: counted
	sink.write_packet(0, info, big.data(), big.size()); // more than the queue holds: dropped
	info.seq = 1;
	info.events = ctf::kEventsUnknown; // a user packet
	sink.write_packet(0, info, big.data(), big.size());
	info.seq = 2;
	info.events = 2;
	info.events_discarded = 4; // one more lost by the buffer meanwhile
	sink.write_packet(0, info, small.data(), small.size());
	EXPECT_EQ(link->flush(5000), "");
	const RelayLink::Counts c = link->counts();
	EXPECT_EQ(c.packets_sent, 1u);
	EXPECT_EQ(c.packets_dropped, 2u);
	EXPECT_EQ(c.bytes_dropped, 2 * (ctf::kPacketPrefixSize + big.size()));
	EXPECT_EQ(c.packets_dropped_counted, 1u);
	EXPECT_EQ(c.events_dropped, 7u);
	EXPECT_EQ(link->bye(5000), "");
	relay.wait_for_bye();
	const std::lock_guard lock(relay.mutex);
	ASSERT_EQ(relay.got.size(), 1u);
	// The packet sent says 4 lost by the buffer and 7 by the link, in its index and its context.
	const cr::Packet &p = relay.got[0];
	EXPECT_EQ(p.index.events_discarded, 11u);
	EXPECT_EQ(p.index.packet_seq_num, 2u); // readers see the gap of the two dropped
	ASSERT_EQ(p.bytes.size(), ctf::kPacketPrefixSize + small.size());
	EXPECT_EQ(base::load_le<uint64_t>(p.bytes.data() + 72), 11u);
}

TEST(RelayLink, ReconnectsWithANewHelloAndTheWholeMetadata)
{
	FakeRelay relay;
	RelayLink link(config(relay.port, 1 << 20));
	ASSERT_EQ(link.open(2000), "");
	const uint32_t trace = link.add_trace("ust");
	link.append_metadata(trace, "first;");
	RelaySink sink(std::shared_ptr<RelayLink>(&link, [](RelayLink *) {}), trace, {"chan", 0, 0, {}}, 2);
	const std::vector<uint8_t> events(100, 1);
	ctf::PacketInfo info;
	sink.write_packet(0, info, events.data(), events.size());
	ASSERT_EQ(link.flush(5000), "");
	relay.drop_connection();
	link.append_metadata(trace, "second;");
	// The link notices (a read or a send fails), connects again after its delay.
	for (int i = 0; i < 200 && link.counts().connections < 2; i++) {
		info.seq++;
		sink.write_packet(1, info, events.data(), events.size());
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
	ASSERT_EQ(link.flush(5000), "");
	sink.close();
	const RelayLink::Counts c = link.counts();
	EXPECT_GE(c.connections, 2u);
	EXPECT_TRUE(c.connected);
	EXPECT_EQ(c.relay_path, "testhost/s-" + std::to_string(c.connections));
	EXPECT_EQ(c.packets_sent, c.packets_confirmed + c.packets_unconfirmed);
	EXPECT_EQ(link.bye(5000), "");
	relay.wait_for_bye();
	const std::lock_guard lock(relay.mutex);
	EXPECT_EQ(relay.metadata[1].substr(0, 6), "first;");
	EXPECT_EQ(relay.metadata[relay.hellos], "first;second;");
	EXPECT_TRUE(relay.errors.empty());
}

TEST(RelayLink, ChunkTracesDeclaredWhenUsedNeverWhenTheirRotationFailed)
{
	FakeRelay relay;
	RelayLink link(config(relay.port, 1 << 20));
	ASSERT_EQ(link.open(2000), "");
	const uint32_t first = link.add_trace("ust");
	link.append_metadata(first, "a;");
	// A rotation that failed after the trace moved: it goes back, given what was added meanwhile.
	const uint32_t failed = link.continue_trace(first, "T-1/ust");
	link.append_metadata(failed, "b;");
	EXPECT_EQ(link.discontinue(failed), first);
	// The next rotation, to the same path (within the same second): declared with its first packet.
	const uint32_t next = link.continue_trace(first, "T-1/ust");
	link.append_metadata(next, "c;");
	ASSERT_EQ(link.flush(5000), "");
	const auto traces = [&] {
		const std::lock_guard lock(relay.mutex);
		return relay.traces;
	};
	EXPECT_EQ(traces(), std::vector<std::string>{"ust"});
	RelaySink sink(std::shared_ptr<RelayLink>(&link, [](RelayLink *) {}), next, {"chan", 0, 0, {}}, 1);
	const std::vector<uint8_t> events(100, 1);
	sink.write_packet(0, ctf::PacketInfo{}, events.data(), events.size());
	sink.close();
	link.archive_chunk("", "A-0");
	ASSERT_EQ(link.flush(5000), "");
	EXPECT_EQ(traces(), (std::vector<std::string>{"ust", "T-1/ust", "A-0 ust"}));
	// A chunk without a packet is declared to be archived.
	link.continue_trace(next, "T-2/ust");
	link.archive_chunk("T-1", "A-1");
	ASSERT_EQ(link.flush(5000), "");
	link.archive_chunk("T-2", "A-2");
	ASSERT_EQ(link.bye(5000), "");
	relay.wait_for_bye();
	const std::lock_guard lock(relay.mutex);
	EXPECT_EQ(relay.traces,
	          (std::vector<std::string>{"ust", "T-1/ust", "A-0 ust", "A-1 T-1/ust", "T-2/ust", "A-2 T-2/ust"}));
	// Each trace whole: the event classes given to its successor before it was archived too.
	EXPECT_EQ(relay.trace_metadata, (std::map<std::string, std::string>{
						{"ust", "a;b;c;"}, {"T-1/ust", "a;b;c;"}, {"T-2/ust", "a;b;c;"}}));
	EXPECT_EQ(relay.packets, 1u);
	EXPECT_TRUE(relay.errors.empty());
}

TEST(RelaySink, FullQueueRefusesThePacketWhichIsTakenOnceThereIsRoom)
{
	FakeRelay relay;
	relay.notices_after_hello = {{cr::NoticeKind::write_failed, "disk full writing testhost/s-1/ust/chan_0"}};
	auto link = std::make_shared<RelayLink>(config(relay.port, 3000));
	// Queued before the sender thread runs: nothing drains the queue yet.
	const uint32_t trace = link->add_trace("ust");
	link->append_metadata(trace, "/* CTF 1.8 */\n");
	RelaySink sink(link, trace, StreamNames{"chan", 0, 0, {}}, 1);
	const std::vector<uint8_t> events(2000, 1);
	ctf::PacketInfo info{};
	sink.write_packet(0, info, events.data(), events.size());
	info.seq = 1;
	std::string why;
	try {
		sink.write_packet(0, info, events.data(), events.size());
	} catch (const WriteRefused &e) {
		why = e.what();
	}
	EXPECT_EQ(why, "the relay at 127.0.0.1:" + std::to_string(relay.port) +
	                       " is not connected () and the queue of packets for it is full");
	EXPECT_EQ(link->counts().packets_dropped, 0u);
	// The relay connects and says its disk refuses writes; then the queue drains and the packet is taken.
	ASSERT_EQ(link->open(2000), "");
	for (int i = 0; i < 500 && link->counts().relay_write_error.empty(); i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	EXPECT_EQ(link->counts().relay_write_error, "disk full writing testhost/s-1/ust/chan_0");
	// Nothing is sent while the relay's disk refuses (the queued packet may
	// have gone between the relay's HELLO reply and its notice).
	const uint64_t sent_before_notice = link->counts().packets_sent;
	EXPECT_LE(sent_before_notice, 1u);
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	EXPECT_EQ(link->counts().packets_sent, sent_before_notice);
	relay.notice({cr::NoticeKind::write_resumed, "writes again"});
	for (int i = 0; i < 500; i++) {
		try {
			sink.write_packet(0, info, events.data(), events.size());
			break;
		} catch (const WriteRefused &e) {
			why = e.what();
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		}
	}
	EXPECT_EQ(link->flush(5000), "");
	const RelayLink::Counts c = link->counts();
	EXPECT_EQ(c.packets_sent, 2u);
	EXPECT_EQ(c.packets_dropped, 0u);
	EXPECT_EQ(link->bye(5000), "");
	relay.wait_for_bye();
	const std::lock_guard lock(relay.mutex);
	ASSERT_EQ(relay.got.size(), 2u);
	EXPECT_EQ(relay.got[1].index.packet_seq_num, 1u); // no gap: nothing was dropped
}

TEST(RelayLink, RelayFailingAtOnceGetsNoReconnectStorm)
{
	FakeRelay relay;
	relay.close_after_hello = true;
	RelayLink link(config(relay.port, 1 << 20));
	ASSERT_EQ(link.open(2000), "");
	// Each connection dies at once: the delays grow (200 ms, 800 ms, 3.2 s...) instead of starting again.
	std::this_thread::sleep_for(std::chrono::milliseconds(2500));
	const std::lock_guard lock(relay.mutex);
	EXPECT_GE(relay.hellos, 2u);
	EXPECT_LE(relay.hellos, 3u);
}

TEST(RelayLink, NoRelayIsAClearError)
{
	uint16_t port = 0;
	{
		FakeRelay gone; // a port that was free a moment ago
		port = gone.port;
	}
	RelayLink link(config(port, 1 << 20));
	const std::string why = link.open(1000);
	EXPECT_NE(why.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << why;
	EXPECT_NE(why.find("refused"), std::string::npos) << why;
}

// A relay whose disk refuses after its second packet: the link stops
// sending, and flush() (the session's end) drops what is queued and asks
// the relay to drop what it did not write; every event is counted once,
// written, not sent or not written.
TEST(RelayLink, RelayDiskFullAtTheEndCountsEveryEvent)
{
	FakeRelay relay;
	relay.write_limit = 2;
	RelayLink link(config(relay.port, 1 << 20));
	ASSERT_EQ(link.open(2000), "");
	const uint32_t trace = link.add_trace("kernel");
	link.append_metadata(trace, "/* CTF 1.8 */\n");
	const uint32_t stream = link.add_stream(trace, "chan_0");
	const std::vector<uint8_t> events(1000, 5);
	const uint8_t head[84] = {};
	uint64_t all = 0, written = 0;
	for (uint64_t i = 0; i < 40; i++) {
		ASSERT_EQ(link.send_packet(stream, index_of(sizeof head + events.size(), i), head, events, i + 1),
		          RelayLink::Sent::queued);
		all += i + 1;
		written += i < 2 ? i + 1 : 0;
		if (i == 2) // the link reads the relay's NOTICE: the packets after wait in the queue
			for (int w = 0; w < 500 && link.counts().relay_write_error.empty(); w++)
				std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	EXPECT_EQ(link.counts().relay_write_error, "disk full");
	const std::string why = link.flush(10000);
	const RelayLink::Counts c = link.counts();
	EXPECT_GE(c.packets_not_written, 1u);
	EXPECT_EQ(c.packets_sent, 2 + c.packets_not_written);
	EXPECT_EQ(c.packets_sent + c.packets_dropped, 40u);
	EXPECT_EQ(c.packets_not_written_uncounted, 0u);
	EXPECT_EQ(c.packets_dropped_counted, c.packets_dropped);
	EXPECT_EQ(written + c.events_not_written + c.events_dropped, all);
	EXPECT_EQ(c.packets_confirmed, 2u);
	EXPECT_EQ(c.packets_unconfirmed, 0u);
	EXPECT_EQ(c.packets_queued, 0u);
	EXPECT_FALSE(c.connected);
	EXPECT_EQ(why, "the relay's disk refused writes (disk full) as the session ended: " +
	                       std::to_string(c.packets_not_written) + " packets sent holding " +
	                       std::to_string(c.events_not_written) + " events were not written, and " +
	                       std::to_string(c.packets_dropped) + " packets queued holding " +
	                       std::to_string(c.events_dropped) + " events were not sent");
	// The end is counted: nothing more to confirm, no BYE to a relay that closed.
	EXPECT_EQ(link.flush(1000), "");
	EXPECT_EQ(link.bye(1000), "");
	const std::lock_guard lock(relay.mutex);
	EXPECT_EQ(relay.packets, 2u);
	EXPECT_EQ(relay.held, c.packets_not_written);
	EXPECT_EQ(relay.drops, 1u);
	EXPECT_EQ(relay.after_drop, 0u);
	EXPECT_EQ(relay.hellos, 1u);
	EXPECT_TRUE(relay.errors.empty());
}

} // namespace
} // namespace tracery::consumer
