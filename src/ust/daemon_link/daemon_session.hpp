// A session of the session daemon as a traced program sees it: one runtime
// Session per channel, each writing into the shared buffer the daemon sent
// (per-UID or per-PID), with the event ids the daemon gave (an event is
// recorded in a channel exactly when the daemon gave it an id there).
#pragma once

#include "ust/session.hpp"

#include "control/messages.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tracery::ust {

// Event ids and filter bytecode of one channel, as given by the daemon
// (schema key -> id, schema key -> [hex bytecode]). Filters that fail to
// decode or verify are remembered, for the acknowledgement to the daemon.
class DaemonCatalog final : public EventCatalog {
public:
	int64_t id_for(const tracery_event_desc &desc) override;
	std::optional<std::vector<filter::Program>> filters_for(const tracery_event_desc &desc) override;
	void filter_refused(const tracery_event_desc &desc, const std::string &why) override;
	bool has(const tracery_event_desc &desc);
	void set(const std::map<std::string, uint32_t> &ids,
	         const std::map<std::string, std::vector<std::string>> &filters);
	// The filters refused since the last call.
	std::vector<control::FilterRefusal> take_refusals();

private:
	std::mutex mutex_;
	std::map<std::string, uint32_t> ids_;
	std::map<std::string, std::vector<std::string>> filters_; // key -> bytecode
	std::vector<control::FilterRefusal> refused_;
};

class DaemonSession {
public:
	// channels: StartSession's, fds: one buffer per channel (taken), except
	// the channels whose `buffer` is false, which do not trace this program
	// (over its user's buffer quota in the daemon). Throws if a buffer cannot
	// be mapped.
	DaemonSession(const std::vector<control::ChannelRules> &channels, std::vector<int> fds);
	~DaemonSession(); // stops
	void start();
	// Detaches every probe and waits until no thread writes into the buffers.
	void stop();
	// New ids and filters: attaches the events newly given an id, detaches
	// the others; an event whose filters changed is attached again.
	void update(const std::vector<control::ChannelRules> &channels);
	// The filters this program refused since the last call (see DaemonCatalog).
	std::vector<control::FilterRefusal> take_refusals();

private:
	struct Tracer {
		DaemonCatalog catalog;                                   // outlives the session that refers to it
		std::map<std::string, std::vector<std::string>> filters; // as the daemon last sent them
		std::unique_ptr<Session> session;
	};
	std::vector<std::unique_ptr<Tracer>> tracers_; // by channel index; null: no buffer
};

} // namespace tracery::ust
