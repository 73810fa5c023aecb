/*
 * dlopen-host: events in the executable, in a linked shared library and in
 * a dlopen'd library; prints the events the process knows before dlopen,
 * while the plugin is loaded and after dlclose.
 * Usage: dlopen-host PATH_TO_PLUGIN
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/internal/probe.h>
#include <tracery/tracepoint.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

TRACERY_EVENT(host, mark, TRACERY_STRING(where))

void shlib_call(const char *what);

static void print_event(const struct tracery_event_desc *d, void *tag)
{
	printf("%s %s:%s\n", (const char *)tag, d->provider, d->name);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: dlopen-host PLUGIN.so\n");
		return 2;
	}
	TRACERY_EMIT(host, mark, "start");
	shlib_call("from-host");
	tracery_list_events(print_event, "before");
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	void (*run)(unsigned) = (void (*)(unsigned))dlsym(h, "plugin_run");
	tracery_list_events(print_event, "loaded");
	run(10);
	dlclose(h);
	tracery_list_events(print_event, "after");
	TRACERY_EMIT(host, mark, "end");
	return 0;
}
