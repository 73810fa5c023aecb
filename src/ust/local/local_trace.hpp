// The trace directory of daemonless mode (TRACERY_OUTPUT): its metadata and
// the catalog of event ids. The catalog lives in a shared anonymous mapping so
// that children made by fork() keep one id space and append to the same
// metadata file, under a process-shared robust mutex. It also compiles each
// event's TRACERY_FILTER filters.
#pragma once

#include "consumer/event_count.hpp"
#include "ctf/metadata.hpp"
#include "ctf/trace_dir.hpp"
#include "ust/local/daemonless_config.hpp"
#include "ust/local/filter_rules.hpp"
#include "ust/session.hpp"

#include <memory>
#include <string>

namespace tracery::ust {

struct SharedCatalogPage;

class LocalTrace final : public EventCatalog {
public:
	// Creates DIR (it must not hold a trace already) and its metadata
	// preamble. Throws std::runtime_error with a one-line reason.
	explicit LocalTrace(const DaemonlessConfig &config);
	~LocalTrace() override;
	LocalTrace(const LocalTrace &) = delete;
	LocalTrace &operator=(const LocalTrace &) = delete;

	int64_t id_for(const tracery_event_desc &desc) override;
	std::optional<std::vector<filter::Program>> filters_for(const tracery_event_desc &desc) override;

	// A number unique to each process of the trace (0 for the first), used
	// to name its stream files and stream instances.
	uint32_t claim_process_index();

	const std::string &dir() const { return dir_.path(); }
	const ctf::Uuid &uuid() const { return uuid_; }
	// What the trace's timestamps count (the TSC where this process reads
	// time from it, else ns): its metadata says so.
	clock::TickUnit tick_unit() const { return tick_unit_; }
	// The metadata of every event class this process has asked for (and
	// those its parent had when it forked): enough to count the events of
	// its own buffers when the disk refuses them, since the file may not
	// have been written.
	std::shared_ptr<const consumer::SharedMetadata> own_metadata() const { return own_metadata_; }

private:
	std::vector<FilterRule> filters_;
	clock::TickUnit tick_unit_ = clock::preferred_tick_unit();
	ctf::Uuid uuid_;
	ctf::TraceDir dir_;
	SharedCatalogPage *page_ = nullptr;
	std::shared_ptr<consumer::SharedMetadata> own_metadata_ = std::make_shared<consumer::SharedMetadata>();
	std::vector<bool> in_own_metadata_; // by event id
};

} // namespace tracery::ust
