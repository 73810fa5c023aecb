/* kernel/testapps/probe_target.c — a program without Tracery whose
 * functions have known signatures, for the probe resolver's tests
 * (kernel_probe_test): built -g -O0 and -g -O2, stripped, and with a
 * separate debug file. Called as `probe-target N`, it calls each function
 * N times with fixed arguments (the root test records them through
 * uprobes) and prints nothing. */
#include <stdlib.h>
#include <string.h>

enum color { RED = 1, GREEN = 2, BLUE = 4 };
enum sign { NEG = -1, ZERO = 0, POS = 1 };
struct point {
	int x, y;
};
typedef unsigned long my_size;

#define PROBED __attribute__((noinline, used))

/* Seven integer-class parameters: the seventh is on the stack. */
PROBED int pt_ints(int a, long b, unsigned char c, _Bool d, enum color e, void *p, const char *s)
{
	return a + (int)b + c + d + (int)e + (p != 0) + (int)strlen(s);
}

/* A double between two integers: it takes no integer register. */
PROBED long pt_double(int a, double x, long b) { return a + (long)x + b; }

/* A struct by value: recorded up to it. */
PROBED int pt_struct(int a, struct point p, int b) { return a + p.x + p.y + b; }

PROBED void pt_misc(const char *name, my_size n, short k, signed char sc, unsigned long long u, enum sign sg)
{
	if (name[0] == '\0' && n == 0 && k == 0 && sc == 0 && u == 0 && sg == ZERO)
		abort();
}

PROBED int pt_varargs(int n, ...) { return n; }

static char pt_buffer[32];

PROBED char *pt_ret_string(int n)
{
	strcpy(pt_buffer, n > 0 ? "positive" : "other");
	return pt_buffer;
}

PROBED enum sign pt_ret_enum(int n) { return n < 0 ? NEG : n > 0 ? POS : ZERO; }

PROBED _Bool pt_ret_bool(int n) { return n > 2; }

PROBED double pt_ret_double(int n) { return n * 0.5; }

PROBED void pt_ret_void(int n) { pt_buffer[0] = (char)n; }

/* An indirect function: its symbol is the resolver's. */
static int pt_ifunc_impl(int n) { return n + 1; }
__attribute__((used)) static int (*pt_ifunc_resolver(void))(int) { return pt_ifunc_impl; }
int pt_ifunc(int n) __attribute__((ifunc("pt_ifunc_resolver")));

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 1;
	volatile int sink = 0;
	for (int i = 0; i < count; ++i) {
		sink += pt_ints(-5, -70000000000L, 200, 1, BLUE, (void *)0x1234, "hello");
		sink += (int)pt_double(3, 2.5, 40);
		struct point p = {1, 2};
		sink += pt_struct(7, p, 9);
		pt_misc("misc", 123456789UL, -300, -7, 18446744073709551615ULL, NEG);
		sink += pt_varargs(2, 1, 2);
		sink += pt_ret_string(1)[0];
		sink += pt_ret_enum(-4);
		sink += pt_ret_bool(5);
		sink += (int)pt_ret_double(4);
		pt_ret_void(i);
		sink += pt_ifunc(i);
	}
	return sink == 12345 ? 1 : 0;
}
