// A daemon session in a traced program: see daemon_session.hpp.
#include "runtime/daemon_session.hpp"

#include "control/event_schema.hpp"
#include "control/wire.hpp"

namespace tracery::runtime {

using nlohmann::json;

namespace {
std::string key_of(const tracery_event_desc &desc) { return control::schema_key(control::schema_of(desc)); }
} // namespace

int64_t DaemonCatalog::id_for(const tracery_event_desc &desc)
{
	const std::string key = key_of(desc);
	std::lock_guard lock(mutex_);
	auto it = ids_.find(key);
	return it == ids_.end() ? int64_t{-1} : int64_t{it->second};
}

bool DaemonCatalog::has(const tracery_event_desc &desc) { return id_for(desc) >= 0; }

void DaemonCatalog::set(const json &ids)
{
	std::map<std::string, uint32_t> next;
	for (const auto &[key, id] : ids.items())
		if (id.is_number_unsigned())
			next[key] = id.get<uint32_t>();
	std::lock_guard lock(mutex_);
	ids_.swap(next);
}

DaemonSession::DaemonSession(const json &channels, std::vector<int> fds)
{
	std::vector<control::Fd> owned;
	for (int fd : fds)
		owned.emplace_back(fd);
	if (!channels.is_array() || channels.size() != owned.size())
		throw std::runtime_error("the daemon sent " + std::to_string(owned.size()) + " buffers for " +
		                         std::to_string(channels.size()) + " channels");
	for (size_t i = 0; i < owned.size(); i++) {
		const json &c = channels[i];
		const json ctx = c.value("context", json::object());
		ctf::ContextOptions context{ctx.value("vpid", false), ctx.value("vtid", false), ctx.value("procname", false)};
		auto t = std::make_unique<Tracer>();
		t->catalog.set(c.value("ids", json::object()));
		auto ring = ringbuf::Channel::attach(owned[i].release());
		t->session = std::make_unique<Session>(std::move(ring), context, std::vector<std::string>{"*"}, t->catalog);
		tracers_.push_back(std::move(t));
	}
}

DaemonSession::~DaemonSession() { stop(); }

void DaemonSession::start()
{
	for (auto &t : tracers_)
		t->session->start();
}

void DaemonSession::stop()
{
	for (auto &t : tracers_)
		t->session->stop();
}

void DaemonSession::update(const json &channels)
{
	for (const auto &c : channels) {
		const size_t index = c.value("index", size_t{0});
		if (index >= tracers_.size())
			continue;
		Tracer &t = *tracers_[index];
		t.catalog.set(c.value("ids", json::object()));
		for (tracery_event_desc *desc : registered_events()) {
			if (t.catalog.has(*desc))
				t.session->on_event_registered(desc); // no-op if attached
			else
				t.session->on_event_unregistered(desc); // no-op if not attached
		}
	}
}

} // namespace tracery::runtime
