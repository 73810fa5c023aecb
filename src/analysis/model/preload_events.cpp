// analysis/model/preload_events.cpp — the preload helpers' event and field
// names (see preload_events.hpp).
#include "analysis/model/preload_events.hpp"

#include <array>
#include <cstdio>
#include <utility>

#include "analysis/model/trace_env.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;

PreloadEvent::Kind PreloadEvent::kind_of(std::string_view name)
{
	static constexpr std::array<std::pair<std::string_view, Kind>, 15> pthread{{
		{"pthread_mutex_lock_req", mutex_lock_req},
		{"pthread_mutex_lock_acq", mutex_lock_acq},
		{"pthread_mutex_trylock", mutex_trylock},
		{"pthread_mutex_unlock", mutex_unlock},
		{"pthread_rwlock_rdlock_req", rwlock_rdlock_req},
		{"pthread_rwlock_rdlock_acq", rwlock_rdlock_acq},
		{"pthread_rwlock_wrlock_req", rwlock_wrlock_req},
		{"pthread_rwlock_wrlock_acq", rwlock_wrlock_acq},
		{"pthread_rwlock_tryrdlock", rwlock_tryrdlock},
		{"pthread_rwlock_trywrlock", rwlock_trywrlock},
		{"pthread_rwlock_unlock", rwlock_unlock},
		{"pthread_cond_wait_begin", cond_wait_begin},
		{"pthread_cond_wait_end", cond_wait_end},
		{"pthread_cond_signal", cond_signal},
		{"pthread_cond_broadcast", cond_broadcast},
	}};
	if (const std::string_view call = after_prefix(name, "lttng_ust_pthread:"); !call.empty()) {
		for (const auto &[n, k] : pthread)
			if (n == call)
				return k;
		return other;
	}
	std::string_view func = after_prefix(name, "lttng_ust_cyg_profile:");
	if (func.empty())
		func = after_prefix(name, "lttng_ust_cyg_profile_fast:");
	if (func == "func_entry")
		return func_entry;
	if (func == "func_exit")
		return func_exit;
	return other;
}

PreloadEvent PreloadEvent::of(const reader::Item &event)
{
	PreloadEvent p;
	p.kind = kind_of(event.event->cls->name);
	if (p.kind == other)
		return p;
	const auto field = [&](const char *n) { return find_field(event, n); };
	if (p.is_call()) {
		p.addr = field("addr");
		p.call_site = field("call_site");
	} else {
		p.lock = field(p.is_rwlock() ? "rwlock" : "mutex");
		p.cond = field("cond");
		p.status = field("status");
	}
	p.vpid = find_context_field(event, "vpid");
	p.vtid = find_context_field(event, "vtid");
	p.ip = find_context_field(event, "ip");
	p.env_pid = env_process(event.stream->trace().cls).pid;
	return p;
}

int64_t PreloadEvent::pid(const reader::Item &event) const
{
	if (const auto v = int_field(event, vpid))
		return *v;
	return env_pid.value_or(-1);
}

int64_t PreloadEvent::tid(const reader::Item &event) const { return int_field(event, vtid).value_or(-1); }

uint64_t PreloadEvent::address(const reader::Item &event, const FieldRef &ref)
{
	return static_cast<uint64_t>(int_field(event, ref).value_or(0));
}

std::string hex_address(uint64_t address, int64_t)
{
	char text[24];
	snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
	return text;
}

} // namespace tracery::analysis
