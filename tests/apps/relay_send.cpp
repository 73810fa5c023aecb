// tests/apps/relay_send.cpp — sends a Tracery trace directory to a
// tracery-relayd through control::relay::RelayConnection, as traceryd's relay
// sink will: HELLO, one TRACE, its metadata, one STREAM per stream file, each
// packet with its index fields read from its packet header and context
// (ctf/packet.hpp's layout), BEACONs, CLOSE_STREAM, then SYNC (the relay's
// count of packets written must be the count sent), BYE.
// For tests/relay_test.py and tests/relay_live_test.py:
//   relay-send HOST PORT TRACE_DIR HOSTNAME SESSION [TRACE_PATH] [--vanish-after N] [--half-frame]
//              [--stall-after N]
//              [--live PERIOD_MS [--interval MS] [--wait-go] [--idle-stream]
//               [--second-trace DIR PATH [--together]] [--split] [--notices] [--public-live]] [--key FILE]
//              [--ca FILE]
// Without --live: the metadata in two appends, then the stream files one
// after the other, each followed by a BEACON at its last time and CLOSE_STREAM.
// --vanish-after N: after N packets, sends half of the next one (with
// --half-frame) or nothing, then exits without BYE, as a dying sender.
// --stall-after N: after N packets, waits to be killed (live or not).
// --live PERIOD_MS: a live session (HELLO's live period), sent as a tracer
// would while tracing: the metadata whole, every stream declared, then (with
// --wait-go, once a line comes on stdin: a test starts its viewer first,
// beacons going on meanwhile) the packets of all streams in the order of their
// beginning times, one every --interval ms (default 10), each stream closed
// right after its last packet; every period a BEACON for each open stream at
// the time of the trace's next packet (no open stream has anything before).
// --idle-stream: one more stream, "idle_0", that never has a packet, only
// beacons. --second-trace DIR PATH: another program's trace (ran later),
// declared once half the packets of the first are sent (its streams idle
// until then), its packets after all those of the first; with --together,
// a program traced at the same time: declared with the first, the packets of
// both sent in the order of their beginning times. --split: from half
// way through the first trace's packets, each stream file goes on a new
// stream (FILE.2), declared three periods after all the first ones closed
// (programs that exit, then others that start, in one trace; with several
// streams whose packets overlap in time, the new ones may begin before the
// old ones ended, which a viewer refuses). --notices:
// prints each NOTICE of the relay on stderr. --public-live: HELLO marks the
// session public (served on the relay's plain lttng-live port). --key FILE:
// authenticates with the key of FILE (control/auth.hpp); --ca FILE: TLS, the
// relay's certificate checked with the CAs of FILE and HOST.
// Prints the relay's path of the session on stdout.
#include "base/byte_order.hpp"
#include "control/relay_connection.hpp"
#include "ctf/packet.hpp"

#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cr = tracery::control::relay;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path &p)
{
	std::ifstream f(p, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

[[noreturn]] void die(const std::string &why)
{
	std::fprintf(stderr, "relay-send: %s\n", why.c_str());
	std::exit(1);
}

void check(const std::string &why)
{
	if (!why.empty())
		die(why);
}

struct Packet {
	uint32_t trace = 0, stream = 0;
	cr::PacketIndex index;
	const uint8_t *data = nullptr;
	size_t size = 0;
};

// One trace directory: its metadata and its stream files' packets.
struct Source {
	uint32_t trace_id = 0;
	std::string path; // in the session
	std::string metadata;
	std::vector<std::string> names;           // stream file names, sorted
	std::vector<uint32_t> ids;                // their stream ids
	std::vector<std::string> bytes;           // their contents
	std::vector<std::vector<Packet>> packets; // per stream file
};

Source read_source(const fs::path &dir, uint32_t trace_id, const std::string &path, uint32_t first_stream)
{
	namespace b = tracery::base;
	Source s;
	s.trace_id = trace_id;
	s.path = path;
	s.metadata = slurp(dir / "metadata");
	for (const auto &e : fs::directory_iterator(dir))
		if (e.is_regular_file() && e.path().filename() != "metadata")
			s.names.push_back(e.path().filename().string());
	std::sort(s.names.begin(), s.names.end());
	s.bytes.reserve(s.names.size());
	for (const std::string &name : s.names) {
		s.ids.push_back(first_stream++);
		s.bytes.push_back(slurp(dir / name));
		const std::string &bytes = s.bytes.back();
		const auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
		std::vector<Packet> packets;
		for (size_t at = 0; at + tracery::ctf::kPacketPrefixSize <= bytes.size();) {
			const uint8_t *h = p + at;
			Packet k;
			k.trace = trace_id;
			k.stream = s.ids.back();
			k.index.stream_class_id = b::load_le<uint32_t>(h + 20);
			k.index.stream_instance_id = b::load_le<uint64_t>(h + 24);
			k.index.timestamp_begin = b::load_le<uint64_t>(h + 32);
			k.index.timestamp_end = b::load_le<uint64_t>(h + 40);
			k.index.content_size_bits = b::load_le<uint64_t>(h + tracery::ctf::kContentSizeOffset);
			k.index.packet_size_bits = b::load_le<uint64_t>(h + tracery::ctf::kPacketSizeOffset);
			k.index.packet_seq_num = b::load_le<uint64_t>(h + 64);
			k.index.events_discarded = b::load_le<uint64_t>(h + 72);
			k.data = h;
			k.size = k.index.packet_size_bits / 8;
			if (k.size == 0 || k.size > bytes.size() - at)
				die(name + ": a packet runs past the end of the file");
			at += k.size;
			packets.push_back(k);
		}
		s.packets.push_back(std::move(packets));
	}
	return s;
}

void declare(cr::RelayConnection &c, const Source &s)
{
	check(c.add_trace(s.trace_id, s.path));
	check(c.append_metadata(s.trace_id, s.metadata));
	for (size_t i = 0; i < s.names.size(); i++)
		check(c.add_stream(s.ids[i], s.trace_id, s.names[i]));
}

// The live mode: see the header comment.
struct Live {
	explicit Live(cr::RelayConnection &conn) : c(conn) {}
	cr::RelayConnection &c;
	long period_ms = 1000, interval_ms = 10;
	bool idle_stream = false, split = false, together = false;
	long stall_after = -1;
	static constexpr uint32_t kIdleId = 1000, kSplitId = 900;

	struct Open {
		uint32_t id;
		const Source *src;
	};
	std::vector<Open> open;
	std::chrono::steady_clock::time_point last_beacons = std::chrono::steady_clock::now();

	// The time before which `src` has nothing more: its next packet's beginning.
	static uint64_t progress(const Source &src, const std::vector<Packet> &order, size_t next)
	{
		for (size_t i = next; i < order.size(); i++)
			if (order[i].trace == src.trace_id)
				return order[i].index.timestamp_begin;
		uint64_t last = 0;
		for (const auto &ps : src.packets)
			if (!ps.empty())
				last = std::max(last, ps.back().index.timestamp_end);
		return last;
	}

	void beacons(const std::vector<Packet> &order, size_t next, bool force)
	{
		const auto now = std::chrono::steady_clock::now();
		if (!force && now - last_beacons < std::chrono::milliseconds(period_ms))
			return;
		last_beacons = now;
		for (const Open &o : open)
			check(c.beacon(o.id, progress(*o.src, order, next)));
	}

	// CLOSE_STREAM, if it is open.
	void close(uint32_t id)
	{
		const auto it = std::find_if(open.begin(), open.end(), [&](const Open &o) { return o.id == id; });
		if (it != open.end()) {
			check(c.close_stream(id));
			open.erase(it);
		}
	}

	// Beacons every period until a line comes on stdin.
	void wait_go(const std::vector<Packet> &order)
	{
		for (;;) {
			pollfd p{STDIN_FILENO, POLLIN, 0};
			if (::poll(&p, 1, static_cast<int>(period_ms)) != 0)
				break;
			beacons(order, 0, true);
		}
		char line[64];
		if (!std::fgets(line, sizeof line, stdin))
			die("stdin closed before the go");
	}

	void run(const Source &first, const Source *second, bool wait)
	{
		declare(c, first);
		for (uint32_t id : first.ids)
			open.push_back({id, &first});
		if (second && together) {
			declare(c, *second);
			for (uint32_t id : second->ids)
				open.push_back({id, second});
		}
		if (idle_stream) {
			check(c.add_stream(kIdleId, first.trace_id, "idle_0"));
			open.push_back({kIdleId, &first});
		}
		// Every packet, in the order a tracer would flush them.
		std::vector<Packet> order;
		for (const Source *s : {&first, second})
			if (s) {
				const size_t from = together ? 0 : order.size();
				for (const auto &ps : s->packets)
					order.insert(order.end(), ps.begin(), ps.end());
				std::stable_sort(order.begin() + static_cast<long>(from), order.end(),
				                 [](const Packet &a, const Packet &b) {
							 return a.index.timestamp_begin < b.index.timestamp_begin;
						 });
			}
		size_t first_count = 0;
		for (const auto &ps : first.packets)
			first_count += ps.size();
		// --split: from half way, the first trace's packets go on new streams (FILE.2), declared
		// only after the first ones all closed and a pause: per-process buffers of programs that
		// exit and others that start, in one trace.
		const size_t split_at = split ? first_count / 2 : order.size();
		for (size_t i = split_at; i < first_count; i++)
			order[i].stream = kSplitId + (order[i].stream - first.ids.front());
		std::vector<size_t> left(kIdleId + 1, 0);
		for (const Packet &p : order)
			left[p.stream]++;
		beacons(order, 0, true);
		if (wait)
			wait_go(order);
		for (size_t i = 0; i < order.size(); i++) {
			if (second && !together && i == first_count / 2) {
				declare(c, *second);
				for (uint32_t id : second->ids)
					open.push_back({id, second});
				beacons(order, i, true);
			}
			if (i == split_at) {
				for (uint32_t id : first.ids)
					close(id);
				std::this_thread::sleep_for(std::chrono::milliseconds(3 * period_ms));
				for (size_t k = 0; k < first.ids.size(); k++) {
					const uint32_t id = kSplitId + static_cast<uint32_t>(k);
					check(c.add_stream(id, first.trace_id, first.names[k] + ".2"));
					open.push_back({id, &first});
				}
			}
			if (static_cast<long>(i) == stall_after)
				for (;;)
					pause();
			std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
			const Packet &p = order[i];
			check(c.send_packet(p.stream, p.index, {p.data, p.size}));
			if (--left[p.stream] == 0)
				close(p.stream);
			beacons(order, i + 1, false);
			check(c.poll_notices());
		}
		beacons(order, order.size(), true);
		for (const Open &o : open)
			check(c.close_stream(o.id));
	}
};

} // namespace

int main(int argc, char **argv)
{
	std::vector<std::string> args;
	long vanish_after = -1, stall_after = -1, live_ms = 0, interval_ms = 10;
	bool half_frame = false, idle_stream = false, split = false, notices = false, wait = false, together = false,
	     public_live = false;
	std::string second_dir, second_path, key_file, ca_file;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "--vanish-after" && i + 1 < argc)
			vanish_after = std::atol(argv[++i]);
		else if (a == "--stall-after" && i + 1 < argc)
			stall_after = std::atol(argv[++i]);
		else if (a == "--half-frame")
			half_frame = true;
		else if (a == "--live" && i + 1 < argc)
			live_ms = std::atol(argv[++i]);
		else if (a == "--interval" && i + 1 < argc)
			interval_ms = std::atol(argv[++i]);
		else if (a == "--wait-go")
			wait = true;
		else if (a == "--idle-stream")
			idle_stream = true;
		else if (a == "--split")
			split = true;
		else if (a == "--notices")
			notices = true;
		else if (a == "--together")
			together = true;
		else if (a == "--public-live")
			public_live = true;
		else if (a == "--key" && i + 1 < argc)
			key_file = argv[++i];
		else if (a == "--ca" && i + 1 < argc)
			ca_file = argv[++i];
		else if (a == "--second-trace" && i + 2 < argc) {
			second_dir = argv[++i];
			second_path = argv[++i];
		} else
			args.push_back(a);
	}
	if (args.size() < 5 || args.size() > 6)
		die("usage: relay-send HOST PORT TRACE_DIR HOSTNAME SESSION [TRACE_PATH] [--vanish-after N] [--half-frame] "
		    "[--stall-after N] [--live PERIOD_MS [--interval MS] [--wait-go] [--idle-stream] "
		    "[--second-trace DIR PATH [--together]] [--split] [--notices] [--public-live]] [--key FILE] "
		    "[--ca FILE]");
	const std::string trace_path = args.size() == 6 ? args[5] : "ust/uid/1000/64-bit";
	const Source first = read_source(args[2], 1, trace_path, 1);

	cr::RelayConnection c;
	if (notices)
		c.on_notice = [](const cr::Notice &n) {
			std::fprintf(stderr, "relay-send: notice %d: %s\n", static_cast<int>(n.kind), n.text.c_str());
		};
	cr::ClientSecurity security;
	if (!key_file.empty()) {
		security.key.emplace();
		check(tracery::control::auth::load_key(key_file, &*security.key));
	}
	if (!ca_file.empty())
		check(tracery::control::tls::Context::client_from_file(ca_file, &security.tls));
	check(c.connect(args[0], static_cast<uint16_t>(std::atoi(args[1].c_str())), 5000, security));
	timespec now{};
	clock_gettime(CLOCK_REALTIME, &now);
	std::string relay_path;
	check(c.hello(cr::Hello{.creation_time_ns = static_cast<uint64_t>(now.tv_sec) * 1000000000u +
	                                            static_cast<uint64_t>(now.tv_nsec),
	                        .live_period_ns = static_cast<uint64_t>(live_ms) * 1000000u,
	                        .hostname = args[3],
	                        .session = args[4],
	                        .flags = public_live ? cr::kHelloPublicLive : 0},
	              &relay_path));
	std::printf("%s\n", relay_path.c_str());
	std::fflush(stdout);

	long sent = 0;
	if (live_ms > 0) {
		const Source second = second_dir.empty() ? Source{} : read_source(second_dir, 2, second_path, 500);
		Live live{c};
		live.period_ms = live_ms;
		live.interval_ms = interval_ms;
		live.idle_stream = idle_stream;
		live.split = split;
		live.together = together;
		live.stall_after = stall_after;
		live.run(first, second_dir.empty() ? nullptr : &second, wait);
		for (const Source *s : {&first, &second})
			for (const auto &ps : s->packets)
				sent += static_cast<long>(ps.size());
	} else {
		check(c.add_trace(1, trace_path));
		const size_t half = first.metadata.size() / 2;
		check(c.append_metadata(1, std::string_view(first.metadata).substr(0, half)));
		check(c.append_metadata(1, std::string_view(first.metadata).substr(half)));
		for (size_t f = 0; f < first.names.size(); f++) {
			const uint32_t stream_id = first.ids[f];
			check(c.add_stream(stream_id, 1, first.names[f]));
			uint64_t last_end = 0;
			for (const Packet &p : first.packets[f]) {
				if (sent == stall_after)
					for (;;)
						pause();
				if (sent == vanish_after) {
					if (half_frame) {
						std::vector<uint8_t> head;
						cr::append_packet_head(head, stream_id, p.index, p.size);
						head.insert(head.end(), p.data, p.data + p.size / 2);
						check(c.send_raw(head));
					}
					_exit(0); // no BYE, no close: the kernel closes the socket
				}
				check(c.send_packet(stream_id, p.index, {p.data, p.size}));
				++sent;
				last_end = p.index.timestamp_end;
			}
			check(c.beacon(stream_id, last_end));
			check(c.close_stream(stream_id));
		}
	}
	uint64_t written = 0;
	check(c.sync(&written, 60000));
	if (written != static_cast<uint64_t>(sent))
		die("the relay wrote " + std::to_string(written) + " packets of the " + std::to_string(sent) + " sent");
	check(c.bye());
	return 0;
}
