// relay/clickhouse_sink.cpp — the relay's ClickHouse sink (see
// clickhouse_sink.hpp): the bounded queue the writer threads fill, and the
// thread that decodes each session's packets and sends its rows.
#include "relay/clickhouse_sink.hpp"

#include "analysis/output/json_text.hpp"
#include "analysis/sql/clickhouse_export.hpp"
#include "analysis/sql/trace_rows.hpp"
#include "base/background_thread.hpp"
#include "base/cat.hpp"
#include "base/sizes.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/trace_reader.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace tracery::relay {

namespace cr = control::relay;
namespace reader = ctf::reader;
namespace sql = analysis::sql;
using base::cat;
using Clock = std::chrono::steady_clock;

namespace {

// One session as the sink's thread decodes it.
struct Decoding {
	std::string who; // its path under the relay's output, for the log
	std::string load;
	reader::TraceSet set;
	struct TraceText {
		std::string path, metadata;
		reader::Trace *trace = nullptr;
		bool grown = false; // metadata came since the trace was made
	};
	struct StreamOf {
		uint32_t trace_id = 0;
		std::string file;
		reader::Stream *stream = nullptr;
	};
	std::map<uint32_t, TraceText> traces;
	std::map<uint32_t, StreamOf> streams;
	std::unique_ptr<sql::ClickHouseRows> rows;
	std::unique_ptr<sql::RowWalker> walker;
	bool seen = false;                             // by the sink's thread (in its list of sessions)
	Clock::time_point first_waiting{};             // of the rows waiting; {} when none
	uint64_t dropped = 0;                          // packets, under the sink's lock (the writer threads count them)
	uint64_t undecoded = 0;                        // packets
	std::string undecoded_why;                     // the first
	sql::ClickHouseRows::Counts inserted, refused; // as last added to the totals
	uint64_t events = 0;                           // decoded, as last added to the totals
};

} // namespace

struct ClickHouseSink::Impl {
	ClickHouseSinkOptions opt;
	std::function<void(const std::string &)> log;
	clickhouse::Client client;
	std::unique_ptr<sql::ClickHouseTables> tables;

	struct Job {
		std::shared_ptr<Decoding> session;
		cr::Frame frame;
		bool end = false; // the session is over
	};
	mutable std::mutex mu;
	std::condition_variable cv;
	std::deque<Job> jobs;
	size_t queued_bytes = 0; // of the packets queued
	bool stopping = false;
	bool dropping = false;     // since the last packet taken
	uint64_t dropped_here = 0; // packets, since dropping began
	ClickHouseSinkCounts counts;
	std::thread thread;

	// the thread's
	std::vector<std::shared_ptr<Decoding>> open;
	bool failing = false; // the last insert failed

	Impl(ClickHouseSinkOptions o, std::function<void(const std::string &)> l)
		: opt(std::move(o)), log(std::move(l)), client(clickhouse::parse_url(opt.url), opt.timeouts)
	{
		tables = std::make_unique<sql::ClickHouseTables>(client,
		                                                 sql::ClickHouseOptions{opt.table_prefix, {}, {}});
	}

	// From a writer thread: never waits for the sink's thread.
	void push(const std::shared_ptr<Decoding> &s, cr::Frame &f)
	{
		const auto *p = std::get_if<cr::Packet>(&f);
		if (!p && !std::holds_alternative<cr::Metadata>(f) && !std::holds_alternative<cr::Trace>(f) &&
		    !std::holds_alternative<cr::Stream>(f))
			return; // nothing the rows need
		std::string line;
		bool queued = true;
		{
			std::lock_guard lock(mu);
			if (p) {
				++counts.packets;
				queued = queued_bytes + p->bytes.size() <= opt.queue_bytes;
				if (!queued) {
					++counts.packets_dropped;
					counts.bytes_dropped += p->bytes.size();
					++s->dropped;
					++dropped_here;
					if (!dropping)
						line = cat(
							s->who, ": ClickHouse sink: its queue is full (",
							base::format_size(queued_bytes),
							"): packets are dropped from the sink (not from the disk) and "
							"counted until it has room");
					dropping = true;
				} else {
					queued_bytes += p->bytes.size();
					if (dropping)
						line = cat("ClickHouse sink: its queue has room again; ",
						           std::to_string(dropped_here),
						           " packets were dropped meanwhile");
					dropping = false;
					dropped_here = 0;
				}
			}
			// Metadata and declarations are small (the relay's limits): always queued.
			if (queued)
				jobs.push_back({s, std::move(f), false});
		}
		if (queued)
			cv.notify_one();
		if (!line.empty())
			log(line);
	}
	void end(const std::shared_ptr<Decoding> &s)
	{
		{
			std::lock_guard lock(mu);
			jobs.push_back({s, {}, true});
		}
		cv.notify_one();
	}
	void run();
	void take(Job &job);
	void packet(Decoding &d, const cr::Packet &p);
	void send(Decoding &d);
	// The rows waiting, all sessions, at most kBatchesWaiting batches: the
	// session with the most sends its rows.
	static constexpr size_t kBatchesWaiting = 8;
	void bound_waiting();
	void finish(Decoding &d);
	// The session's counts since last added, into the totals.
	void tally(Decoding &d);
};

class ClickHouseSink::Feed final : public SessionFeed {
public:
	Feed(Impl &impl, std::shared_ptr<Decoding> d) : impl_(impl), d_(std::move(d)) {}
	~Feed() override { impl_.end(d_); }
	void written(cr::Frame &f) override { impl_.push(d_, f); }

private:
	Impl &impl_;
	std::shared_ptr<Decoding> d_;
};

void ClickHouseSink::Impl::run()
{
	std::unique_lock lock(mu);
	for (;;) {
		// The next batch due: the oldest rows waiting, flush_every after they came.
		auto due = Clock::time_point::max();
		for (const auto &s : open)
			if (s->first_waiting != Clock::time_point{})
				due = std::min(due, s->first_waiting + opt.flush_every);
		const auto ready = [&] { return stopping || !jobs.empty() || Clock::now() >= due; };
		if (due == Clock::time_point::max())
			cv.wait(lock, ready);
		else
			cv.wait_until(lock, due, ready);
		if (jobs.empty() && stopping)
			break;
		if (!jobs.empty()) {
			Job job = std::move(jobs.front());
			jobs.pop_front();
			if (const auto *p = std::get_if<cr::Packet>(&job.frame))
				queued_bytes -= p->bytes.size();
			lock.unlock();
			take(job);
		} else {
			lock.unlock();
		}
		const auto now = Clock::now();
		for (const auto &s : open)
			if (s->first_waiting != Clock::time_point{} && now >= s->first_waiting + opt.flush_every)
				send(*s);
		lock.lock();
	}
	lock.unlock();
	while (!open.empty())
		finish(*open.front());
	lock.lock();
	log(cat("ClickHouse sink, in all: ", describe(counts)));
}

void ClickHouseSink::Impl::take(Job &job)
{
	Decoding &d = *job.session;
	if (job.end)
		return finish(d);
	if (!d.seen) {
		d.seen = true;
		open.push_back(job.session);
	}
	if (const auto *t = std::get_if<cr::Trace>(&job.frame)) {
		d.traces[t->id].path = t->path;
	} else if (auto *m = std::get_if<cr::Metadata>(&job.frame)) {
		Decoding::TraceText &t = d.traces[m->trace_id];
		t.metadata += m->text;
		t.grown = true;
	} else if (const auto *s = std::get_if<cr::Stream>(&job.frame)) {
		d.streams[s->id] = {s->trace_id, s->file, nullptr};
	} else if (const auto *p = std::get_if<cr::Packet>(&job.frame)) {
		packet(d, *p);
		if (d.rows->waiting_bytes() >= opt.batch_bytes)
			send(d);
		else if (d.rows->waiting_bytes() && d.first_waiting == Clock::time_point{})
			d.first_waiting = Clock::now();
		bound_waiting();
	}
}

void ClickHouseSink::Impl::bound_waiting()
{
	size_t all = 0, most = 0;
	Decoding *largest = nullptr;
	for (const auto &s : open) {
		const size_t w = s->rows->waiting_bytes();
		all += w;
		if (w > most)
			most = w, largest = s.get();
	}
	if (largest && all >= kBatchesWaiting * opt.batch_bytes)
		send(*largest);
}

void ClickHouseSink::Impl::packet(Decoding &d, const cr::Packet &p)
{
	try {
		const auto s = d.streams.find(p.stream_id);
		if (s == d.streams.end())
			throw std::runtime_error(cat("stream ", std::to_string(p.stream_id), " not declared"));
		Decoding::StreamOf &st = s->second;
		Decoding::TraceText &t = d.traces[st.trace_id];
		if (t.grown) {
			// The metadata as it is now (a trace's metadata grows as event classes come).
			if (!t.trace) {
				t.trace =
					&d.set.add_text_trace(t.metadata, cat(d.who, "/", t.path, "/metadata"), t.path);
				// As the export of the relay's copy names it.
				t.trace->name = t.trace->has_hostname ? cat(t.trace->hostname, "/", t.path) : t.path;
			} else {
				const std::string name = t.trace->name;
				t.trace = &d.set.update_text_trace(*t.trace, t.metadata);
				t.trace->name = name;
			}
			t.grown = false;
		}
		if (!t.trace)
			throw std::runtime_error(cat("trace ", std::to_string(st.trace_id), " has no metadata"));
		if (!d.walker)
			d.walker = std::make_unique<sql::RowWalker>(d.set, std::vector<analysis::SpanOptions>{},
			                                            *d.rows, false);
		if (!st.stream)
			st.stream = &d.set.add_memory_stream(*t.trace, cat(t.path, "/", st.file));
		d.set.append_packet(*st.stream, p.bytes);
		while (const reader::Item *it = d.set.next_of(*st.stream))
			d.walker->item(*it);
	} catch (const std::exception &e) { // ReadError, the metadata's, a span's
		if (!d.undecoded++)
			d.undecoded_why = e.what();
		std::lock_guard lock(mu);
		++counts.packets_undecoded;
	}
}

void ClickHouseSink::Impl::tally(Decoding &d)
{
	const auto &in = d.rows->delivered(), &out = d.rows->refused();
	std::lock_guard lock(mu);
	if (d.walker) {
		counts.events += d.walker->events() - d.events;
		d.events = d.walker->events();
	}
	counts.events_inserted += in.events - d.inserted.events;
	counts.rows_inserted += in.rows - d.inserted.rows;
	counts.events_refused += out.events - d.refused.events;
	counts.rows_refused += out.rows - d.refused.rows;
	d.inserted = in;
	d.refused = out;
}

void ClickHouseSink::Impl::send(Decoding &d)
{
	d.first_waiting = {};
	// Each failure drops the batch refused: at most one try per table.
	for (size_t i = 0; i < sql::ClickHouseTables::kCount && d.rows->waiting_bytes(); ++i) {
		try {
			d.rows->flush();
			if (failing)
				log(cat("ClickHouse at ", client.endpoint().shown, " takes inserts again"));
			failing = false;
		} catch (const clickhouse::Error &e) {
			if (!failing)
				log(cat(d.who,
				        ": ClickHouse sink: an insert failed, its rows are dropped and counted (",
				        "and so are those of the inserts that fail after it, until one works): ",
				        e.what()));
			failing = true;
		}
	}
	tally(d);
}

void ClickHouseSink::Impl::finish(Decoding &d)
{
	if (d.walker)
		d.walker->finish(); // the streams' rows
	send(d);
	std::string line = cat(d.who, ": ClickHouse sink: ", std::to_string(d.rows->delivered().events),
	                       " events inserted (load = '", d.load, "')");
	if (d.rows->refused().events)
		line += cat(", ", std::to_string(d.rows->refused().events), " refused or not taken by the server");
	uint64_t dropped = 0;
	{
		std::lock_guard lock(mu);
		dropped = d.dropped;
	}
	if (dropped)
		line += cat(", ", std::to_string(dropped), " packets dropped (the queue full)");
	if (d.undecoded)
		line += cat(", ", std::to_string(d.undecoded), " packets not decoded (the first: ", d.undecoded_why,
		            ")");
	log(line);
	for (auto it = open.begin(); it != open.end(); ++it)
		if (it->get() == &d) {
			open.erase(it);
			break;
		}
}

ClickHouseSink::ClickHouseSink(ClickHouseSinkOptions options, std::function<void(const std::string &)> log)
	: impl_(std::make_unique<Impl>(std::move(options), std::move(log)))
{
	Impl &s = *impl_;
	// Its thread takes no signal (the relay's loop handles SIGTERM and SIGINT).
	s.thread = base::signal_free_thread([&s] { s.run(); });
	s.log(cat("ClickHouse sink: inserting into ", s.client.endpoint().shown, " (tables ", s.opt.table_prefix,
	          "events, ...), a queue of ", base::format_size(s.opt.queue_bytes)));
}

ClickHouseSink::~ClickHouseSink()
{
	{
		std::lock_guard lock(impl_->mu);
		impl_->stopping = true;
	}
	impl_->cv.notify_one();
	impl_->thread.join();
}

std::unique_ptr<SessionFeed> ClickHouseSink::open(const cr::Hello &hello, const std::string &relative_dir)
{
	auto d = std::make_shared<Decoding>();
	d->who = relative_dir;
	d->load = sql::new_load_id();
	std::string host, session;
	analysis::append_utf8(host, hello.hostname);
	analysis::append_utf8(session, hello.session);
	d->rows = std::make_unique<sql::ClickHouseRows>(impl_->client, *impl_->tables, 0, host, session, d->load);
	impl_->log(cat(relative_dir, ": ClickHouse sink: host '", host, "', session '", session, "', load '", d->load,
	               "'"));
	return std::make_unique<Feed>(*impl_, std::move(d));
}

ClickHouseSinkCounts ClickHouseSink::counts() const
{
	std::lock_guard lock(impl_->mu);
	return impl_->counts;
}

std::string describe(const ClickHouseSinkCounts &c)
{
	return cat(std::to_string(c.events_inserted), " events inserted (", std::to_string(c.rows_inserted), " rows), ",
	           std::to_string(c.events_refused), " events refused or not taken by the server (",
	           std::to_string(c.rows_refused), " rows), ", std::to_string(c.packets_dropped), " of ",
	           std::to_string(c.packets), " packets dropped (", base::format_size(c.bytes_dropped),
	           ", the queue full), ", std::to_string(c.packets_undecoded), " not decoded");
}

} // namespace tracery::relay
