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

TRACERY_EVENT(lttng_ust_pthread, pthread_mutex_lock_req, TRACERY_U64(mutex))
TRACERY_EVENT(lttng_ust_pthread, pthread_mutex_lock_acq, TRACERY_U64(mutex), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_mutex_trylock, TRACERY_U64(mutex), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_mutex_unlock, TRACERY_U64(mutex), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_rdlock_req, TRACERY_U64(rwlock))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_rdlock_acq, TRACERY_U64(rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_wrlock_req, TRACERY_U64(rwlock))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_wrlock_acq, TRACERY_U64(rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_tryrdlock, TRACERY_U64(rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_trywrlock, TRACERY_U64(rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_rwlock_unlock, TRACERY_U64(rwlock), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_cond_wait_begin, TRACERY_U64(cond), TRACERY_U64(mutex))
TRACERY_EVENT(lttng_ust_pthread, pthread_cond_wait_end, TRACERY_U64(cond), TRACERY_U64(mutex), TRACERY_S32(status))
TRACERY_EVENT(lttng_ust_pthread, pthread_cond_signal, TRACERY_U64(cond))
TRACERY_EVENT(lttng_ust_pthread, pthread_cond_broadcast, TRACERY_U64(cond))

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

} // namespace

extern "C" {

__attribute__((visibility("default"))) int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	auto *fn = next_mutex_lock.get_or_die();
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_mutex_lock_req, address(mutex));
	const int status = fn(mutex);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_mutex_lock_acq, address(mutex),
	                     status);
	return status;
}

__attribute__((visibility("default"))) int pthread_mutex_trylock(pthread_mutex_t *mutex)
{
	const int status = next_mutex_trylock.get_or_die()(mutex);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_mutex_trylock, address(mutex),
	                     status);
	return status;
}

__attribute__((visibility("default"))) int pthread_mutex_unlock(pthread_mutex_t *mutex)
{
	const int status = next_mutex_unlock.get_or_die()(mutex);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_mutex_unlock, address(mutex),
	                     status);
	return status;
}

__attribute__((visibility("default"))) int pthread_rwlock_rdlock(pthread_rwlock_t *rwlock)
{
	auto *fn = next_rwlock_rdlock.get_or_die();
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_rwlock_rdlock_req,
	                     address(rwlock));
	const int status = fn(rwlock);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_rwlock_rdlock_acq, address(rwlock),
	                     status);
	return status;
}

__attribute__((visibility("default"))) int pthread_rwlock_wrlock(pthread_rwlock_t *rwlock)
{
	auto *fn = next_rwlock_wrlock.get_or_die();
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_rwlock_wrlock_req,
	                     address(rwlock));
	const int status = fn(rwlock);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_rwlock_wrlock_acq, address(rwlock),
	                     status);
	return status;
}

__attribute__((visibility("default"))) int pthread_rwlock_tryrdlock(pthread_rwlock_t *rwlock)
{
	const int status = next_rwlock_tryrdlock.get_or_die()(rwlock);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_rwlock_tryrdlock, address(rwlock),
	                     status);
	return status;
}

__attribute__((visibility("default"))) int pthread_rwlock_trywrlock(pthread_rwlock_t *rwlock)
{
	const int status = next_rwlock_trywrlock.get_or_die()(rwlock);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_rwlock_trywrlock, address(rwlock),
	                     status);
	return status;
}

__attribute__((visibility("default"))) int pthread_rwlock_unlock(pthread_rwlock_t *rwlock)
{
	const int status = next_rwlock_unlock.get_or_die()(rwlock);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_rwlock_unlock, address(rwlock),
	                     status);
	return status;
}

__attribute__((visibility("default"))) int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	auto *fn = next_cond_wait.get_or_die();
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_cond_wait_begin, address(cond),
	                     address(mutex));
	const int status = fn(cond, mutex);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_cond_wait_end, address(cond),
	                     address(mutex), status);
	return status;
}

__attribute__((visibility("default"))) int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                                                  const struct timespec *abstime)
{
	auto *fn = next_cond_timedwait.get_or_die();
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_cond_wait_begin, address(cond),
	                     address(mutex));
	const int status = fn(cond, mutex, abstime);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_cond_wait_end, address(cond),
	                     address(mutex), status);
	return status;
}

__attribute__((visibility("default"))) int pthread_cond_signal(pthread_cond_t *cond)
{
	const int status = next_cond_signal.get_or_die()(cond);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_cond_signal, address(cond));
	return status;
}

__attribute__((visibility("default"))) int pthread_cond_broadcast(pthread_cond_t *cond)
{
	const int status = next_cond_broadcast.get_or_die()(cond);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_pthread, pthread_cond_broadcast, address(cond));
	return status;
}

} // extern "C"
