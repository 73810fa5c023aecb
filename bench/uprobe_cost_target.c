/* bench/uprobe_cost_target.c — the probed program of bench/uprobe-cost.
 * Three functions that compute the same thing and differ only in their first
 * instruction, which decides what a uprobe's trap costs on x86-64:
 *   uc_push  push %rbp         the kernel emulates it (no single step)
 *   uc_nop5  a 5-byte nop      emulated, and a kernel that optimizes uprobes
 *                              may replace the trap by a call
 *   uc_mov   mov %edi,%eax     copied out of line and single-stepped
 * Called as `uprobe-cost-target FUNCTION CALLS`, it calls FUNCTION CALLS
 * times (after 1000 uncounted calls) and prints "ns_per_call X" and
 * "calls N" on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__asm__(".text\n"
        ".globl uc_push\n"
        ".type uc_push,@function\n"
        "uc_push:\n"
        "  push %rbp\n"
        "  mov %rsp,%rbp\n"
        "  lea 1(%rdi),%eax\n"
        "  pop %rbp\n"
        "  ret\n"
        ".size uc_push,.-uc_push\n"
        ".globl uc_nop5\n"
        ".type uc_nop5,@function\n"
        "uc_nop5:\n"
        "  .byte 0x0f,0x1f,0x44,0x00,0x00\n"
        "  lea 1(%rdi),%eax\n"
        "  ret\n"
        ".size uc_nop5,.-uc_nop5\n"
        ".globl uc_mov\n"
        ".type uc_mov,@function\n"
        "uc_mov:\n"
        "  mov %edi,%eax\n"
        "  add $1,%eax\n"
        "  ret\n"
        ".size uc_mov,.-uc_mov\n");

int uc_push(int);
int uc_nop5(int);
int uc_mov(int);

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: uprobe-cost-target uc_push|uc_nop5|uc_mov CALLS\n");
		return 2;
	}
	int (*volatile f)(int) = strcmp(argv[1], "uc_push") == 0   ? uc_push
	                         : strcmp(argv[1], "uc_nop5") == 0 ? uc_nop5
	                         : strcmp(argv[1], "uc_mov") == 0  ? uc_mov
	                                                           : NULL;
	const long calls = atol(argv[2]);
	if (!f || calls <= 0) {
		fprintf(stderr, "uprobe-cost-target: unknown function '%s' or bad count '%s'\n", argv[1], argv[2]);
		return 2;
	}
	volatile int sink = 0;
	for (int i = 0; i < 1000; ++i)
		sink += f(i);
	const double begin = now_ns();
	for (long i = 0; i < calls; ++i)
		sink += f((int)i);
	const double end = now_ns();
	/* On stderr: a tracer running the program (bpftrace -c) prints on stdout. */
	fprintf(stderr, "ns_per_call %.1f\ncalls %ld\n", (end - begin) / (double)calls, calls + 1000);
	return sink == 42 ? 1 : 0;
}
