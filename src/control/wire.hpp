// Control protocol framing shared by traceryd, the tracery command and
// libtracery: UNIX stream sockets carrying length-prefixed, versioned JSON
// messages, with file descriptors (ring buffer memfds) passed as SCM_RIGHTS.
//
// Frame: magic "TRCY" (u32 LE), protocol version (u16), the connection's
// kind (u16: a command's or a program's), body length (u32), then the JSON
// body. The 12-byte header alone tells the daemon who speaks and how large
// the body may be, so it refuses a peer before reading its body.
// Descriptors ride on the frame's first byte. Sends never raise SIGPIPE.
// FrameDecoder is the one framing parser: the daemon's event loop feeds it
// whatever arrives, recv_message() reads one message through it.
#pragma once

#include "base/fd.hpp"

#include "event/json.hpp"

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::control {

using json = nlohmann::json;

inline constexpr uint32_t kMagic = 0x59435254; // "TRCY"
// The protocol's version, in every frame's header. The compatibility rule:
// - A receiver refuses a frame of another version at its header
//   (header_kind, FrameDecoder), before reading its body: the daemon answers
//   a command with one line, and the tracery command and libtracery say
//   that the daemon is of another release. So both sides of a connection
//   speak this version.
// - Any change to the framing or to a message's fields (messages.hpp: a
//   field added, removed, renamed or of another JSON type, an optional one
//   made required) is a new version: the decoders are strict (codec.hpp),
//   and an unknown or missing field is an error, never skipped.
// - A new command or program message keeps the version: a daemon answers a
//   command it does not know with "unknown request" (one line), and each
//   side ignores a program message of a type it does not know (the daemon
//   logs the first).
// - A daemon, a tracery command and a libtracery of the same build always agree.
// 2: the header's kind (it was a reserved 0 in version 1).
// 3: create's relay key and CAs (relay_key_name, relay_key_secret, relay_ca_pem)
// and public_live; what refused writes cost (WriteLoss) in status and stop,
// instead of stop's disk_full; the relay's refusal (RelayStatus::relay_write_error).
// 4: the contexts beyond vpid, vtid and procname (ContextFlags::more); the
// program's ids in its namespaces in Hello (vpid, vuid, vgid); track and
// untrack for both domains; status's tracking; what the relay's disk still
// refused at stop (RelayStatus::packets_not_written,
// packets_not_written_uncounted, events_not_written).
inline constexpr uint16_t kProtocolVersion = 4;
inline constexpr size_t kHeaderSize = 12;
inline constexpr size_t kMaxFds = 64;

// Who speaks on a connection; every frame of a connection carries its kind.
enum class Kind : uint16_t {
	command = 1, // the tracery command: one request, one reply
	program = 2, // a traced program: hello, then messages both ways while it runs
};
const char *kind_name(Kind kind);

// The largest body a receiver accepts, by the kind of its connection, and
// how many descriptors may come with a frame. src/daemon/README.md (limits)
// says why these sizes hold the largest legitimate messages.
struct Limits {
	uint32_t command;
	uint32_t program;
	size_t fds;
	uint32_t max_body(Kind kind) const { return kind == Kind::command ? command : program; }
};
// What traceryd takes from its peers, any local user among them: a request
// built from a command line (a filter and event-name lists), a program's
// hello with the schemas of all its events. No descriptors.
inline constexpr Limits kDaemonLimits{1u << 20, 16u << 20, 0};
// What the tracery command and libtracery take from the daemon (a listing of
// every program's events; a session's buffers with their memfds).
inline constexpr Limits kPeerLimits{64u << 20, 64u << 20, kMaxFds};

struct Message {
	json body;
	std::vector<base::Fd> fds;
};

// A whole frame as it came, its body not yet parsed (its kind is the
// connection's: FrameDecoder::kind()).
struct Frame {
	std::string body;
	std::vector<base::Fd> fds;
};
// Parses a frame's body: false (and *why) unless it is a JSON object.
bool parse_frame(Frame &&frame, Message &out, std::string *why);

// Sends one message, blocking. False on error (errno set; EPIPE when the
// peer is gone, EMSGSIZE for a body over kPeerLimits).
bool send_message(int sock, Kind kind, const json &body, std::span<const int> fds = {});
// The frame send_message() sends, descriptors aside.
std::string encode_frame(Kind kind, std::string_view body);
// One sendmsg() of bytes with these descriptors (flags: MSG_DONTWAIT for a
// non-blocking send; never SIGPIPE): the bytes sent, or -1 with errno set.
ssize_t send_some(int sock, std::string_view bytes, std::span<const int> fds, int flags = 0);

// The kind a header of kHeaderSize bytes names, if it is one of this
// protocol version.
std::optional<Kind> header_kind(const char *header);

// Binary data (filter bytecode) inside JSON bodies travels as lowercase hex.
std::string to_hex(std::string_view bytes);
// False on an odd length or a non-hex digit.
bool from_hex(std::string_view hex, std::string &bytes);

// Assembles one frame at a time from bytes arriving in pieces of any size.
// It never asks for bytes past the current frame, so a reader never takes
// the next frame's bytes or descriptors, and it holds at most about twice
// the bytes received (a claimed length is not allocated up front).
class FrameDecoder {
public:
	enum class State {
		header,   // reading the 12-byte header
		body,     // the header is valid (kind() and length() say what comes); reading the body
		complete, // a whole frame: take() it
		error,    // error() says what was wrong; the connection is unusable
	};

	explicit FrameDecoder(Limits limits) : limits_(limits) { header_.resize(kHeaderSize); }

	// Frames of another kind are refused from now on (a connection keeps the
	// kind of its first frame).
	void expect(Kind kind);
	// Where the next bytes go: the rest of the header, else part of the rest
	// of the body. Empty in the complete and error states.
	std::span<char> space();
	// n bytes were written at space(), with these descriptors (allowed only
	// with a frame's first byte, up to the limit; fds_truncated: the kernel
	// dropped some). Returns the new state.
	State received(size_t n, std::vector<base::Fd> fds = {}, bool fds_truncated = false);
	// The peer closed the stream: an error unless between frames (then false).
	bool ended();

	State state() const { return state_; }
	// No byte of a frame received yet.
	bool at_boundary() const { return state_ == State::header && got_ == 0; }
	Kind kind() const { return kind_; }         // from the body state on
	uint32_t length() const { return length_; } // from the body state on
	const std::string &error() const { return error_; }
	size_t max_fds() const { return limits_.fds; }
	// Bytes held, for accounting.
	size_t buffered() const { return body_.capacity(); }
	// In the complete state: the frame; the decoder then waits for the next.
	Frame take();

private:
	State fail(std::string why);
	void check_header();

	Limits limits_;
	bool expect_set_ = false;
	Kind expected_ = Kind::command;
	State state_ = State::header;
	std::string header_;
	std::string body_;
	size_t got_ = 0; // bytes of the current part (header or body) received
	Kind kind_ = Kind::command;
	uint32_t length_ = 0;
	std::vector<base::Fd> fds_;
	std::string error_;
};

// One recvmsg() into the decoder's space (flags: MSG_DONTWAIT for a
// non-blocking read): the bytes read, 0 at end of stream, -1 on error
// (errno set: EAGAIN when nothing is there yet).
ssize_t receive(int sock, FrameDecoder &decoder, int flags = 0);

enum class RecvStatus { ok, eof, error };
// Receives one message of this kind from the daemon (kPeerLimits), blocking.
// error: I/O error, bad framing or bad JSON (*why says which).
RecvStatus recv_message(int sock, Kind kind, Message &out, std::string *why);

// A connected stream socket (close-on-exec), or an invalid Fd with errno set.
base::Fd connect_unix(const std::string &path);
// Binds PATH (replacing a stale socket file) with MODE and listens. Throws
// std::system_error naming the path.
base::Fd listen_unix(const std::string &path, mode_t mode);

struct PeerCred {
	pid_t pid = 0;
	uid_t uid = 0;
	gid_t gid = 0;
};
// SO_PEERCRED of a connected socket: the peer's credentials at connect time.
bool peer_cred(int sock, PeerCred &out);

} // namespace tracery::control
