/* kernel/testapps/probe_lib.c — a shared library without Tracery
 * (libprobe-lib.so, built -g) whose one function the daemon's probe test
 * probes, in every process that maps the library: those running when the
 * session starts and those started later (probe_lib_user.c). */
#include "probe_lib.h"

int pl_add(int who, int round) { return who + round; }
