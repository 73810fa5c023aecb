// preload/pthread/pthread_wrapper.cpp — libtracery-preload-pthread.so: the
// lock, trylock and unlock of pthread mutexes and read-write locks, and the
// waits, signals and broadcasts of condition variables, each calling the
// next definition (libc's) and recording events of provider
// lttng_ust_pthread with LTTng-UST's names and fields (the mutex events) or
// in their style (the others), with the wrapper's caller as the ip context.
//
// A blocking lock records *_req before it calls libc and *_acq (with libc's
// result) after; trylock and unlock record one event after the call. A
// condition wait records pthread_cond_wait_begin before it (libc then
// releases the mutex) and pthread_cond_wait_end after (the mutex held again,
// status 0, or ETIMEDOUT for a timed wait that expired). Nothing here locks;
// the tracer's own locking while it records is not recorded (wrapper.hpp).
#include "preload/wrapper.hpp"

#include <pthread.h>

#include <cstdint>

TRACERY_EVENT(lttng_ust_pthread, pthread_mutex_lock_req, TRACERY_HEX(U64, mutex))
TRACERY_EVENT(lttng_ust_pthread, pthread_mutex_lock_acq, TRACERY_HEX(U64, mutex), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_mutex_trylock, TRACERY_HEX(U64, mutex), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_mutex_unlock, TRACERY_HEX(U64, mutex), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_rdlock_req, TRACERY_HEX(U64, rwlock))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_rdlock_acq, TRACERY_HEX(U64, rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_wrlock_req, TRACERY_HEX(U64, rwlock))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_wrlock_acq, TRACERY_HEX(U64, rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_tryrdlock, TRACERY_HEX(U64, rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_trywrlock, TRACERY_HEX(U64, rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_unlock, TRACERY_HEX(U64, rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_cond_wait_begin, TRACERY_HEX(U64, cond), TRACERY_HEX(U64, mutex))
TRACERY_EVENT(lttng_ust_pthread, pthread_cond_wait_end, TRACERY_HEX(U64, cond), TRACERY_HEX(U64, mutex),
              TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_cond_signal, TRACERY_HEX(U64, cond))
TRACERY_EVENT(lttng_ust_pthread, pthread_cond_broadcast, TRACERY_HEX(U64, cond))

namespace {

using tracery::preload::NextDefinition;

constexpr const char *kHelper = "libtracery-preload-pthread";
// The version of the condition variable functions that programs link to
// (dlsym would return the older one, of a different layout).
constexpr const char *kCondVersion = "GLIBC_2.3.2";

using MutexFn = int (*)(pthread_mutex_t *);
using RwlockFn = int (*)(pthread_rwlock_t *);
using CondFn = int (*)(pthread_cond_t *);
NextDefinition<MutexFn> next_mutex_lock{kHelper, "pthread_mutex_lock"};
NextDefinition<MutexFn> next_mutex_trylock{kHelper, "pthread_mutex_trylock"};
NextDefinition<MutexFn> next_mutex_unlock{kHelper, "pthread_mutex_unlock"};
NextDefinition<RwlockFn> next_rwlock_rdlock{kHelper, "pthread_rwlock_rdlock"};
NextDefinition<RwlockFn> next_rwlock_wrlock{kHelper, "pthread_rwlock_wrlock"};
NextDefinition<RwlockFn> next_rwlock_tryrdlock{kHelper, "pthread_rwlock_tryrdlock"};
NextDefinition<RwlockFn> next_rwlock_trywrlock{kHelper, "pthread_rwlock_trywrlock"};
NextDefinition<RwlockFn> next_rwlock_unlock{kHelper, "pthread_rwlock_unlock"};
NextDefinition<int (*)(pthread_cond_t *, pthread_mutex_t *)> next_cond_wait{kHelper, "pthread_cond_wait", kCondVersion};
NextDefinition<int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *)> next_cond_timedwait{
	kHelper, "pthread_cond_timedwait", kCondVersion};
NextDefinition<CondFn> next_cond_signal{kHelper, "pthread_cond_signal", kCondVersion};
NextDefinition<CondFn> next_cond_broadcast{kHelper, "pthread_cond_broadcast", kCondVersion};

// Looked up at load, so that no wrapper runs dlsym later (in a signal
// handler, say).
__attribute__((constructor)) void look_up_at_load()
{
	next_mutex_lock.get_or_die();
	next_mutex_trylock.get_or_die();
	next_mutex_unlock.get_or_die();
	next_rwlock_rdlock.get_or_die();
	next_rwlock_wrlock.get_or_die();
	next_rwlock_tryrdlock.get_or_die();
	next_rwlock_trywrlock.get_or_die();
	next_rwlock_unlock.get_or_die();
	next_cond_wait.get_or_die();
	next_cond_timedwait.get_or_die();
	next_cond_signal.get_or_die();
	next_cond_broadcast.get_or_die();
}

uint64_t address(const void *p) { return reinterpret_cast<uintptr_t>(p); }

// A condition wait, timed or not: begin before libc's call, end after.
template <class Wait, class... Rest>
__attribute__((noinline)) int traced_cond_wait(Wait fn, pthread_cond_t *cond, pthread_mutex_t *mutex, const void *ip,
                                               Rest... rest)
{
	TRACERY_PRELOAD_EMIT(ip, lttng_ust_pthread, pthread_cond_wait_begin, address(cond), address(mutex));
	const int status = fn(cond, mutex, rest...);
	TRACERY_PRELOAD_EMIT(ip, lttng_ust_pthread, pthread_cond_wait_end, address(cond), address(mutex), status);
	return status;
}

} // namespace

// Each wrapper calls libc's function in a tail call while it is known and no
// session enables its events (loads of the function and of the events'
// enabled bytes, their tests and a jump more than libc's own call: no frame,
// no saved register), and looks it up and records out of line
// (traced_FUNCTION) otherwise.

// A blocking lock of a TYPE *: REQ recorded before libc's call, ACQ with its
// status after.
#define TRACERY_PRELOAD_BLOCKING_LOCK(function, type, next, req, acq)                    \
	namespace {                                                                      \
	__attribute__((noinline)) int traced_##function(type *lock, const void *ip)      \
	{                                                                                \
		auto *fn = next.get_or_die();                                            \
		TRACERY_PRELOAD_EMIT(ip, lttng_ust_pthread, req, address(lock));         \
		const int status = fn(lock);                                             \
		TRACERY_PRELOAD_EMIT(ip, lttng_ust_pthread, acq, address(lock), status); \
		return status;                                                           \
	}                                                                                \
	}                                                                                \
	extern "C" __attribute__((visibility("default"))) int function(type *lock)       \
	{                                                                                \
		auto *fn = next.known();                                                 \
		if (__builtin_expect(fn && !TRACERY_ENABLED(lttng_ust_pthread, req) &&   \
		                             !TRACERY_ENABLED(lttng_ust_pthread, acq),   \
		                     1))                                                 \
			return fn(lock);                                                 \
		return traced_##function(lock, __builtin_return_address(0));             \
	}

// A call on a TYPE * recorded after libc's, with EVENT_ARGS (of `lock` and
// `status`).
#define TRACERY_PRELOAD_CALL(function, type, next, event, ...)                             \
	namespace {                                                                        \
	__attribute__((noinline)) int traced_##function(type *lock, const void *ip)        \
	{                                                                                  \
		const int status = next.get_or_die()(lock);                                \
		TRACERY_PRELOAD_EMIT(ip, lttng_ust_pthread, event, __VA_ARGS__);           \
		return status;                                                             \
	}                                                                                  \
	}                                                                                  \
	extern "C" __attribute__((visibility("default"))) int function(type *lock)         \
	{                                                                                  \
		auto *fn = next.known();                                                   \
		if (__builtin_expect(fn && !TRACERY_ENABLED(lttng_ust_pthread, event), 1)) \
			return fn(lock);                                                   \
		return traced_##function(lock, __builtin_return_address(0));               \
	}

TRACERY_PRELOAD_BLOCKING_LOCK(pthread_mutex_lock, pthread_mutex_t, next_mutex_lock, pthread_mutex_lock_req,
                              pthread_mutex_lock_acq)
TRACERY_PRELOAD_CALL(pthread_mutex_trylock, pthread_mutex_t, next_mutex_trylock, pthread_mutex_trylock, address(lock),
                     status)
TRACERY_PRELOAD_CALL(pthread_mutex_unlock, pthread_mutex_t, next_mutex_unlock, pthread_mutex_unlock, address(lock),
                     status)
TRACERY_PRELOAD_BLOCKING_LOCK(pthread_rwlock_rdlock, pthread_rwlock_t, next_rwlock_rdlock, pthread_rwlock_rdlock_req,
                              pthread_rwlock_rdlock_acq)
TRACERY_PRELOAD_BLOCKING_LOCK(pthread_rwlock_wrlock, pthread_rwlock_t, next_rwlock_wrlock, pthread_rwlock_wrlock_req,
                              pthread_rwlock_wrlock_acq)
TRACERY_PRELOAD_CALL(pthread_rwlock_tryrdlock, pthread_rwlock_t, next_rwlock_tryrdlock, pthread_rwlock_tryrdlock,
                     address(lock), status)
TRACERY_PRELOAD_CALL(pthread_rwlock_trywrlock, pthread_rwlock_t, next_rwlock_trywrlock, pthread_rwlock_trywrlock,
                     address(lock), status)
TRACERY_PRELOAD_CALL(pthread_rwlock_unlock, pthread_rwlock_t, next_rwlock_unlock, pthread_rwlock_unlock, address(lock),
                     status)
TRACERY_PRELOAD_CALL(pthread_cond_signal, pthread_cond_t, next_cond_signal, pthread_cond_signal, address(lock))
TRACERY_PRELOAD_CALL(pthread_cond_broadcast, pthread_cond_t, next_cond_broadcast, pthread_cond_broadcast, address(lock))

extern "C" {

__attribute__((visibility("default"))) int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	auto *fn = next_cond_wait.get_or_die();
	if (__builtin_expect(!TRACERY_ENABLED(lttng_ust_pthread, pthread_cond_wait_begin) &&
	                             !TRACERY_ENABLED(lttng_ust_pthread, pthread_cond_wait_end),
	                     1))
		return fn(cond, mutex);
	return traced_cond_wait(fn, cond, mutex, __builtin_return_address(0));
}

__attribute__((visibility("default"))) int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                                                  const struct timespec *abstime)
{
	auto *fn = next_cond_timedwait.get_or_die();
	if (__builtin_expect(!TRACERY_ENABLED(lttng_ust_pthread, pthread_cond_wait_begin) &&
	                             !TRACERY_ENABLED(lttng_ust_pthread, pthread_cond_wait_end),
	                     1))
		return fn(cond, mutex, abstime);
	return traced_cond_wait(fn, cond, mutex, __builtin_return_address(0), abstime);
}

} // extern "C"
