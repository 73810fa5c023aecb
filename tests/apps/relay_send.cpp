// tests/apps/relay_send.cpp — sends a Tracery trace directory to a
// tracery-relayd through control::relay::RelayConnection, as traceryd's relay
// sink will: HELLO, one TRACE, its metadata in two appends, one STREAM per
// stream file, each packet with its index fields read from its packet
// header and context (ctf/packet.hpp's layout), a BEACON, CLOSE_STREAM, then
// SYNC (the relay's count of packets written must be the count sent), BYE.
// For tests/relay_test.py:
//   relay-send HOST PORT TRACE_DIR HOSTNAME SESSION [TRACE_PATH] [--vanish-after N] [--half-frame]
//              [--stall-after N]
// --vanish-after N: after N packets, sends half of the next one (with
// --half-frame) or nothing, then exits without BYE, as a dying sender.
// --stall-after N: after N packets, waits to be killed.
// Prints the relay's path of the session on stdout.
#include "base/byte_order.hpp"
#include "control/relay_connection.hpp"
#include "ctf/packet.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
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

} // namespace

int main(int argc, char **argv)
{
	std::vector<std::string> args;
	long vanish_after = -1, stall_after = -1;
	bool half_frame = false;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "--vanish-after" && i + 1 < argc)
			vanish_after = std::atol(argv[++i]);
		else if (a == "--stall-after" && i + 1 < argc)
			stall_after = std::atol(argv[++i]);
		else if (a == "--half-frame")
			half_frame = true;
		else
			args.push_back(a);
	}
	if (args.size() < 5 || args.size() > 6)
		die("usage: relay-send HOST PORT TRACE_DIR HOSTNAME SESSION [TRACE_PATH] [--vanish-after N] [--half-frame]");
	const fs::path dir = args[2];
	const std::string trace_path = args.size() == 6 ? args[5] : "ust/uid/1000/64-bit";

	cr::RelayConnection c;
	check(c.connect(args[0], static_cast<uint16_t>(std::atoi(args[1].c_str()))));
	timespec now{};
	clock_gettime(CLOCK_REALTIME, &now);
	std::string relay_path;
	check(c.hello(cr::Hello{.creation_time_ns = static_cast<uint64_t>(now.tv_sec) * 1000000000u +
	                                            static_cast<uint64_t>(now.tv_nsec),
	                        .live_period_ns = 0,
	                        .hostname = args[3],
	                        .session = args[4]},
	              &relay_path));
	std::printf("%s\n", relay_path.c_str());
	std::fflush(stdout);
	check(c.add_trace(1, trace_path));
	const std::string metadata = slurp(dir / "metadata");
	const size_t half = metadata.size() / 2;
	check(c.append_metadata(1, std::string_view(metadata).substr(0, half)));
	check(c.append_metadata(1, std::string_view(metadata).substr(half)));

	std::vector<fs::path> files;
	for (const auto &e : fs::directory_iterator(dir))
		if (e.is_regular_file() && e.path().filename() != "metadata")
			files.push_back(e.path());
	std::sort(files.begin(), files.end());
	long sent = 0;
	uint32_t stream_id = 0;
	for (const auto &file : files) {
		++stream_id;
		check(c.add_stream(stream_id, 1, file.filename().string()));
		const std::string bytes = slurp(file);
		const auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
		uint64_t last_end = 0;
		for (size_t at = 0; at + tracery::ctf::kPacketPrefixSize <= bytes.size();) {
			namespace b = tracery::base;
			const uint8_t *h = p + at;
			cr::PacketIndex i;
			i.stream_class_id = b::load_le<uint32_t>(h + 20);
			i.stream_instance_id = b::load_le<uint64_t>(h + 24);
			i.timestamp_begin = b::load_le<uint64_t>(h + 32);
			i.timestamp_end = b::load_le<uint64_t>(h + 40);
			i.content_size_bits = b::load_le<uint64_t>(h + tracery::ctf::kContentSizeOffset);
			i.packet_size_bits = b::load_le<uint64_t>(h + tracery::ctf::kPacketSizeOffset);
			i.packet_seq_num = b::load_le<uint64_t>(h + 64);
			i.events_discarded = b::load_le<uint64_t>(h + 72);
			const size_t size = i.packet_size_bits / 8;
			if (size == 0 || size > bytes.size() - at)
				die(file.string() + ": a packet runs past the end of the file");
			if (sent == stall_after)
				for (;;)
					pause();
			if (sent == vanish_after) {
				if (half_frame) {
					std::vector<uint8_t> head;
					cr::append_packet_head(head, stream_id, i, size);
					head.insert(head.end(), h, h + size / 2);
					check(c.send_raw(head));
				}
				_exit(0); // no BYE, no close: the kernel closes the socket
			}
			check(c.send_packet(stream_id, i, {h, size}));
			++sent;
			last_end = i.timestamp_end;
			at += size;
		}
		check(c.beacon(stream_id, last_end));
		check(c.close_stream(stream_id));
	}
	uint64_t written = 0;
	check(c.sync(&written));
	if (written != static_cast<uint64_t>(sent))
		die("the relay wrote " + std::to_string(written) + " packets of the " + std::to_string(sent) + " sent");
	check(c.bye());
	return 0;
}
