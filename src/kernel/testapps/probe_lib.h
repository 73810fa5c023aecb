/* kernel/testapps/probe_lib.h — libprobe-lib.so's function (probe_lib.c). */
#ifndef TRACERY_PROBE_LIB_H
#define TRACERY_PROBE_LIB_H

__attribute__((noinline)) int pl_add(int who, int round);

#endif
