/* kernel/testapps/probe_lib_user.c — probe-lib-user, a program linked with
 * libprobe-lib.so (probe_lib.c), for the daemon's probe test. Called as
 * `probe-lib-user N`, it prints "ready PID", waits for a line on stdin,
 * calls pl_add(PID, i) for i = 0..N-1 and prints "done". */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "probe_lib.h"

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		return 1;
	volatile int sink = 0;
	for (int i = 0; i < count; ++i)
		sink += pl_add((int)getpid(), i);
	printf("done\n");
	return sink == -1;
}
