// analysis/read/progress.hpp — a progress bar on a terminal for work on bytes that
// takes more than a second (reading traces): the share done, the rate and the
// time left, redrawn at most ten times a second on one line of stderr, and
// erased at the end. Never drawn when the stream is not a terminal (a pipe,
// a file, a test's captured output).
//
//   Progress p("stats", set.bytes_total());    // stderr, if it is a terminal
//   ... p.update(set.bytes_done()); ...         // cheap: call it every few thousand items
//   p.finish();                                 // (the destructor does too)
//
// `tracery view` draws it only when its output is not the terminal too.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tracery::analysis {

class Progress {
public:
	// Draws on stderr when it is a terminal (and TERM is not "dumb").
	Progress(std::string label, uint64_t total);
	// Draws on out when enabled (tests).
	Progress(std::string label, uint64_t total, FILE *out, bool enabled);
	~Progress();
	Progress(const Progress &) = delete;
	Progress &operator=(const Progress &) = delete;

	bool enabled() const { return out_ != nullptr; }
	void update(uint64_t done)
	{
		if (out_)
			tick(done);
	}
	// Erases the bar (for a line of text on the same stream); the next
	// update draws it again.
	void clear();
	// Erases the bar, if one was drawn, for good.
	void finish();
	// Whether f is a terminal a bar may be drawn on (not TERM=dumb).
	static bool on_terminal(FILE *f);

	// One line of at most width columns: "LABEL [#####     ]  42%  1.2 GB/2.9 GB
	// 310 MB/s  0:05 left". Exposed for tests.
	static std::string line(const std::string &label, uint64_t done, uint64_t total, double seconds,
	                        unsigned width);

private:
	void tick(uint64_t done);

	std::string label_;
	uint64_t total_;
	FILE *out_ = nullptr;
	std::chrono::steady_clock::time_point start_, last_draw_;
	bool drawn_ = false;
};

} // namespace tracery::analysis
