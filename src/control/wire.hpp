// Control protocol framing shared by traceryd, the tracery command and
// libtracery: UNIX stream sockets carrying length-prefixed, versioned JSON
// messages, with file descriptors (ring buffer memfds) passed as SCM_RIGHTS.
//
// Frame: magic "TRCY" (u32 LE), protocol version (u16), reserved (u16),
// body length (u32), then the JSON body. Descriptors ride on the frame's
// first byte. Sends never raise SIGPIPE.
#pragma once

#include "base/fd.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::control {

using json = nlohmann::json;

inline constexpr uint32_t kMagic = 0x59435254; // "TRCY"
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr uint32_t kMaxBody = 64u << 20;
inline constexpr size_t kMaxFds = 64;

struct Message {
	json body;
	std::vector<base::Fd> fds;
};

// Sends one message. False on error (errno set; EPIPE when the peer is gone).
bool send_message(int sock, const json &body, std::span<const int> fds = {});

// Binary data (filter bytecode) inside JSON bodies travels as lowercase hex.
std::string to_hex(std::string_view bytes);
// False on an odd length or a non-hex digit.
bool from_hex(std::string_view hex, std::string &bytes);

enum class RecvStatus { ok, eof, error };
// Receives one message. error: I/O error, bad framing or bad JSON (*why says which).
RecvStatus recv_message(int sock, Message &out, std::string *why);

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
