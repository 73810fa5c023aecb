// `snapshot record` to net://HOST[:PORT] (the request's, or the snapshot
// output's): the snapshot's buffers sent to tracery-relayd through the relay
// protocol, on a connection of its own (a consumer::RelayLink opened for it,
// ended by BYE once the relay confirmed every packet). The relay files it as
// any session, under HOSTNAME/SESSION-DATE/ (DATE: when the snapshot was
// taken), its trace at NAME-N-DATE/ in there, readable alone; with a kernel
// domain, NAME-N-DATE/ust and NAME-N-DATE/kernel, as in a local snapshot
// (the kernel part read out of tracefs into the same connection). The
// connection authenticates and uses TLS as the session's --relay-key and
// --relay-ca say (`create --snapshot [--set-url URL]`), whichever output it goes to.
#include "daemon/log.hpp"
#include "daemon/session_snapshot.hpp"

#include "consumer/trace_output.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace tracery::daemon {

namespace {

constexpr int kConnectTimeoutMs = 3000;
// Sending a snapshot and hearing that the relay wrote it, at most.
constexpr int kSendTimeoutMs = 30000;
// The send queue beyond the buffers' bytes: packet headers, empty packets.
constexpr size_t kQueueMargin = 64u << 20;

} // namespace

std::string SnapshotRecorder::write_to_relay(const SnapshotPlan &plan, KernelDomain &kernel) const
{
	const std::string where = "the relay at " + control::relay::to_string(*plan.relay);
	// The whole copy fits in the queue: the copiers never wait for the relay.
	size_t queue_bytes = kQueueMargin + kernel.snapshot_bytes();
	for (const auto &part : plan.parts) {
		const ringbuf::Config &c = part.buffer->ring->config();
		queue_bytes += size_t{c.num_cpus} * c.num_subbuf * c.subbuf_size;
	}
	consumer::RelayLinkConfig config;
	config.host = plan.relay->host;
	config.port = plan.relay->port;
	config.hello.hostname = relay_host_name();
	config.hello.session = session_.name;
	config.hello.creation_time_ns =
		static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
					      std::chrono::system_clock::now().time_since_epoch())
	                                      .count());
	config.queue_bytes = queue_bytes;
	config.security = session_.relay.snapshot_security;
	const std::string session = session_.name;
	config.log = [session](const std::string &line) {
		log(Level::warn, "session %s: snapshot: %s", session.c_str(), line.c_str());
	};
	auto link = std::make_shared<consumer::RelayLink>(std::move(config));
	if (const std::string why = link->open(kConnectTimeoutMs); !why.empty())
		throw std::runtime_error("cannot reach " + where + " (" + why +
		                         "): start tracery-relayd there, or fix the snapshot's net://HOST[:PORT]");
	consumer::TraceOutput output("", link, kernel.in_layout() ? plan.dir + "/ust" : plan.dir);
	output.write_metadata(plan.metadata);
	const std::string refused = copy_buffers(plan, [&](const consumer::StreamNames &names, uint32_t num_cpus) {
		return output.sink(names, num_cpus);
	});
	// The kernel part once the user part is whole: reading it consumes the kernel's buffers.
	const bool kernel_read = kernel.in_layout() && refused.empty();
	std::string problems = refused;
	const auto add = [&problems](const std::string &problem) {
		if (!problem.empty())
			problems += (problems.empty() ? "" : "; ") + problem;
	};
	if (kernel_read) {
		try {
			kernel.snapshot(plan.dir, link);
		} catch (const std::runtime_error &e) {
			add(e.what());
		}
	}
	add(link->bye(kSendTimeoutMs));
	const consumer::RelayLink::Counts counts = link->counts();
	if (counts.packets_dropped > 0)
		add(std::to_string(counts.packets_dropped) + " packets not sent");
	const std::string dir = counts.relay_path + "/" + plan.dir;
	if (!problems.empty())
		throw std::runtime_error("snapshot " + dir + " sent to " + where + " is incomplete: " + problems +
		                         (kernel_read ? "; the user space buffers are intact (the kernel's were read "
		                                        "out): record the snapshot again"
		                                      : "; the buffers are intact: record the snapshot again"));
	return dir + " on " + where;
}

} // namespace tracery::daemon
