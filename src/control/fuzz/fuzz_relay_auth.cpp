// control/fuzz/fuzz_relay_auth.cpp — libFuzzer target: the authentication
// exchange of the relay protocol (control/auth.hpp, its frames in
// control/relay_protocol.hpp), both sides, against hostile bytes:
// - as a sender's bytes to the relay's side: decoded frames drive a
//   ServerExchange as tracery-relayd's gate does; it must never accept
//   (the fuzzer cannot know the relay's fresh nonce, so no proof it sends
//   can be right), and every refusal says why;
// - as a relay's bytes to the sender's side: frames drive a ClientExchange;
//   it must never be satisfied (the sender's nonce is fresh too);
// - as a tamperer between an honest sender and relay of the same key: the
//   input's bytes are XORed into the messages they exchange; the relay
//   accepts, and the sender checks the relay's proof, exactly when nothing
//   that the proofs cover was changed.
#include "base/fuzz_check.hpp"
#include "control/auth.hpp"
#include "control/relay_protocol.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace tracery::control;
using namespace tracery::control::relay;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_relay_auth", what); }

const auth::Keyring &ring()
{
	static const auth::Keyring r = [] {
		auth::Keyring k;
		for (const char *name : {"host-1", "host-2"}) {
			auth::Key key;
			key.name = name;
			auth::parse_secret("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
			                   &key.secret);
			k.add(std::move(key));
		}
		return k;
	}();
	return r;
}

auth::Key host1() { return ring().keys().front(); }

std::vector<Frame> frames_of(const uint8_t *data, size_t size)
{
	Decoder d;
	d.feed({data, size});
	std::vector<Frame> out;
	Frame f;
	while (out.size() < 64 && d.next(f) == Decoder::Status::frame)
		out.push_back(f);
	return out;
}

void hostile_sender(const uint8_t *data, size_t size)
{
	auth::ServerExchange server(auth::Service::relay_sender, ring());
	for (const Frame &f : frames_of(data, size)) {
		std::string why;
		if (const auto *r = std::get_if<AuthRequest>(&f)) {
			auth::Challenge c;
			why = server.challenge(r->request, &c);
		} else if (const auto *r = std::get_if<AuthResponse>(&f)) {
			auth::Result res;
			why = server.answer(r->response, &res);
			check(!res.accepted || why.empty(), "a refusal that says accepted");
			check(res.accepted || res.server_proof == auth::Proof{}, "a refusal with a proof");
		} else {
			continue;
		}
		check(!server.accepted(), "the relay accepted a proof the sender could not have made");
		if (!why.empty())
			return;
	}
}

void hostile_relay(const uint8_t *data, size_t size)
{
	auth::ClientExchange client(auth::Service::relay_sender, host1());
	auth::Request req;
	check(client.request(&req).empty(), "no request");
	for (const Frame &f : frames_of(data, size)) {
		std::string why;
		if (const auto *c = std::get_if<AuthChallenge>(&f)) {
			auth::Response resp;
			why = client.respond(c->challenge, &resp);
		} else if (const auto *r = std::get_if<AuthResult>(&f)) {
			why = client.check(r->result);
		} else {
			continue;
		}
		check(!client.done(), "the sender believed a relay that could not know the secret");
		if (!why.empty())
			return;
	}
}

// XORs input bytes into a frame's body (past its header), while there are some.
void tamper(std::vector<uint8_t> &frame, const uint8_t *&data, size_t &size)
{
	for (size_t i = kHeaderSize; i < frame.size() && size > 0; i++, data++, size--)
		frame[i] ^= *data;
}

// Decodes one tampered frame of the expected type, or nothing.
template <class T>
bool decode_as(const std::vector<uint8_t> &bytes, T *out)
{
	Decoder d;
	d.feed(bytes);
	Frame f;
	if (d.next(f) != Decoder::Status::frame || !std::holds_alternative<T>(f))
		return false;
	*out = std::get<T>(f);
	return true;
}

void tamperer(const uint8_t *data, size_t size)
{
	auth::ClientExchange client(auth::Service::relay_sender, host1());
	auth::ServerExchange server(auth::Service::relay_sender, ring());
	AuthRequest request;
	check(client.request(&request.request).empty(), "no request");
	auto bytes = encode(request);
	tamper(bytes, data, size);
	AuthRequest got_request;
	if (!decode_as(bytes, &got_request))
		return;
	// The name a relay sees decides the key, the nonce is in both proofs.
	const bool request_changed = got_request.request != request.request;
	AuthChallenge challenge;
	if (!server.challenge(got_request.request, &challenge.challenge).empty())
		return;
	bytes = encode(challenge);
	tamper(bytes, data, size);
	AuthChallenge got_challenge;
	if (!decode_as(bytes, &got_challenge))
		return;
	const bool challenge_changed = got_challenge != challenge;
	AuthResponse response;
	if (!client.respond(got_challenge.challenge, &response.response).empty())
		return;
	bytes = encode(response);
	tamper(bytes, data, size);
	AuthResponse got_response;
	if (!decode_as(bytes, &got_response))
		return;
	const bool response_changed = got_response != response;
	AuthResult result;
	const std::string why = server.answer(got_response.response, &result.result);
	// host-2 has host-1's secret in this keyring: a renamed request stays refused
	// all the same, as the name is in the proofs.
	const bool clean = !request_changed && !challenge_changed && !response_changed;
	check(why.empty() == clean, clean ? "an untouched exchange refused" : "a tampered exchange accepted");
	if (!clean)
		return;
	bytes = encode(result);
	tamper(bytes, data, size);
	AuthResult got_result;
	if (!decode_as(bytes, &got_result))
		return;
	const bool proof_changed = got_result.result != result.result;
	check(client.check(got_result.result).empty() == !proof_changed,
	      proof_changed ? "the sender believed a tampered proof" : "the sender refused an untouched proof");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hostile_sender(data, size);
	hostile_relay(data, size);
	tamperer(data, size);
	return 0;
}
