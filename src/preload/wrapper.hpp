// preload/wrapper.hpp — what every LD_PRELOAD helper's wrappers share: the
// next definition of a wrapped function (dlsym(RTLD_NEXT)), the per-thread
// mark that the tracer is running on this thread (so that what it calls
// itself, a malloc or a mutex, is not traced again), and the emit that
// records the wrapper's caller as the ip context.
#pragma once

#include <tracery/tracepoint.h>

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// Non-zero while this thread runs the tracer from a helper's wrapper. One
// variable for all the helpers of a process: each defines it with default
// visibility, and the dynamic linker binds every helper's references to the
// first definition, so a mutex the tracer locks while recording a malloc is
// not recorded either. Initial-exec TLS: a plain load and store off %fs,
// which never allocates (a helper is loaded at start-up, where static TLS has
// room for it) and is safe in a signal handler.
extern "C"
	__attribute__((visibility("default"), tls_model("initial-exec"))) __thread unsigned tracery_preload_in_tracer;

namespace tracery::preload {

// Marks the tracer as running on this thread for the scope's length, if it
// was not already: outermost() says whether this scope may record.
class TracerScope {
public:
	TracerScope() noexcept : outermost_(tracery_preload_in_tracer == 0)
	{
		if (outermost_) {
			tracery_preload_in_tracer = 1;
			std::atomic_signal_fence(std::memory_order_seq_cst);
		}
	}
	~TracerScope()
	{
		if (outermost_) {
			std::atomic_signal_fence(std::memory_order_seq_cst);
			tracery_preload_in_tracer = 0;
		}
	}
	TracerScope(const TracerScope &) = delete;
	TracerScope &operator=(const TracerScope &) = delete;
	bool outermost() const noexcept { return outermost_; }

private:
	const bool outermost_;
};

// Ends the process with a message, without allocating: a wrapper that has no
// next definition to call.
[[noreturn]] inline void die(const char *helper, const char *what, const char *symbol) noexcept
{
	const char *parts[] = {helper, ": ", what, " ", symbol, "\n"};
	for (const char *p : parts)
		if (::write(STDERR_FILENO, p, std::strlen(p)) < 0)
			break;
	std::abort();
}

// The executable segment of libtracery.so: a call made from there is the
// tracer's own (a block its control thread allocates, one it frees at exit),
// not recorded. Found before the helper's events register (wrapper.cpp).
struct TracerCode {
	uintptr_t start = 0;
	uintptr_t size = 0;
	bool contains(const void *ip) const noexcept { return reinterpret_cast<uintptr_t>(ip) - start < size; }
};
extern TracerCode tracer_code;

// True on a thread while it looks up a next definition (dlsym may call
// malloc or calloc: the libc helper serves those from its arena).
inline __thread bool looking_up __attribute__((tls_model("initial-exec")));

// The next definition of a wrapped function after the helper's own (libc's,
// or another preloaded library's), looked up on first use by whichever
// thread needs it first; `version` is for symbols whose default version
// dlsym does not return (pthread_cond_*).
template <class Fn>
class NextDefinition {
public:
	constexpr NextDefinition(const char *helper, const char *symbol, const char *version = nullptr)
		: helper_(helper), symbol_(symbol), version_(version)
	{
	}

	// The function, or null if this thread is in the middle of a look-up.
	__attribute__((always_inline)) Fn get() noexcept
	{
		Fn fn = fn_.load(std::memory_order_relaxed);
		if (__builtin_expect(fn != nullptr, 1))
			return fn;
		return look_up();
	}

	// The function if it is known already, else null, with no look-up: the
	// test of a wrapper's fast path, whose out-of-line half calls get().
	__attribute__((always_inline)) Fn known() const noexcept { return fn_.load(std::memory_order_relaxed); }

	// The function; a wrapper with no other way to do its work dies if it
	// is called during a look-up (dlsym does not call it).
	__attribute__((always_inline)) Fn get_or_die() noexcept
	{
		Fn fn = get();
		if (__builtin_expect(fn == nullptr, 0))
			die(helper_, "called while looking up a next definition:", symbol_);
		return fn;
	}

private:
	__attribute__((noinline)) Fn look_up() noexcept
	{
		if (looking_up)
			return nullptr;
		looking_up = true;
		void *fn = version_ ? dlvsym(RTLD_NEXT, symbol_, version_) : dlsym(RTLD_NEXT, symbol_);
		looking_up = false;
		if (!fn)
			die(helper_, "cannot find the next definition of", symbol_);
		fn_.store(reinterpret_cast<Fn>(fn), std::memory_order_relaxed);
		return reinterpret_cast<Fn>(fn);
	}

	const char *helper_;
	const char *symbol_;
	const char *version_;
	std::atomic<Fn> fn_{nullptr};
};

} // namespace tracery::preload

// Emits prov:name with `ip` (the wrapper's caller) as its ip context, unless
// the event is disabled (then it costs TRACERY_ENABLED's load and branch), the
// caller is libtracery, or the tracer is already running on this thread (the
// call comes from the tracer, or from a signal handler that interrupted it):
// those are not recorded.
#define TRACERY_PRELOAD_EMIT(ip, prov, name, ...)                                                 \
	do {                                                                                      \
		if (TRACERY_ENABLED(prov, name) && !tracery::preload::tracer_code.contains(ip)) { \
			const tracery::preload::TracerScope scope_;                               \
			if (scope_.outermost())                                                   \
				TRACERY_EMIT_AT(ip, prov, name, __VA_ARGS__);                     \
		}                                                                                 \
	} while (0)
