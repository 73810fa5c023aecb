// analysis/view/live_view.cpp — the live merge over ctf's reader (see live_view.hpp).
#include "analysis/view/live_view.hpp"

#include <stdexcept>

#include "ctf/reader/read_error.hpp"
#include "ctf/reader/trace_reader.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;

LiveView::LiveView(const ViewOptions &options, int out_fd, FILE *err)
	: printer_(options, out_fd, err), set_(std::make_unique<reader::TraceSet>())
{
}

LiveView::~LiveView() = default;

void LiveView::metadata(uint64_t trace, const std::string &text, const std::string &path)
{
	if (const auto it = traces_.find(trace); it != traces_.end()) {
		it->second = &set_->update_text_trace(*it->second, text);
		// The events held refer to the old event classes: decoded again.
		for (auto &[id, s] : streams_)
			if (s.head && &s.stream->trace() == it->second)
				set_->redecode(*s.stream);
	} else {
		reader::Trace &t = set_->add_text_trace(text, path + "/metadata", path);
		// As `tracery view` names the traces of a session's directory.
		t.name = t.has_hostname ? t.hostname + "/" + path : path;
		traces_.emplace(trace, &t);
	}
	printer_.bind(*set_);
}

void LiveView::add_stream(uint64_t stream, uint64_t trace, const std::string &name)
{
	const auto t = traces_.find(trace);
	if (t == traces_.end())
		throw std::runtime_error("stream " + name + " of trace " + std::to_string(trace) +
		                         ", which has no metadata");
	if (streams_.count(stream))
		throw std::runtime_error("stream id " + std::to_string(stream) + " given twice");
	streams_[stream].stream = &set_->add_memory_stream(*t->second, name);
}

LiveView::StreamState &LiveView::state(uint64_t stream)
{
	const auto it = streams_.find(stream);
	if (it == streams_.end())
		throw std::runtime_error("stream id " + std::to_string(stream) + ", which was not given");
	return it->second;
}

void LiveView::take_next(StreamState &s)
{
	s.head = set_->next_of(*s.stream);
	const reader::PacketEntry *p = s.stream->packet();
	if (!s.head && p && p->f.has_end) {
		const int64_t end = s.stream->clock().ns(p->f.end);
		s.quiet_until = std::max(s.quiet_until.value_or(end), end);
	}
}

void LiveView::packet(uint64_t stream, std::span<const uint8_t> bytes)
{
	StreamState &s = state(stream);
	set_->append_packet(*s.stream, bytes);
	if (!s.head)
		take_next(s);
}

void LiveView::inactive(uint64_t stream, uint64_t stream_class, uint64_t cycles)
{
	StreamState &s = state(stream);
	const reader::TracePlans::StreamPlans *sp = s.stream->trace().plans->stream(stream_class);
	if (!sp)
		throw std::runtime_error("stream " + s.stream->name() + " is inactive in stream class " +
		                         std::to_string(stream_class) + ", which its metadata does not declare");
	const int64_t ns = sp->clock ? reader::ClockConverter(*sp->clock).ns(cycles) : static_cast<int64_t>(cycles);
	s.quiet_until = std::max(s.quiet_until.value_or(ns), ns);
}

void LiveView::hang_up(uint64_t stream) { state(stream).hup = true; }

bool LiveView::wants(uint64_t stream) const
{
	const auto it = streams_.find(stream);
	return it != streams_.end() && !it->second.hup && !it->second.head;
}

bool LiveView::done() const
{
	for (const auto &[id, s] : streams_)
		if (!s.hup || s.head)
			return false;
	return true;
}

bool LiveView::print()
{
	try {
		if (!print_ready())
			return false;
	} catch (...) {
		printer_.flush(); // what was printed before a damaged event
		throw;
	}
	printer_.flush();
	return true;
}

bool LiveView::print_ready()
{
	while (true) {
		StreamState *best = nullptr;
		for (auto &[id, s] : streams_)
			if (s.head && (!best || set_->before(*s.stream, *best->stream)))
				best = &s;
		if (!best)
			break;
		const int64_t ns = best->head->ns;
		bool blocked = false;
		for (const auto &[id, s] : streams_)
			if (!s.head && !s.hup && !(s.quiet_until && *s.quiet_until > ns))
				blocked = true;
		if (blocked)
			break;
		if (!printer_.print(*best->head))
			return false;
		take_next(*best);
	}
	return true;
}

} // namespace tracery::analysis
