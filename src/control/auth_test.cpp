// Unit tests of the shared-secret challenge–response (control/auth.hpp): the
// right secret accepted both ways; a wrong secret, an unknown key, a replayed
// or swapped proof, another service's or another channel's proof refused,
// with the same answer to the peer; steps out of turn refused; keys files
// read, and refused when others may read them or when a line is wrong, each
// with the file, the line and the fix.
#include "control/auth.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tracery::control::auth {
namespace {

const std::string kHexA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const std::string kHexB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

Key key(const std::string &name, const std::string &hex)
{
	Key k;
	k.name = name;
	EXPECT_EQ(parse_secret(hex, &k.secret), "");
	return k;
}

Keyring ring_of(std::vector<Key> keys)
{
	Keyring r;
	for (Key &k : keys)
		EXPECT_EQ(r.add(std::move(k)), "");
	return r;
}

// One whole exchange; the client's and the server's verdicts.
struct Outcome {
	std::string client, server;
	Result result;
};

Outcome run(ClientExchange &c, ServerExchange &s)
{
	Outcome o;
	Request req;
	Challenge ch;
	Response resp;
	EXPECT_EQ(c.request(&req), "");
	EXPECT_EQ(s.challenge(req, &ch), "");
	EXPECT_EQ(c.respond(ch, &resp), "");
	o.server = s.answer(resp, &o.result);
	o.client = c.check(o.result);
	return o;
}

TEST(Auth, RightSecretIsAcceptedBothWays)
{
	const Keyring ring = ring_of({key("other", kHexB), key("host-1", kHexA)});
	ClientExchange c(Service::relay_sender, key("host-1", kHexA));
	ServerExchange s(Service::relay_sender, ring);
	const Outcome o = run(c, s);
	EXPECT_EQ(o.server, "");
	EXPECT_EQ(o.client, "");
	EXPECT_TRUE(o.result.accepted);
	EXPECT_TRUE(s.accepted());
	EXPECT_EQ(s.key_name(), "host-1");
	EXPECT_TRUE(c.done());
}

TEST(Auth, WrongSecretAndUnknownKeyGetTheSameRefusal)
{
	const Keyring ring = ring_of({key("host-1", kHexA)});
	ClientExchange wrong(Service::relay_sender, key("host-1", kHexB));
	ServerExchange s1(Service::relay_sender, ring);
	const Outcome o1 = run(wrong, s1);
	EXPECT_EQ(o1.server, "authentication refused: a wrong proof for the key host-1 (its secret differs, or a "
	                     "proof made for another connection)");
	EXPECT_FALSE(o1.result.accepted);
	EXPECT_FALSE(s1.accepted());
	EXPECT_EQ(o1.client, "the server refused the key host-1 (unknown to it, or its secret differs from ours)");

	ClientExchange unknown(Service::relay_sender, key("nobody", kHexA));
	ServerExchange s2(Service::relay_sender, ring);
	const Outcome o2 = run(unknown, s2);
	EXPECT_EQ(o2.server, "authentication refused: unknown key nobody");
	EXPECT_FALSE(s2.accepted());
	// What the peer sees is the same: a challenge, then a refusal with no proof.
	EXPECT_EQ(o1.result, o2.result);
	EXPECT_EQ(o2.result, Result{});
}

TEST(Auth, ServerWithoutTheSecretIsRefusedByTheClient)
{
	// A server that accepts without knowing the secret (an impostor): its proof is wrong.
	ClientExchange c(Service::relay_sender, key("host-1", kHexA));
	Request req;
	ASSERT_EQ(c.request(&req), "");
	Challenge ch;
	ch.server_nonce.fill(7);
	Response resp;
	ASSERT_EQ(c.respond(ch, &resp), "");
	Result forged{.accepted = true, .server_proof = resp.client_proof}; // the client's proof reflected
	EXPECT_EQ(c.check(forged), "the server's proof is wrong: it does not know the secret of the key host-1 "
	                           "(not the server meant, or a secret that differs)");
	EXPECT_FALSE(c.done());

	// The same with a server that knows another secret for that name.
	const Keyring other = ring_of({key("host-1", kHexB)});
	ClientExchange c2(Service::relay_sender, key("host-1", kHexA));
	ServerExchange s2(Service::relay_sender, other);
	Request r2;
	Challenge ch2;
	Response resp2;
	ASSERT_EQ(c2.request(&r2), "");
	ASSERT_EQ(s2.challenge(r2, &ch2), "");
	ASSERT_EQ(c2.respond(ch2, &resp2), "");
	// An impostor that claims acceptance with its own secret's proof.
	const Proof theirs = compute_proof(Service::relay_sender, true, "host-1", other.find("host-1")->secret,
	                                   r2.client_nonce, ch2.server_nonce, {});
	EXPECT_NE(c2.check({.accepted = true, .server_proof = theirs}), "");
}

TEST(Auth, ReplayedProofIsRefused)
{
	const Keyring ring = ring_of({key("host-1", kHexA)});
	// A recorded exchange...
	ClientExchange c1(Service::relay_sender, key("host-1", kHexA));
	ServerExchange s1(Service::relay_sender, ring);
	Request req1;
	Challenge ch1;
	Response resp1;
	ASSERT_EQ(c1.request(&req1), "");
	ASSERT_EQ(s1.challenge(req1, &ch1), "");
	ASSERT_EQ(c1.respond(ch1, &resp1), "");
	Result res1;
	ASSERT_EQ(s1.answer(resp1, &res1), "");
	// ...replayed whole by an attacker on a new connection: a fresh server nonce.
	ServerExchange s2(Service::relay_sender, ring);
	Challenge ch2;
	ASSERT_EQ(s2.challenge(req1, &ch2), "");
	EXPECT_NE(ch2.server_nonce, ch1.server_nonce);
	Result res2;
	EXPECT_NE(s2.answer(resp1, &res2), "");
	EXPECT_FALSE(res2.accepted);
	// The recorded server result replayed to a new client: a fresh client nonce.
	ClientExchange c3(Service::relay_sender, key("host-1", kHexA));
	Request req3;
	Response resp3;
	ASSERT_EQ(c3.request(&req3), "");
	EXPECT_NE(req3.client_nonce, req1.client_nonce);
	ASSERT_EQ(c3.respond(ch1, &resp3), "");
	EXPECT_NE(c3.check(res1), "");
}

TEST(Auth, ProofsAreBoundToServiceDirectionNameAndChannel)
{
	Secret secret;
	ASSERT_EQ(parse_secret(kHexA, &secret), "");
	Nonce cn, sn;
	cn.fill(1);
	sn.fill(2);
	const std::vector<uint8_t> binding(32, 9);
	const Proof base = compute_proof(Service::relay_sender, false, "k", secret, cn, sn, binding);
	EXPECT_EQ(base, compute_proof(Service::relay_sender, false, "k", secret, cn, sn, binding));
	EXPECT_NE(base, compute_proof(Service::live_viewer, false, "k", secret, cn, sn, binding));
	EXPECT_NE(base, compute_proof(Service::relay_sender, true, "k", secret, cn, sn, binding));
	EXPECT_NE(base, compute_proof(Service::relay_sender, false, "k2", secret, cn, sn, binding));
	EXPECT_NE(base, compute_proof(Service::relay_sender, false, "k", secret, sn, cn, binding)); // nonces swapped
	EXPECT_NE(base, compute_proof(Service::relay_sender, false, "k", secret, cn, sn, {}));
	EXPECT_TRUE(proofs_equal(base, base));
	Proof off = base;
	off[31] ^= 1;
	EXPECT_FALSE(proofs_equal(base, off));

	// A whole exchange: a viewer's proof is no sender's, one channel's no other's.
	const Keyring ring = ring_of({key("host-1", kHexA)});
	for (const bool other_service : {true, false}) {
		ClientExchange c(other_service ? Service::live_viewer : Service::relay_sender, key("host-1", kHexA),
		                 other_service ? std::vector<uint8_t>{} : std::vector<uint8_t>(32, 1));
		ServerExchange s(Service::relay_sender, ring, std::vector<uint8_t>(32, 2));
		const Outcome o = run(c, s);
		EXPECT_NE(o.server, "");
		EXPECT_FALSE(o.result.accepted);
	}
	// The same channel binding on both ends: accepted.
	ClientExchange c(Service::live_viewer, key("host-1", kHexA), std::vector<uint8_t>(32, 3));
	ServerExchange s(Service::live_viewer, ring, std::vector<uint8_t>(32, 3));
	EXPECT_EQ(run(c, s).server, "");
}

TEST(Auth, StepsOutOfTurnAreRefused)
{
	const Keyring ring = ring_of({key("host-1", kHexA)});
	ServerExchange s(Service::relay_sender, ring);
	Result res;
	EXPECT_EQ(s.answer(Response{}, &res), "authentication: a response out of turn");
	Challenge ch;
	EXPECT_EQ(s.challenge(Request{.key_name = "host-1"}, &ch), "authentication: a second request");

	ServerExchange bad_name(Service::relay_sender, ring);
	EXPECT_EQ(bad_name.challenge(Request{.key_name = "../x"}, &ch),
	          "authentication: the key name is not a valid name");

	ClientExchange c(Service::relay_sender, key("host-1", kHexA));
	Response resp;
	EXPECT_EQ(c.respond(Challenge{}, &resp), "authentication: a challenge out of turn");
	Request req;
	EXPECT_EQ(c.request(&req), "authentication: a second request");

	// A server that sends the client's nonce back as its own.
	ClientExchange echo(Service::relay_sender, key("host-1", kHexA));
	ASSERT_EQ(echo.request(&req), "");
	EXPECT_EQ(echo.respond(Challenge{req.client_nonce}, &resp),
	          "authentication: the server sent our own nonce back");
	// An accepted server's result given twice.
	ClientExchange twice(Service::relay_sender, key("host-1", kHexA));
	ServerExchange st(Service::relay_sender, ring);
	const Outcome o = run(twice, st);
	ASSERT_EQ(o.client, "");
	EXPECT_EQ(twice.check(o.result), "authentication: a result out of turn");
	EXPECT_EQ(st.answer(Response{}, &res), "authentication: a response out of turn");
}

TEST(Auth, SecretsAndNames)
{
	Secret s;
	EXPECT_EQ(parse_secret(kHexA, &s), "");
	ASSERT_EQ(s.bytes().size(), 32u);
	EXPECT_EQ(s.bytes()[0], 0x00);
	EXPECT_EQ(s.bytes()[1], 0x11);
	EXPECT_EQ(s.bytes()[31], 0xff);
	EXPECT_EQ(parse_secret("00112233445566778899AABBCCDDEEFF", &s), "");
	EXPECT_EQ(s.bytes()[10], 0xaa);
	EXPECT_EQ(parse_secret("00112233445566778899aabbccddeef", &s),
	          "the secret has 31 characters where 32 to 128 hex digits (an even count) are due; make one "
	          "with: openssl rand -hex 32");
	EXPECT_NE(parse_secret(std::string(130, 'a'), &s), "");
	EXPECT_EQ(parse_secret("00112233445566778899aabbccddeefg", &s),
	          "the secret has a character that is not a hex digit; make one with: openssl rand -hex 32");
	EXPECT_TRUE(valid_key_name("host-1.example_2"));
	EXPECT_FALSE(valid_key_name(""));
	EXPECT_FALSE(valid_key_name(".hidden"));
	EXPECT_FALSE(valid_key_name("a b"));
	EXPECT_FALSE(valid_key_name(std::string(65, 'a')));
	EXPECT_TRUE(valid_key_name(std::string(64, 'a')));
	Keyring r;
	EXPECT_EQ(r.add(key("a", kHexA)), "");
	EXPECT_EQ(r.add(key("a", kHexB)), "the key name a is given twice");
	EXPECT_EQ(r.find("a")->secret.bytes()[1], 0x11);
	EXPECT_EQ(r.find("b"), nullptr);
	Nonce n1{}, n2{};
	EXPECT_EQ(random_bytes(n1), "");
	EXPECT_EQ(random_bytes(n2), "");
	EXPECT_NE(n1, n2);
	EXPECT_NE(n1, Nonce{});
}

class KeysFile : public ::testing::Test {
protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/auth_test.XXXXXX";
		ASSERT_NE(::mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
	}
	void TearDown() override { std::filesystem::remove_all(dir_); }
	std::string write(const std::string &text, mode_t mode)
	{
		const std::string path = dir_ + "/keys";
		std::filesystem::remove(path);
		std::ofstream(path) << text;
		EXPECT_EQ(::chmod(path.c_str(), mode), 0);
		return path;
	}
	std::string dir_;
};

TEST_F(KeysFile, ReadsKeys)
{
	const std::string path = write("# senders\n\nhost-1 " + kHexA + "\n  host-2\t" + kHexB + "  \r\n", 0600);
	Keyring r;
	ASSERT_EQ(Keyring::load(path, &r), "");
	ASSERT_EQ(r.size(), 2u);
	EXPECT_EQ(r.keys()[0].name, "host-1");
	EXPECT_EQ(r.keys()[1].name, "host-2");
	EXPECT_EQ(r.find("host-2")->secret.bytes()[0], 0xff);
	EXPECT_EQ(Keyring::load(write("host-1 " + kHexA, 0400), &r), "");
}

TEST_F(KeysFile, ClientKeyFileHoldsOneKey)
{
	Key k;
	ASSERT_EQ(load_key(write("host-1 " + kHexA + "\n", 0600), &k), "");
	EXPECT_EQ(k.name, "host-1");
	EXPECT_EQ(k.secret.bytes()[1], 0x11);
	const std::string path = write("host-1 " + kHexA + "\nhost-2 " + kHexB + "\n", 0600);
	EXPECT_EQ(load_key(path, &k),
	          path + ": 2 keys, where a sender's key file holds one (its `NAME SECRET` line of the relay's keys)");
	EXPECT_NE(load_key(write("host-1 " + kHexA + "\n", 0644), &k), "");
}

TEST_F(KeysFile, RefusesFilesOthersMayRead)
{
	Keyring r;
	for (const mode_t mode : {0640, 0604, 0660, 0602}) {
		const std::string path = write("host-1 " + kHexA + "\n", mode);
		char m[8];
		std::snprintf(m, sizeof m, "%04o", static_cast<unsigned>(mode));
		EXPECT_EQ(Keyring::load(path, &r),
		          path + ": mode " + m +
		                  " lets group or others reach it, and it holds secrets; fix it with: chmod 600 " +
		                  path);
	}
	EXPECT_EQ(r.size(), 0u);
	EXPECT_EQ(Keyring::load(dir_ + "/none", &r), dir_ + "/none: No such file or directory");
	EXPECT_EQ(Keyring::load(dir_, &r), dir_ + ": not a regular file (a keys file lists `NAME SECRET` lines)");
}

TEST_F(KeysFile, RefusesBadLines)
{
	Keyring r;
	std::string path = write("host-1 " + kHexA + "\nhost-1 " + kHexB + "\n", 0600);
	EXPECT_EQ(Keyring::load(path, &r), path + ":2: the key name host-1 is given twice");
	path = write("\nhost-1\n", 0600);
	EXPECT_EQ(Keyring::load(path, &r), path + ":2: a key is `NAME SECRET` (the secret in hex) on one line");
	path = write("h/1 " + kHexA + "\n", 0600);
	EXPECT_EQ(Keyring::load(path, &r),
	          path + ":1: a key name is 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'");
	path = write("host-1 abcd\n", 0600);
	EXPECT_EQ(Keyring::load(path, &r), path + ":1: the secret has 4 characters where 32 to 128 hex digits (an "
	                                          "even count) are due; make one with: openssl rand -hex 32");
	path = write("# nothing\n", 0600);
	EXPECT_EQ(Keyring::load(path, &r), path + ": no key (one a line: `NAME SECRET`, the secret in hex, e.g. "
	                                          "from `openssl rand -hex 32`)");
	EXPECT_EQ(r.size(), 0u);
}

} // namespace
} // namespace tracery::control::auth
