// `snapshot record`: see session_snapshot.hpp.
#include "daemon/session_snapshot.hpp"

#include "base/fs_creds.hpp"
#include "daemon/session_channels.hpp"

#include "clock/trace_clock.hpp"
#include "consumer/event_count.hpp"
#include "consumer/file_sink.hpp"
#include "ctf/trace_dir.hpp"

#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace tracery::daemon {

namespace {

std::string now_stamp()
{
	time_t t = time(nullptr);
	tm tm_;
	localtime_r(&t, &tm_);
	char buf[32];
	strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm_);
	return buf;
}

// What the copies of a snapshot's buffers could not write, per channel.
struct RefusedCopies {
	std::string reason; // the last refusal
	std::vector<std::string> channels;

	void add(const std::string &channel, const consumer::WriteLosses &w)
	{
		reason = w.reason;
		std::string line = std::to_string(w.events) + " event" + (w.events == 1 ? "" : "s");
		if (w.unwritten_uncounted > 0)
			line += " and " + std::to_string(w.unwritten_uncounted) + " sub-buffers of events not counted";
		channels.push_back(line + " of channel " + channel);
	}
	std::string what_was_lost() const
	{
		std::string out;
		for (const std::string &c : channels)
			out += (out.empty() ? "" : ", ") + c;
		return out + " not written";
	}
};

} // namespace

SnapshotPlan SnapshotRecorder::plan(const std::vector<std::unique_ptr<Channel>> &channels, const std::string &metadata)
{
	SnapshotPlan plan{session_.output + "/snapshot-" + std::to_string(++taken_) + "-" + now_stamp(), metadata, {}};
	for (auto &ch : channels)
		for (const auto &[owner, b] : ch->buffers())
			plan.parts.push_back({ch.get(), owner, b.get()});
	return plan;
}

std::string SnapshotRecorder::write(const SnapshotPlan &plan, KernelDomain &kernel) const
{
	const std::string user_dir = kernel.in_layout() ? plan.dir + "/ust" : plan.dir;
	RefusedCopies refused;
	try {
		base::FsCreds as_owner(session_.owner, session_.owner_gid);
		if (kernel.in_layout())
			ctf::TraceDir::create(plan.dir, 0700);
		ctf::TraceDir td = ctf::TraceDir::create(user_dir, 0700);
		td.write_metadata(plan.metadata);
		uint64_t instance = 0;
		for (const auto &part : plan.parts) {
			const Channel &ch = *part.channel;
			const consumer::StreamNames names{ch.spec().name + "_" + part.owner, ch.index(),
			                                  instance++ << 16, session_.uuid};
			auto sink = std::make_unique<consumer::FileSink>(user_dir, names,
			                                                 part.buffer->ring->config().num_cpus);
			consumer::ChannelConsumer copier(*part.buffer->ring, std::move(sink),
			                                 clock::tick_source(session_.tick_unit),
			                                 buffer_problem_log(session_, ch, part.owner));
			copier.set_event_counter(
				[&](uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) {
					return consumer::count_events(plan.metadata, names, cpu, info, events, size);
				});
			copier.finish();
			// The copy is refused (a full disk): the buffers are left as they were.
			if (const consumer::WriteLosses w = copier.write_losses(); !w.reason.empty())
				refused.add(ch.spec().name, w);
		}
	} catch (const std::system_error &e) {
		throw std::runtime_error("cannot write snapshot '" + plan.dir + "': " + strerror(e.code().value()) +
		                         "; free some space or check the output directory");
	}
	if (!refused.reason.empty())
		throw std::runtime_error("snapshot '" + plan.dir + "' is incomplete: " + refused.reason + "; " +
		                         refused.what_was_lost() +
		                         "; the buffers are intact: free some space and record the snapshot again");
	kernel.snapshot(plan.dir);
	return plan.dir;
}

} // namespace tracery::daemon
