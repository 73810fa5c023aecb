// Unit tests of the TLS layer (control/tls.hpp) over socket pairs, with a CA
// and certificates made here: handshakes driven step by step on
// non-blocking sockets (as the relay's loop does) and with the waiting
// helpers (as a sender does), bytes both ways, a write held by its peer with
// reads between its tries, the channel binding equal on both ends and
// different per connection; refused: a certificate for another
// host, one from an unknown CA, a peer limited to TLS 1.1, a key that is not
// the certificate's, a CA file without certificates.
#include "control/tls.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

namespace tracery::control::tls {
namespace {

using PKey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

PKey new_key() { return PKey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free); }

void add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
	ASSERT_NE(ext, nullptr);
	X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
}

// A certificate for `name` with subjectAltName `san` (a CA's when san is
// empty), signed by issuer (itself when null).
Cert make_cert(EVP_PKEY *key, const char *name, const char *san, X509 *issuer, EVP_PKEY *issuer_key)
{
	Cert cert(X509_new(), X509_free);
	X509_set_version(cert.get(), 2);
	static long serial = 1;
	ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
	X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
	X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
	X509_set_pubkey(cert.get(), key);
	X509_NAME *subject = X509_get_subject_name(cert.get());
	X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char *>(name), -1, -1,
	                           0);
	X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : subject);
	X509 *signer = issuer ? issuer : cert.get();
	if (*san) {
		add_ext(cert.get(), signer, NID_subject_alt_name, san);
		add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
	} else {
		add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
		add_ext(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
	}
	EXPECT_GT(X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()), 0);
	return cert;
}

std::string pem_of(X509 *cert)
{
	std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
	PEM_write_bio_X509(bio.get(), cert);
	char *data = nullptr;
	const long n = BIO_get_mem_data(bio.get(), &data);
	return std::string(data, static_cast<size_t>(n));
}

std::string pem_of(EVP_PKEY *key)
{
	std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
	PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
	char *data = nullptr;
	const long n = BIO_get_mem_data(bio.get(), &data);
	return std::string(data, static_cast<size_t>(n));
}

class Tls : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		char tmpl[] = "/tmp/tls_test.XXXXXX";
		ASSERT_NE(::mkdtemp(tmpl), nullptr);
		dir = tmpl;
		PKey ca_key = new_key(), server_key = new_key(), other_key = new_key();
		Cert ca = make_cert(ca_key.get(), "Test CA", "", nullptr, nullptr);
		Cert server =
			make_cert(server_key.get(), "relay", "DNS:relay.test,IP:127.0.0.1", ca.get(), ca_key.get());
		Cert other_ca = make_cert(other_key.get(), "Other CA", "", nullptr, nullptr);
		write("ca.pem", pem_of(ca.get()));
		write("other-ca.pem", pem_of(other_ca.get()));
		write("server.pem", pem_of(server.get()));
		write("server.key", pem_of(server_key.get()));
		write("other.key", pem_of(other_key.get()));
	}
	static void TearDownTestSuite() { std::filesystem::remove_all(dir); }
	static void write(const std::string &name, const std::string &text)
	{
		FILE *f = std::fopen((dir + "/" + name).c_str(), "w");
		ASSERT_NE(f, nullptr);
		std::fwrite(text.data(), 1, text.size(), f);
		std::fclose(f);
	}
	static std::string path(const std::string &name) { return dir + "/" + name; }

	void SetUp() override
	{
		int sv[2];
		ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
		client_fd = sv[0];
		server_fd = sv[1];
		ASSERT_EQ(Context::server(path("server.pem"), path("server.key"), &server_ctx), "");
		ASSERT_EQ(Context::client_from_file(path("ca.pem"), &client_ctx), "");
	}
	void TearDown() override
	{
		::close(client_fd);
		::close(server_fd);
	}

	// Drives both handshakes step by step in this thread: "" or the first error.
	static std::string handshake_both(Channel &client, Channel &server)
	{
		for (int round = 0; round < 100; round++) {
			const Io c = client.handshake();
			if (c == Io::error)
				return "client: " + client.error();
			const Io s = server.handshake();
			if (s == Io::error)
				return "server: " + server.error();
			if (c == Io::done && s == Io::done)
				return "";
		}
		return "no end to the handshake";
	}

	static inline std::string dir;
	int client_fd = -1, server_fd = -1;
	Context server_ctx, client_ctx;
};

TEST_F(Tls, NonBlockingHandshakeAndBytesBothWays)
{
	Channel client, server;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "relay.test", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	char buf[64];
	size_t got = 0;
	EXPECT_EQ(server.read(buf, sizeof buf, &got), Io::want_read); // nothing yet
	ASSERT_EQ(handshake_both(client, server), "");
	EXPECT_TRUE(client.handshake_done());
	EXPECT_EQ(client.description().substr(0, 6), "TLSv1.");
	const auto binding = client.binding();
	EXPECT_EQ(binding.size(), kBindingSize);
	EXPECT_EQ(binding, server.binding());

	ASSERT_EQ(client.write("hello relay", 11), Io::done);
	ASSERT_EQ(server.read(buf, sizeof buf, &got), Io::done);
	EXPECT_EQ(std::string(buf, got), "hello relay");
	EXPECT_EQ(server.read(buf, sizeof buf, &got), Io::want_read);
	ASSERT_EQ(server.write("hello sender", 12), Io::done);
	ASSERT_EQ(client.read_wait(buf, sizeof buf, &got, 1000), Io::done);
	EXPECT_EQ(std::string(buf, got), "hello sender");
	// A record read in pieces: the rest is pending, with no socket event.
	ASSERT_EQ(client.write("0123456789", 10), Io::done);
	ASSERT_EQ(server.read(buf, 4, &got), Io::done);
	EXPECT_EQ(std::string(buf, got), "0123");
	EXPECT_TRUE(server.pending());
	ASSERT_EQ(server.read(buf, sizeof buf, &got), Io::done);
	EXPECT_EQ(std::string(buf, got), "456789");
	EXPECT_FALSE(server.pending());

	client.shutdown();
	EXPECT_EQ(server.read(buf, sizeof buf, &got), Io::closed);
}

TEST_F(Tls, WritingToAPeerGoneRaisesNoSignal)
{
	Channel client, server;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "relay.test", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	ASSERT_EQ(handshake_both(client, server), "");
	::close(client_fd);
	client_fd = ::open("/dev/null", O_RDONLY); // closed again by TearDown
	// The first write may still reach the socket's buffer; then EPIPE, not SIGPIPE.
	Io io = Io::done;
	for (int i = 0; i < 10 && io == Io::done; i++)
		io = server.write("after the end", 13);
	EXPECT_EQ(io, Io::closed);
}

TEST_F(Tls, AnIpAddressIsCheckedAsOne)
{
	Channel client, server;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "127.0.0.1", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	ASSERT_EQ(handshake_both(client, server), "");
}

TEST_F(Tls, BindingDiffersPerConnection)
{
	Channel c1, s1;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "relay.test", &c1), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &s1), "");
	ASSERT_EQ(handshake_both(c1, s1), "");
	int sv[2];
	ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	Channel c2, s2;
	ASSERT_EQ(Channel::client(client_ctx, sv[0], "relay.test", &c2), "");
	ASSERT_EQ(Channel::server(server_ctx, sv[1], &s2), "");
	ASSERT_EQ(handshake_both(c2, s2), "");
	EXPECT_NE(c1.binding(), c2.binding());
	EXPECT_EQ(c2.binding(), s2.binding());
	::close(sv[0]);
	::close(sv[1]);
}

TEST_F(Tls, WrongHostIsRefused)
{
	Channel client, server;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "elsewhere.test", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	const std::string why = handshake_both(client, server);
	EXPECT_EQ(why.rfind("client: TLS handshake: the relay's certificate: hostname mismatch", 0), 0u) << why;
	EXPECT_TRUE(client.binding().empty());
}

TEST_F(Tls, UnknownCaIsRefused)
{
	Context other;
	ASSERT_EQ(Context::client_from_file(path("other-ca.pem"), &other), "");
	Channel client, server;
	ASSERT_EQ(Channel::client(other, client_fd, "relay.test", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	const std::string why = handshake_both(client, server);
	EXPECT_EQ(
		why.rfind("client: TLS handshake: the relay's certificate: unable to get local issuer certificate", 0),
		0u)
		<< why;
}

TEST_F(Tls, OldProtocolIsRefused)
{
	SSL_CTX_set_min_proto_version(client_ctx.get(), TLS1_VERSION);
	SSL_CTX_set_max_proto_version(client_ctx.get(), TLS1_1_VERSION);
	SSL_CTX_set_security_level(client_ctx.get(), 0);
	Channel client, server;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "relay.test", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	const std::string why = handshake_both(client, server);
	EXPECT_EQ(why, "server: TLS handshake: error:0A000102:SSL routines::unsupported protocol");
}

TEST_F(Tls, PlainBytesAreRefusedByTheServer)
{
	Channel server;
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	ASSERT_EQ(::write(client_fd, "TRLY\1\0\1\0\0\0\0\0", 12), 12);
	EXPECT_EQ(server.handshake(), Io::error);
	EXPECT_EQ(server.error().rfind("TLS handshake: ", 0), 0u) << server.error();
}

TEST_F(Tls, WaitingHelpersMoveMegabytes)
{
	// Bounds that only a hung peer reaches: the test checks bytes, not speed
	// (under ThreadSanitizer on a loaded machine 3 MiB took more than 5 s).
	constexpr int kPatientMs = 60000;
	Channel client, server;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "relay.test", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	std::vector<uint8_t> sent(3 << 20);
	for (size_t i = 0; i < sent.size(); i++)
		sent[i] = static_cast<uint8_t>(i * 7 + (i >> 11));
	std::string client_why;
	std::thread sender([&] {
		client_why = client.handshake_wait(kPatientMs);
		if (client_why.empty())
			client_why = client.write_all(sent, kPatientMs);
		// shutdown() never waits: its alert is lost if the socket is still full of
		// what the server has not read yet (a loaded machine), so room is waited for.
		pollfd room{client_fd, POLLOUT, 0};
		::poll(&room, 1, kPatientMs);
		client.shutdown();
	});
	ASSERT_EQ(server.handshake_wait(kPatientMs), "");
	std::vector<uint8_t> got;
	std::vector<uint8_t> buf(kMaxRecord);
	for (;;) {
		size_t n = 0;
		const Io io = server.read_wait(buf.data(), buf.size(), &n, kPatientMs);
		if (io != Io::done) {
			EXPECT_EQ(io, Io::closed);
			break;
		}
		got.insert(got.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
	}
	sender.join();
	EXPECT_EQ(client_why, "");
	EXPECT_EQ(got, sent);
}

// A peer that reads nothing for a while (a relay that holds its sender):
// write_wait says so, the writer reads what the peer sent meanwhile (its
// NOTICE), and the same bytes are all sent once the peer reads again.
TEST_F(Tls, WriteWaitLetsTheWriterReadWhileThePeerHoldsIt)
{
	Channel client, server;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "relay.test", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	ASSERT_EQ(handshake_both(client, server), "");
	std::vector<uint8_t> sent(4 << 20);
	for (size_t i = 0; i < sent.size(); i++)
		sent[i] = static_cast<uint8_t>(i * 13 + (i >> 9));
	ASSERT_EQ(client.write_wait(sent, 50), Io::want_write); // the socket's buffers are full
	ASSERT_EQ(server.write("held", 4), Io::done);
	char note[16];
	size_t n = 0;
	ASSERT_EQ(client.read_wait(note, sizeof note, &n, 1000), Io::done);
	EXPECT_EQ(std::string(note, n), "held");
	std::vector<uint8_t> got;
	std::thread reader([&] {
		std::vector<uint8_t> buf(kMaxRecord);
		while (got.size() < sent.size()) {
			size_t r = 0;
			if (server.read_wait(buf.data(), buf.size(), &r, 5000) != Io::done)
				break;
			got.insert(got.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(r));
		}
	});
	const Io io = client.write_wait(sent, 5000);
	reader.join();
	EXPECT_EQ(io, Io::done);
	EXPECT_EQ(got, sent);
}

TEST_F(Tls, ReadWaitTimesOut)
{
	Channel client, server;
	ASSERT_EQ(Channel::client(client_ctx, client_fd, "relay.test", &client), "");
	ASSERT_EQ(Channel::server(server_ctx, server_fd, &server), "");
	ASSERT_EQ(handshake_both(client, server), "");
	char buf[16];
	size_t got = 0;
	EXPECT_EQ(client.read_wait(buf, sizeof buf, &got, 50), Io::want_read);
	EXPECT_EQ(got, 0u);
	// A handshake with a silent server ends at its deadline.
	int sv[2];
	ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	Channel lonely;
	ASSERT_EQ(Channel::client(client_ctx, sv[0], "relay.test", &lonely), "");
	EXPECT_EQ(lonely.handshake_wait(50), "TLS handshake: no answer in 50 ms");
	::close(sv[0]);
	::close(sv[1]);
}

TEST_F(Tls, BadFilesAreNamed)
{
	Context c;
	EXPECT_EQ(Context::server(path("server.pem"), path("other.key"), &c)
	                  .rfind("--tls-key " + path("other.key") + ": not the private key of the certificate in " +
	                                 path("server.pem"),
	                         0),
	          0u);
	EXPECT_EQ(Context::server(path("none.pem"), path("server.key"), &c)
	                  .rfind("--tls-cert " + path("none.pem") + ": not a PEM certificate chain we can read", 0),
	          0u);
	EXPECT_EQ(Context::server(path("server.pem"), path("ca.pem"), &c)
	                  .rfind("--tls-key " + path("ca.pem") + ": not a PEM private key we can read", 0),
	          0u);
	EXPECT_FALSE(c);
	EXPECT_EQ(Context::client_from_file(path("server.key"), &c),
	          path("server.key") + ": no PEM certificate (-----BEGIN CERTIFICATE-----) in it");
	EXPECT_EQ(Context::client_from_file(path("none.pem"), &c), path("none.pem") + ": No such file or directory");
	EXPECT_EQ(Context::client_from_file(dir, &c), dir + ": not a regular file (a PEM file of certificates is due)");
	EXPECT_FALSE(c);
	Channel ch;
	EXPECT_EQ(Channel::client(server_ctx, client_fd, "x", &ch), "TLS: not a client's context");
	EXPECT_EQ(Channel::server(client_ctx, server_fd, &ch), "TLS: not a server's context");
}

} // namespace
} // namespace tracery::control::tls
