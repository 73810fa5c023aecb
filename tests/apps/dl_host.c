/*
 * dl-host: the program of preload_func_test's dl helper test, built by the
 * test (it links no libtracery: the dl helper traces it from LD_PRELOAD).
 *   dl-host LIBRARY   dlopens LIBRARY, prints "function ADDRESS" (the address
 *                     of its dl_library_function, in hex) and "result R" (a
 *                     call to it), dlcloses it, prints "closed"
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: dl-host LIBRARY\n");
		return 2;
	}
	void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
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
