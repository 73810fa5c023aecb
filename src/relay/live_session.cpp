// relay/live_session.cpp — the live index of a session and the answers to a
// viewer. The rules that keep babeltrace2's muxer moving (it waits for every
// stream it knows of to have a next event or an inactivity time):
// - a stream with no new packet but a beacon is INACTIVE up to the beacon
//   (never below what that viewer was already given on it);
// - a closed stream gives HUP once its packets are served;
// - NEW_STREAM and NEW_METADATA ride on every index reply, INACTIVE included;
// - a stream is announced only once its trace has metadata, with the trace's
//   metadata stream when the viewer does not have it (babeltrace2 needs both
//   together);
// - babeltrace2 drops a trace whose streams all hung up (per-process buffers:
//   the programs of a trace all exited); a stream of it added later comes
//   with its metadata stream again and the metadata from its start, but only
//   from the second GET_NEW_STREAMS after that last HUP: the first may come
//   before the viewer has dropped the trace.
#include "relay/live_session.hpp"

#include "base/cat.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

namespace tracery::relay {

namespace cr = control::relay;
using base::cat;
using live::ReplyWriter;

namespace {

std::string n(uint64_t v) { return std::to_string(v); }

void stream_entry(std::vector<uint8_t> &out, uint64_t id, uint64_t trace, bool metadata, const std::string &path,
                  const std::string &name)
{
	ReplyWriter(out)
		.u64(id)
		.u64(trace)
		.u32(metadata ? 1 : 0)
		.text(path, live::kPathSize)
		.text(name, live::kNameSize);
}

// TSDL without its comments.
std::string strip_comments(std::string_view s)
{
	std::string out;
	out.reserve(s.size());
	for (size_t i = 0; i < s.size(); i++) {
		if (s.compare(i, 2, "/*") == 0) {
			const size_t end = s.find("*/", i + 2);
			i = end == std::string_view::npos ? s.size() : end + 1;
			out += ' ';
		} else if (s.compare(i, 2, "//") == 0) {
			const size_t end = s.find('\n', i);
			i = end == std::string_view::npos ? s.size() : end;
			out += '\n';
		} else {
			out += s[i];
		}
	}
	return out;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

} // namespace

std::optional<uint64_t> single_stream_class(std::string_view tsdl)
{
	const std::string s = strip_comments(tsdl);
	std::optional<uint64_t> found;
	int blocks = 0;
	size_t next = 0;
	for (size_t at; (at = s.find("stream", next)) != std::string::npos;) {
		next = at + 6;
		if ((at > 0 && ident_char(s[at - 1])) || (at + 6 < s.size() && ident_char(s[at + 6])))
			continue;
		size_t brace = at + 6;
		while (brace < s.size() && std::isspace(static_cast<unsigned char>(s[brace])))
			brace++;
		if (brace >= s.size() || s[brace] != '{')
			continue;
		// The block's own attributes: depth 1 only.
		uint64_t id = 0;
		int depth = 0;
		size_t i = brace;
		for (; i < s.size(); i++) {
			if (s[i] == '{') {
				depth++;
			} else if (s[i] == '}') {
				if (--depth == 0)
					break;
			} else if (depth == 1 && s.compare(i, 2, "id") == 0 && !ident_char(s[i - 1]) &&
			           (i + 2 >= s.size() || !ident_char(s[i + 2]))) {
				size_t j = i + 2;
				while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j])))
					j++;
				if (j < s.size() && s[j] == '=') {
					id = std::strtoull(s.c_str() + j + 1, nullptr, 0);
				}
			}
		}
		if (depth != 0)
			return std::nullopt; // an unfinished block: not yet known
		blocks++;
		found = id;
		next = i + 1;
	}
	if (blocks != 1)
		return std::nullopt;
	return found;
}

std::string LiveSession::apply(const Written &w, uint64_t &next_id)
{
	const cr::Frame &f = w.frame;
	if (const auto *t = std::get_if<cr::Trace>(&f)) {
		LiveTrace &lt = traces[t->id];
		lt.viewer_id = next_id++;
		lt.metadata_id = next_id++;
		lt.path = t->path;
	} else if (const auto *m = std::get_if<cr::Metadata>(&f)) {
		if (const auto it = traces.find(m->trace_id); it != traces.end())
			it->second.metadata_written += w.size;
	} else if (const auto *s = std::get_if<cr::Stream>(&f)) {
		LiveStream &ls = streams[s->id];
		ls.viewer_id = next_id++;
		ls.trace_id = s->trace_id;
		ls.file = s->file;
	} else if (const auto *p = std::get_if<cr::Packet>(&f)) {
		const auto it = streams.find(p->stream_id);
		if (it == streams.end())
			return {};
		LiveStream &ls = it->second;
		const cr::PacketIndex &i = p->index;
		ls.entries.push_back({w.offset, i.packet_size_bits, i.content_size_bits, i.timestamp_begin,
		                      i.timestamp_end, i.events_discarded, i.stream_class_id});
		ls.written = w.offset + w.size;
		const std::optional<uint64_t> beacon = std::exchange(ls.beacon, std::nullopt);
		const uint32_t owner =
			traces[ls.trace_id]
				.instances.emplace(std::pair{i.stream_class_id, i.stream_instance_id}, p->stream_id)
				.first->second;
		if (ls.warned)
			return {};
		if (beacon && i.timestamp_begin < *beacon) {
			ls.warned = true;
			return cat("stream ", ls.file, ": a packet begins at ", n(i.timestamp_begin),
			           ", before its beacon at ", n(*beacon),
			           " (a live viewer given the beacon cannot read it; said once per stream)");
		}
		if (owner != p->stream_id) {
			ls.warned = true;
			return cat("stream ", ls.file, ": packets of stream instance ", n(i.stream_instance_id),
			           " (class ", n(i.stream_class_id),
			           ") as another stream of its trace sent (a live viewer takes them "
			           "for one stream; said once per stream)");
		}
	} else if (const auto *b = std::get_if<cr::Beacon>(&f)) {
		const auto it = streams.find(b->stream_id);
		if (it == streams.end())
			return {};
		it->second.beacon = std::max(it->second.beacon.value_or(0), b->timestamp);
	} else if (const auto *c = std::get_if<cr::CloseStream>(&f)) {
		if (const auto it = streams.find(c->stream_id); it != streams.end())
			it->second.closed = true;
	} else if (std::holds_alternative<cr::Bye>(f)) {
		over = true;
	}
	return {};
}

std::optional<uint64_t> LiveSession::class_of(LiveStream &s)
{
	if (!s.entries.empty())
		return s.entries.back().stream_class_id;
	LiveTrace &t = traces[s.trace_id];
	if (t.single_class_at != t.metadata_written) {
		t.single_class_at = t.metadata_written;
		std::string text(t.metadata_written, '\0');
		base::Fd fd(::open(cat(dir, "/", t.path, "/metadata").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
		const ssize_t got = fd ? ::pread(fd.get(), text.data(), text.size(), 0) : -1;
		t.single_class = got == static_cast<ssize_t>(text.size()) ? single_stream_class(text) : std::nullopt;
	}
	return t.single_class;
}

LiveViewer::~LiveViewer()
{
	for (auto &[id, a] : attached_)
		a.session->viewers--;
}

std::string LiveViewer::handle(const live::Request &r, std::vector<uint8_t> &out, FileRange *file)
{
	using live::Command;
	if (!connected_ && r.cmd != Command::connect)
		return cat(live::command_name(static_cast<uint32_t>(r.cmd)), " before CONNECT");
	switch (r.cmd) {
	case Command::connect:
		if (connected_)
			return "a second CONNECT";
		ReplyWriter(out)
			.u64(registry_.next_viewer_session++)
			.u32(live::kMajor)
			.u32(live::kMinor)
			.u32(live::kClientCommand);
		if (r.major != live::kMajor)
			return cat("CONNECT of protocol ", n(r.major), ".", n(r.minor), ", this relay speaks 2.4");
		if (r.type != live::kClientCommand)
			return cat("CONNECT of connection type ", n(r.type), " (only 1, commands, is served)");
		connected_ = true;
		return {};
	case Command::list_sessions: {
		ReplyWriter w(out);
		const auto count = std::count_if(registry_.sessions.begin(), registry_.sessions.end(),
		                                 [&](const auto &e) { return access_.may_view(*e.second); });
		w.u32(static_cast<uint32_t>(count));
		for (const auto &[id, s] : registry_.sessions) {
			if (!access_.may_view(*s))
				continue;
			const uint64_t us = std::clamp<uint64_t>(s->live_period_ns / 1000, 1, UINT32_MAX);
			w.u64(id)
				.u32(static_cast<uint32_t>(us))
				.u32(s->viewers)
				.u32(static_cast<uint32_t>(s->streams.size()))
				.text(s->hostname, live::kHostNameSize)
				.text(s->name, live::kNameSize);
		}
		return {};
	}
	case Command::create_session:
		created_ = true;
		ReplyWriter(out).u32(1);
		return {};
	case Command::attach_session:
		return attach(r, out);
	case Command::get_new_streams:
		return new_streams(r, out);
	case Command::get_next_index:
		return next_index(r, out);
	case Command::get_packet:
		return packet(r, out, file);
	case Command::get_metadata:
		return metadata(r, out, file);
	case Command::detach_session:
		return detach(r, out);
	}
	return "unknown command";
}

std::string LiveViewer::attach(const live::Request &r, std::vector<uint8_t> &out)
{
	const auto refuse = [&](live::AttachStatus st, std::string why) {
		ReplyWriter(out).u32(static_cast<uint32_t>(st)).u32(0);
		return why;
	};
	if (!created_)
		return refuse(live::AttachStatus::no_session, "ATTACH_SESSION before CREATE_SESSION");
	const auto it = registry_.sessions.find(r.id);
	if (it == registry_.sessions.end())
		return refuse(live::AttachStatus::unknown, cat("ATTACH_SESSION of unknown session ", n(r.id)));
	if (!access_.may_view(*it->second))
		return refuse(live::AttachStatus::unknown,
		              cat("ATTACH_SESSION of session ", n(r.id), ", which this viewer may not see (",
		                  access_.plain ? "not marked public" : "sent under another identity", ")"));
	if (r.seek != live::kSeekBeginning && r.seek != live::kSeekLast)
		return refuse(live::AttachStatus::seek_error, cat("ATTACH_SESSION with seek ", n(r.seek)));
	if (attached_.count(r.id))
		return refuse(live::AttachStatus::already,
		              cat("ATTACH_SESSION of session ", n(r.id), ", which this viewer has attached already"));
	if (it->second->viewers >= registry_.max_viewers_per_session)
		return refuse(live::AttachStatus::already,
		              cat("ATTACH_SESSION of session ", n(r.id), ", which has ", n(it->second->viewers),
		                  " viewers already (the most a session may have)"));
	Attached a{.session = it->second, .streams = {}, .traces = {}};
	a.session->viewers++;
	std::vector<uint8_t> entries;
	const uint32_t count = announce(a, r.seek == live::kSeekLast, entries);
	ReplyWriter(out).u32(static_cast<uint32_t>(live::AttachStatus::ok)).u32(count);
	out.insert(out.end(), entries.begin(), entries.end());
	attached_.emplace(r.id, std::move(a));
	return {};
}

bool LiveViewer::announceable(const Attached &a, uint32_t stream_id)
{
	const LiveStream &st = a.session->streams.at(stream_id);
	if (a.streams.count(stream_id) || a.session->traces.at(st.trace_id).metadata_written == 0)
		return false;
	const auto tv = a.traces.find(st.trace_id);
	return tv == a.traces.end() || tv->second.state != TraceView::State::dropping;
}

uint32_t LiveViewer::announce(Attached &a, bool seek_last, std::vector<uint8_t> &out)
{
	uint32_t count = 0;
	for (const auto &[id, st] : a.session->streams) {
		if (!announceable(a, id))
			continue;
		StreamView v;
		if (seek_last && !st.entries.empty()) {
			v.next = st.entries.size();
			v.floor = st.entries.back().timestamp_end;
		}
		if (seek_last && st.closed) { // nothing will come: never shown
			v.hup = true;
			a.streams.emplace(id, v);
			continue;
		}
		const LiveTrace &t = a.session->traces.at(st.trace_id);
		TraceView &tv = a.traces[st.trace_id];
		if (tv.state == TraceView::State::unannounced) {
			tv = {.metadata_sent = 0, .in_batch = false, .state = TraceView::State::announced};
			stream_entry(out, t.metadata_id, t.viewer_id, true, t.path, "metadata");
			names_[t.metadata_id] = {.session = a.session->id, .id = st.trace_id, .metadata = true};
			count++;
		}
		stream_entry(out, st.viewer_id, t.viewer_id, false, t.path, st.file);
		names_[st.viewer_id] = {.session = a.session->id, .id = id, .metadata = false};
		a.streams.emplace(id, v);
		count++;
	}
	return count;
}

bool LiveViewer::has_new_streams() const
{
	for (const auto &[sid, a] : attached_)
		for (const auto &[id, st] : a.session->streams)
			if (announceable(a, id))
				return true;
	return false;
}

const LiveViewer::Named *LiveViewer::named(uint64_t viewer_id, bool metadata) const
{
	const auto it = names_.find(viewer_id);
	return it == names_.end() || it->second.metadata != metadata ? nullptr : &it->second;
}

std::string LiveViewer::new_streams(const live::Request &r, std::vector<uint8_t> &out)
{
	const auto it = attached_.find(r.id);
	if (it == attached_.end())
		return cat("GET_NEW_STREAMS of session ", n(r.id), ", not attached");
	Attached &a = it->second;
	std::vector<uint8_t> entries;
	const uint32_t count = announce(a, false, entries);
	// The traces being dropped are dropped by now: announced again when they get a stream.
	for (auto &[tid, tv] : a.traces)
		if (tv.state == TraceView::State::dropping)
			tv.state = TraceView::State::unannounced;
	live::NewStreamsStatus st = live::NewStreamsStatus::ok;
	if (count == 0) {
		const bool all_hup =
			std::all_of(a.streams.begin(), a.streams.end(), [](const auto &e) { return e.second.hup; });
		st = a.session->over && all_hup && !has_new_streams() ? live::NewStreamsStatus::hup
		                                                      : live::NewStreamsStatus::no_new;
	}
	ReplyWriter(out).u32(static_cast<uint32_t>(st)).u32(count);
	out.insert(out.end(), entries.begin(), entries.end());
	return {};
}

std::string LiveViewer::next_index(const live::Request &r, std::vector<uint8_t> &out)
{
	const Named *nm = named(r.id, false);
	if (!nm)
		return cat("GET_NEXT_INDEX of stream ", n(r.id), ", which this viewer was not given");
	Attached &a = attached_.at(nm->session);
	LiveSession &s = *a.session;
	LiveStream &st = s.streams.at(nm->id);
	StreamView &v = a.streams.at(nm->id);
	const LiveTrace &t = s.traces.at(st.trace_id);
	live::IndexReply rep;
	if (has_new_streams())
		rep.flags |= live::kFlagNewStream;
	if (a.traces[st.trace_id].metadata_sent < t.metadata_written)
		rep.flags |= live::kFlagNewMetadata;
	const auto inactive = [&](uint64_t ts, uint64_t cls) {
		rep.status = live::IndexStatus::inactive;
		rep.timestamp_end = v.floor = std::max(ts, v.floor);
		rep.stream_class_id = cls;
	};
	if (v.hup) {
		rep.status = live::IndexStatus::hup;
	} else if (v.next < st.entries.size()) {
		const LiveEntry &e = st.entries[v.next++];
		rep = {.offset = e.offset,
		       .packet_size = e.packet_size,
		       .content_size = e.content_size,
		       .timestamp_begin = e.timestamp_begin,
		       .timestamp_end = e.timestamp_end,
		       .events_discarded = e.events_discarded,
		       .stream_class_id = e.stream_class_id,
		       .status = live::IndexStatus::ok,
		       .flags = rep.flags};
		v.floor = std::max(v.floor, e.timestamp_end);
	} else if (st.closed || s.over) {
		v.hup = true;
		rep.status = live::IndexStatus::hup;
		const bool last = std::none_of(a.streams.begin(), a.streams.end(), [&](const auto &e) {
			return !e.second.hup && s.streams.at(e.first).trace_id == st.trace_id;
		});
		if (last)
			a.traces[st.trace_id].state = TraceView::State::dropping;
	} else if (st.beacon) {
		const std::optional<uint64_t> cls = s.class_of(st);
		if (cls)
			inactive(*st.beacon, *cls);
	}
	live::append_index_reply(out, rep);
	return {};
}

int LiveViewer::open_file(uint64_t viewer_id, const LiveSession &s, const std::string &relative)
{
	auto it = files_.find(viewer_id);
	if (it == files_.end()) {
		base::Fd fd(::open(cat(s.dir, "/", relative).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
		if (!fd)
			return -1;
		it = files_.emplace(viewer_id, std::move(fd)).first;
	}
	return it->second.get();
}

std::string LiveViewer::packet(const live::Request &r, std::vector<uint8_t> &out, FileRange *file)
{
	const Named *nm = named(r.id, false);
	if (!nm)
		return cat("GET_PACKET of stream ", n(r.id), ", which this viewer was not given");
	const LiveSession &s = *attached_.at(nm->session).session;
	const LiveStream &st = s.streams.at(nm->id);
	// The packet holding the first byte asked: the bytes asked must all be in it.
	const auto after = std::upper_bound(st.entries.begin(), st.entries.end(), r.offset,
	                                    [](uint64_t off, const LiveEntry &e) { return off < e.offset; });
	const bool inside = after != st.entries.begin() && [&] {
		const LiveEntry &e = *std::prev(after);
		const uint64_t end = e.offset + e.packet_size / 8;
		return r.offset < end && r.length <= end - r.offset;
	}();
	if (!inside)
		return cat("GET_PACKET of ", n(r.length), " bytes at ", n(r.offset), " of stream ", n(r.id),
		           ": not inside a packet of its index");
	const int fd = open_file(r.id, s, cat(s.traces.at(st.trace_id).path, "/", st.file));
	if (fd < 0) {
		ReplyWriter(out).u32(static_cast<uint32_t>(live::PacketStatus::error)).u32(0).u32(0);
		return cat("GET_PACKET: ", st.file, ": ", std::strerror(errno));
	}
	ReplyWriter(out).u32(static_cast<uint32_t>(live::PacketStatus::ok)).u32(r.length).u32(0);
	*file = {.fd = fd, .offset = r.offset, .size = r.length};
	return {};
}

std::string LiveViewer::metadata(const live::Request &r, std::vector<uint8_t> &out, FileRange *file)
{
	const Named *nm = named(r.id, true);
	if (!nm)
		return cat("GET_METADATA of stream ", n(r.id), ", which this viewer was not given");
	Attached &a = attached_.at(nm->session);
	const LiveTrace &t = a.session->traces.at(nm->id);
	TraceView &tv = a.traces[nm->id];
	if (tv.metadata_sent >= t.metadata_written) {
		tv.in_batch = false;
		ReplyWriter(out).u64(0).u32(static_cast<uint32_t>(live::MetadataStatus::no_new));
		return {};
	}
	// A batch that continues the file begins with the signature again (see kMetadataSignature).
	const std::string_view sig = tv.metadata_sent > 0 && !tv.in_batch ? kMetadataSignature : "";
	const uint64_t len = std::min(t.metadata_written - tv.metadata_sent, live::kMaxMetadataReply - sig.size());
	const int fd = open_file(r.id, *a.session, cat(t.path, "/metadata"));
	if (fd < 0) {
		ReplyWriter(out).u64(0).u32(static_cast<uint32_t>(live::MetadataStatus::error));
		return cat("GET_METADATA: ", t.path, "/metadata: ", std::strerror(errno));
	}
	ReplyWriter(out).u64(sig.size() + len).u32(static_cast<uint32_t>(live::MetadataStatus::ok));
	out.insert(out.end(), sig.begin(), sig.end());
	*file = {.fd = fd, .offset = tv.metadata_sent, .size = len};
	tv.metadata_sent += len;
	tv.in_batch = true;
	return {};
}

std::string LiveViewer::detach(const live::Request &r, std::vector<uint8_t> &out)
{
	const auto it = attached_.find(r.id);
	if (it == attached_.end()) {
		ReplyWriter(out).u32(static_cast<uint32_t>(live::DetachStatus::unknown));
		return {};
	}
	it->second.session->viewers--;
	for (auto n_it = names_.begin(); n_it != names_.end();) {
		if (n_it->second.session == r.id) {
			files_.erase(n_it->first);
			n_it = names_.erase(n_it);
		} else {
			++n_it;
		}
	}
	attached_.erase(it);
	ReplyWriter(out).u32(static_cast<uint32_t>(live::DetachStatus::ok));
	return {};
}

} // namespace tracery::relay
