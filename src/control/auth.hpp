// control/auth.hpp — mutual authentication with a shared secret, for the
// relay's ports (docs/relay-protocol.md, *Authentication*). Both ends hold a
// key: a name and a secret of 16 to 64 random bytes, which never crosses the
// network. A challenge–response over HMAC-SHA-256 (OpenSSL's libcrypto):
//
//   client → server  Request   key name, client nonce (32 random bytes)
//   server → client  Challenge server nonce (32 random bytes)
//   client → server  Response  client proof = MAC(secret, "client", ...)
//   server → client  Result    accepted + server proof = MAC(secret, "server", ...)
//
// Each proof is HMAC-SHA-256 over a label naming the protocol, the service
// (which port: a sender's proof is no viewer's), the direction (a client's
// proof is no server's), the key name, both nonces and the channel binding
// (with TLS, keying material exported from the TLS session, so that a proof
// is only good on the connection it was made for). Fresh nonces on both
// sides: a proof recorded on one connection is refused on any other. The
// client checks the server's proof before it sends anything else, so a
// server without the secret learns nothing but a proof it cannot reuse.
// A server that does not know the key name answers exactly as for a wrong
// secret (a challenge, then a refusal): a peer cannot learn which keys exist.
//
// The exchanges are state machines over these four messages, with no I/O:
// each protocol carries them in its own frames.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::control::auth {

inline constexpr size_t kNonceSize = 32, kProofSize = 32;
inline constexpr size_t kMinSecretBytes = 16, kMaxSecretBytes = 64; // 32 to 128 hex digits
inline constexpr size_t kMaxKeyName = 64;
inline constexpr size_t kMaxBinding = 64; // channel binding bytes
inline constexpr size_t kMaxKeys = 4096;  // in one keys file
inline constexpr size_t kMaxKeysFile = 1024 * 1024;

using Nonce = std::array<uint8_t, kNonceSize>;
using Proof = std::array<uint8_t, kProofSize>;

// Which port the exchange is for: part of every proof.
enum class Service : uint8_t {
	relay_sender = 1, // traceryd → tracery-relayd's sender port
	live_viewer = 2,  // a viewer → tracery-relayd's live port
};

// A secret's bytes, wiped from memory when it goes.
class Secret {
public:
	Secret() = default;
	explicit Secret(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
	~Secret();
	Secret(const Secret &o) : bytes_(o.bytes_) {}
	Secret &operator=(const Secret &o);
	Secret(Secret &&o) noexcept : bytes_(std::move(o.bytes_)) {}
	Secret &operator=(Secret &&o) noexcept;
	std::span<const uint8_t> bytes() const { return bytes_; }
	bool empty() const { return bytes_.empty(); }

private:
	std::vector<uint8_t> bytes_;
};

struct Key {
	std::string name;
	Secret secret;
};

// 1-64 bytes of [A-Za-z0-9._-], not starting with '.'.
bool valid_key_name(std::string_view name);
// The secret written as 32 to 128 hex digits (an even count): "" and *out
// set, or why not (the digits are never repeated in the message).
std::string parse_secret(std::string_view hex, Secret *out);

// The secret in hex (to pass it along to the process that uses it).
std::string secret_hex(const Secret &secret);

// Keys by name, as a keys file lists them.
class Keyring {
public:
	// Reads a keys file: one key a line, `NAME SECRET` (SECRET in hex), blank
	// lines and lines starting with '#' ignored; names unique. The file must be
	// a regular file owned by the effective user (or root), readable and
	// writable by its owner only (it holds secrets). "" and *out set, or one
	// line naming the file (and the line) and the fix.
	static std::string load(const std::string &path, Keyring *out);
	// A key of the text of a keys file (`what` names it in errors), no
	// file checks: for keys passed along by a process that read the file.
	static std::string parse(std::string_view text, const std::string &what, Keyring *out);
	// "" or why not (a bad name, a bad secret, a name already there).
	std::string add(Key key);
	// The key of that name, or nullptr.
	const Key *find(std::string_view name) const;
	size_t size() const { return keys_.size(); }
	const std::vector<Key> &keys() const { return keys_; }

private:
	std::vector<Key> keys_;
};

// A client's key file: a keys file (as Keyring::load reads it, with the
// same checks) holding exactly one key. "" and *out set, or why not.
std::string load_key(const std::string &path, Key *out);

// Fills out with random bytes from the system's CSPRNG: "" or why not.
std::string random_bytes(std::span<uint8_t> out);

// The proof of one direction (exposed for tests and the fuzz targets).
Proof compute_proof(Service service, bool from_server, std::string_view key_name, const Secret &secret,
                    const Nonce &client_nonce, const Nonce &server_nonce, std::span<const uint8_t> binding);
// Constant-time equality of two proofs.
bool proofs_equal(const Proof &a, const Proof &b);

// The four messages.
struct Request {
	std::string key_name;
	Nonce client_nonce{};
	bool operator==(const Request &) const = default;
};
struct Challenge {
	Nonce server_nonce{};
	bool operator==(const Challenge &) const = default;
};
struct Response {
	Proof client_proof{};
	bool operator==(const Response &) const = default;
};
struct Result {
	bool accepted = false;
	Proof server_proof{}; // zero when refused
	bool operator==(const Result &) const = default;
};

// The client's side: request(), then respond(challenge), then
// check(result). Each step once, in order; any other call is an error.
class ClientExchange {
public:
	// binding: the channel binding (empty without TLS), at most kMaxBinding.
	ClientExchange(Service service, Key key, std::vector<uint8_t> binding = {});
	// "" and *out set, or why not (no random bytes).
	std::string request(Request *out);
	std::string respond(const Challenge &challenge, Response *out);
	// "" if the server accepted and proved it knows the secret; else why.
	std::string check(const Result &result);
	bool done() const { return step_ == Step::done; }

private:
	enum class Step { request, respond, check, done, failed };
	std::string fail(std::string why);

	Service service_;
	Key key_;
	std::vector<uint8_t> binding_;
	Nonce client_nonce_{}, server_nonce_{};
	Step step_ = Step::request;
};

// The server's side: challenge(request), then answer(response). Each step
// once, in order. A refused exchange gives the peer the same answer
// whatever was wrong (unknown key, wrong secret); the reason is for the log.
class ServerExchange {
public:
	ServerExchange(Service service, const Keyring &keys, std::vector<uint8_t> binding = {});
	// "" and *out set (an unknown key name too), or why not (a request out
	// of turn, a malformed name, no random bytes): the connection ends.
	std::string challenge(const Request &request, Challenge *out);
	// *out set (accepted with the server's proof, or refused) and "" when
	// accepted; else why refused, for the log (the peer gets *out only).
	std::string answer(const Response &response, Result *out);
	// The key name once accepted.
	bool accepted() const { return step_ == Step::done; }
	const std::string &key_name() const { return request_.key_name; }

private:
	enum class Step { challenge, answer, done, failed };

	Service service_;
	const Keyring &keys_;
	std::vector<uint8_t> binding_;
	Request request_;
	Nonce server_nonce_{};
	Step step_ = Step::challenge;
};

} // namespace tracery::control::auth
