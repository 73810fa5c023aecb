// relay/serial_receiver.cpp — see serial_receiver.hpp.
#include "relay/serial_receiver.hpp"

#include "base/background_thread.hpp"
#include "base/cat.hpp"
#include "control/relay_connection.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <span>
#include <stdexcept>

namespace tracery::relay {

namespace {

using base::cat;
using control::serial::Frame;
using control::serial::Kind;
using control::serial::LineEnd;

using Clock = std::chrono::steady_clock;

constexpr int kRelayConnectMs = 2000;
constexpr auto kResetRepeat = std::chrono::seconds(1);

// One link session: the sender's id, the relay connection that carries it.
struct Session {
	uint32_t id = 0;
	base::Fd relay;
	uint32_t next_in = 0, next_out = 0;
	bool data_seen = false;
	uint64_t bad_before = 0, skipped_before = 0; // the line's counts when it began
};

std::string session_name(uint32_t id)
{
	char s[16];
	std::snprintf(s, sizeof s, "%08x", id);
	return s;
}

// Writes all of bytes to the blocking socket (SO_SNDTIMEO set): false when it took nothing in time or failed.
bool write_all(int fd, std::span<const uint8_t> bytes)
{
	while (!bytes.empty()) {
		const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		bytes = bytes.subspan(static_cast<size_t>(n));
	}
	return true;
}

} // namespace

SerialReceiver::SerialReceiver(control::serial::LineSettings line, std::string relay_host, uint16_t relay_port,
                               std::function<void(const std::string &)> log)
	: line_(std::move(line)), relay_host_(std::move(relay_host)), relay_port_(relay_port), log_(std::move(log)),
	  stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))
{
	if (!stop_)
		throw std::runtime_error(cat("eventfd: ", std::strerror(errno)));
	// Its thread takes no signal (the relay's loop handles SIGTERM and SIGINT).
	thread_ = base::signal_free_thread([this] { run(); });
}

SerialReceiver::~SerialReceiver()
{
	const uint64_t one = 1;
	(void)!::write(stop_.get(), &one, sizeof one);
	if (thread_.joinable())
		thread_.join();
}

void SerialReceiver::run()
{
	bool told_unopened = false;
	for (;;) {
		base::Fd tty;
		if (std::string why = control::serial::open_line(line_, &tty); !why.empty()) {
			if (!told_unopened)
				log_(cat("serial line ", why, "; trying again every ", std::to_string(kReopenMs),
				         " ms"));
			told_unopened = true;
		} else {
			told_unopened = false;
			log_(cat("serial line ", line_.device, " open at ", std::to_string(line_.baud), " baud, 8N1, ",
			         line_.rtscts ? "RTS/CTS flow control" : "no flow control",
			         ", sessions to the relay at ", relay_host_, ":", std::to_string(relay_port_)));
			LineEnd line(std::move(tty), line_.baud);
			const std::string failed = serve(line);
			if (failed.empty())
				return; // stopped
			log_(cat("serial line ", line_.device, ": ", failed, "; opening it again"));
		}
		pollfd p{stop_.get(), POLLIN, 0};
		if (::poll(&p, 1, kReopenMs) == 1)
			return;
	}
}

std::string SerialReceiver::serve(LineEnd &line)
{
	Session s;
	uint32_t reset_link = 0; // the last session told RESET for its frames, and when
	Clock::time_point reset_at;
	const auto end_session = [&](const std::string &how) {
		if (!s.relay)
			return;
		log_(cat("serial line ", line_.device, ": link session ", session_name(s.id), " ", how, " (",
		         std::to_string(line.in.frames_bad - s.bad_before), " frames corrupted, ",
		         std::to_string(line.in.bytes_skipped - s.skipped_before),
		         " bytes of noise skipped meanwhile)"));
		s.relay.reset();
	};
	const auto publish = [&] {
		counts_.frames_bad.store(line.in.frames_bad, std::memory_order_relaxed);
		counts_.bytes_skipped.store(line.in.bytes_skipped, std::memory_order_relaxed);
	};
	for (;;) {
		const bool take_relay = s.relay && line.queued() < LineEnd::kQueueLimit;
		pollfd p[3] = {{stop_.get(), POLLIN, 0},
		               {line.fd(), static_cast<short>(POLLIN | (line.queued() ? POLLOUT : 0)), 0},
		               {take_relay ? s.relay.get() : -1, POLLIN, 0}};
		if (::poll(p, 3, 500) < 0 && errno != EINTR)
			return cat("poll: ", std::strerror(errno));
		if (p[0].revents) {
			end_session("ended: the relay stops");
			return {};
		}
		if (std::string why = line.read_some(); !why.empty()) {
			end_session("ended: the line failed");
			return why;
		}
		Frame f;
		while (line.in.next(f)) {
			const bool ours = s.relay && f.link == s.id;
			if (f.kind == Kind::hello) {
				if (ours) { // our ACCEPT was lost
					if (!s.data_seen)
						line.send(Kind::accept, s.id, 0);
					continue;
				}
				end_session("replaced by a new one");
				base::Fd relay;
				if (std::string why = control::relay::connect_tcp(relay_host_, relay_port_,
				                                                  kRelayConnectMs, relay);
				    !why.empty()) {
					log_(cat("serial line ", line_.device,
					         ": cannot reach the relay for link session ", session_name(f.link),
					         ": ", why));
					line.send(Kind::close, f.link, 0);
					continue;
				}
				const timeval stall{kRelayStallMs / 1000, 0};
				::setsockopt(relay.get(), SOL_SOCKET, SO_SNDTIMEO, &stall, sizeof stall);
				s = Session{f.link,
				            std::move(relay),
				            0,
				            0,
				            false,
				            line.in.frames_bad,
				            line.in.bytes_skipped};
				counts_.sessions.fetch_add(1, std::memory_order_relaxed);
				line.send(Kind::accept, s.id, 0);
				log_(cat("serial line ", line_.device, ": link session ", session_name(s.id),
				         " opened"));
				continue;
			}
			if (!ours) {
				// A session this end does not hold (ended here, or begun before the
				// relay or its line was (re)started): the sender is told, at most
				// once a second, so that it connects again.
				if (f.kind == Kind::data &&
				    (f.link != reset_link || Clock::now() - reset_at >= kResetRepeat)) {
					line.send(Kind::reset, f.link, 0);
					reset_link = f.link;
					reset_at = Clock::now();
				}
				continue;
			}
			if (f.kind == Kind::data) {
				if (f.sequence != s.next_in) {
					const uint32_t lost = f.sequence > s.next_in ? f.sequence - s.next_in : 1;
					counts_.frames_lost.fetch_add(lost, std::memory_order_relaxed);
					counts_.sessions_lost.fetch_add(1, std::memory_order_relaxed);
					line.send(Kind::reset, s.id, 0);
					end_session(cat(
						"lost ", std::to_string(lost), " frames from the sender (frame ",
						std::to_string(f.sequence), " came where ", std::to_string(s.next_in),
						" was due): its relay connection is closed, the sender connects again"));
					continue;
				}
				++s.next_in;
				s.data_seen = true;
				if (!write_all(s.relay.get(), f.payload)) {
					line.send(Kind::close, s.id, 0);
					end_session(cat("ended: the relay took nothing of it for ",
					                std::to_string(kRelayStallMs / 1000), " s"));
				}
			} else if (f.kind == Kind::reset) {
				counts_.sessions_lost.fetch_add(1, std::memory_order_relaxed);
				end_session("ended by the sender: frames from the relay were lost");
			} else if (f.kind == Kind::close) {
				end_session("closed by the sender");
			}
		}
		publish();
		if (std::string why = line.write_some(); !why.empty()) {
			end_session("ended: the line failed");
			return why;
		}
		if (take_relay && s.relay && (p[2].revents & (POLLIN | POLLHUP | POLLERR))) {
			uint8_t buf[control::serial::kMaxPayload];
			for (;;) {
				if (line.queued() >= LineEnd::kQueueLimit)
					break;
				const ssize_t n = ::recv(s.relay.get(), buf, sizeof buf, MSG_DONTWAIT);
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0 && errno == EAGAIN)
					break;
				if (n <= 0) {
					line.send(Kind::close, s.id, s.next_out);
					end_session("closed by the relay");
					break;
				}
				line.send(Kind::data, s.id, s.next_out++, {buf, static_cast<size_t>(n)});
			}
		}
	}
}

} // namespace tracery::relay
