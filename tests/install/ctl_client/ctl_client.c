/*
 * ctl-client: a C program built against the installed package with
 * pkg-config and libtracery-ctl only (see the Makefile); ctl_test.py runs it
 * against a session daemon and checks what it prints and the trace.
 *
 *   ctl-client trace ROOT NAME BUF_SIZE BUF_NR PROGRAM [ARGS...]
 *       tracery_ctl_setup(ROOT, NAME, BUF_SIZE, BUF_NR, 0), start, runs
 *       PROGRAM to its end, stop, prints "state S" after start and after
 *       stop and "dropped N", then cleanup; exits 1 at the first failure,
 *       having printed "CALL failed: CODE MESSAGE"
 *   ctl-client call CALL NAME
 *       one call (setup-null-root, setup (in the current
 *       directory), start, stop, state, cleanup) on session
 *       NAME; prints "CALL CODE MESSAGE" and exits 0
 */
#include <tracery/ctl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int check(const char *call, int code)
{
	if (code != TRACERY_CTL_OK) {
		printf("%s failed: %d %s\n", call, code, tracery_ctl_error_message());
		fflush(stdout);
	}
	return code == TRACERY_CTL_OK;
}

static int print_state(const char *name)
{
	int state = 0;
	if (!check("get_state", tracery_ctl_get_state(name, &state)))
		return 0;
	printf("state %d\n", state);
	return 1;
}

static int run_program(char **argv)
{
	fflush(stdout);
	const pid_t pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		execv(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	int status = 0;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("%s did not exit 0\n", argv[0]);
		return 0;
	}
	return 1;
}

static int trace(char **argv)
{
	const char *root = argv[0], *name = argv[1];
	const uint64_t buf_size = strtoull(argv[2], NULL, 10);
	const uint32_t buf_nr = (uint32_t)strtoul(argv[3], NULL, 10);
	if (!check("setup", tracery_ctl_setup(root, name, buf_size, buf_nr, 0)))
		return 1;
	if (!check("start", tracery_ctl_start(name)) || !print_state(name) || !run_program(argv + 4) ||
	    !check("stop", tracery_ctl_stop(name)) || !print_state(name))
		return 1;
	uint64_t dropped = 0;
	if (!check("get_dropped", tracery_ctl_get_dropped(name, &dropped)))
		return 1;
	printf("dropped %llu\n", (unsigned long long)dropped);
	return check("cleanup", tracery_ctl_cleanup(name)) ? 0 : 1;
}

static int call(const char *what, const char *name)
{
	int code, state = 0;
	if (strcmp(what, "setup-null-root") == 0)
		code = tracery_ctl_setup(NULL, name, 0, 0, 0);
	else if (strcmp(what, "setup") == 0)
		code = tracery_ctl_setup(".", name, 0, 0, 0);
	else if (strcmp(what, "start") == 0)
		code = tracery_ctl_start(name);
	else if (strcmp(what, "stop") == 0)
		code = tracery_ctl_stop(name);
	else if (strcmp(what, "state") == 0)
		code = tracery_ctl_get_state(name, &state);
	else if (strcmp(what, "cleanup") == 0)
		code = tracery_ctl_cleanup(name);
	else
		return 2;
	printf("%s %d %s\n", what, code, tracery_ctl_error_message());
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 8 && strcmp(argv[1], "trace") == 0)
		return trace(argv + 2);
	if (argc == 4 && strcmp(argv[1], "call") == 0)
		return call(argv[2], argv[3]);
	fprintf(stderr, "usage: ctl-client trace ROOT NAME BUF_SIZE BUF_NR PROGRAM [ARGS...] | call CALL NAME\n");
	return 2;
}
