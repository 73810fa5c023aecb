// analysis/view/live_view.hpp — `tracery view --live`'s reading: traces whose
// metadata and packets a live source (an lttng-live relay) gives as they
// come, read by ctf's reader from memory, merged in babeltrace2's order and
// printed by text_view's printer, so that the lines are those `tracery view`
// prints of the same trace on disk. An item is printed only once every other
// stream that has not hung up is known to have nothing before it: it has an
// item queued, or it is quiet (inactive, or past its last packet) until
// after it. The source says what it learns; print() prints what it can.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "analysis/view/text_view.hpp"

namespace tracery::ctf::reader {
class Stream;
struct Trace;
} // namespace tracery::ctf::reader

namespace tracery::analysis {

class LiveView {
public:
	// Throws std::invalid_argument for a bad filter expression.
	LiveView(const ViewOptions &options, int out_fd, FILE *err);
	~LiveView();
	LiveView(const LiveView &) = delete;
	LiveView &operator=(const LiveView &) = delete;

	// The metadata of the source's trace `trace` so far (the whole text; a
	// trace's metadata only grows): the trace made, or its classes made
	// again. path: the trace's path in its session (for its name). Throws
	// ctf::reader::ReadError.
	void metadata(uint64_t trace, const std::string &text, const std::string &path);
	bool has_trace(uint64_t trace) const { return traces_.count(trace) != 0; }
	// A stream of a trace given metadata. Throws std::runtime_error for an
	// unknown trace or a stream id given twice.
	void add_stream(uint64_t stream, uint64_t trace, const std::string &name);
	bool has_stream(uint64_t stream) const { return streams_.count(stream) != 0; }
	// The stream's next packet, whole (copied). Throws ctf::reader::ReadError.
	void packet(uint64_t stream, std::span<const uint8_t> bytes);
	// The stream has nothing before `cycles` of its stream class's clock.
	void inactive(uint64_t stream, uint64_t stream_class, uint64_t cycles);
	// The stream ends: nothing more will come on it.
	void hang_up(uint64_t stream);
	// Whether the stream needs its next packet: it has none queued and has not hung up.
	bool wants(uint64_t stream) const;
	// Whether every stream has hung up and every item was printed.
	bool done() const;
	// Prints every item that nothing can precede any more, then writes them
	// out (also when an event cannot be decoded: then the error is thrown).
	// False once the output is closed (the reader of a pipe went away).
	bool print();
	uint64_t events() const { return printer_.events(); }

private:
	struct StreamState {
		ctf::reader::Stream *stream = nullptr;
		const ctf::reader::Item *head = nullptr; // its next item, not printed yet
		std::optional<int64_t> quiet_until;      // ns before which it has nothing more
		bool hup = false;
	};
	StreamState &state(uint64_t stream);
	// After the stream's head was taken: the next one, or the end of its last packet.
	void take_next(StreamState &s);
	// print() but the writing out.
	bool print_ready();

	ItemPrinter printer_;
	std::unique_ptr<ctf::reader::TraceSet> set_;
	std::map<uint64_t, ctf::reader::Trace *> traces_;
	std::map<uint64_t, StreamState> streams_;
};

} // namespace tracery::analysis
