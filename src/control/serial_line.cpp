// control/serial_line.cpp — see serial_line.hpp.
#include "control/serial_line.hpp"

#include "base/cat.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

namespace tracery::control::serial {

namespace {

using base::cat;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kScheme = "serial://";
constexpr size_t kMaxDevice = 255;

struct BaudName {
	uint32_t baud;
	speed_t speed;
};
constexpr BaudName kBauds[] = {{9600, B9600},       {19200, B19200},     {38400, B38400},     {57600, B57600},
                               {115200, B115200},   {230400, B230400},   {460800, B460800},   {921600, B921600},
                               {1000000, B1000000}, {1500000, B1500000}, {2000000, B2000000}, {3000000, B3000000}};

std::string shown(std::string_view s)
{
	std::string out;
	for (char c : s.substr(0, 200))
		out += (c >= 0x20 && c < 0x7f) ? c : '?';
	return out;
}

std::string bauds_list()
{
	std::string s;
	for (const BaudName &b : kBauds)
		s += cat(s.empty() ? "" : ", ", std::to_string(b.baud));
	return s;
}

// Milliseconds left before `deadline`, at least 0.
int left_ms(Clock::time_point deadline)
{
	const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
	return static_cast<int>(std::clamp<int64_t>(left, 0, 60000));
}

} // namespace

bool supported_baud(uint32_t baud)
{
	return std::any_of(std::begin(kBauds), std::end(kBauds), [&](const BaudName &b) { return b.baud == baud; });
}

std::string device_error(std::string_view device)
{
	if (!device.starts_with('/'))
		return "the device is an absolute path (/dev/ttyS1)";
	if (device.size() > kMaxDevice)
		return cat("the device's path is longer than ", std::to_string(kMaxDevice), " characters");
	for (char c : device)
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
		      c == '.' || c == '_' || c == '-'))
			return "the device's path holds a character other than letters, digits, '/', '.', '_' and '-'";
	if (device.find("/../") != std::string_view::npos || device.ends_with("/.."))
		return "the device's path holds '..'";
	return {};
}

std::optional<LineSettings> parse_serial_url(std::string_view url, std::string *why)
{
	const auto refuse = [&](const std::string &what) -> std::optional<LineSettings> {
		*why = cat(what, " (e.g. serial:///dev/ttyS1?baud=115200)");
		return std::nullopt;
	};
	if (!url.starts_with(kScheme))
		return refuse("it starts with serial://");
	std::string_view rest = url.substr(kScheme.size());
	const size_t question = rest.find('?');
	LineSettings line;
	line.device = std::string(rest.substr(0, question));
	if (std::string e = device_error(line.device); !e.empty())
		return refuse(e);
	std::string_view options = question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
	while (!options.empty()) {
		const size_t amp = options.find('&');
		const std::string_view option = options.substr(0, amp);
		options = amp == std::string_view::npos ? std::string_view() : options.substr(amp + 1);
		if (option.starts_with("baud=")) {
			const std::string_view value = option.substr(5);
			uint32_t baud = 0;
			const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), baud);
			if (ec != std::errc() || end != value.data() + value.size() || !supported_baud(baud))
				return refuse(cat("baud '", shown(value), "' is not one of ", bauds_list()));
			line.baud = baud;
		} else if (option == "flow=rtscts") {
			line.rtscts = true;
		} else if (option == "flow=none") {
			line.rtscts = false;
		} else {
			return refuse(
				cat("unknown option '", shown(option), "': give baud=N, flow=rtscts or flow=none"));
		}
	}
	return line;
}

std::string to_url(const LineSettings &line)
{
	return cat(kScheme, line.device, "?baud=", std::to_string(line.baud), line.rtscts ? "&flow=rtscts" : "");
}

std::string open_line(const LineSettings &line, base::Fd *out)
{
	if (std::string e = device_error(line.device); !e.empty())
		return cat(line.device, ": ", e);
	const auto speed = std::find_if(std::begin(kBauds), std::end(kBauds),
	                                [&](const BaudName &b) { return b.baud == line.baud; });
	if (speed == std::end(kBauds))
		return cat(line.device, ": baud ", std::to_string(line.baud), " is not one of ", bauds_list());
	base::Fd fd(::open(line.device.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
	if (!fd)
		return cat(line.device, ": ", std::strerror(errno));
	termios t{};
	if (::tcgetattr(fd.get(), &t) != 0)
		return cat(line.device, ": not a terminal (", std::strerror(errno), ")");
	::cfmakeraw(&t); // 8 data bits, no parity, no echo, no signals, no translation
	t.c_cflag &= ~static_cast<tcflag_t>(CSTOPB | CRTSCTS);
	t.c_cflag |= CLOCAL | CREAD | (line.rtscts ? CRTSCTS : 0);
	t.c_iflag &= ~static_cast<tcflag_t>(IXON | IXOFF | IXANY);
	// A read waits for one byte (VMIN 1): non-blocking, no data is then EAGAIN
	// and a read of 0 is a hangup (with VMIN 0 it would be 0 as well).
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (::cfsetispeed(&t, speed->speed) != 0 || ::cfsetospeed(&t, speed->speed) != 0 ||
	    ::tcsetattr(fd.get(), TCSANOW, &t) != 0)
		return cat(line.device, ": cannot set it raw at ", std::to_string(line.baud),
		           " baud: ", std::strerror(errno));
	::tcflush(fd.get(), TCIOFLUSH); // nothing of an earlier user
	*out = std::move(fd);
	return {};
}

void LineEnd::send(Kind kind, uint32_t link, uint32_t sequence, std::span<const uint8_t> payload)
{
	if (out_start_ > 0 && out_start_ == out_.size()) {
		out_.clear();
		out_start_ = 0;
	}
	encode(kind, link, sequence, payload, out_);
}

std::string LineEnd::write_some()
{
	while (queued() > 0) {
		const ssize_t n = ::write(tty_.get(), out_.data() + out_start_, queued());
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return {};
			return cat("writing to the line: ", std::strerror(errno));
		}
		out_start_ += static_cast<size_t>(n);
	}
	out_.clear();
	out_start_ = 0;
	return {};
}

LineEnd::LineEnd(base::Fd tty, uint32_t baud)
	: tty_(std::move(tty)),
	  // 10 bit times a byte (8N1)
	  partial_limit_(1000 + kMaxFrame * 10 * 1000 / std::max<uint32_t>(baud, 1))
{
}

void LineEnd::give_up_stale_partial()
{
	const uint64_t at = in.partial_at();
	if (at != partial_at_) {
		partial_at_ = at;
		partial_since_ = Clock::now();
	} else if (at != FrameDecoder::kNoPartial && Clock::now() - partial_since_ >= partial_limit_) {
		in.abandon_partial();
		partial_at_ = FrameDecoder::kNoPartial;
	}
}

std::string LineEnd::read_some()
{
	uint8_t buf[4096];
	// Bounded: what a line brings in a few reads; the rest at the next wakeup.
	for (int reads = 0; reads < 16; ++reads) {
		const ssize_t n = ::read(tty_.get(), buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return cat("reading the line: ", std::strerror(errno));
		}
		if (n == 0) // non-blocking: no data is EAGAIN, so this is a hangup (a USB adapter unplugged)
			return "the line hung up";
		in.feed({buf, static_cast<size_t>(n)});
	}
	give_up_stale_partial();
	return {};
}

std::string LineEnd::drain(int timeout_ms)
{
	const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	while (queued() > 0) {
		if (std::string why = write_some(); !why.empty())
			return why;
		if (queued() == 0)
			break;
		pollfd p{tty_.get(), POLLOUT, 0};
		if (Clock::now() >= deadline)
			return cat("the line took nothing for ", std::to_string(timeout_ms), " ms");
		::poll(&p, 1, left_ms(deadline));
	}
	return {};
}

std::string SenderLink::open(const LineSettings &line, int timeout_ms, std::unique_ptr<SenderLink> *link,
                             base::Fd *socket)
{
	base::Fd tty;
	if (std::string why = open_line(line, &tty); !why.empty())
		return why;
	LineEnd end(std::move(tty), line.baud);
	uint32_t id = 0;
	while (id == 0)
		if (::getrandom(&id, sizeof id, 0) != static_cast<ssize_t>(sizeof id))
			return cat("getrandom: ", std::strerror(errno));
	// HELLO again every kHelloRepeatMs until the relay's end accepts it.
	const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	const uint8_t version[2] = {static_cast<uint8_t>(kLinkVersion), static_cast<uint8_t>(kLinkVersion >> 8)};
	bool accepted = false;
	while (!accepted) {
		if (Clock::now() >= deadline)
			return cat(line.device, ": no tracery-relayd --serial answered within ",
			           std::to_string(timeout_ms), " ms (is the other end listening, at ",
			           std::to_string(line.baud), " baud?)");
		end.send(Kind::hello, id, 0, version);
		if (std::string why = end.drain(std::min(left_ms(deadline), kStallMs)); !why.empty())
			return cat(line.device, ": ", why);
		const auto repeat = std::min(deadline, Clock::now() + std::chrono::milliseconds(kHelloRepeatMs));
		while (!accepted && Clock::now() < repeat) {
			pollfd p{end.fd(), POLLIN, 0};
			if (::poll(&p, 1, left_ms(repeat)) < 0 && errno != EINTR)
				return cat(line.device, ": poll: ", std::strerror(errno));
			if (std::string why = end.read_some(); !why.empty())
				return cat(line.device, ": ", why);
			Frame f;
			while (end.in.next(f))
				accepted = accepted || (f.kind == Kind::accept && f.link == id);
		}
	}
	int pair[2];
	if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
		return cat("socketpair: ", std::strerror(errno));
	base::Fd theirs(pair[0]), ours(pair[1]);
	// Small buffers: what waits before the line is what a SYNC waits behind.
	const int buffer = 16 * 1024;
	for (const int fd : pair) {
		::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
		::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
	}
	::fcntl(ours.get(), F_SETFL, ::fcntl(ours.get(), F_GETFL) | O_NONBLOCK);
	link->reset(new SenderLink(std::move(end), std::move(ours), id, line.device));
	*socket = std::move(theirs);
	return {};
}

SenderLink::SenderLink(LineEnd line, base::Fd local, uint32_t id, std::string device)
	: line_(std::move(line)), local_(std::move(local)), id_(id), device_(std::move(device))
{
	thread_ = std::thread([this] { run(); });
}

SenderLink::~SenderLink() { finish(); }

std::string SenderLink::finish()
{
	if (thread_.joinable())
		thread_.join();
	return ended_;
}

void SenderLink::end(std::string why)
{
	if (!why.empty())
		ended_ = cat("serial line ", device_, ": ", why);
	local_.reset(); // the relay connection sees its peer gone
}

void SenderLink::run()
{
	auto last_progress = Clock::now();
	for (;;) {
		pollfd p[2] = {{line_.fd(), static_cast<short>(POLLIN | (line_.queued() ? POLLOUT : 0)), 0},
		               {line_.queued() < LineEnd::kQueueLimit ? local_.get() : -1, POLLIN, 0}};
		if (::poll(p, 2, 500) < 0 && errno != EINTR)
			return end(cat("poll: ", std::strerror(errno)));
		if (std::string why = line_.read_some(); !why.empty())
			return end(why);
		Frame f;
		while (line_.in.next(f)) {
			if (f.link != id_)
				continue; // an earlier session's
			if (f.kind == Kind::reset)
				return end("the relay's end lost frames of this link: the session goes on in a new "
				           "directory once connected again");
			if (f.kind == Kind::close)
				return end("the relay's end closed the link");
			if (f.kind != Kind::data)
				continue;
			if (f.sequence != next_in_) {
				line_.send(Kind::reset, id_, 0);
				(void)line_.drain(kStallMs);
				return end(cat("frames from the relay were lost (frame ", std::to_string(f.sequence),
				               " came where ", std::to_string(next_in_), " was due)"));
			}
			++next_in_;
			// The relay's few replies fit the socket's buffer: a relay connection that reads
			// none of them is not ours to wait for.
			if (::send(local_.get(), f.payload.data(), f.payload.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
			    static_cast<ssize_t>(f.payload.size()))
				return end("the relay connection does not read the relay's replies");
		}
		const size_t before = line_.queued();
		if (std::string why = line_.write_some(); !why.empty())
			return end(why);
		if (line_.queued() < before || line_.queued() == 0)
			last_progress = Clock::now();
		else if (Clock::now() - last_progress >= std::chrono::milliseconds(kStallMs))
			return end(cat("the line took nothing for ", std::to_string(kStallMs / 1000),
			               " s (unplugged, or flow control holding it)"));
		while (line_.queued() < LineEnd::kQueueLimit) {
			uint8_t buf[kMaxPayload];
			const ssize_t n = ::recv(local_.get(), buf, sizeof buf, MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				// The relay connection closed: what it sent, then CLOSE.
				line_.send(Kind::close, id_, next_out_);
				if (std::string why = line_.drain(kStallMs); !why.empty())
					return end(why);
				return end({});
			}
			line_.send(Kind::data, id_, next_out_++, {buf, static_cast<size_t>(n)});
		}
	}
}

} // namespace tracery::control::serial
