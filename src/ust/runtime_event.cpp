// ust/runtime_event.cpp — the entry points of tracery/runtime_event.h:
// events defined while the program runs, registered and fired through the
// same path as the macros' events (tracery_register_events, tracery_fire).
//
// A definition is checked and copied (runtime_event_definition.cpp), then
// registered under one lock, which makes a racing definition of the same
// name find the first one's handle. Emitting checks the values against the
// plan made at definition, points a tracery_arg at each (converting a
// float, a bool or an integer narrower than 64 bits into a scratch copy of
// its own width) and runs the event's gate and probes as TRACERY_EMIT's
// emitter does.
#include "ust/runtime_event.hpp"

#include "ust/runtime_event_definition.hpp"

#include <tracery/runtime_event.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

namespace tracery::ust {
namespace {

// Never destroyed: handles live until the process is gone, and a definition
// may come from an atexit handler.
std::mutex &define_mutex()
{
	static auto *m = new std::mutex;
	return *m;
}

std::unordered_map<std::string, RuntimeEvent *> &defined()
{
	static auto *m = new std::unordered_map<std::string, RuntimeEvent *>;
	return *m;
}

// tracery_last_error(): this thread's last reason, in one of these buffers.
constexpr size_t kErrorBytes = 640;
thread_local const char *last_error = "";
thread_local char define_error[kErrorBytes];
thread_local char emit_error[kErrorBytes];

// Builds emit_error without the C library's formatting (which is not
// async-signal-safe), truncated to its size, and makes it the last error.
class EmitError {
public:
	EmitError() { last_error = emit_error; }
	EmitError &operator<<(const char *s)
	{
		while (*s && used_ + 1 < kErrorBytes)
			emit_error[used_++] = *s++;
		emit_error[used_] = 0;
		return *this;
	}
	EmitError &operator<<(uint64_t n)
	{
		char digits[21];
		size_t i = sizeof digits;
		digits[--i] = 0;
		do {
			digits[--i] = static_cast<char>('0' + n % 10);
			n /= 10;
		} while (n);
		return *this << digits + i;
	}

private:
	size_t used_ = 0;
};

EmitError &event_error(EmitError &&e, const RuntimeEvent &ev)
{
	return e << ev.provider.c_str() << ":" << ev.name.c_str() << ": ";
}

int field_failed(int error, const RuntimeEvent &ev, uint32_t field, const char *what)
{
	event_error(EmitError(), ev) << "field " << uint64_t{field} << " ('" << ev.fields[field].name << "'): " << what;
	return -error;
}

tracery_runtime_event *define_failed(int error, const std::string &why)
{
	const size_t n = std::min(why.size(), kErrorBytes - 1);
	memcpy(define_error, why.data(), n);
	define_error[n] = 0;
	last_error = define_error;
	errno = error;
	return nullptr;
}

tracery_runtime_event *define(const char *provider, const char *name, const tracery_event_field *fields,
                              uint32_t nr_fields)
{
	std::string why;
	std::unique_ptr<RuntimeEvent> ev = build_runtime_event(provider, name, fields, nr_fields, &why);
	if (!ev)
		return define_failed(EINVAL, why);
	std::string key = ev->provider + ":" + ev->name;
	std::lock_guard lock(define_mutex());
	auto &events = defined();
	if (auto it = events.find(key); it != events.end()) {
		if (it->second->same_fields(*ev))
			return it->second;
		return define_failed(EEXIST, key + " is already defined with other fields");
	}
	if (events.size() >= TRACERY_EVENT_MAX_DEFINED)
		return define_failed(ENOSPC, key + ": " + std::to_string(TRACERY_EVENT_MAX_DEFINED) +
		                                     " events are defined already, the most a process may define");
	RuntimeEvent *kept = ev.get();
	events.emplace(std::move(key), kept);
	ev.release();
	// Under the lock: a racing definition returns only once it is registered.
	tracery_event_desc *const desc = &kept->desc;
	tracery_register_events(&desc, &desc + 1);
	return kept;
}

// A value converted to its field's width, for a tracery_arg to point at.
union Scratch {
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	float f32;
};

// Points *arg at value i (or at its converted copy in *scratch) and adds its
// bytes to *size; 0, or -errno with the reason kept.
__attribute__((always_inline)) inline int point_at_value(const RuntimeEvent &ev, uint32_t i, const tracery_value &value,
                                                         tracery_arg *arg, Scratch *scratch, uint64_t *size)
{
	const FieldPlan &p = ev.plan[i];
	switch (p.kind) {
	case ValueKind::unsigned_int:
	case ValueKind::signed_int:
		if (p.kind == ValueKind::unsigned_int ? value.v.u64 > p.max_unsigned
		                                      : value.v.i64 < p.min_signed || value.v.i64 > p.max_signed)
			return field_failed(ERANGE, ev, i, "the integer does not fit the field's type");
		*arg = {scratch, 0};
		if (p.size == 1)
			scratch->u8 = static_cast<uint8_t>(value.v.u64);
		else if (p.size == 2)
			scratch->u16 = static_cast<uint16_t>(value.v.u64);
		else if (p.size == 4)
			scratch->u32 = static_cast<uint32_t>(value.v.u64);
		else
			*arg = {&value.v.u64, 0};
		*size += p.size;
		return 0;
	case ValueKind::boolean:
		scratch->u8 = value.v.u64 != 0;
		*arg = {scratch, 0};
		*size += 1;
		return 0;
	case ValueKind::float32:
		scratch->f32 = static_cast<float>(value.v.f64);
		*arg = {scratch, 0};
		*size += 4;
		return 0;
	case ValueKind::float64:
		*arg = {&value.v.f64, 0};
		*size += 8;
		return 0;
	case ValueKind::string: {
		uint32_t len = value.len;
		if (!value.v.ptr)
			len = 0;
		else if (len == TRACERY_VALUE_NUL_TERMINATED)
			len = static_cast<uint32_t>(
				strnlen(static_cast<const char *>(value.v.ptr), TRACERY_EVENT_MAX_PAYLOAD + 1));
		*arg = {value.v.ptr, len};
		*size += uint64_t{len} + 1;
		return 0;
	}
	case ValueKind::array:
		if (!value.v.ptr || value.len != p.length)
			return field_failed(EINVAL, ev, i,
			                    "an array's value needs a pointer and len equal to its length");
		*arg = {value.v.ptr, value.len};
		*size += uint64_t{p.length} * p.size;
		return 0;
	default: // counted
		if (!value.v.ptr && value.len)
			return field_failed(EINVAL, ev, i, "a NULL pointer with a non-zero len");
		*arg = {value.v.ptr, value.len};
		*size += 4 + uint64_t{value.len} * p.size;
		return 0;
	}
}

} // namespace

void runtime_events_lock_for_fork() { define_mutex().lock(); }
void runtime_events_unlock_after_fork() { define_mutex().unlock(); }

} // namespace tracery::ust

using namespace tracery::ust;

extern "C" {

tracery_runtime_event *tracery_event_define(const char *provider, const char *name, const tracery_event_field *fields,
                                            uint32_t nr_fields)
{
	try {
		return define(provider, name, fields, nr_fields);
	} catch (const std::bad_alloc &) {
		return define_failed(ENOMEM, "out of memory");
	}
}

int tracery_event_is_enabled(const tracery_runtime_event *ev) { return ev && tracery_event_enabled(ev); }

int tracery_event_emit(tracery_runtime_event *handle, const tracery_value *values, uint32_t nr_values)
{
	if (!handle) {
		last_error = "tracery_event_emit: the event is NULL";
		return -EINVAL;
	}
	auto &ev = *static_cast<RuntimeEvent *>(handle);
	tracery_event_desc *const desc = &ev.desc;
	if (nr_values != desc->nr_fields || (nr_values && !values)) {
		event_error(EmitError(), ev)
			<< uint64_t{nr_values} << " values for " << uint64_t{desc->nr_fields} << " fields";
		return -EINVAL;
	}
	if (!tracery_event_enabled(handle))
		return 0;
	tracery_arg args[TRACERY_EVENT_MAX_FIELDS];
	Scratch scratch[TRACERY_EVENT_MAX_FIELDS];
	uint64_t size = 0;
	for (uint32_t i = 0; i < nr_values; ++i)
		if (int err = point_at_value(ev, i, values[i], &args[i], &scratch[i], &size))
			return err;
	if (size > TRACERY_EVENT_MAX_PAYLOAD) {
		event_error(EmitError(), ev)
			<< "its values take more than " << uint64_t{TRACERY_EVENT_MAX_PAYLOAD} << " bytes";
		return -EMSGSIZE;
	}
	// As TRACERY_EMIT's emitter: the gate first, then the probes, with the
	// caller's address as the ip context.
	const void *const ip = __builtin_return_address(0);
	const tracery_gate_fn gate = __atomic_load_n(&desc->gate, __ATOMIC_ACQUIRE);
	if (gate) {
		if (reinterpret_cast<tracery_args_gate_fn>(gate)(args, nullptr))
			tracery_fire_gate_passed_at(desc, args, gate, ip);
		return 0;
	}
	tracery_fire_at(desc, args, ip);
	return 0;
}

const char *tracery_last_error(void) { return last_error; }

} // extern "C"
