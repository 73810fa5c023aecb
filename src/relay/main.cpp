// relay/main.cpp — tracery-relayd: receives sessions from traceryd over TCP (or a serial line)
// (docs/relay-protocol.md), writes them as CTF traces under --output, and
// serves the live ones to lttng-live viewers: babeltrace2 net:// on --live-port
// (the sessions marked public), tracery view --live on --viewer-port (authenticated).
//   tracery-relayd [--listen ADDR] [--port P] [--live-listen ADDR] [--live-port P] [--viewer-port P]
//                  [--output DIR] [--daemonize] [--memory-budget SIZE] [--frame-timeout SECONDS]
//                  [--auth-keys FILE] [--tls-cert FILE --tls-key FILE] [--allow-unauthenticated]
//                  [--max-sessions-per-sender N] [--max-dirs-per-sender N]
//                  [--serial DEVICE [--serial-baud N] [--serial-rtscts]]
//                  [--clickhouse URL [--table-prefix P] [--clickhouse-queue SIZE]]
#include "base/parse_command_line.hpp"
#include "base/sizes.hpp"
#include "control/version.hpp"
#include "relay/clickhouse_sink.hpp"
#include "relay/relay_server.hpp"
#include "relay/serial_receiver.hpp"

#include <CLI/CLI.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

namespace {

// Where the serial line's sessions connect: the sender port's address, or
// loopback for an any-address one.
std::string loopback_of(const std::string &listen)
{
	if (listen == "0.0.0.0")
		return "127.0.0.1";
	if (listen == "::" || listen == "[::]")
		return "::1";
	return listen;
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{
		"tracery-relayd: receives traced sessions over TCP, writes them as CTF traces, serves live ones to "
		"lttng-live viewers",
		"tracery-relayd"};
	app.set_version_flag("--version", tracery::control::version_line("tracery-relayd", TRACERY_VERSION),
	                     "Print the version and exit");
	tracery::relay::ServerOptions opt;
	std::string output;
	bool daemonize = false;
	app.add_option("--listen", opt.listen, "address to listen on (IPv4 or IPv6)")->capture_default_str();
	app.add_option("--port", opt.port, "port senders connect to (0: any free one, logged)")->capture_default_str();
	app.add_option("--live-port", opt.live_port,
	               "plain lttng-live port (babeltrace2 net://; 0: any free one, logged): serves only the "
	               "sessions their senders marked public (tracery create --public-live)")
		->capture_default_str();
	app.add_option("--viewer-port", opt.viewer_port,
	               "authenticated viewer port (tracery view --live --key FILE; 0: any free one, logged), on "
	               "--listen, with --auth-keys only: each viewer sees the live sessions sent with its key's name, "
	               "through TLS when --tls-cert is given")
		->capture_default_str();
	app.add_option("--live-listen", opt.live_listen,
	               "address of the plain lttng-live port, which has no authentication: beyond loopback, "
	               "whoever reaches it reads the public sessions")
		->capture_default_str();
	app.add_option("--output", output, "directory the sessions go under (default: $HOME/tracery-relayd)");
	std::string budget = "512M";
	app.add_option("--memory-budget", budget,
	               "all the relay holds from senders (frames arriving and queued for the disk): 512M, 1G, ...; "
	               "a sender whose read does not fit waits its turn")
		->capture_default_str();
	double frame_timeout_s = opt.frame_timeout_ms / 1000.0;
	app.add_option("--frame-timeout", frame_timeout_s,
	               "seconds a sender has to complete a frame once its header came; then it is closed")
		->check(CLI::Range(0.1, 3600.0))
		->capture_default_str();
	app.add_flag("--daemonize", daemonize, "run in the background (log lines still go to stderr)");
	std::string keys_file, tls_cert, tls_key;
	auto &senders = opt.senders;
	app.add_option("--auth-keys", keys_file,
	               "senders authenticate with a key of this file (lines `NAME SECRET`, the secret in hex; "
	               "mode 600); required to listen beyond loopback");
	auto *cert = app.add_option("--tls-cert", tls_cert,
	                            "senders connect with TLS: the relay's certificate "
	                            "chain (PEM)");
	auto *key = app.add_option("--tls-key", tls_key, "the private key of --tls-cert (PEM)");
	cert->needs(key);
	key->needs(cert);
	app.add_flag("--allow-unauthenticated", senders.allow_unauthenticated,
	             "take senders without a key too, even beyond loopback (counted by their address)");
	app.add_option("--max-sessions-per-sender", senders.max_sessions_per_sender,
	               "sessions one sender (key, or address) may have open at once")
		->capture_default_str()
		->check(CLI::Range(size_t{1}, size_t{1u << 20}));
	app.add_option("--max-dirs-per-sender", senders.max_dirs_per_sender,
	               "session directories one sender may make per hour (each HELLO, reconnections too)")
		->capture_default_str()
		->check(CLI::Range(size_t{1}, size_t{1u << 20}));
	tracery::control::serial::LineSettings serial;
	app.add_option("--serial", serial.device,
	               "also take sessions over this serial line (tracery create --set-url serial://DEVICE): "
	               "raw 8N1, opened again when it fails");
	app.add_option("--serial-baud", serial.baud, "the serial line's baud rate")
		->capture_default_str()
		->check([](const std::string &v) {
			return tracery::control::serial::supported_baud(
				       static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10)))
		                       ? std::string()
		                       : std::string("not a baud rate of 9600 to 3000000 that termios knows");
		});
	app.add_flag("--serial-rtscts", serial.rtscts, "RTS/CTS hardware flow control on the serial line");
	tracery::relay::ClickHouseSinkOptions clickhouse;
	std::string clickhouse_queue = "64M";
	auto *ch = app.add_option("--clickhouse", clickhouse.url,
	                          "also insert each session's events into ClickHouse as they come "
	                          "(http://HOST:8123/DATABASE; the tables of tracery export --format clickhouse)");
	app.add_option("--table-prefix", clickhouse.table_prefix, "with --clickhouse: before each table's name")
		->needs(ch);
	app.add_option("--clickhouse-queue", clickhouse_queue,
	               "with --clickhouse: packets waiting to be inserted, all sessions; beyond, packets are "
	               "dropped from ClickHouse (not from the disk) and counted")
		->needs(ch)
		->capture_default_str();
	if (const auto status = tracery::base::parse_command_line(app, argc, argv))
		return *status;
	if (!serial.device.empty()) {
		if (const std::string why = tracery::control::serial::device_error(serial.device); !why.empty()) {
			std::fprintf(stderr, "tracery-relayd: --serial %s: %s\n", serial.device.c_str(), why.c_str());
			return 1;
		}
		if (!tls_cert.empty()) {
			std::fprintf(stderr,
			             "tracery-relayd: --serial takes senders in clear and --tls-cert refuses them: "
			             "drop --tls-cert (TLS is not used over a serial line), or run a relay for each\n");
			return 1;
		}
	}
	const auto budget_bytes = tracery::base::parse_size(budget);
	if (!budget_bytes || *budget_bytes > SIZE_MAX) {
		std::fprintf(stderr, "tracery-relayd: --memory-budget %s: not a size (512M, 1G, ...)\n",
		             budget.c_str());
		return 1;
	}
	opt.memory_budget = static_cast<size_t>(*budget_bytes);
	const auto queue_bytes = tracery::base::parse_size(clickhouse_queue);
	if (!queue_bytes || *queue_bytes == 0 || *queue_bytes > SIZE_MAX) {
		std::fprintf(stderr, "tracery-relayd: --clickhouse-queue %s: not a size (64M, 1G, ...)\n",
		             clickhouse_queue.c_str());
		return 1;
	}
	clickhouse.queue_bytes = static_cast<size_t>(*queue_bytes);
	opt.frame_timeout_ms = static_cast<int>(frame_timeout_s * 1000);

	if (!keys_file.empty()) {
		auto ring = std::make_shared<tracery::control::auth::Keyring>();
		if (const std::string why = tracery::control::auth::Keyring::load(keys_file, ring.get());
		    !why.empty()) {
			std::fprintf(stderr, "tracery-relayd: --auth-keys %s\n", why.c_str());
			return 1;
		}
		senders.keys = std::move(ring);
	}
	if (!tls_cert.empty())
		if (const std::string why = tracery::control::tls::Context::server(tls_cert, tls_key, &senders.tls);
		    !why.empty()) {
			std::fprintf(stderr, "tracery-relayd: %s\n", why.c_str());
			return 1;
		}

	if (output.empty()) {
		const char *home = std::getenv("HOME");
		output = home ? home : ".";
		output += "/tracery-relayd";
	}
	::mkdir(output.c_str(), 0755);
	char *real = ::realpath(output.c_str(), nullptr);
	if (!real) {
		std::perror(output.c_str());
		return 1;
	}
	opt.output = real;
	std::free(real);

	// A session may hold many stream files open: the soft limit up to the hard one.
	rlimit rl{};
	if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		::setrlimit(RLIMIT_NOFILE, &rl);
	}
	// Made after daemon() (its thread would not survive the fork); it
	// outlives the server, whose sessions' feeds it serves.
	std::unique_ptr<tracery::relay::ClickHouseSink> sink;
	if (!clickhouse.url.empty())
		opt.feed = [&sink](const tracery::control::relay::Hello &hello, const std::string &dir) {
			return sink->open(hello, dir);
		};
	try {
		tracery::relay::RelayServer server(opt);
		if (daemonize && ::daemon(0, 1) != 0) {
			std::perror("daemon");
			return 1;
		}
		// After daemon(): their threads would not survive the fork.
		if (!clickhouse.url.empty())
			sink = std::make_unique<tracery::relay::ClickHouseSink>(clickhouse, server.log);
		std::unique_ptr<tracery::relay::SerialReceiver> serial_receiver;
		if (!serial.device.empty())
			serial_receiver = std::make_unique<tracery::relay::SerialReceiver>(
				serial, loopback_of(opt.listen), server.port(), server.log);
		server.run(true);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "tracery-relayd: %s\n", e.what());
		return 1;
	}
	return 0;
}
