// A daemon session in a traced program: see daemon_session.hpp.
#include "ust/daemon_link/daemon_session.hpp"

#include <algorithm>
#include <cstdio>

#include "control/wire.hpp"
#include "event/schema.hpp"

namespace tracery::ust {

using nlohmann::json;

namespace {
std::string key_of(const tracery_event_desc &desc) { return event::schema_key(event::schema_of(desc)); }
} // namespace

int64_t DaemonCatalog::id_for(const tracery_event_desc &desc)
{
	const std::string key = key_of(desc);
	std::lock_guard lock(mutex_);
	auto it = ids_.find(key);
	return it == ids_.end() ? int64_t{-1} : int64_t{it->second};
}

std::optional<std::vector<filter::Program>> DaemonCatalog::filters_for(const tracery_event_desc &desc)
{
	const std::string key = key_of(desc);
	std::vector<std::string> encoded;
	{
		std::lock_guard lock(mutex_);
		if (auto it = filters_.find(key); it != filters_.end())
			encoded = it->second;
	}
	std::vector<filter::Program> programs;
	for (const auto &hex : encoded) {
		std::string bytes, why;
		filter::Program program;
		if (!control::from_hex(hex, bytes))
			why = "the bytecode is not hex";
		else if (filter::decode(bytes, program, &why))
			programs.push_back(std::move(program));
		if (!why.empty()) {
			filter_refused(desc, why);
			return std::nullopt;
		}
	}
	return programs;
}

void DaemonCatalog::filter_refused(const tracery_event_desc &desc, const std::string &why)
{
	EventCatalog::filter_refused(desc, why);
	std::lock_guard lock(mutex_);
	refused_.push_back({{"event", std::string(desc.provider) + ":" + desc.name}, {"reason", why}});
}

json DaemonCatalog::take_refusals()
{
	std::lock_guard lock(mutex_);
	return std::exchange(refused_, json::array());
}

bool DaemonCatalog::has(const tracery_event_desc &desc) { return id_for(desc) >= 0; }

void DaemonCatalog::set(const json &ids, const json &filters)
{
	std::map<std::string, uint32_t> next;
	for (const auto &[key, id] : ids.items())
		if (id.is_number_unsigned())
			next[key] = id.get<uint32_t>();
	std::map<std::string, std::vector<std::string>> next_filters;
	for (const auto &[key, list] : filters.items())
		for (const auto &hex : list)
			next_filters[key].push_back(hex.is_string() ? hex.get<std::string>() : "?");
	std::lock_guard lock(mutex_);
	ids_.swap(next);
	filters_.swap(next_filters);
}

DaemonSession::DaemonSession(const json &channels, std::vector<int> fds)
{
	std::vector<base::Fd> owned;
	for (int fd : fds)
		owned.emplace_back(fd);
	// A channel with "buffer": false does not trace this program (no buffer
	// fits its user's quota): it has no tracer and takes no fd.
	const auto has_buffer = [](const json &c) { return !c.is_object() || c.value("buffer", true); };
	if (!channels.is_array() ||
	    static_cast<size_t>(std::count_if(channels.begin(), channels.end(), has_buffer)) != owned.size())
		throw std::runtime_error("the daemon sent " + std::to_string(owned.size()) + " buffers for " +
		                         std::to_string(channels.size()) + " channels");
	size_t next_fd = 0;
	for (size_t i = 0; i < channels.size(); i++) {
		const json &c = channels[i];
		if (!has_buffer(c)) {
			tracers_.push_back(nullptr);
			continue;
		}
		const json ctx = c.value("context", json::object());
		event::ContextOptions context{ctx.value("vpid", false), ctx.value("vtid", false),
		                              ctx.value("procname", false)};
		auto t = std::make_unique<Tracer>();
		t->filters = c.value("filters", json::object());
		t->catalog.set(c.value("ids", json::object()), t->filters);
		auto ring = ringbuf::Channel::attach(owned[next_fd++].release());
		if (ring->config().sync == ringbuf::Sync::rseq && !ringbuf::Channel::rseq_available())
			fprintf(stderr,
			        "tracery: this process has no rseq area (valgrind? glibc.pthread.rseq=0?), which the "
			        "daemon's per-CPU buffers need: its events are dropped and counted as lost\n");
		// Older daemons send no clock: their traces count ns.
		const std::string clock_name = c.value("clock", std::string("ns"));
		clock::TickUnit unit;
		if (!clock::parse_tick_unit(clock_name, unit))
			throw std::runtime_error("the daemon asks for timestamps in '" + clock_name +
			                         "', a unit this program's libtracery does not know (it knows 'tsc' "
			                         "and 'ns'): update libtracery");
		t->session = std::make_unique<Session>(std::move(ring), context, clock::tick_source(unit),
		                                       std::vector<std::string>{"*"}, t->catalog);
		tracers_.push_back(std::move(t));
	}
}

DaemonSession::~DaemonSession() { stop(); }

void DaemonSession::start()
{
	for (auto &t : tracers_)
		if (t)
			t->session->start();
}

void DaemonSession::stop()
{
	for (auto &t : tracers_)
		if (t)
			t->session->stop();
}

void DaemonSession::update(const json &channels)
{
	for (const auto &c : channels) {
		const size_t index = c.value("index", size_t{0});
		if (index >= tracers_.size() || !tracers_[index])
			continue;
		Tracer &t = *tracers_[index];
		const json filters = c.value("filters", json::object());
		const bool new_filters = filters != t.filters;
		t.catalog.set(c.value("ids", json::object()), filters);
		t.filters = filters;
		for (tracery_event_desc *desc : registered_events()) {
			if (new_filters || !t.catalog.has(*desc))
				t.session->on_event_unregistered(desc); // no-op if not attached
			if (t.catalog.has(*desc))
				t.session->on_event_registered(desc); // no-op if attached
		}
	}
}

json DaemonSession::take_refusals()
{
	json all = json::array();
	for (auto &t : tracers_)
		for (auto &r : t ? t->catalog.take_refusals() : json::array())
			all.push_back(std::move(r));
	return all;
}

} // namespace tracery::ust
