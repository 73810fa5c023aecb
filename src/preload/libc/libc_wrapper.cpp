// preload/libc/libc_wrapper.cpp — libtracery-preload-libc.so: the C
// allocator's entry points (malloc, calloc, realloc, free, memalign,
// posix_memalign, aligned_alloc, valloc, pvalloc), each calling the next
// definition (libc's) and recording an event of provider lttng_ust_libc with
// LTTng-UST's names and fields, and the wrapper's caller as the ip context.
//
// When it is safe (the README's "What is safe when"):
// - Before the next definitions are known, the calls of the thread that looks
//   them up (dlsym calls calloc) are served from a static arena
//   (bootstrap_arena.hpp) whose blocks are never given to libc's free.
// - The tracer's own allocations while it records an event are not recorded
//   (wrapper.hpp's TracerScope): no recursion.
// - Nothing here locks, so a signal handler may allocate (as far as libc's
//   allocator allows it) and its allocations are recorded; a fork child goes
//   on with the parent's state, which holds nothing but the function table.
// - A free is recorded before libc frees the block and an allocation after
//   libc returns it, so another thread's reuse of the address comes after
//   both in the trace. realloc is one event, recorded after libc's call.
#include "preload/libc/bootstrap_arena.hpp"
#include "preload/wrapper.hpp"

#include <malloc.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// Sizes and addresses as 64-bit unsigned integers, the addresses shown in
// hex, signed int results as 32-bit: the types of LTTng-UST's fields
// (size_t, void * in hex, int).
TRACERY_EVENT(lttng_ust_libc, malloc, TRACERY_U64(size), TRACERY_HEX(U64, ptr))
TRACERY_EVENT(lttng_ust_libc, free, TRACERY_HEX(U64, ptr))
TRACERY_EVENT(lttng_ust_libc, calloc, TRACERY_U64(nmemb), TRACERY_U64(size), TRACERY_HEX(U64, ptr))
TRACERY_EVENT(lttng_ust_libc, realloc, TRACERY_HEX(U64, in_ptr), TRACERY_U64(size), TRACERY_HEX(U64, ptr))
TRACERY_EVENT(lttng_ust_libc, memalign, TRACERY_U64(alignment), TRACERY_U64(size), TRACERY_HEX(U64, ptr))
TRACERY_EVENT(lttng_ust_libc, posix_memalign, TRACERY_HEX(U64, out_ptr), TRACERY_U64(alignment), TRACERY_U64(size),
              TRACERY_S32(result))
TRACERY_EVENT(lttng_ust_libc, aligned_alloc, TRACERY_U64(alignment), TRACERY_U64(size), TRACERY_HEX(U64, ptr))
TRACERY_EVENT(lttng_ust_libc, valloc, TRACERY_U64(size), TRACERY_HEX(U64, ptr))
TRACERY_EVENT(lttng_ust_libc, pvalloc, TRACERY_U64(size), TRACERY_HEX(U64, ptr))

namespace {

using tracery::preload::BootstrapArena;
using tracery::preload::NextDefinition;

constexpr const char *kHelper = "libtracery-preload-libc";

// libc's functions. A null one (this thread is looking one up: dlsym's
// calloc) is served from the arena.
NextDefinition<void *(*)(size_t)> next_malloc{kHelper, "malloc"};
NextDefinition<void (*)(void *)> next_free{kHelper, "free"};
NextDefinition<void *(*)(size_t, size_t)> next_calloc{kHelper, "calloc"};
NextDefinition<void *(*)(void *, size_t)> next_realloc{kHelper, "realloc"};
NextDefinition<void *(*)(size_t, size_t)> next_memalign{kHelper, "memalign"};
NextDefinition<int (*)(void **, size_t, size_t)> next_posix_memalign{kHelper, "posix_memalign"};
NextDefinition<void *(*)(size_t, size_t)> next_aligned_alloc{kHelper, "aligned_alloc"};
NextDefinition<void *(*)(size_t)> next_valloc{kHelper, "valloc"};
NextDefinition<void *(*)(size_t)> next_pvalloc{kHelper, "pvalloc"};
BootstrapArena arena;

// Looked up at load (the first allocations may already have), so that a
// signal handler's first allocation does not run dlsym.
__attribute__((constructor)) void look_up_at_load()
{
	next_malloc.get();
	next_free.get();
	next_calloc.get();
	next_realloc.get();
	next_memalign.get();
	next_posix_memalign.get();
	next_aligned_alloc.get();
	next_valloc.get();
	next_pvalloc.get();
}

void *arena_allocate(size_t size, size_t alignment) noexcept
{
	void *p = arena.allocate(size, alignment);
	if (!p)
		errno = ENOMEM;
	return p;
}

uint64_t address(const void *p) { return reinterpret_cast<uintptr_t>(p); }

// The out-of-line halves of the wrappers of the most frequent calls: the
// look-up of libc's function (or the arena while this thread looks it up)
// and the record. While libc's function is known and no session enables the
// event, the wrappers below are a load of the function, a load of the
// event's enabled byte, their tests and a tail jump to libc: no frame, no
// saved register.
__attribute__((noinline)) void *traced_malloc(size_t size, const void *ip)
{
	auto *fn = next_malloc.get();
	if (__builtin_expect(!fn, 0))
		return arena_allocate(size, 0);
	void *p = fn(size);
	TRACERY_PRELOAD_EMIT(ip, lttng_ust_libc, malloc, size, address(p));
	return p;
}

__attribute__((noinline)) void traced_free(void *ptr, const void *ip)
{
	if (__builtin_expect(arena.owns(ptr), 0))
		return;
	auto *fn = next_free.get();
	// Null: this thread is in a look-up (dlsym freeing its own memory)
	// before libc's free is known; the block is left allocated.
	if (__builtin_expect(!fn, 0))
		return;
	TRACERY_PRELOAD_EMIT(ip, lttng_ust_libc, free, address(ptr));
	fn(ptr);
}

__attribute__((noinline)) void *traced_calloc(size_t nmemb, size_t size, const void *ip)
{
	auto *fn = next_calloc.get();
	if (__builtin_expect(!fn, 0)) {
		size_t bytes;
		if (__builtin_mul_overflow(nmemb, size, &bytes)) {
			errno = ENOMEM;
			return nullptr;
		}
		return arena_allocate(bytes, 0);
	}
	void *p = fn(nmemb, size);
	TRACERY_PRELOAD_EMIT(ip, lttng_ust_libc, calloc, nmemb, size, address(p));
	return p;
}

// realloc of a block of the arena, or before libc's realloc is known: the
// block moves out of the arena (into libc's memory once known), which
// never shrinks nor frees.
__attribute__((noinline)) void *realloc_from_arena(void *ptr, size_t size)
{
	auto *malloc_fn = next_malloc.get();
	void *p = malloc_fn ? malloc_fn(size) : arena_allocate(size, 0);
	if (p && ptr) {
		const size_t old = arena.owns(ptr) ? arena.size_of(ptr) : 0;
		std::memcpy(p, ptr, old < size ? old : size);
	}
	return p;
}

__attribute__((noinline)) void *traced_realloc(void *ptr, size_t size, const void *ip)
{
	auto *fn = next_realloc.get();
	if (__builtin_expect(arena.owns(ptr), 0))
		fn = nullptr;
	void *p = fn ? fn(ptr, size) : realloc_from_arena(ptr, size);
	TRACERY_PRELOAD_EMIT(ip, lttng_ust_libc, realloc, address(ptr), size, address(p));
	return p;
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) void *malloc(size_t size)
{
	auto *fn = next_malloc.known();
	if (__builtin_expect(fn && !TRACERY_ENABLED(lttng_ust_libc, malloc), 1))
		return fn(size);
	return traced_malloc(size, __builtin_return_address(0));
}

__attribute__((visibility("default"))) void free(void *ptr)
{
	auto *fn = next_free.known();
	if (__builtin_expect(fn && !TRACERY_ENABLED(lttng_ust_libc, free) && !arena.owns(ptr), 1))
		return fn(ptr);
	traced_free(ptr, __builtin_return_address(0));
}

__attribute__((visibility("default"))) void *calloc(size_t nmemb, size_t size)
{
	auto *fn = next_calloc.known();
	if (__builtin_expect(fn && !TRACERY_ENABLED(lttng_ust_libc, calloc), 1))
		return fn(nmemb, size);
	return traced_calloc(nmemb, size, __builtin_return_address(0));
}

__attribute__((visibility("default"))) void *realloc(void *ptr, size_t size)
{
	auto *fn = next_realloc.known();
	if (__builtin_expect(fn && !TRACERY_ENABLED(lttng_ust_libc, realloc) && !arena.owns(ptr), 1))
		return fn(ptr, size);
	return traced_realloc(ptr, size, __builtin_return_address(0));
}

__attribute__((visibility("default"))) void *memalign(size_t alignment, size_t size)
{
	auto *fn = next_memalign.get();
	void *p = __builtin_expect(fn != nullptr, 1) ? fn(alignment, size) : arena_allocate(size, alignment);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_libc, memalign, alignment, size, address(p));
	return p;
}

__attribute__((visibility("default"))) int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	auto *fn = next_posix_memalign.get();
	int result;
	if (__builtin_expect(fn != nullptr, 1)) {
		result = fn(memptr, alignment, size);
	} else {
		void *p = arena_allocate(size, alignment);
		result = p ? 0 : ENOMEM;
		if (p)
			*memptr = p;
	}
	// Unchanged (and not an allocation) when the call failed: 0 recorded.
	const uint64_t out = result == 0 ? address(*memptr) : 0;
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_libc, posix_memalign, out, alignment, size, result);
	return result;
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t alignment, size_t size)
{
	auto *fn = next_aligned_alloc.get();
	void *p = __builtin_expect(fn != nullptr, 1) ? fn(alignment, size) : arena_allocate(size, alignment);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_libc, aligned_alloc, alignment, size, address(p));
	return p;
}

__attribute__((visibility("default"))) void *valloc(size_t size)
{
	auto *fn = next_valloc.get();
	void *p = __builtin_expect(fn != nullptr, 1) ? fn(size) : arena_allocate(size, 4096);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_libc, valloc, size, address(p));
	return p;
}

__attribute__((visibility("default"))) void *pvalloc(size_t size)
{
	auto *fn = next_pvalloc.get();
	void *p = __builtin_expect(fn != nullptr, 1) ? fn(size) : arena_allocate((size + 4095) & ~size_t{4095}, 4096);
	TRACERY_PRELOAD_EMIT(__builtin_return_address(0), lttng_ust_libc, pvalloc, size, address(p));
	return p;
}

} // extern "C"
