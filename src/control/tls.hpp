// control/tls.hpp — TLS over an already connected TCP socket, with OpenSSL's
// libssl: the relay's ports and their clients (docs/relay-protocol.md,
// *TLS*). TLS 1.2 or later only. A server has a certificate chain and its
// private key; a client trusts the CAs of a PEM file (or text) and checks
// that the server's certificate names the host it connected to (a DNS name,
// or an IP address). No session tickets or resumption: each connection makes
// its own keys.
//
// A Channel works on a non-blocking socket: its steps (handshake, read,
// write) say when they must wait for the socket (want_read, want_write), as
// an epoll loop needs; the *_wait helpers wait with poll() within a deadline,
// for a client that blocks. The socket stays its owner's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct ssl_ctx_st;
struct ssl_st;

namespace tracery::control::tls {

inline constexpr size_t kBindingSize = 32;      // channel binding bytes (auth.hpp)
inline constexpr size_t kMaxRecord = 16 * 1024; // bytes of one TLS record's plaintext
inline constexpr size_t kMaxPemFile = 1u << 20; // a CA file read whole

// How a step went.
enum class Io {
	done,       // done (read: bytes were read)
	want_read,  // call again once the socket is readable
	want_write, // call again once the socket is writable (write: with the same bytes)
	closed,     // the peer closed the connection
	error,      // error() says why; the connection is of no more use
};

// A TLS configuration for one side, shared by its connections.
class Context {
public:
	// A server's: its certificate chain and private key (PEM files). "" and
	// *out set, or one line naming the file that is wrong.
	static std::string server(const std::string &cert_file, const std::string &key_file, Context *out);
	// A client's: the CAs that may sign the server's certificate, from a PEM
	// file, or from PEM text (`what` names it in errors).
	static std::string client_from_file(const std::string &ca_file, Context *out);
	static std::string client_from_pem(std::string_view pem, const std::string &what, Context *out);
	// A PEM file's text, read whole (at most kMaxPemFile): "" and *out set, or why not.
	static std::string read_pem_file(const std::string &path, std::string *out);

	explicit operator bool() const { return static_cast<bool>(ctx_); }
	bool is_server() const { return server_; }
	ssl_ctx_st *get() const { return ctx_.get(); }

private:
	std::shared_ptr<ssl_ctx_st> ctx_;
	bool server_ = false;
};

// One TLS connection over a connected socket.
class Channel {
public:
	Channel() = default;
	~Channel();
	Channel(Channel &&o) noexcept;
	Channel &operator=(Channel &&o) noexcept;
	Channel(const Channel &) = delete;
	Channel &operator=(const Channel &) = delete;

	// A client's side of fd, checking the server's certificate names host. "" or why not.
	static std::string client(const Context &ctx, int fd, const std::string &host, Channel *out);
	// A server's side of fd.
	static std::string server(const Context &ctx, int fd, Channel *out);

	// The non-blocking steps.
	Io handshake();
	// Reads up to n bytes (at most one record's): *got set on done.
	Io read(void *buf, size_t n, size_t *got);
	// Writes all n bytes: done, or want_* (call again with the same bytes).
	Io write(const void *buf, size_t n);
	// Bytes already decrypted and not yet read (no socket event will tell of them).
	bool pending() const;
	// Sends the TLS close alert (best effort, never waits).
	void shutdown();
	// Why the last step gave error.
	const std::string &error() const { return error_; }
	bool handshake_done() const { return handshake_done_; }
	// Keying material exported from this connection (RFC 5705), the same on
	// both ends and on no other connection: the channel binding of auth.hpp.
	std::vector<uint8_t> binding() const;
	// The protocol and cipher agreed, e.g. "TLSv1.3 TLS_AES_256_GCM_SHA384".
	std::string description() const;

	// Waiting versions, with poll() on the socket. "" or why not.
	std::string handshake_wait(int timeout_ms);
	// Every byte: done, want_write when the peer took nothing for
	// idle_timeout_ms (call again with the same bytes: other steps, such as
	// reading, may come between), closed or error.
	Io write_wait(std::span<const uint8_t> bytes, int idle_timeout_ms);
	// The same, failing when the peer takes nothing for idle_timeout_ms.
	std::string write_all(std::span<const uint8_t> bytes, int idle_timeout_ms);
	// Some bytes within timeout_ms: done (*got > 0), want_read (none in
	// time), closed or error.
	Io read_wait(void *buf, size_t n, size_t *got, int timeout_ms);

	explicit operator bool() const { return ssl_ != nullptr; }

private:
	// c's SSL over fd, of ctx (a server's or a client's, as `server` says): "" or why not.
	static std::string start(const Context &ctx, bool server, int fd, Channel *c);
	Io result(int rc, const char *what);

	ssl_st *ssl_ = nullptr;
	int fd_ = -1;
	bool handshake_done_ = false;
	std::string error_;
};

} // namespace tracery::control::tls
