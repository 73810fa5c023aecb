/* kernel/testapps/probe_sdt_pair.c — part of probe-sdt (probe_sdt.c): SDT
 * probe points without a semaphore: one name at two places, and one whose
 * first operand is a global variable (%rip-relative: not recorded). */
#include <sys/sdt.h>

volatile int tracery_test_global = 5;

__attribute__((noinline)) void twice(long v)
{
	DTRACE_PROBE2(tracery_test, pair, v, 1);
	DTRACE_PROBE2(tracery_test, pair, v + 1, 2);
	STAP_PROBE2(tracery_test, global, tracery_test_global, 3);
}
