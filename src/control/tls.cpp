// control/tls.cpp — the TLS contexts and channels of tls.hpp over OpenSSL's
// libssl: TLS 1.2 at least, the server's certificate checked against the
// client's CAs and the host it connected to, no session tickets; OpenSSL's
// error queue turned into one line per failure.
#include "control/tls.hpp"

#include "base/cat.hpp"
#include "base/whole_file.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

namespace tracery::control::tls {

namespace {

using base::cat;
using Clock = std::chrono::steady_clock;

constexpr char kExporterLabel[] = "EXPORTER-tracery-channel-binding";

// OpenSSL's queued errors, oldest first, joined; the queue emptied.
std::string openssl_errors()
{
	std::string out;
	while (const unsigned long e = ERR_get_error()) {
		char buf[256];
		ERR_error_string_n(e, buf, sizeof buf);
		if (!out.empty())
			out += "; ";
		out += buf;
	}
	return out.empty() ? std::string("no reason given") : out;
}

std::shared_ptr<SSL_CTX> new_context(bool server, std::string *why)
{
	ERR_clear_error();
	std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()), SSL_CTX_free);
	if (!ctx) {
		*why = cat("TLS: ", openssl_errors());
		return nullptr;
	}
	SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
	// A peer that closes without the TLS alert reads as closed, as TCP would.
	SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx.get(), 0);
	// write() retried with the same bytes may come from a moved buffer (a vector grown meanwhile).
	SSL_CTX_set_mode(ctx.get(), SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return ctx;
}

// The remaining milliseconds to deadline, at least 0.
int left_ms(Clock::time_point deadline)
{
	const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
	return static_cast<int>(std::max<int64_t>(left, 0));
}

// OpenSSL's socket BIO writes with write(2): a peer gone would raise
// SIGPIPE, which ends a process that does not ignore it (the relay). The
// same BIO but for its writes, sent with MSG_NOSIGNAL.
int write_no_sigpipe(BIO *b, const char *in, int n)
{
	int fd = -1;
	BIO_get_fd(b, &fd);
	const ssize_t sent = ::send(fd, in, static_cast<size_t>(n), MSG_NOSIGNAL);
	BIO_clear_retry_flags(b);
	if (sent <= 0 && BIO_sock_should_retry(static_cast<int>(sent)))
		BIO_set_retry_write(b);
	return static_cast<int>(sent);
}

const BIO_METHOD *socket_method()
{
	static BIO_METHOD *const method = [] {
		const BIO_METHOD *sock = BIO_s_socket();
		BIO_METHOD *m = BIO_meth_new(BIO_TYPE_SOCKET, "socket, no SIGPIPE");
		if (m) {
			BIO_meth_set_write(m, write_no_sigpipe);
			BIO_meth_set_read(m, BIO_meth_get_read(sock));
			BIO_meth_set_puts(m, BIO_meth_get_puts(sock));
			BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock));
			BIO_meth_set_create(m, BIO_meth_get_create(sock));
			BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock));
		}
		return m;
	}();
	return method;
}

// ssl reads and writes fd (not closed with it): false if out of memory.
bool attach(SSL *ssl, int fd)
{
	const BIO_METHOD *method = socket_method();
	BIO *bio = method ? BIO_new(method) : nullptr;
	if (!bio)
		return false;
	BIO_set_fd(bio, fd, BIO_NOCLOSE);
	SSL_set_bio(ssl, bio, bio);
	return true;
}

// Waits for the socket as io asks: true if ready, false when timed out.
bool wait_for(int fd, Io io, int timeout_ms)
{
	pollfd p{fd, static_cast<short>(io == Io::want_write ? POLLOUT : POLLIN), 0};
	for (;;) {
		const int n = ::poll(&p, 1, timeout_ms);
		if (n < 0 && errno == EINTR)
			continue;
		return n > 0;
	}
}

} // namespace

std::string Context::read_pem_file(const std::string &path, std::string *out)
{
	base::WholeFileRules rules;
	rules.max_size = kMaxPemFile;
	rules.what = "a PEM file of certificates";
	rules.not_regular_note = "(a PEM file of certificates is due)";
	return base::read_whole_file(path, rules, out);
}

std::string Context::server(const std::string &cert_file, const std::string &key_file, Context *out)
{
	std::string why;
	auto ctx = new_context(true, &why);
	if (!ctx)
		return why;
	if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1)
		return cat("--tls-cert ", cert_file, ": not a PEM certificate chain we can read (", openssl_errors(),
		           ")");
	std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(key_file.c_str(), "r"), BIO_free);
	std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
		bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr, EVP_PKEY_free);
	if (!key)
		return cat("--tls-key ", key_file, ": not a PEM private key we can read (", openssl_errors(), ")");
	if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 || SSL_CTX_check_private_key(ctx.get()) != 1)
		return cat("--tls-key ", key_file, ": not the private key of the certificate in ", cert_file, " (",
		           openssl_errors(), ")");
	out->ctx_ = std::move(ctx);
	out->server_ = true;
	return {};
}

std::string Context::client_from_pem(std::string_view pem, const std::string &what, Context *out)
{
	std::string why;
	auto ctx = new_context(false, &why);
	if (!ctx)
		return why;
	std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
	                                              BIO_free);
	X509_STORE *store = SSL_CTX_get_cert_store(ctx.get());
	size_t count = 0;
	while (bio) {
		X509 *cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
		if (!cert)
			break;
		const int added = X509_STORE_add_cert(store, cert);
		X509_free(cert);
		if (added != 1)
			return cat(what, ": a certificate OpenSSL refuses (", openssl_errors(), ")");
		count++;
	}
	ERR_clear_error(); // the end of the PEM text reads as an error
	if (count == 0)
		return cat(what, ": no PEM certificate (-----BEGIN CERTIFICATE-----) in it");
	SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
	out->ctx_ = std::move(ctx);
	out->server_ = false;
	return {};
}

std::string Context::client_from_file(const std::string &ca_file, Context *out)
{
	std::string pem;
	if (std::string why = read_pem_file(ca_file, &pem); !why.empty())
		return why;
	return client_from_pem(pem, ca_file, out);
}

Channel::~Channel()
{
	if (ssl_)
		SSL_free(ssl_);
}

Channel::Channel(Channel &&o) noexcept
	: ssl_(std::exchange(o.ssl_, nullptr)), fd_(o.fd_), handshake_done_(o.handshake_done_),
	  error_(std::move(o.error_))
{
}

Channel &Channel::operator=(Channel &&o) noexcept
{
	if (this != &o) {
		if (ssl_)
			SSL_free(ssl_);
		ssl_ = std::exchange(o.ssl_, nullptr);
		fd_ = o.fd_;
		handshake_done_ = o.handshake_done_;
		error_ = std::move(o.error_);
	}
	return *this;
}

std::string Channel::start(const Context &ctx, bool server, int fd, Channel *c)
{
	if (!ctx || ctx.is_server() != server)
		return server ? "TLS: not a server's context" : "TLS: not a client's context";
	ERR_clear_error();
	c->ssl_ = SSL_new(ctx.get());
	if (!c->ssl_ || !attach(c->ssl_, fd))
		return cat("TLS: ", openssl_errors());
	c->fd_ = fd;
	return {};
}

std::string Channel::client(const Context &ctx, int fd, const std::string &host, Channel *out)
{
	Channel c;
	if (std::string why = start(ctx, false, fd, &c); !why.empty())
		return why;
	// The certificate must name the host: an IP address as an IP address, else as a DNS name (and SNI).
	X509_VERIFY_PARAM *param = SSL_get0_param(c.ssl_);
	in6_addr any{};
	const bool is_ip = inet_pton(AF_INET, host.c_str(), &any) == 1 || inet_pton(AF_INET6, host.c_str(), &any) == 1;
	const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
	                     : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
	if (ok != 1 || (!is_ip && SSL_set_tlsext_host_name(c.ssl_, host.c_str()) != 1))
		return cat("TLS: the host name ", host, " cannot be checked (", openssl_errors(), ")");
	SSL_set_connect_state(c.ssl_);
	*out = std::move(c);
	return {};
}

std::string Channel::server(const Context &ctx, int fd, Channel *out)
{
	Channel c;
	if (std::string why = start(ctx, true, fd, &c); !why.empty())
		return why;
	SSL_set_accept_state(c.ssl_);
	*out = std::move(c);
	return {};
}

Io Channel::result(int rc, const char *what)
{
	const int err = SSL_get_error(ssl_, rc);
	switch (err) {
	case SSL_ERROR_WANT_READ:
		return Io::want_read;
	case SSL_ERROR_WANT_WRITE:
		return Io::want_write;
	case SSL_ERROR_ZERO_RETURN:
		return Io::closed;
	case SSL_ERROR_SYSCALL:
		if (errno == 0 || errno == EPIPE || errno == ECONNRESET) {
			ERR_clear_error();
			return Io::closed;
		}
		error_ = cat("TLS ", what, ": ", std::strerror(errno));
		ERR_clear_error();
		return Io::error;
	default: {
		std::string detail = openssl_errors();
		const long verify = SSL_get_verify_result(ssl_);
		if (!SSL_is_server(ssl_) && verify != X509_V_OK)
			detail = cat("the relay's certificate: ", X509_verify_cert_error_string(verify), " (", detail,
			             ")");
		error_ = cat("TLS ", what, ": ", detail);
		return Io::error;
	}
	}
}

Io Channel::handshake()
{
	if (handshake_done_)
		return Io::done;
	ERR_clear_error();
	errno = 0;
	const int rc = SSL_do_handshake(ssl_);
	if (rc == 1) {
		handshake_done_ = true;
		return Io::done;
	}
	const Io io = result(rc, "handshake");
	if (io == Io::closed) {
		error_ = "TLS handshake: the peer closed the connection";
		return Io::error;
	}
	return io;
}

Io Channel::read(void *buf, size_t n, size_t *got)
{
	*got = 0;
	ERR_clear_error();
	errno = 0;
	size_t read_bytes = 0;
	const int rc = SSL_read_ex(ssl_, buf, n, &read_bytes);
	if (rc == 1) {
		*got = read_bytes;
		return Io::done;
	}
	return result(rc, "read");
}

Io Channel::write(const void *buf, size_t n)
{
	if (n == 0)
		return Io::done;
	ERR_clear_error();
	errno = 0;
	size_t written = 0;
	const int rc = SSL_write_ex(ssl_, buf, n, &written);
	if (rc == 1)
		return Io::done; // without partial writes, all n bytes
	return result(rc, "write");
}

bool Channel::pending() const { return ssl_ && SSL_pending(ssl_) > 0; }

void Channel::shutdown()
{
	if (ssl_ && handshake_done_) {
		ERR_clear_error();
		SSL_shutdown(ssl_);
		ERR_clear_error();
	}
}

std::vector<uint8_t> Channel::binding() const
{
	std::vector<uint8_t> out(kBindingSize);
	if (!ssl_ || !handshake_done_ ||
	    SSL_export_keying_material(ssl_, out.data(), out.size(), kExporterLabel, sizeof kExporterLabel - 1, nullptr,
	                               0, 0) != 1) {
		ERR_clear_error();
		return {};
	}
	return out;
}

std::string Channel::description() const
{
	if (!ssl_)
		return "no TLS";
	return cat(SSL_get_version(ssl_), " ", SSL_get_cipher_name(ssl_));
}

std::string Channel::handshake_wait(int timeout_ms)
{
	const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		const Io io = handshake();
		if (io == Io::done)
			return {};
		if (io == Io::error || io == Io::closed)
			return error_;
		if (!wait_for(fd_, io, left_ms(deadline)))
			return cat("TLS handshake: no answer in ", std::to_string(timeout_ms), " ms");
	}
}

Io Channel::write_wait(std::span<const uint8_t> bytes, int idle_timeout_ms)
{
	for (;;) {
		const Io io = write(bytes.data(), bytes.size());
		if (io != Io::want_read && io != Io::want_write)
			return io;
		// Records already sent count as progress: the wait is per step.
		if (!wait_for(fd_, io, idle_timeout_ms))
			return Io::want_write;
	}
}

std::string Channel::write_all(std::span<const uint8_t> bytes, int idle_timeout_ms)
{
	switch (write_wait(bytes, idle_timeout_ms)) {
	case Io::done:
		return {};
	case Io::closed:
		return "send: the peer closed the connection";
	case Io::error:
		return error_;
	default:
		return cat("send: the peer took nothing for ", std::to_string(idle_timeout_ms / 1000), " s");
	}
}

Io Channel::read_wait(void *buf, size_t n, size_t *got, int timeout_ms)
{
	const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		const Io io = read(buf, n, got);
		if (io != Io::want_read && io != Io::want_write)
			return io;
		if (!wait_for(fd_, io, left_ms(deadline)))
			return Io::want_read;
	}
}

} // namespace tracery::control::tls
