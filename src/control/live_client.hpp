// control/live_client.hpp — the viewer's end of the lttng-live protocol
// (`tracery view --live`): one TCP connection to a relay's live port, one
// request at a time, each reply read whole within a deadline and decoded by
// live_protocol.hpp's strict decoders. On the relay's authenticated viewer
// port, the connection is first TLS (when given the CAs) and authenticated
// with a key (the relay protocol's AUTH_* frames, the live viewer service of
// auth.hpp, the relay's proof checked), then speaks the same lttng-live.
// Every failure throws LiveError saying which request and what was wrong;
// the connection is then unusable.
#pragma once

#include "base/fd.hpp"
#include "control/auth.hpp"
#include "control/live_protocol.hpp"
#include "control/relay_connection.hpp"
#include "control/tls.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tracery::control::live {

class LiveError : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

// net://HOST[:PORT]/host/HOSTNAME/SESSION (HOST a name, an IPv4 address or
// an IPv6 one in brackets; PORT kDefaultPort when absent).
struct LiveUrl {
	std::string host;
	uint16_t port = kDefaultPort;
	bool port_given = false;
	std::string hostname, session;
};
// Throws std::invalid_argument saying what the URL lacks.
LiveUrl parse_live_url(const std::string &url);

class LiveClient {
public:
	// Connects (TLS and authentication as security says) and says CONNECT
	// (2.4, a command connection). timeout_ms: for the connection, the
	// handshake and authentication, then for each reply.
	// (The same key and CAs a sender would give: relay::ClientSecurity.)
	void connect(const std::string &host, uint16_t port, int timeout_ms = 30000,
	             const relay::ClientSecurity &security = {});
	std::vector<SessionEntry> list_sessions();
	void create_session();
	// ATTACH_SESSION (seek: kSeekBeginning or kSeekLast): its streams. A
	// refusal throws, naming the status.
	std::vector<StreamEntry> attach(uint64_t session, uint32_t seek);
	// GET_NEW_STREAMS: its status; the streams appended to *out.
	NewStreamsStatus new_streams(uint64_t session, std::vector<StreamEntry> *out);
	// GET_METADATA: its status; the bytes appended to *out (at most
	// max_total in all: more throws).
	MetadataStatus metadata(uint64_t stream, std::string *out, size_t max_total);
	IndexReply next_index(uint64_t stream);
	// GET_PACKET of the index's packet: its status; the bytes in *out.
	PacketReply packet(uint64_t stream, const IndexReply &index, std::vector<uint8_t> *out);

private:
	void send(const Request &r);
	void send_bytes(const std::vector<uint8_t> &bytes, const char *what);
	// Exactly n bytes of the reply to `what`.
	void read(uint8_t *p, size_t n, const char *what);
	std::vector<uint8_t> read(size_t n, const char *what);
	// The challenge-response before CONNECT.
	void authenticate(const auth::Key &key);

	base::Fd fd_;
	tls::Channel tls_; // when the connection is TLS
	int timeout_ms_ = 30000;
	std::string peer_;
};

} // namespace tracery::control::live
