// control/relay_protocol.cpp — encoding and strict decoding of the relay
// protocol's frames (docs/relay-protocol.md). Every length is checked before
// it is used; nothing read from the peer sizes an allocation beyond kMaxBody.
#include "control/relay_protocol.hpp"

#include "base/byte_order.hpp"
#include "base/cat.hpp"

#include <algorithm>

namespace tracery::control::relay {

namespace {

using base::cat;

// Appends little-endian integers and strings.
struct Writer {
	std::vector<uint8_t> &out;
	template <class T>
	void put(T v)
	{
		const size_t at = out.size();
		out.resize(at + sizeof v);
		base::store_le(out.data() + at, v);
	}
	void str(std::string_view s)
	{
		put(static_cast<uint16_t>(s.size()));
		bytes(s.data(), s.size());
	}
	void bytes(const void *p, size_t n)
	{
		const auto *b = static_cast<const uint8_t *>(p);
		out.insert(out.end(), b, b + n);
	}
};

// Reads a body front to back; the first short read sets bad.
struct Reader {
	std::span<const uint8_t> in;
	size_t at = 0;
	bool bad = false;
	template <class T>
	T get()
	{
		if (bad || in.size() - at < sizeof(T)) {
			bad = true;
			return 0;
		}
		const T v = base::load_le<T>(in.data() + at);
		at += sizeof(T);
		return v;
	}
	std::string str()
	{
		const uint16_t n = get<uint16_t>();
		if (bad || in.size() - at < n) {
			bad = true;
			return {};
		}
		std::string s(reinterpret_cast<const char *>(in.data() + at), n);
		at += n;
		return s;
	}
	template <size_t N>
	void fixed(std::array<uint8_t, N> &out)
	{
		if (bad || in.size() - at < N) {
			bad = true;
			return;
		}
		std::copy_n(in.data() + at, N, out.begin());
		at += N;
	}
	std::span<const uint8_t> rest()
	{
		auto r = in.subspan(at);
		at = in.size();
		return r;
	}
	bool done() const { return !bad && at == in.size(); }
};

bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '-' || c == '+';
}

void put_index(Writer &w, const PacketIndex &i)
{
	for (uint64_t v : {i.packet_size_bits, i.content_size_bits, i.timestamp_begin, i.timestamp_end,
	                   i.events_discarded, i.stream_class_id, i.stream_instance_id, i.packet_seq_num})
		w.put(v);
}

} // namespace

std::string packet_error(const PacketIndex &i, size_t byte_count)
{
	if (i.packet_size_bits == 0 || i.packet_size_bits % 8 != 0)
		return cat("PACKET: packet size ", std::to_string(i.packet_size_bits),
		           " bits is not a positive whole number of bytes");
	if (i.content_size_bits > i.packet_size_bits)
		return "PACKET: content size exceeds packet size";
	if (i.timestamp_end < i.timestamp_begin)
		return "PACKET: timestamp end precedes timestamp begin";
	if (byte_count != i.packet_size_bits / 8)
		return cat("PACKET: ", std::to_string(byte_count), " bytes for a packet of ",
		           std::to_string(i.packet_size_bits / 8));
	return {};
}

bool valid_name(std::string_view s)
{
	return !s.empty() && s.size() <= kMaxName && s.front() != '.' && std::all_of(s.begin(), s.end(), name_char);
}

bool valid_relative_path(std::string_view s)
{
	if (s.empty() || s.size() > kMaxPath)
		return false;
	size_t components = 0;
	while (true) {
		const size_t slash = s.find('/');
		const std::string_view part = s.substr(0, slash);
		if (!valid_name(part) || ++components > kMaxPathComponents)
			return false;
		if (slash == std::string_view::npos)
			return true;
		s.remove_prefix(slash + 1);
	}
}

Type type_of(const Frame &f) { return static_cast<Type>(f.index() + 1); }

const char *type_name(uint16_t type)
{
	static const char *const names[] = {
		"HELLO",        "HELLO_REPLY",    "TRACE",         "METADATA",    "STREAM",         "PACKET",
		"BEACON",       "CLOSE_STREAM",   "BYE",           "SYNC",        "SYNC_REPLY",     "NOTICE",
		"AUTH_REQUEST", "AUTH_CHALLENGE", "AUTH_RESPONSE", "AUTH_RESULT", "DROP_UNWRITTEN", "ARCHIVE_TRACE",
		"STREAM_FILES"};
	static_assert(std::size(names) == kLastType);
	return type >= 1 && type <= kLastType ? names[type - 1] : "unknown";
}

void append_frame(std::vector<uint8_t> &out, const Frame &f)
{
	const size_t start = out.size();
	Writer w{out};
	w.put(kMagic);
	w.put(kVersion);
	w.put(static_cast<uint16_t>(type_of(f)));
	w.put(uint32_t{0}); // body length, below
	std::visit(
		[&](const auto &m) {
			using M = std::decay_t<decltype(m)>;
			if constexpr (std::is_same_v<M, Hello>) {
				w.put(m.major);
				w.put(m.minor);
				w.put(m.creation_time_ns);
				w.put(m.live_period_ns);
				w.str(m.hostname);
				w.str(m.session);
				if (m.minor >= 1)
					w.put(m.flags);
			} else if constexpr (std::is_same_v<M, HelloReply>) {
				w.put(static_cast<uint8_t>(m.accepted ? 0 : 1));
				w.str(m.text);
			} else if constexpr (std::is_same_v<M, Trace>) {
				w.put(m.id);
				w.str(m.path);
			} else if constexpr (std::is_same_v<M, Metadata>) {
				w.put(m.trace_id);
				w.bytes(m.text.data(), m.text.size());
			} else if constexpr (std::is_same_v<M, Stream>) {
				w.put(m.id);
				w.put(m.trace_id);
				w.str(m.file);
			} else if constexpr (std::is_same_v<M, Packet>) {
				w.put(m.stream_id);
				put_index(w, m.index);
				w.bytes(m.bytes.data(), m.bytes.size());
			} else if constexpr (std::is_same_v<M, Beacon>) {
				w.put(m.stream_id);
				w.put(m.timestamp);
			} else if constexpr (std::is_same_v<M, CloseStream>) {
				w.put(m.stream_id);
			} else if constexpr (std::is_same_v<M, Sync> || std::is_same_v<M, DropUnwritten>) {
				w.put(m.token);
			} else if constexpr (std::is_same_v<M, SyncReply>) {
				w.put(m.token);
				w.put(m.packets_written);
			} else if constexpr (std::is_same_v<M, Notice>) {
				w.put(static_cast<uint8_t>(m.kind));
				w.str(m.text);
			} else if constexpr (std::is_same_v<M, AuthRequest>) {
				w.put(m.method);
				w.str(m.request.key_name);
				w.bytes(m.request.client_nonce.data(), m.request.client_nonce.size());
			} else if constexpr (std::is_same_v<M, AuthChallenge>) {
				w.bytes(m.challenge.server_nonce.data(), m.challenge.server_nonce.size());
			} else if constexpr (std::is_same_v<M, AuthResponse>) {
				w.bytes(m.response.client_proof.data(), m.response.client_proof.size());
			} else if constexpr (std::is_same_v<M, AuthResult>) {
				w.put(static_cast<uint8_t>(m.result.accepted ? 0 : 1));
				w.bytes(m.result.server_proof.data(), m.result.server_proof.size());
				w.str(m.text);
			} else if constexpr (std::is_same_v<M, ArchiveTrace>) {
				w.put(m.trace_id);
				w.str(m.archive);
			} else if constexpr (std::is_same_v<M, StreamFiles>) {
				w.put(m.stream_id);
				w.put(m.size);
				w.put(m.count);
			}
		},
		f);
	base::store_le(out.data() + start + 8, static_cast<uint32_t>(out.size() - start - kHeaderSize));
}

void append_packet_head(std::vector<uint8_t> &out, uint32_t stream_id, const PacketIndex &index, size_t byte_count)
{
	Writer w{out};
	w.put(kMagic);
	w.put(kVersion);
	w.put(static_cast<uint16_t>(Type::packet));
	w.put(static_cast<uint32_t>(kPacketFixed + byte_count));
	w.put(stream_id);
	put_index(w, index);
}

std::vector<uint8_t> encode(const Frame &f)
{
	std::vector<uint8_t> out;
	append_frame(out, f);
	return out;
}

std::string frame_error(const Frame &f)
{
	// The decoder is the one judge: encode and decode.
	const std::vector<uint8_t> bytes = encode(f);
	Decoder d;
	d.feed(bytes);
	Frame back;
	const Decoder::Status st = d.next(back);
	if (st == Decoder::Status::error)
		return d.error();
	return {};
}

std::string decode_body(uint16_t type, std::span<const uint8_t> body, Frame &out)
{
	Reader r{body};
	const std::string what = type_name(type);
	auto leftover = [&]() -> std::string {
		if (r.bad)
			return cat(what, ": body too short for its fields");
		if (!r.done())
			return cat(what, ": ", std::to_string(body.size() - r.at), " bytes after the last field");
		return {};
	};
	std::string why;
	switch (static_cast<Type>(type)) {
	case Type::hello: {
		Hello m;
		m.major = r.get<uint16_t>();
		m.minor = r.get<uint16_t>();
		m.creation_time_ns = r.get<uint64_t>();
		m.live_period_ns = r.get<uint64_t>();
		m.hostname = r.str();
		m.session = r.str();
		if (m.minor >= 1)
			m.flags = r.get<uint32_t>();
		if (!(why = leftover()).empty())
			return why;
		if (m.flags & ~kHelloKnownFlags)
			return cat("HELLO: flags ", std::to_string(m.flags),
			           " has bits this relay does not know (only 1, public live)");
		if (!valid_name(m.hostname))
			return "HELLO: the hostname is not a valid name";
		if (!valid_name(m.session))
			return "HELLO: the session name is not a valid name";
		out = std::move(m);
		return {};
	}
	case Type::hello_reply: {
		HelloReply m;
		const uint8_t status = r.get<uint8_t>();
		m.text = r.str();
		if (!(why = leftover()).empty())
			return why;
		if (status > 1)
			return cat("HELLO_REPLY: status ", std::to_string(status), " is neither 0 nor 1");
		if (m.text.size() > kMaxReplyText)
			return "HELLO_REPLY: text longer than 4096 bytes";
		m.accepted = status == 0;
		out = std::move(m);
		return {};
	}
	case Type::trace: {
		Trace m;
		m.id = r.get<uint32_t>();
		m.path = r.str();
		if (!(why = leftover()).empty())
			return why;
		if (!valid_relative_path(m.path))
			return "TRACE: the path is not a relative path of valid names";
		out = std::move(m);
		return {};
	}
	case Type::metadata: {
		Metadata m;
		m.trace_id = r.get<uint32_t>();
		if (r.bad)
			return leftover();
		const auto rest = r.rest();
		if (rest.empty())
			return "METADATA: no bytes to append";
		m.text.assign(reinterpret_cast<const char *>(rest.data()), rest.size());
		out = std::move(m);
		return {};
	}
	case Type::stream: {
		Stream m;
		m.id = r.get<uint32_t>();
		m.trace_id = r.get<uint32_t>();
		m.file = r.str();
		if (!(why = leftover()).empty())
			return why;
		if (!valid_name(m.file))
			return "STREAM: the file name is not a valid name";
		out = std::move(m);
		return {};
	}
	case Type::packet: {
		Packet m;
		m.stream_id = r.get<uint32_t>();
		PacketIndex &i = m.index;
		for (uint64_t *v : {&i.packet_size_bits, &i.content_size_bits, &i.timestamp_begin, &i.timestamp_end,
		                    &i.events_discarded, &i.stream_class_id, &i.stream_instance_id, &i.packet_seq_num})
			*v = r.get<uint64_t>();
		if (r.bad)
			return leftover();
		const auto rest = r.rest();
		if (!(why = packet_error(i, rest.size())).empty())
			return why;
		m.bytes.assign(rest.begin(), rest.end());
		out = std::move(m);
		return {};
	}
	case Type::beacon: {
		Beacon m;
		m.stream_id = r.get<uint32_t>();
		m.timestamp = r.get<uint64_t>();
		if (!(why = leftover()).empty())
			return why;
		out = m;
		return {};
	}
	case Type::close_stream: {
		CloseStream m;
		m.stream_id = r.get<uint32_t>();
		if (!(why = leftover()).empty())
			return why;
		out = m;
		return {};
	}
	case Type::bye:
		if (!(why = leftover()).empty())
			return why;
		out = Bye{};
		return {};
	case Type::sync: {
		Sync m;
		m.token = r.get<uint64_t>();
		if (!(why = leftover()).empty())
			return why;
		out = m;
		return {};
	}
	case Type::drop_unwritten: {
		DropUnwritten m;
		m.token = r.get<uint64_t>();
		if (!(why = leftover()).empty())
			return why;
		out = m;
		return {};
	}
	case Type::archive_trace: {
		ArchiveTrace m;
		m.trace_id = r.get<uint32_t>();
		m.archive = r.str();
		if (!(why = leftover()).empty())
			return why;
		if (!valid_name(m.archive))
			return "ARCHIVE_TRACE: the archive's name is not a valid name";
		out = std::move(m);
		return {};
	}
	case Type::stream_files: {
		StreamFiles m;
		m.stream_id = r.get<uint32_t>();
		m.size = r.get<uint64_t>();
		m.count = r.get<uint64_t>();
		if (!(why = leftover()).empty())
			return why;
		if (m.size == 0)
			return "STREAM_FILES: a file size of 0";
		out = m;
		return {};
	}
	case Type::sync_reply: {
		SyncReply m;
		m.token = r.get<uint64_t>();
		m.packets_written = r.get<uint64_t>();
		if (!(why = leftover()).empty())
			return why;
		out = m;
		return {};
	}
	case Type::notice: {
		Notice m;
		const uint8_t kind = r.get<uint8_t>();
		m.text = r.str();
		if (!(why = leftover()).empty())
			return why;
		if (kind == 0 || kind > kLastNoticeKind)
			return cat("NOTICE: unknown kind ", std::to_string(kind));
		if (m.text.size() > kMaxReplyText)
			return "NOTICE: text longer than 4096 bytes";
		m.kind = static_cast<NoticeKind>(kind);
		out = std::move(m);
		return {};
	}
	case Type::auth_request: {
		AuthRequest m;
		m.method = r.get<uint8_t>();
		m.request.key_name = r.str();
		r.fixed(m.request.client_nonce);
		if (!(why = leftover()).empty())
			return why;
		if (m.method != kAuthMethod)
			return cat("AUTH_REQUEST: unknown method ", std::to_string(m.method));
		if (!auth::valid_key_name(m.request.key_name))
			return "AUTH_REQUEST: the key name is not a valid key name";
		out = std::move(m);
		return {};
	}
	case Type::auth_challenge: {
		AuthChallenge m;
		r.fixed(m.challenge.server_nonce);
		if (!(why = leftover()).empty())
			return why;
		out = m;
		return {};
	}
	case Type::auth_response: {
		AuthResponse m;
		r.fixed(m.response.client_proof);
		if (!(why = leftover()).empty())
			return why;
		out = m;
		return {};
	}
	case Type::auth_result: {
		AuthResult m;
		const uint8_t status = r.get<uint8_t>();
		r.fixed(m.result.server_proof);
		m.text = r.str();
		if (!(why = leftover()).empty())
			return why;
		if (status > 1)
			return cat("AUTH_RESULT: status ", std::to_string(status), " is neither 0 nor 1");
		m.result.accepted = status == 0;
		if (!m.result.accepted && m.result.server_proof != auth::Proof{})
			return "AUTH_RESULT: a refusal with a proof";
		if (m.text.size() > kMaxReplyText)
			return "AUTH_RESULT: text longer than 4096 bytes";
		out = std::move(m);
		return {};
	}
	}
	return cat("unknown frame type ", std::to_string(type));
}

void Decoder::feed(std::span<const uint8_t> bytes)
{
	if (!error_.empty() || bytes.empty())
		return;
	if (pos_ > 0 && pos_ == buf_.size()) {
		buf_.clear();
		pos_ = 0;
	} else if (pos_ > 64 * 1024 && pos_ * 2 > buf_.size()) {
		buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(pos_));
		pos_ = 0;
	}
	buf_.insert(buf_.end(), bytes.begin(), bytes.end());
}

Decoder::Status Decoder::fail(std::string why)
{
	error_ = std::move(why);
	buf_.clear();
	buf_.shrink_to_fit();
	pos_ = 0;
	return Status::error;
}

Decoder::Status Decoder::next(Frame &out)
{
	if (!error_.empty())
		return Status::error;
	const size_t have = buf_.size() - pos_;
	const uint8_t *h = buf_.data() + pos_;
	// Each header field is checked as soon as its bytes are there.
	if (have >= 4 && base::load_le<uint32_t>(h) != kMagic)
		return fail("bad magic (not a relay protocol frame)");
	if (have >= 6 && base::load_le<uint16_t>(h + 4) != kVersion)
		return fail(cat("protocol version ", std::to_string(base::load_le<uint16_t>(h + 4)),
		                ", this relay speaks 1"));
	if (have >= 8) {
		const uint16_t type = base::load_le<uint16_t>(h + 6);
		if (type < 1 || type > kLastType)
			return fail(cat("unknown frame type ", std::to_string(type)));
	}
	if (have < kHeaderSize)
		return Status::needs_more;
	const uint16_t type = base::load_le<uint16_t>(h + 6);
	const uint32_t length = base::load_le<uint32_t>(h + 8);
	if (length > kMaxBody)
		return fail(cat(type_name(type), ": body length ", std::to_string(length), " over the maximum ",
		                std::to_string(kMaxBody)));
	if (have - kHeaderSize < length)
		return Status::needs_more;
	std::string why = decode_body(type, std::span<const uint8_t>(h + kHeaderSize, length), out);
	if (!why.empty())
		return fail(std::move(why));
	pos_ += kHeaderSize + length;
	return Status::frame;
}

} // namespace tracery::control::relay
