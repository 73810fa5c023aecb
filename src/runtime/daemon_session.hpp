// A session of the session daemon as a traced program sees it: one runtime
// Session per channel, each writing into the shared buffer the daemon sent
// (per-UID or per-PID), with the event ids the daemon gave (an event is
// recorded in a channel exactly when the daemon gave it an id there).
#pragma once

#include "runtime/session.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tracery::runtime {

// Event ids of one channel, as given by the daemon (schema key -> id).
class DaemonCatalog final : public EventCatalog {
public:
	int64_t id_for(const tracery_event_desc &desc) override;
	bool has(const tracery_event_desc &desc);
	void set(const nlohmann::json &ids);

private:
	std::mutex mutex_;
	std::map<std::string, uint32_t> ids_;
};

class DaemonSession {
public:
	// channels: [{"index", "ids", "context"}], fds: one buffer per channel
	// (taken). Throws if a buffer cannot be mapped.
	DaemonSession(const nlohmann::json &channels, std::vector<int> fds);
	~DaemonSession(); // stops
	void start();
	// Detaches every probe and waits until no thread writes into the buffers.
	void stop();
	// New ids: attaches the events newly given an id, detaches the others.
	void update(const nlohmann::json &channels);

private:
	struct Tracer {
		DaemonCatalog catalog; // outlives the session that refers to it
		std::unique_ptr<Session> session;
	};
	std::vector<std::unique_ptr<Tracer>> tracers_;
};

} // namespace tracery::runtime
