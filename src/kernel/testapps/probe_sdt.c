/* kernel/testapps/probe_sdt.c — a program without Tracery with SDT probe
 * points (<sys/sdt.h>), for the probe resolver's tests (kernel_probe_test):
 * a probe with a semaphore and constant, register and memory operands, and
 * (probe_sdt_pair.c) one without a semaphore used at two places; also for
 * the daemon's probe test. Called as `probe-sdt N`, it fires each point N
 * times and prints how many of them found the work probe's semaphore set
 * ("work enabled K of N"). */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <stdio.h>
#include <stdlib.h>

/* The semaphore that the kernel increments while the probe is enabled
 * (sys/sdt.h names it PROVIDER_NAME_semaphore and puts it in .probes). */
unsigned short tracery_test_work_semaphore __attribute__((unused)) __attribute__((section(".probes")));

struct item {
	long id;
	int weight;
};

__attribute__((noinline)) void fire(struct item *it, int n)
{
	/* Constant, register and memory (it->weight) operands. */
	STAP_PROBE3(tracery_test, work, 42, n, it->weight);
}

void twice(long v);

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 1;
	int enabled = 0;
	struct item it = {7, -9};
	for (int i = 0; i < count; ++i) {
		if (tracery_test_work_semaphore) /* what a program guards costly arguments with */
			++enabled;
		fire(&it, i + 100);
		twice(i);
	}
	/* The semaphore is set while a tracer has the probe enabled. */
	printf("work enabled %d of %d\n", enabled, count);
	return 0;
}
