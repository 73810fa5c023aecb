// cli/view_live.cpp — `tracery view --live net://HOST[:PORT]/host/HOSTNAME/SESSION`
// (with --relay-key FILE [--relay-ca FILE]: on the relay's authenticated
// viewer port, TLS with the CAs): the lttng-live conversation (control/live_client.hpp) feeding the live
// reading and printing (analysis/view/live_view.hpp). Per round: GET_NEXT_INDEX
// of each stream the merge waits on (and its packet when there is one),
// the metadata when a reply says it grew, the new streams when one says
// there are some or when every stream has hung up; then whatever can be
// printed is; a round that brought nothing waits kRetry. It ends when the
// relay says the session is over and every stream has hung up, when the
// output is closed, or on SIGINT / SIGTERM (quietly, exit 0); an error of
// the relay or of the trace ends it with a message and exit 1, after what
// could be printed.
#include "analysis/view/live_view.hpp"
#include "cli/client.hpp"
#include "cli/verbs.hpp"
#include "control/live_client.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <string>
#include <vector>

namespace tracery::cli {

namespace live = control::live;

namespace {

volatile sig_atomic_t g_interrupted = 0;

void on_signal(int) { g_interrupted = 1; }

// The most metadata of one trace taken from the relay.
constexpr size_t kMaxMetadata = size_t{64} << 20;
constexpr long kRetryNs = 50'000'000;

struct TraceState {
	uint64_t metadata_stream = 0;
	bool has_metadata_stream = false;
	std::string path, text;
};

class LiveSession {
public:
	LiveSession(live::LiveClient &c, analysis::LiveView &view, uint64_t id) : c_(c), view_(view), id_(id) {}

	// Takes the streams of an ATTACH or GET_NEW_STREAMS reply.
	void take(const std::vector<live::StreamEntry> &entries)
	{
		for (const live::StreamEntry &e : entries)
			if (e.metadata) {
				TraceState &t = traces_[e.trace_id];
				t.metadata_stream = e.id;
				t.has_metadata_stream = true;
				t.path = e.path;
				t.text.clear(); // given again: served again from its start
				fetch_metadata(e.trace_id, t);
			}
		for (const live::StreamEntry &e : entries)
			if (!e.metadata) {
				if (!view_.has_trace(e.trace_id))
					throw live::LiveError("the relay gave stream " + e.path + "/" + e.name +
					                      " before its trace's metadata");
				view_.add_stream(e.id, e.trace_id, e.path + "/" + e.name);
				streams_.push_back(e.id);
			}
	}

	void fetch_all_metadata()
	{
		for (auto &[id, t] : traces_)
			fetch_metadata(id, t);
	}

	// One round; returns whether it brought anything.
	bool round(bool *over)
	{
		bool brought = false, new_metadata = false, new_streams = false;
		for (const uint64_t id : streams_) {
			if (!view_.wants(id))
				continue;
			const live::IndexReply r = c_.next_index(id);
			new_metadata |= (r.flags & live::kFlagNewMetadata) != 0;
			new_streams |= (r.flags & live::kFlagNewStream) != 0;
			switch (r.status) {
			case live::IndexStatus::ok: {
				if (r.flags & live::kFlagNewMetadata) // its events may need it
					fetch_all_metadata();
				const live::PacketReply p = c_.packet(id, r, &packet_);
				if (p.status == live::PacketStatus::ok)
					view_.packet(id, packet_);
				else if (p.status == live::PacketStatus::eof)
					view_.hang_up(id);
				else if (p.status == live::PacketStatus::error)
					throw live::LiveError("the relay could not read a packet of stream " +
					                      std::to_string(id));
				brought = true;
				break;
			}
			case live::IndexStatus::inactive:
				view_.inactive(id, r.stream_class_id, r.timestamp_end);
				break;
			case live::IndexStatus::hup:
			case live::IndexStatus::eof:
				view_.hang_up(id);
				brought = true;
				break;
			case live::IndexStatus::error:
				throw live::LiveError("the relay reports an error on stream " + std::to_string(id));
			case live::IndexStatus::retry:
				break;
			}
		}
		if (new_metadata)
			fetch_all_metadata();
		if (new_streams || view_.done()) {
			std::vector<live::StreamEntry> entries;
			const live::NewStreamsStatus st = c_.new_streams(id_, &entries);
			if (st == live::NewStreamsStatus::error)
				throw live::LiveError("the relay reports an error on the session's new streams");
			take(entries);
			brought |= !entries.empty();
			*over = st == live::NewStreamsStatus::hup && view_.done();
		}
		return brought;
	}

private:
	void fetch_metadata(uint64_t trace, TraceState &t)
	{
		const size_t before = t.text.size();
		while (c_.metadata(t.metadata_stream, &t.text, kMaxMetadata) == live::MetadataStatus::ok) {
		}
		if (t.text.size() != before || !view_.has_trace(trace))
			view_.metadata(trace, t.text, t.path);
	}

	live::LiveClient &c_;
	analysis::LiveView &view_;
	uint64_t id_;
	std::map<uint64_t, TraceState> traces_;
	std::vector<uint64_t> streams_;
	std::vector<uint8_t> packet_;
};

// The session the URL names, or an error listing those the relay has.
uint64_t find_session(live::LiveClient &c, const live::LiveUrl &url, const std::string &text)
{
	const std::vector<live::SessionEntry> sessions = c.list_sessions();
	for (const live::SessionEntry &s : sessions)
		if (s.hostname == url.hostname && s.name == url.session)
			return s.id;
	std::string msg = "no live session " + url.hostname + "/" + url.session + " on the relay (" + text + ")";
	if (sessions.empty())
		throw CliError(msg + "; it has no live session now");
	msg += "; it has:";
	for (const live::SessionEntry &s : sessions)
		msg += "\n  " + s.hostname + "/" + s.name + " (" + std::to_string(s.streams) + " streams, " +
		       std::to_string(s.clients) + " viewers)";
	throw CliError(msg);
}

} // namespace

int view_live(const Args &a, const analysis::ViewOptions &options)
{
	const std::string &url_text = a.live_url;
	live::LiveUrl url;
	try {
		url = live::parse_live_url(url_text);
	} catch (const std::invalid_argument &e) {
		throw CliError(e.what());
	}
	// The authenticated viewer port: its default port, the key, TLS when given the CAs.
	control::relay::ClientSecurity security;
	if (!a.view_ca.empty() && a.view_key.empty())
		throw CliError("--relay-ca goes with --relay-key: the relay's TLS viewer port takes authenticated "
		               "viewers only");
	if (!a.view_key.empty()) {
		security.key.emplace();
		if (std::string why = control::auth::load_key(a.view_key, &*security.key); !why.empty())
			throw CliError("--relay-key " + why);
		if (!url.port_given)
			url.port = live::kDefaultViewerPort;
	}
	if (!a.view_ca.empty())
		if (std::string why = control::tls::Context::client_from_file(a.view_ca, &security.tls); !why.empty())
			throw CliError("--relay-ca " + why);
	struct sigaction sa {};
	sa.sa_handler = on_signal; // no SA_RESTART: a wait for the relay ends at once
	sigaction(SIGINT, &sa, nullptr);
	sigaction(SIGTERM, &sa, nullptr);
	signal(SIGPIPE, SIG_IGN);
	analysis::LiveView view(options, STDOUT_FILENO, stderr);
	live::LiveClient c;
	try {
		c.connect(url.host, url.port, 30000, security);
		const uint64_t id = find_session(c, url, url_text);
		c.create_session();
		LiveSession session(c, view, id);
		session.take(c.attach(id, a.from_now ? live::kSeekLast : live::kSeekBeginning));
		bool over = false;
		while (!over && !g_interrupted) {
			const bool brought = session.round(&over);
			if (!view.print())
				return 0; // the reader of the output went away
			if (!brought && !over) {
				const timespec pause{0, kRetryNs};
				nanosleep(&pause, nullptr);
			}
		}
	} catch (const live::LiveError &) {
		if (g_interrupted)
			return 0;
		throw;
	}
	return 0;
}

} // namespace tracery::cli
