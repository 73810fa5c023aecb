// analysis/model/preload_events.hpp — the events of the preload helpers as
// the model knows them: LTTng-UST's providers lttng_ust_pthread (mutex,
// rwlock and condition variable calls), lttng_ust_cyg_profile and
// lttng_ust_cyg_profile_fast (function entry and exit of code built with
// -finstrument-functions), written by LTTng's helpers and by Tracery's, which
// use the same names and fields. The one place where those names are
// written; a product asks PreloadEvent::of once per event class (ClassCache)
// and reads the fields it needs with int_field.
//
// And the seam where code addresses get their names: every product names an
// address through an AddressNamer (the address and its process's vpid), hex
// or, with symbols, the names AddressNames (address_names.hpp) gives.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

struct PreloadEvent {
	enum Kind : uint8_t {
		other,
		// lttng_ust_pthread: lock (the mutex or rwlock), status where it has one, ip
		mutex_lock_req,    // pthread_mutex_lock_req: lock
		mutex_lock_acq,    // pthread_mutex_lock_acq: lock, status
		mutex_trylock,     // pthread_mutex_trylock: lock, status
		mutex_unlock,      // pthread_mutex_unlock: lock, status
		rwlock_rdlock_req, // pthread_rwlock_rdlock_req: lock
		rwlock_rdlock_acq, // pthread_rwlock_rdlock_acq: lock, status
		rwlock_wrlock_req, // pthread_rwlock_wrlock_req: lock
		rwlock_wrlock_acq, // pthread_rwlock_wrlock_acq: lock, status
		rwlock_tryrdlock,  // pthread_rwlock_tryrdlock: lock, status
		rwlock_trywrlock,  // pthread_rwlock_trywrlock: lock, status
		rwlock_unlock,     // pthread_rwlock_unlock: lock, status
		cond_wait_begin,   // pthread_cond_wait_begin: cond, lock (the mutex)
		cond_wait_end,     // pthread_cond_wait_end: cond, lock (the mutex), status
		cond_signal,       // pthread_cond_signal: cond
		cond_broadcast,    // pthread_cond_broadcast: cond
		// lttng_ust_cyg_profile(_fast)
		func_entry, // addr, call_site (not in the fast variant)
		func_exit,  // addr, call_site (neither in the fast variant)
	};

	Kind kind = other;
	FieldRef lock, cond, status, addr, call_site;
	// the contexts: the process, the thread, the caller's address
	FieldRef vpid, vtid, ip;
	// the process of a per-process buffer's trace (its env), for events without vpid
	std::optional<int64_t> env_pid;

	// The kind of the event class of that name (from its name alone).
	static Kind kind_of(std::string_view class_name);
	static PreloadEvent of(const ctf::reader::Item &event);

	bool is_lock() const { return kind >= mutex_lock_req && kind <= cond_broadcast; }
	bool is_call() const { return kind == func_entry || kind == func_exit; }
	bool is_rwlock() const { return kind >= rwlock_rdlock_req && kind <= rwlock_unlock; }

	// The event's process: its vpid context, else its trace's env; -1 when unknown.
	int64_t pid(const ctf::reader::Item &event) const;
	// The event's thread: its vtid context; -1 when the trace has none.
	int64_t tid(const ctf::reader::Item &event) const;
	// An address field (the integer's 64 bits), 0 when absent.
	static uint64_t address(const ctf::reader::Item &event, const FieldRef &ref);
};

// Names the code address of process vpid (a function's, a caller's).
using AddressNamer = std::function<std::string(uint64_t address, int64_t vpid)>;
// "0x401136": the namer without symbols.
std::string hex_address(uint64_t address, int64_t vpid = -1);

} // namespace tracery::analysis
