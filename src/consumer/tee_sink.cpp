// consumer/tee_sink.cpp — see tee_sink.hpp.
#include "consumer/tee_sink.hpp"

#include <algorithm>
#include <exception>

namespace tracery::consumer {

TeeSink::TeeSink(std::unique_ptr<PacketSink> first, std::unique_ptr<PacketSink> second)
	: first_(std::move(first)), second_(std::move(second))
{
}

template <class F>
void TeeSink::both(F &&f)
{
	std::exception_ptr failed;
	for (PacketSink *s : {first_.get(), second_.get()}) {
		try {
			f(*s);
		} catch (...) {
			if (!failed)
				failed = std::current_exception();
		}
	}
	if (failed)
		std::rethrow_exception(failed);
}

void TeeSink::write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size)
{
	std::exception_ptr failed;
	for (size_t i = 0; i < 2; i++) {
		std::vector<uint64_t> &taken = taken_[i];
		if (cpu < taken.size() && taken[cpu] > info.seq)
			continue; // it took this packet when it was offered before
		try {
			(i == 0 ? *first_ : *second_).write_packet(cpu, info, events, size);
			if (cpu >= taken.size())
				taken.resize(cpu + 1, 0);
			taken[cpu] = info.seq + 1;
		} catch (...) {
			if (!failed)
				failed = std::current_exception();
		}
	}
	if (failed)
		std::rethrow_exception(failed);
}

void TeeSink::idle(uint32_t cpu, uint64_t timestamp)
{
	both([&](PacketSink &s) { s.idle(cpu, timestamp); });
}

uint64_t TeeSink::streams_started() const { return std::max(first_->streams_started(), second_->streams_started()); }

void TeeSink::close()
{
	both([](PacketSink &s) { s.close(); });
}

void TeeSink::abandon_after_fork()
{
	both([](PacketSink &s) { s.abandon_after_fork(); });
}

} // namespace tracery::consumer
