// Session: binds matching events to a channel and writes their records.
#include "ust/session.hpp"

#include "base/diagnostics.hpp"
#include "clock/trace_clock.hpp"
#include "ctf/event_header.hpp"
#include "event/event_pattern.hpp"
#include "filter/gate.hpp"
#include "ust/thread_context.hpp"

#include <tracery/internal/probe.h>

#include <cstdio>
#include <cstring>

namespace tracery::ust {

bool pattern_matches(const std::string &pattern, const tracery_event_desc &desc)
{
	return event::event_pattern_matches(pattern, std::string(desc.provider) + ":" + desc.name);
}

Session::Session(std::unique_ptr<ringbuf::Channel> channel, event::ContextOptions context, clock::TickSource ticks,
                 std::vector<std::string> patterns, EventCatalog &catalog)
	: channel_(std::move(channel)), context_(context), user_contexts_(UserContextPlan::of(context.more)),
	  ticks_(ticks), context_size_(static_cast<uint32_t>(event::context_size(context))),
	  user_contexts_offset_(context_size_ - static_cast<uint32_t>(event::user_contexts_size(context.more))),
	  num_cpus_(channel_->config().num_cpus), patterns_(std::move(patterns)), catalog_(catalog)
{
	if (records_ip())
		ip_context_sessions.fetch_add(1, std::memory_order_relaxed);
}

Session::~Session()
{
	stop();
	if (records_ip())
		ip_context_sessions.fetch_sub(1, std::memory_order_relaxed);
}

bool Session::records_ip() const
{
	const auto ip = event::find_user_context("ip");
	return context_.more >> *ip & 1;
}

void Session::start()
{
	{
		std::lock_guard lock(mutex_);
		if (started_)
			return;
		started_ = true;
	}
	blocking_.set_stopped(false);
	add_listener(this); // replays the events registered so far
}

void Session::stop()
{
	{
		std::lock_guard lock(mutex_);
		if (!started_)
			return;
		started_ = false;
	}
	blocking_.set_stopped(true); // emitters waiting for space give up: the detaching below waits for them
	remove_listener(this);
	std::map<tracery_event_desc *, std::unique_ptr<Binding>> old;
	{
		std::lock_guard lock(mutex_);
		old.swap(bindings_);
	}
	for (auto &[desc, binding] : old)
		tracery_probe_detach(desc, binding->probe_fn(), binding.get());
	tracery_probe_synchronize();
}

std::unique_ptr<ringbuf::Channel> Session::replace_channel_after_fork(std::unique_ptr<ringbuf::Channel> next)
{
	std::swap(channel_, next);
	num_cpus_ = channel_->config().num_cpus;
	for (auto &[desc, binding] : bindings_) {
		binding->channel = channel_.get();
		binding->num_cpus = num_cpus_;
	}
	return next;
}

void Session::on_event_registered(tracery_event_desc *desc)
{
	std::lock_guard lock(mutex_);
	if (!started_ || bindings_.count(desc))
		return;
	for (const auto &p : patterns_) {
		if (pattern_matches(p, *desc)) {
			attach(desc);
			return;
		}
	}
}

void EventCatalog::filter_refused(const tracery_event_desc &desc, const std::string &why)
{
	base::diagnostic("event %s:%s is not traced: its filter was refused: %s", desc.provider, desc.name,
	                 why.c_str());
}

void Session::attach(tracery_event_desc *desc)
{
	if (const char *why = event::event_desc_error(*desc)) {
		base::diagnostic("event %s:%s is not traced: %s", desc->provider, desc->name, why);
		return;
	}
	event::EventLayout layout(*desc);
	if (!layout.valid())
		return;
	auto programs = catalog_.filters_for(*desc);
	if (!programs)
		return;
	auto binding = std::make_unique<Binding>(Binding{channel_.get(),
	                                                 0,
	                                                 context_size_,
	                                                 num_cpus_,
	                                                 ticks_,
	                                                 payload_writer_for(*desc),
	                                                 this,
	                                                 layout,
	                                                 {},
	                                                 false});
	for (const auto &program : *programs) {
		std::string why;
		auto f = filter::Filter::load(program, *desc, filter::default_engine(), &why);
		if (!f) {
			catalog_.filter_refused(*desc, why);
			return;
		}
		binding->filters_use_context |= f->uses_context();
		binding->filters.push_back(std::move(f));
	}
	// One JIT'd filter without context: the emitter may run it as the
	// event's gate (tracepoint.h) while this session is the only one
	// recording the event, and an event it accepted goes straight to record().
	tracery_gate_fn gate = nullptr;
	if (binding->filters.size() == 1 && !binding->filters_use_context) {
		binding->only_filter = binding->filters[0].get();
		if (binding->only_filter->engine() == filter::Engine::jit)
			gate = filter::gate_for(programs->front(), *desc);
	}
	const int64_t id = catalog_.id_for(*desc);
	if (id < 0)
		return;
	binding->id = static_cast<uint32_t>(id);
	if (attach_probe(desc, binding->probe_fn(), binding.get(), gate, &Session::record) == 0)
		bindings_.emplace(desc, std::move(binding));
}

void Session::on_event_unregistered(tracery_event_desc *desc)
{
	std::unique_ptr<Binding> binding;
	{
		std::lock_guard lock(mutex_);
		auto it = bindings_.find(desc);
		if (it == bindings_.end())
			return;
		binding = std::move(it->second);
		bindings_.erase(it);
	}
	tracery_probe_detach(desc, binding->probe_fn(), binding.get()); // waits for a grace period
}

bool Session::filters_accept(const Binding &b, const tracery_arg *args)
{
	filter::Context ctx;
	const filter::Context *context = nullptr;
	if (b.filters_use_context) {
		const ThreadContext &tc = thread_context();
		ctx = {process_vpid(), tc.vtid, current_cpu(), tc.procname, static_cast<uint32_t>(strlen(tc.procname))};
		context = &ctx;
	}
	for (const auto &f : b.filters)
		if (f->accepts(args, context))
			return true;
	return false;
}

void Session::probe(void *priv, const tracery_event_desc *desc, const tracery_arg *args)
{
	auto *b = static_cast<Binding *>(priv);
	if (b->only_filter) {
		if (!b->only_filter->accepts(args, nullptr))
			return;
	} else if (!b->filters.empty() && !filters_accept(*b, args)) [[unlikely]] {
		return;
	}
	record(priv, desc, args); // a tail call: a rejected event never pays record()'s stack frame
}

void Session::record(void *priv, const tracery_event_desc *, const tracery_arg *args)
{
	const Binding &b = *static_cast<const Binding *>(priv);
	ringbuf::Channel &chan = *b.channel;
	const uint32_t ctx_size = b.context_size;
	const uint32_t size = ctx_size + static_cast<uint32_t>(b.layout.payload_size(args));
	uint32_t cpu = current_cpu();
	if (cpu >= b.num_cpus) [[unlikely]] // a CPU brought online after the channel was made
		cpu %= b.num_cpus;
	const clock::TickSource ticks = b.ticks;
	chan.write_waiting(
		cpu, size, b.id <= ctf::kMaxCompactId, [ticks] { return clock::ticks(ticks); },
		[&b, args, ctx_size ](const ringbuf::Channel::Reservation &r) __attribute__((always_inline)) {
			ctf::write_event_header(r.slot, b.id, r.timestamp, r.header_size == ctf::kCompactHeaderSize);
			uint8_t *p = r.slot + r.header_size;
			if (ctx_size) {
				const ThreadContext &tc = thread_context();
				const Session &s = *b.session;
				event::write_context(p, s.context_, process_vpid(), tc.vtid, tc.procname);
				if (s.user_contexts_.count) [[unlikely]]
					write_user_contexts(p + s.user_contexts_offset_, s.user_contexts_);
				p += ctx_size;
			}
			if (b.writer)
				b.writer(p, args);
			else
				b.layout.write_payload(p, args);
		},
		[&b](uint64_t waited_ns) { return b.session->blocking_.may_wait(waited_ns); });
}

} // namespace tracery::ust
