// A daemon session in a traced program: see daemon_session.hpp.
#include "ust/daemon_link/daemon_session.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "base/diagnostics.hpp"
#include "control/wire.hpp"
#include "event/event_pattern.hpp"
#include "event/schema.hpp"

namespace tracery::ust {

namespace {
std::string key_of(const tracery_event_desc &desc) { return event::schema_key(event::schema_of(desc)); }

// The daemon's blocking timeout (microseconds, -1 without limit) as BlockingPolicy takes it: any other negative
// value, or one too large for nanoseconds, waits without limit.
int64_t blocking_timeout_ns(int64_t us)
{
	if (us < 0 || us > INT64_MAX / 1000)
		return -1;
	return us * 1000;
}
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
	refused_.push_back({std::string(desc.provider) + ":" + desc.name, why});
}

std::vector<control::FilterRefusal> DaemonCatalog::take_refusals()
{
	std::lock_guard lock(mutex_);
	return std::exchange(refused_, {});
}

bool DaemonCatalog::has(const tracery_event_desc &desc) { return id_for(desc) >= 0; }

void DaemonCatalog::set(const std::map<std::string, uint32_t> &ids,
                        const std::map<std::string, std::vector<std::string>> &filters)
{
	std::lock_guard lock(mutex_);
	ids_ = ids;
	filters_ = filters;
}

DaemonSession::DaemonSession(const std::vector<control::ChannelRules> &channels, std::vector<int> fds)
{
	std::vector<base::Fd> owned;
	for (int fd : fds)
		owned.emplace_back(fd);
	// A channel whose `buffer` is false does not trace this program (no
	// buffer fits its user's quota): it has no tracer and takes no fd.
	const auto has_buffer = [](const control::ChannelRules &c) { return c.buffer.value_or(true); };
	if (static_cast<size_t>(std::count_if(channels.begin(), channels.end(), has_buffer)) != owned.size())
		throw std::runtime_error("the daemon sent " + std::to_string(owned.size()) + " buffers for " +
		                         std::to_string(channels.size()) + " channels");
	size_t next_fd = 0;
	for (const control::ChannelRules &c : channels) {
		if (!has_buffer(c)) {
			tracers_.push_back(nullptr);
			continue;
		}
		const control::ContextFlags ctx = c.context.value_or(control::ContextFlags{});
		event::ContextOptions context{ctx.vpid, ctx.vtid, ctx.procname};
		for (const std::string &name : ctx.more)
			if (!event::set_user_context(context, name))
				throw std::runtime_error("the daemon asks for context '" + name +
				                         "', which this libtracery "
				                         "does not know");
		auto t = std::make_unique<Tracer>();
		t->filters = c.filters;
		t->catalog.set(c.ids, t->filters);
		auto ring = ringbuf::Channel::attach(owned[next_fd++].release());
		if (ring->config().sync == ringbuf::Sync::rseq && !ringbuf::Channel::rseq_available())
			base::diagnostic("this process has no rseq area (valgrind? glibc.pthread.rseq=0?), which the "
			                 "daemon's per-CPU buffers need: its events are dropped and counted as lost");
		// Older daemons send no clock: their traces count ns.
		const std::string clock_name = c.clock.value_or("ns");
		clock::TickUnit unit;
		if (!clock::parse_tick_unit(clock_name, unit))
			throw std::runtime_error("the daemon asks for timestamps in '" + clock_name +
			                         "', a unit this program's libtracery does not know (it knows 'tsc' "
			                         "and 'ns'): update libtracery");
		// Every event: the daemon's ids decide (the state dump's provider
		// is matched only by its name, event/event_pattern.hpp).
		const std::vector<std::string> every_event{"*", std::string(event::kStatedumpProvider) + ":*"};
		t->session = std::make_unique<Session>(std::move(ring), context, clock::tick_source(unit), every_event,
		                                       t->catalog);
		t->session->blocking().set_timeout_ns(blocking_timeout_ns(c.blocking_timeout_us.value_or(0)));
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

void DaemonSession::update(const std::vector<control::ChannelRules> &channels)
{
	for (const control::ChannelRules &c : channels) {
		if (c.index >= tracers_.size() || !tracers_[c.index])
			continue;
		Tracer &t = *tracers_[c.index];
		const bool new_filters = c.filters != t.filters;
		t.catalog.set(c.ids, c.filters);
		t.filters = c.filters;
		for (tracery_event_desc *desc : registered_events()) {
			if (new_filters || !t.catalog.has(*desc))
				t.session->on_event_unregistered(desc); // no-op if not attached
			if (t.catalog.has(*desc))
				t.session->on_event_registered(desc); // no-op if attached
		}
	}
}

std::vector<control::FilterRefusal> DaemonSession::take_refusals()
{
	std::vector<control::FilterRefusal> all;
	for (auto &t : tracers_)
		if (t)
			for (auto &r : t->catalog.take_refusals())
				all.push_back(std::move(r));
	return all;
}

} // namespace tracery::ust
