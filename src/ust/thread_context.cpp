// Caches of the context fields: see thread_context.hpp.
#include "ust/thread_context.hpp"

#include "ust/user_context.hpp"

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace tracery::ust {
namespace {

__attribute__((tls_model("initial-exec"))) thread_local ThreadContext tls_context;
__attribute__((tls_model("initial-exec"))) thread_local bool tls_context_valid = false;
int32_t cached_vpid = 0;

} // namespace

const ThreadContext &thread_context()
{
	if (__builtin_expect(!tls_context_valid, 0)) {
		tls_context.vtid = static_cast<int32_t>(gettid());
		prctl(PR_GET_NAME, tls_context.procname, 0, 0, 0);
		tls_context.procname[16] = '\0';
		tls_context.pthread_id = static_cast<uint64_t>(pthread_self());
		tls_context_valid = true;
	}
	return tls_context;
}

int32_t process_vpid()
{
	int32_t pid = __atomic_load_n(&cached_vpid, __ATOMIC_RELAXED);
	if (__builtin_expect(pid == 0, 0)) {
		pid = static_cast<int32_t>(getpid());
		__atomic_store_n(&cached_vpid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

uint32_t current_cpu_without_rseq()
{
	const int cpu = sched_getcpu();
	return cpu < 0 ? 0u : static_cast<uint32_t>(cpu);
}

void reset_context_after_fork()
{
	tls_context_valid = false;
	reset_user_context_after_fork();
	__atomic_store_n(&cached_vpid, 0, __ATOMIC_RELAXED);
}

} // namespace tracery::ust
