/*
 * dl-host: the program of preload_func_test's dl helper test, built by the
 * test (it links no libtracery: the dl helper traces it from LD_PRELOAD).
 *   dl-host LIBRARY [dlmopen]
 *                     dlopens LIBRARY (with dlmopen, into a new namespace),
 *                     prints "function ADDRESS" (the address of its
 *                     dl_library_function, in hex) and "result R" (a call to
 *                     it), dlcloses it, prints "closed"
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "dlmopen") != 0)) {
		fprintf(stderr, "usage: dl-host LIBRARY [dlmopen]\n");
		return 2;
	}
	void *handle = argc == 3 ? dlmopen(LM_ID_NEWLM, argv[1], RTLD_NOW | RTLD_LOCAL)
	                         : dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*fn)(int) = (int (*)(int))dlsym(handle, "dl_library_function");
	if (!fn) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	printf("function %p\nresult %d\n", (void *)fn, fn(4));
	fflush(stdout);
	if (dlclose(handle) != 0) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		return 1;
	}
	printf("closed\n");
	return 0;
}
