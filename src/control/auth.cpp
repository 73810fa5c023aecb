// control/auth.cpp — the shared-secret challenge–response of auth.hpp:
// HMAC-SHA-256 and the random nonces from OpenSSL's libcrypto, proofs
// compared in constant time, keys files read with their permissions checked.
#include "control/auth.hpp"
#include "base/ascii.hpp"

#include "base/cat.hpp"
#include "base/whole_file.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tracery::control::auth {

namespace {

using base::cat;

constexpr std::string_view kLabel = "tracery-auth-v1";

std::string openssl_error()
{
	const unsigned long e = ERR_get_error();
	if (e == 0)
		return "no reason given";
	char buf[256];
	ERR_error_string_n(e, buf, sizeof buf);
	ERR_clear_error();
	return buf;
}

bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '-';
}

std::string_view trim(std::string_view s)
{
	while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
		s.remove_prefix(1);
	while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
		s.remove_suffix(1);
	return s;
}

} // namespace

Secret::~Secret()
{
	if (!bytes_.empty())
		OPENSSL_cleanse(bytes_.data(), bytes_.size());
}

Secret &Secret::operator=(const Secret &o)
{
	if (this != &o) {
		Secret wiped(std::move(*this));
		bytes_ = o.bytes_;
	}
	return *this;
}

Secret &Secret::operator=(Secret &&o) noexcept
{
	if (this != &o) {
		Secret wiped(std::move(*this));
		bytes_ = std::move(o.bytes_);
	}
	return *this;
}

bool valid_key_name(std::string_view name)
{
	return !name.empty() && name.size() <= kMaxKeyName && name.front() != '.' &&
	       std::all_of(name.begin(), name.end(), name_char);
}

std::string parse_secret(std::string_view hex, Secret *out)
{
	if (hex.size() % 2 != 0 || hex.size() < 2 * kMinSecretBytes || hex.size() > 2 * kMaxSecretBytes)
		return cat("the secret has ", std::to_string(hex.size()),
		           " characters where 32 to 128 hex digits (an "
		           "even count) are due; make one with: "
		           "openssl rand -hex 32");
	std::vector<uint8_t> bytes(hex.size() / 2);
	for (size_t i = 0; i < bytes.size(); i++) {
		const int hi = base::hex_digit_value(hex[2 * i]), lo = base::hex_digit_value(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			OPENSSL_cleanse(bytes.data(), bytes.size());
			return "the secret has a character that is not a hex digit; make one with: openssl rand -hex 32";
		}
		bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
	}
	*out = Secret(std::move(bytes));
	return {};
}

std::string secret_hex(const Secret &secret)
{
	static const char digits[] = "0123456789abcdef";
	std::string out;
	out.reserve(2 * secret.bytes().size());
	for (const uint8_t b : secret.bytes()) {
		out.push_back(digits[b >> 4]);
		out.push_back(digits[b & 15]);
	}
	return out;
}

std::string Keyring::add(Key key)
{
	if (!valid_key_name(key.name))
		return "a key name is 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'";
	if (key.secret.bytes().size() < kMinSecretBytes || key.secret.bytes().size() > kMaxSecretBytes)
		return "a secret is 16 to 64 bytes";
	if (find(key.name))
		return cat("the key name ", key.name, " is given twice");
	if (keys_.size() >= kMaxKeys)
		return cat("more than ", std::to_string(kMaxKeys), " keys");
	keys_.push_back(std::move(key));
	return {};
}

const Key *Keyring::find(std::string_view name) const
{
	for (const Key &k : keys_)
		if (k.name == name)
			return &k;
	return nullptr;
}

std::string Keyring::parse(std::string_view text, const std::string &what, Keyring *out)
{
	Keyring ring;
	size_t line_no = 0;
	while (!text.empty()) {
		const size_t eol = text.find('\n');
		const std::string_view line = trim(text.substr(0, eol));
		text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
		++line_no;
		if (line.empty() || line.front() == '#')
			continue;
		const auto where = [&] { return cat(what, ":", std::to_string(line_no), ": "); };
		const size_t space = line.find_first_of(" \t");
		if (space == std::string_view::npos)
			return cat(where(), "a key is `NAME SECRET` (the secret in hex) on one line");
		Key key;
		key.name = std::string(line.substr(0, space));
		if (!valid_key_name(key.name))
			return cat(where(), "a key name is 1 to 64 letters, digits, '.', '_' or '-', not starting "
			                    "with '.'");
		if (std::string why = parse_secret(trim(line.substr(space)), &key.secret); !why.empty())
			return cat(where(), why);
		if (std::string why = ring.add(std::move(key)); !why.empty())
			return cat(where(), why);
	}
	if (ring.size() == 0)
		return cat(what, ": no key (one a line: `NAME SECRET`, the secret in hex, e.g. from "
		                 "`openssl rand -hex 32`)");
	*out = std::move(ring);
	return {};
}

std::string Keyring::load(const std::string &path, Keyring *out)
{
	base::WholeFileRules rules;
	rules.max_size = kMaxKeysFile;
	rules.what = "a keys file";
	rules.not_regular_note = "(a keys file lists `NAME SECRET` lines)";
	rules.secret = true;
	rules.check = [&](const struct stat &st) -> std::string {
		if (st.st_uid != ::geteuid() && st.st_uid != 0)
			return cat(path, ": owned by uid ", std::to_string(st.st_uid),
			           ", neither this user nor root: it holds secrets; chown it to uid ",
			           std::to_string(::geteuid()));
		if ((st.st_mode & 077) != 0) {
			char mode[8];
			std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
			return cat(path, ": mode ", mode,
			           " lets group or others reach it, and it holds secrets; fix it with: chmod 600 ",
			           path);
		}
		return {};
	};
	std::string text;
	if (std::string why = base::read_whole_file(path, rules, &text); !why.empty())
		return why;
	std::string why = parse(text, path, out);
	OPENSSL_cleanse(text.data(), text.size());
	return why;
}

std::string load_key(const std::string &path, Key *out)
{
	Keyring ring;
	if (std::string why = Keyring::load(path, &ring); !why.empty())
		return why;
	if (ring.size() != 1)
		return cat(path, ": ", std::to_string(ring.size()),
		           " keys, where a sender's key file holds one (its `NAME SECRET` line of the relay's keys)");
	*out = ring.keys().front();
	return {};
}

std::string random_bytes(std::span<uint8_t> out)
{
	if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1)
		return cat("no random bytes from OpenSSL: ", openssl_error());
	return {};
}

Proof compute_proof(Service service, bool from_server, std::string_view key_name, const Secret &secret,
                    const Nonce &client_nonce, const Nonce &server_nonce, std::span<const uint8_t> binding)
{
	// Every variable-length part is length-prefixed: no two inputs give the same bytes.
	// (Written into a buffer sized first: GCC 12 at -O2 with a sanitizer warns of an
	// overflow it imagines in vector::insert after reserve.)
	const uint8_t head[] = {0, static_cast<uint8_t>(service), static_cast<uint8_t>(from_server ? 'S' : 'C'),
	                        static_cast<uint8_t>(key_name.size())};
	const uint8_t binding_size = static_cast<uint8_t>(binding.size());
	std::vector<uint8_t> msg(kLabel.size() + sizeof head + key_name.size() + 2 * kNonceSize + 1 + binding.size());
	size_t at = 0;
	const auto put = [&](const void *bytes, size_t n) {
		if (n > 0)
			std::memcpy(msg.data() + at, bytes, n);
		at += n;
	};
	put(kLabel.data(), kLabel.size());
	put(head, sizeof head);
	put(key_name.data(), key_name.size());
	put(client_nonce.data(), client_nonce.size());
	put(server_nonce.data(), server_nonce.size());
	put(&binding_size, 1);
	put(binding.data(), binding.size());
	Proof out{};
	unsigned int len = 0;
	const auto key = secret.bytes();
	HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), msg.data(), msg.size(), out.data(), &len);
	return out;
}

bool proofs_equal(const Proof &a, const Proof &b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

ClientExchange::ClientExchange(Service service, Key key, std::vector<uint8_t> binding)
	: service_(service), key_(std::move(key)), binding_(std::move(binding))
{
}

std::string ClientExchange::fail(std::string why)
{
	step_ = Step::failed;
	return why;
}

std::string ClientExchange::request(Request *out)
{
	if (step_ != Step::request)
		return fail("authentication: a second request");
	if (!valid_key_name(key_.name) || key_.secret.empty() || binding_.size() > kMaxBinding)
		return fail("authentication: no valid key to authenticate with");
	if (std::string why = random_bytes(client_nonce_); !why.empty())
		return fail(why);
	*out = {key_.name, client_nonce_};
	step_ = Step::respond;
	return {};
}

std::string ClientExchange::respond(const Challenge &challenge, Response *out)
{
	if (step_ != Step::respond)
		return fail("authentication: a challenge out of turn");
	server_nonce_ = challenge.server_nonce;
	if (server_nonce_ == client_nonce_)
		return fail("authentication: the server sent our own nonce back");
	out->client_proof =
		compute_proof(service_, false, key_.name, key_.secret, client_nonce_, server_nonce_, binding_);
	step_ = Step::check;
	return {};
}

std::string ClientExchange::check(const Result &result)
{
	if (step_ != Step::check)
		return fail("authentication: a result out of turn");
	if (!result.accepted)
		return fail(cat("the server refused the key ", key_.name,
		                " (unknown to it, or its secret differs from ours)"));
	const Proof expected =
		compute_proof(service_, true, key_.name, key_.secret, client_nonce_, server_nonce_, binding_);
	if (!proofs_equal(expected, result.server_proof))
		return fail(cat("the server's proof is wrong: it does not know the secret of the key ", key_.name,
		                " (not the server meant, or a secret that differs)"));
	step_ = Step::done;
	return {};
}

ServerExchange::ServerExchange(Service service, const Keyring &keys, std::vector<uint8_t> binding)
	: service_(service), keys_(keys), binding_(std::move(binding))
{
}

std::string ServerExchange::challenge(const Request &request, Challenge *out)
{
	if (step_ != Step::challenge) {
		step_ = Step::failed;
		return "authentication: a second request";
	}
	step_ = Step::failed;
	if (!valid_key_name(request.key_name))
		return "authentication: the key name is not a valid name";
	if (binding_.size() > kMaxBinding)
		return "authentication: a channel binding too long";
	if (std::string why = random_bytes(server_nonce_); !why.empty())
		return why;
	request_ = request;
	out->server_nonce = server_nonce_;
	step_ = Step::answer;
	return {};
}

std::string ServerExchange::answer(const Response &response, Result *out)
{
	*out = {};
	if (step_ != Step::answer) {
		step_ = Step::failed;
		return "authentication: a response out of turn";
	}
	step_ = Step::failed;
	const Key *key = keys_.find(request_.key_name);
	// An unknown name costs the same work as a known one, and gets the same answer.
	Secret unknown;
	if (!key) {
		std::vector<uint8_t> random(kMinSecretBytes);
		if (std::string why = random_bytes(random); !why.empty())
			return why;
		unknown = Secret(std::move(random));
	}
	const Secret &secret = key ? key->secret : unknown;
	const Proof expected = compute_proof(service_, false, request_.key_name, secret, request_.client_nonce,
	                                     server_nonce_, binding_);
	const bool good = proofs_equal(expected, response.client_proof);
	if (!key)
		return cat("authentication refused: unknown key ", request_.key_name);
	if (!good)
		return cat("authentication refused: a wrong proof for the key ", request_.key_name,
		           " (its secret differs, or a proof made for another connection)");
	out->accepted = true;
	out->server_proof = compute_proof(service_, true, request_.key_name, secret, request_.client_nonce,
	                                  server_nonce_, binding_);
	step_ = Step::done;
	return {};
}

} // namespace tracery::control::auth
