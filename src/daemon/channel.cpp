// A session's channel in the daemon: see channel.hpp.
#include "daemon/channel.hpp"

#include "consumer/ring_config.hpp"
#include "event/event_pattern.hpp"

#include <sys/stat.h>

#include <algorithm>

namespace tracery::daemon {

namespace {
bool matches(const std::string &pattern, const std::string &name)
{
	return event::event_pattern_matches(pattern, name);
}
bool any_match(const std::vector<std::string> &patterns, const std::string &name)
{
	return std::any_of(patterns.begin(), patterns.end(), [&](const auto &p) { return matches(p, name); });
}
} // namespace

uint64_t Buffer::lost() const
{
	if (ring->quarantined())
		return 0;
	uint64_t n = write_losses().unwritten_events;
	for (uint32_t cpu = 0; cpu < ring->config().num_cpus; cpu++)
		n += ring->lost(cpu);
	return n;
}

uint64_t Buffer::consumed_bytes() const
{
	uint64_t n = 0;
	for (uint32_t cpu = 0; cpu < ring->config().num_cpus; cpu++)
		n += ring->consumed_bytes(cpu);
	return n;
}

Waits Buffer::waits() const
{
	Waits w;
	if (ring->quarantined())
		return w;
	for (uint32_t cpu = 0; cpu < ring->config().num_cpus; cpu++) {
		w.count += ring->waits(cpu);
		w.ns += ring->wait_ns(cpu);
	}
	return w;
}

consumer::WriteLosses Buffer::write_losses() const
{
	return consumer ? consumer->write_losses() : consumer::WriteLosses{};
}

namespace {
// b's added to a's; the reason: b's when it has one (the later).
void add(consumer::WriteLosses &a, const consumer::WriteLosses &b)
{
	a.events += b.events;
	a.unwritten_events += b.unwritten_events;
	a.unwritten_uncounted += b.unwritten_uncounted;
	a.not_in_trace += b.not_in_trace;
	a.refusing = a.refusing || b.refusing;
	if (!b.reason.empty())
		a.reason = b.reason;
}
} // namespace

Buffer *Channel::buffer(const std::string &key) const
{
	const auto it = buffers_.find(key);
	return it == buffers_.end() ? nullptr : it->second.get();
}

void Channel::add_buffer(const std::string &key, std::unique_ptr<Buffer> b) { buffers_.emplace(key, std::move(b)); }

void Channel::set_aside(const std::string &key, const std::string &new_key)
{
	auto node = buffers_.extract(key);
	if (!node)
		return;
	node.key() = new_key;
	buffers_.insert(std::move(node));
}

std::unique_ptr<Buffer> Channel::take_buffer(const std::string &key)
{
	auto node = buffers_.extract(key);
	return node ? std::move(node.mapped()) : nullptr;
}

std::vector<std::unique_ptr<Buffer>> Channel::take_buffers()
{
	std::vector<std::unique_ptr<Buffer>> out;
	for (auto &[key, b] : buffers_)
		out.push_back(std::move(b));
	buffers_.clear();
	return out;
}

void Channel::note_finished(const Buffer &b)
{
	if (b.ring->quarantined()) {
		quarantined_done_.emplace_back(b.owner, b.ring->fault());
		if (quarantined_done_.size() > kQuarantinedKept)
			quarantined_done_.pop_front();
	}
	lost_done_ += b.lost();
	consumed_done_ += b.consumed_bytes();
	const Waits waited = b.waits();
	waits_done_.count += waited.count;
	waits_done_.ns += waited.ns;
	consumer::WriteLosses w = b.write_losses();
	w.refusing = false; // finished
	add(write_done_, w);
}

std::vector<control::Quarantined> Channel::quarantined() const
{
	std::vector<control::Quarantined> out;
	for (const auto &[owner, fault] : quarantined_done_)
		out.push_back({owner, fault, std::nullopt});
	for (const auto &[key, b] : buffers_)
		if (b->ring->quarantined())
			out.push_back({b->owner, b->ring->fault(), std::nullopt});
	return out;
}

bool Channel::Rule::matches(const std::string &full_name) const
{
	return daemon::matches(pattern, full_name) && !any_match(exclude, full_name);
}

void Channel::enable(const std::vector<std::string> &patterns, const std::string &filter,
                     const std::vector<std::string> &exclude)
{
	for (const auto &p : patterns) {
		std::erase(disabled_, p);
		if (std::find(enabled_.begin(), enabled_.end(), Rule{p, filter, exclude}) == enabled_.end())
			enabled_.push_back({p, filter, exclude});
	}
}

void Channel::disable(const std::vector<std::string> &patterns)
{
	for (const auto &p : patterns) {
		if (std::erase_if(enabled_, [&](const Rule &r) { return r.pattern == p; }) == 0 &&
		    std::find(disabled_.begin(), disabled_.end(), p) == disabled_.end())
			disabled_.push_back(p);
	}
}

bool Channel::enabled(const std::string &full_name) const
{
	return std::any_of(enabled_.begin(), enabled_.end(), [&](const Rule &r) { return r.matches(full_name); }) &&
	       !any_match(disabled_, full_name);
}

std::vector<std::string> Channel::filters_of(const std::string &full_name) const
{
	std::vector<std::string> filters;
	for (const auto &r : enabled_) {
		if (!r.matches(full_name))
			continue;
		if (r.filter.empty())
			return {};
		if (std::find(filters.begin(), filters.end(), r.filter) == filters.end())
			filters.push_back(r.filter);
	}
	return filters;
}

uint32_t Channel::id_for(const std::string &key)
{
	auto [it, inserted] = ids_.try_emplace(key, next_id_);
	if (inserted)
		next_id_++;
	return it->second;
}

Waits Channel::waits() const
{
	Waits w = waits_done_;
	for (const auto &[owner, b] : buffers_) {
		const Waits live = b->waits();
		w.count += live.count;
		w.ns += live.ns;
	}
	return w;
}

uint64_t Channel::lost() const
{
	uint64_t n = lost_done_;
	for (const auto &[owner, b] : buffers_)
		n += b->lost();
	return n;
}

uint64_t Channel::consumed_bytes() const
{
	uint64_t n = consumed_done_;
	for (const auto &[owner, b] : buffers_)
		n += b->consumed_bytes();
	return n;
}

std::optional<control::WriteLoss> Channel::write_loss() const
{
	consumer::WriteLosses w = write_done_;
	for (const auto &[owner, b] : buffers_)
		add(w, b->write_losses());
	return write_loss_of(w);
}

std::optional<control::WriteLoss> write_loss_of(const consumer::WriteLosses &w)
{
	if (w.reason.empty())
		return std::nullopt;
	return control::WriteLoss{w.events, w.unwritten_uncounted, w.not_in_trace, w.refusing, w.reason};
}

ringbuf::Config ring_config(const ChannelSpec &spec)
{
	return consumer::ring_config(spec.num_subbuf, spec.subbuf_size, spec.mode);
}

std::unique_ptr<ringbuf::Channel> Channel::make_ring() const
{
	auto ring = consumer::create_ring(spec_.num_subbuf, spec_.subbuf_size, spec_.mode, "tracery-" + spec_.name);
	fchmod(ring->fd(), 0600);
	return ring;
}

void Channel::note_not_traced(NotTraced n)
{
	not_traced_.push_back(std::move(n));
	if (not_traced_.size() > kNotTracedKept)
		not_traced_.pop_front();
	not_traced_total_++;
}

void Channel::clear_not_traced()
{
	not_traced_.clear();
	not_traced_total_ = 0;
}

} // namespace tracery::daemon
