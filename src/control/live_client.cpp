// control/live_client.cpp — the lttng-live viewer's requests and replies
// over one blocking socket (through TLS when asked), each read bounded in
// time; on the authenticated viewer port, the challenge-response first.
#include "control/live_client.hpp"

#include "base/byte_order.hpp"
#include "base/cat.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace tracery::control::live {

using base::cat;

namespace {

const char *status_name(AttachStatus s)
{
	switch (s) {
	case AttachStatus::ok:
		return "OK";
	case AttachStatus::already:
		return "it has as many viewers as the relay takes for one session";
	case AttachStatus::unknown:
		return "the relay does not know that session (any more)";
	case AttachStatus::not_live:
		return "the session is not live";
	case AttachStatus::seek_error:
		return "the relay refused the seek";
	case AttachStatus::no_session:
		return "no viewer session (CREATE_SESSION refused)";
	}
	return "unknown status";
}

} // namespace

LiveUrl parse_live_url(const std::string &url)
{
	const std::string form = "net://HOST[:PORT]/host/HOSTNAME/SESSION";
	const std::string scheme = "net://";
	if (url.compare(0, scheme.size(), scheme) != 0)
		throw std::invalid_argument(cat("'", url, "' is not a live URL: give ", form));
	std::string rest = url.substr(scheme.size());
	const size_t slash = rest.find('/');
	std::string authority = rest.substr(0, slash);
	const std::string path = slash == std::string::npos ? "" : rest.substr(slash);
	LiveUrl u;
	std::string port;
	if (!authority.empty() && authority[0] == '[') {
		const size_t close = authority.find(']');
		if (close == std::string::npos)
			throw std::invalid_argument(cat("'", url, "': an IPv6 address without its ']'"));
		u.host = authority.substr(1, close - 1);
		if (close + 1 < authority.size()) {
			if (authority[close + 1] != ':')
				throw std::invalid_argument(cat("'", url, "': what follows the address is not :PORT"));
			port = authority.substr(close + 2);
		}
	} else {
		const size_t colon = authority.find(':');
		u.host = authority.substr(0, colon);
		if (colon != std::string::npos)
			port = authority.substr(colon + 1);
	}
	if (u.host.empty())
		throw std::invalid_argument(cat("'", url, "' has no host: give ", form));
	if (!port.empty() || authority.find(':') != std::string::npos) {
		unsigned v = 0;
		const auto r = std::from_chars(port.data(), port.data() + port.size(), v);
		if (port.empty() || r.ec != std::errc() || r.ptr != port.data() + port.size() || v == 0 || v > 65535)
			throw std::invalid_argument(
				cat("'", url, "': port '", port, "' is not a number from 1 to 65535"));
		u.port = static_cast<uint16_t>(v);
		u.port_given = true;
	}
	const std::string host_prefix = "/host/";
	const size_t last = path.rfind('/');
	if (path.compare(0, host_prefix.size(), host_prefix) != 0 || last <= host_prefix.size() ||
	    last + 1 >= path.size())
		throw std::invalid_argument(cat("'", url, "' names no session: give ", form,
		                                " (babeltrace2 -i lttng-live net://HOST lists them)"));
	u.hostname = path.substr(host_prefix.size(), last - host_prefix.size());
	u.session = path.substr(last + 1);
	if (u.hostname.find('/') != std::string::npos)
		throw std::invalid_argument(cat("'", url, "': a host name with a '/'"));
	return u;
}

void LiveClient::connect(const std::string &host, uint16_t port, int timeout_ms, const relay::ClientSecurity &security)
{
	timeout_ms_ = timeout_ms;
	peer_ = cat(host, ":", std::to_string(port));
	if (const std::string why = relay::connect_tcp(host, port, timeout_ms, fd_); !why.empty())
		throw LiveError(cat("cannot connect to the relay's live port: ", why));
	if (security.tls) {
		std::string why = tls::Channel::client(security.tls, fd_.get(), host, &tls_);
		if (why.empty())
			why = tls_.handshake_wait(timeout_ms);
		if (!why.empty())
			throw LiveError(cat("the relay ", peer_, ": ", why));
	}
	if (security.key)
		authenticate(*security.key);
	send({.cmd = Command::connect, .major = kMajor, .minor = kMinor, .type = kClientCommand});
	decode_connect_reply(read(kConnectReplySize, "CONNECT"));
}

void LiveClient::authenticate(const auth::Key &key)
{
	auth::ClientExchange exchange(auth::Service::live_viewer, key, tls_ ? tls_.binding() : std::vector<uint8_t>{});
	// Each of the relay's frames: its header, then its body (bounded by the header's check).
	const auto frame = [&](const char *what) {
		std::vector<uint8_t> bytes = read(relay::kHeaderSize, what);
		const uint32_t body = base::load_le<uint32_t>(bytes.data() + 8);
		if (body > relay::kMaxReplyText + 64)
			throw LiveError(cat("the relay ", peer_, " answered ", what, " with a frame of ",
			                    std::to_string(body), " bytes: not a viewer port of tracery-relayd?"));
		const std::vector<uint8_t> rest = read(body, what);
		bytes.insert(bytes.end(), rest.begin(), rest.end());
		relay::Decoder d;
		d.feed(bytes);
		relay::Frame f;
		if (d.next(f) != relay::Decoder::Status::frame)
			throw LiveError(cat("the relay ", peer_, " answered ", what, " with ", d.error()));
		return f;
	};
	const auto fail = [&](const std::string &why) {
		return LiveError(cat("the relay ", peer_, " did not authenticate the key ", key.name, ": ", why));
	};
	relay::AuthRequest request;
	if (std::string why = exchange.request(&request.request); !why.empty())
		throw fail(why);
	send_bytes(relay::encode(request), "AUTH_REQUEST");
	relay::Frame f = frame("AUTH_REQUEST");
	if (const auto *refused = std::get_if<relay::AuthResult>(&f))
		throw fail(refused->text);
	const auto *challenge = std::get_if<relay::AuthChallenge>(&f);
	if (!challenge)
		throw fail(cat("it sent ", relay::type_name(static_cast<uint16_t>(relay::type_of(f))),
		               " where AUTH_CHALLENGE was due"));
	relay::AuthResponse response;
	if (std::string why = exchange.respond(challenge->challenge, &response.response); !why.empty())
		throw fail(why);
	send_bytes(relay::encode(response), "AUTH_RESPONSE");
	f = frame("AUTH_RESPONSE");
	const auto *result = std::get_if<relay::AuthResult>(&f);
	if (!result)
		throw fail(cat("it sent ", relay::type_name(static_cast<uint16_t>(relay::type_of(f))),
		               " where AUTH_RESULT was due"));
	if (std::string why = exchange.check(result->result); !why.empty())
		throw fail(result->text.empty() ? why : cat(why, " (", result->text, ")"));
}

void LiveClient::send(const Request &r) { send_bytes(encode_request(r), command_name(static_cast<uint32_t>(r.cmd))); }

void LiveClient::send_bytes(const std::vector<uint8_t> &bytes, const char *what)
{
	if (tls_) {
		if (std::string why = tls_.write_all(bytes, timeout_ms_); !why.empty())
			throw LiveError(cat("the relay ", peer_, " (", what, "): ", why));
		return;
	}
	size_t done = 0;
	while (done < bytes.size()) {
		const ssize_t n = ::send(fd_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			throw LiveError(
				cat("the relay ", peer_, " (", what, "): ", n < 0 ? std::strerror(errno) : "closed"));
		done += static_cast<size_t>(n);
	}
}

void LiveClient::read(uint8_t *p, size_t n, const char *what)
{
	size_t done = 0;
	while (done < n) {
		ssize_t got = 0;
		if (tls_) {
			size_t one = 0;
			const tls::Io io = tls_.read_wait(p + done, n - done, &one, timeout_ms_);
			if (io == tls::Io::error)
				throw LiveError(cat("the relay ", peer_, " (", what, "): ", tls_.error()));
			if (io == tls::Io::want_read)
				throw LiveError(cat("the relay ", peer_, " did not answer ", what, " within ",
				                    std::to_string(timeout_ms_ / 1000), " s"));
			got = io == tls::Io::done ? static_cast<ssize_t>(one) : 0;
		} else {
			pollfd pf{fd_.get(), POLLIN, 0};
			const int ready = ::poll(&pf, 1, timeout_ms_);
			if (ready < 0 && errno == EINTR)
				throw LiveError(cat("interrupted while waiting for the relay's ", what, " reply"));
			if (ready == 0)
				throw LiveError(cat("the relay ", peer_, " did not answer ", what, " within ",
				                    std::to_string(timeout_ms_ / 1000), " s"));
			got = ::recv(fd_.get(), p + done, n - done, 0);
			if (got < 0 && errno == EINTR)
				continue;
		}
		if (got <= 0)
			throw LiveError(
				cat("the relay ", peer_, " went away: ",
			            got < 0 ? std::string(std::strerror(errno)) : std::string("connection closed"),
			            " after ", std::to_string(done), " of the ", std::to_string(n), " bytes of its ",
			            what, " reply"));
		done += static_cast<size_t>(got);
	}
}

std::vector<uint8_t> LiveClient::read(size_t n, const char *what)
{
	std::vector<uint8_t> b(n);
	read(b.data(), n, what);
	return b;
}

std::vector<SessionEntry> LiveClient::list_sessions()
{
	send({.cmd = Command::list_sessions});
	const uint32_t count = decode_session_count(read(kCountReplySize, "LIST_SESSIONS"));
	std::vector<SessionEntry> out;
	for (uint32_t i = 0; i < count; i++)
		out.push_back(decode_session_entry(read(kSessionEntrySize, "LIST_SESSIONS")));
	return out;
}

void LiveClient::create_session()
{
	send({.cmd = Command::create_session});
	const std::vector<uint8_t> b = read(4, "CREATE_SESSION");
	if (const uint32_t st = get_be32(b.data()); st != 1)
		throw LiveError(
			cat("the relay refused a viewer session (CREATE_SESSION status ", std::to_string(st), ")"));
}

std::vector<StreamEntry> LiveClient::attach(uint64_t session, uint32_t seek)
{
	send({.cmd = Command::attach_session, .id = session, .seek = seek});
	const StreamsReply r = decode_attach_reply(read(kStatusCountReplySize, "ATTACH_SESSION"));
	if (r.status != static_cast<uint32_t>(AttachStatus::ok))
		throw LiveError(
			cat("cannot attach to the session: ", status_name(static_cast<AttachStatus>(r.status))));
	std::vector<StreamEntry> out;
	for (uint32_t i = 0; i < r.count; i++)
		out.push_back(decode_stream_entry(read(kStreamEntrySize, "ATTACH_SESSION")));
	return out;
}

NewStreamsStatus LiveClient::new_streams(uint64_t session, std::vector<StreamEntry> *out)
{
	send({.cmd = Command::get_new_streams, .id = session});
	const StreamsReply r = decode_new_streams_reply(read(kStatusCountReplySize, "GET_NEW_STREAMS"));
	for (uint32_t i = 0; i < r.count; i++)
		out->push_back(decode_stream_entry(read(kStreamEntrySize, "GET_NEW_STREAMS")));
	return static_cast<NewStreamsStatus>(r.status);
}

MetadataStatus LiveClient::metadata(uint64_t stream, std::string *out, size_t max_total)
{
	send({.cmd = Command::get_metadata, .id = stream});
	const MetadataReply r = decode_metadata_reply(read(kMetadataReplySize, "GET_METADATA"));
	if (r.length > max_total - std::min(max_total, out->size()))
		throw LiveError(cat("the relay's metadata would exceed ", std::to_string(max_total), " bytes"));
	const size_t at = out->size();
	out->resize(at + r.length);
	read(reinterpret_cast<uint8_t *>(out->data() + at), r.length, "GET_METADATA");
	return r.status;
}

IndexReply LiveClient::next_index(uint64_t stream)
{
	send({.cmd = Command::get_next_index, .id = stream});
	return decode_index_reply(read(kIndexReplySize, "GET_NEXT_INDEX"));
}

PacketReply LiveClient::packet(uint64_t stream, const IndexReply &index, std::vector<uint8_t> *out)
{
	const auto length = static_cast<uint32_t>(index.packet_size / 8); // bounded by decode_index_reply
	send({.cmd = Command::get_packet, .id = stream, .offset = index.offset, .length = length});
	const PacketReply r = decode_packet_reply(read(kPacketReplySize, "GET_PACKET"), length);
	out->resize(r.length);
	read(out->data(), r.length, "GET_PACKET");
	return r;
}

} // namespace tracery::control::live
