// `snapshot record`: see session_snapshot.hpp.
#include "daemon/session_snapshot.hpp"

#include "base/fs_creds.hpp"
#include "daemon/session_channels.hpp"

#include "clock/trace_clock.hpp"
#include "consumer/event_count.hpp"
#include "consumer/file_sink.hpp"
#include "ctf/trace_dir.hpp"

#include <algorithm>
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

bool valid_output_name(const std::string &n)
{
	return !n.empty() && n.size() <= 64 && n[0] != '.' && n[0] != '-' &&
	       std::all_of(n.begin(), n.end(), [](char c) {
		       return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
	       });
}

} // namespace

void SnapshotRecorder::add_output(control::SavedSnapshotOutput output)
{
	if (!session_.snapshot)
		throw std::runtime_error("session '" + session_.name +
		                         "' is not in snapshot mode: create one with `tracery create NAME --snapshot`");
	if (!outputs_.empty())
		throw std::runtime_error("session '" + session_.name + "' has a snapshot output already ('" +
		                         outputs_[0].name + "'): remove it with `tracery snapshot del-output 1` first");
	if (output.path.rfind("net://", 0) == 0) {
		std::string why;
		if (!control::relay::parse_relay_url(output.path, control::relay::kDefaultPort, &why, "snapshot URL"))
			throw std::runtime_error(why);
	} else if (output.path.empty() || output.path[0] != '/' || output.path.size() > 4096) {
		throw std::runtime_error("a snapshot output is an absolute directory or net://HOST[:PORT], got '" +
		                         output.path.substr(0, 4096) + "'");
	}
	outputs_added_++;
	if (output.name.empty())
		output.name = "snapshot-" + std::to_string(outputs_added_);
	if (!valid_output_name(output.name))
		throw std::runtime_error("bad snapshot output name '" + output.name.substr(0, 64) +
		                         "': use letters, digits, '_', '-' and '.' (at most 64)");
	outputs_.push_back(std::move(output));
}

void SnapshotRecorder::delete_output(const std::string &id_or_name)
{
	for (size_t i = 0; i < outputs_.size(); i++) {
		if (outputs_[i].name == id_or_name || std::to_string(i + 1) == id_or_name) {
			outputs_.erase(outputs_.begin() + static_cast<ptrdiff_t>(i));
			return;
		}
	}
	throw std::runtime_error("session '" + session_.name + "' has no snapshot output '" + id_or_name.substr(0, 64) +
	                         "': `tracery snapshot list-output` lists them");
}

namespace {

// --max-size: the newest sub-buffers of each stream that fit in an equal
// share of it, as LTTng divides it; at least one each.
void limit_to(const SnapshotPlan &plan, std::vector<size_t> &keep)
{
	uint64_t streams = 0, largest = 0;
	for (const auto &part : plan.parts) {
		streams += part.buffer->ring->config().num_cpus;
		largest = std::max<uint64_t>(largest, part.channel->spec().subbuf_size);
	}
	if (streams == 0)
		return;
	for (const auto &part : plan.parts) {
		const uint64_t n = plan.max_size / streams / part.channel->spec().subbuf_size;
		if (n == 0)
			throw std::runtime_error("--max-size " + std::to_string(plan.max_size) +
			                         " leaves less than a sub-buffer to each of the " +
			                         std::to_string(streams) + " streams of the buffers: give at least " +
			                         std::to_string(streams * largest) + " bytes");
		keep.push_back(n);
	}
}

} // namespace

SnapshotPlan SnapshotRecorder::plan(const std::vector<std::unique_ptr<Channel>> &channels, const std::string &metadata,
                                    const control::SnapshotRecord &req)
{
	const control::SavedSnapshotOutput *output = outputs_.empty() ? nullptr : &outputs_[0];
	const std::string base = req.path ? *req.path : output ? output->path : session_.output;
	const std::string name = req.name ? *req.name : output ? output->name : "snapshot";
	std::optional<control::relay::RelayUrl> relay;
	if (base.rfind("net://", 0) == 0) {
		std::string why;
		relay = control::relay::parse_relay_url(base, control::relay::kDefaultPort, &why, "snapshot URL");
		if (!relay)
			throw std::runtime_error(why);
	} else if (base.empty() || base[0] != '/') {
		throw std::runtime_error(
			"a snapshot is written to an absolute directory or sent to net://HOST[:PORT], got '" +
			base.substr(0, 4096) + "'");
	}
	if (!valid_output_name(name))
		throw std::runtime_error("bad snapshot name '" + name.substr(0, 64) +
		                         "': use letters, digits, '_', '-' and '.' (at most 64)");
	const std::string dir_name = name + "-" + std::to_string(++taken_) + "-" + now_stamp();
	SnapshotPlan plan{relay ? dir_name : base + "/" + dir_name,
	                  relay,
	                  metadata,
	                  req.max_size ? *req.max_size
	                  : output     ? output->max_size
	                               : 0,
	                  {}};
	for (auto &ch : channels)
		for (const auto &[owner, b] : ch->buffers())
			plan.parts.push_back({ch.get(), owner, b.get()});
	return plan;
}

std::string SnapshotRecorder::copy_buffers(const SnapshotPlan &plan, const SinkMaker &make_sink) const
{
	std::vector<size_t> keep; // sub-buffers per stream of each part
	if (plan.max_size)
		limit_to(plan, keep);
	RefusedCopies refused;
	uint64_t instance = 0;
	for (size_t i = 0; i < plan.parts.size(); i++) {
		const auto &part = plan.parts[i];
		const Channel &ch = *part.channel;
		const consumer::StreamNames names{ch.spec().name + "_" + part.owner, ch.index(), instance++ << 16,
		                                  session_.uuid};
		consumer::ChannelConsumer copier(
			*part.buffer->ring, make_sink(names, part.buffer->ring->config().num_cpus),
			clock::tick_source(session_.tick_unit), buffer_problem_log(session_, ch, part.owner));
		copier.set_event_counter(
			[&](uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) {
				return consumer::count_events(plan.metadata, names, cpu, info, events, size);
			});
		if (!keep.empty())
			copier.keep_newest(keep[i]);
		copier.finish();
		// The copy is refused (a full disk, a full queue): the buffers are left as they were.
		if (const consumer::WriteLosses w = copier.write_losses(); !w.reason.empty())
			refused.add(ch.spec().name, w);
	}
	return refused.reason.empty() ? "" : refused.reason + "; " + refused.what_was_lost();
}

std::string SnapshotRecorder::write(const SnapshotPlan &plan, KernelDomain &kernel) const
{
	if (plan.relay)
		return write_to_relay(plan, kernel);
	const std::string user_dir = kernel.in_layout() ? plan.dir + "/ust" : plan.dir;
	std::string refused;
	try {
		base::FsCreds as_owner(session_.owner, session_.owner_gid);
		if (kernel.in_layout())
			ctf::TraceDir::create(plan.dir, 0700);
		ctf::TraceDir td = ctf::TraceDir::create(user_dir, 0700);
		td.write_metadata(plan.metadata);
		refused = copy_buffers(plan, [&](const consumer::StreamNames &names, uint32_t num_cpus) {
			return std::make_unique<consumer::FileSink>(user_dir, names, num_cpus);
		});
	} catch (const std::system_error &e) {
		throw std::runtime_error("cannot write snapshot '" + plan.dir + "': " + strerror(e.code().value()) +
		                         "; free some space or check the output directory");
	}
	if (!refused.empty())
		throw std::runtime_error("snapshot '" + plan.dir + "' is incomplete: " + refused +
		                         "; the buffers are intact: free some space and record the snapshot again");
	kernel.snapshot(plan.dir);
	return plan.dir;
}

} // namespace tracery::daemon
