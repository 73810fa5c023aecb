/*
 * The library that preload_func_test builds and dl-host loads with dlopen:
 * one function whose address the host prints.
 */
int dl_library_function(int x) { return x * 3 + 1; }
