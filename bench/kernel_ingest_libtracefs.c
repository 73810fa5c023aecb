/*
 * bench/kernel_ingest_libtracefs.c — kernel-ingest-bench's libtracefs reader
 * (in C: tracefs.h does not compile as C++): tracefs_iterate_raw_events()
 * on an existing instance, each event's fields read with libtraceevent and
 * appended to a file. See kernel_ingest_libtracefs.h.
 */
#define _GNU_SOURCE
#include "kernel_ingest_libtracefs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>
#include <tracefs.h>

enum { OUT_WORDS = 64 * 1024 / 8, MAX_FIELDS = 8 };

/* The fields read of one event id: those Tracery writes (LTTng's syscall
 * layout drops __syscall_nr). */
struct fields {
	int known;
	int count;
	struct tep_format_field *f[MAX_FIELDS];
};

struct ingest_libtracefs {
	struct tep_handle *tep;
	struct tracefs_instance *instance;
	FILE *file;
	struct fields *by_id;
	size_t ids;
	unsigned long long out[OUT_WORDS];
	size_t used;
	uint64_t events, missed, bytes;
	int failed;
};

static struct fields *fields_of(struct ingest_libtracefs *r, struct tep_event *event)
{
	size_t id = (size_t)event->id;
	if (id >= r->ids) {
		struct fields *grown = realloc(r->by_id, (id + 1) * sizeof *grown);
		if (!grown)
			return NULL;
		memset(grown + r->ids, 0, (id + 1 - r->ids) * sizeof *grown);
		r->by_id = grown;
		r->ids = id + 1;
	}
	struct fields *fs = &r->by_id[id];
	if (!fs->known) {
		for (struct tep_format_field *f = event->format.fields; f && fs->count < MAX_FIELDS; f = f->next)
			if (strcmp(f->name, "__syscall_nr") != 0)
				fs->f[fs->count++] = f;
		fs->known = 1;
	}
	return fs;
}

static void flush(struct ingest_libtracefs *r)
{
	size_t n = r->used * sizeof r->out[0];
	if (n && fwrite(r->out, 1, n, r->file) != n)
		r->failed = errno ? errno : EIO;
	r->bytes += n;
	r->used = 0;
}

static int on_record(struct tep_event *event, struct tep_record *record, int cpu, void *context)
{
	(void)cpu;
	struct ingest_libtracefs *r = context;
	struct fields *fs = fields_of(r, event);
	if (!fs) {
		r->failed = ENOMEM;
		return 1;
	}
	if (record->missed_events > 0)
		r->missed += (uint64_t)record->missed_events;
	if (r->used + 2 + MAX_FIELDS > OUT_WORDS)
		flush(r);
	r->out[r->used++] = record->ts;
	r->out[r->used++] = (unsigned long long)event->id;
	for (int i = 0; i < fs->count; ++i) {
		unsigned long long v = 0;
		tep_read_number_field(fs->f[i], record->data, &v);
		r->out[r->used++] = v;
	}
	++r->events;
	return 0;
}

struct ingest_libtracefs *ingest_libtracefs_open(const char *tracefs_root, const char *instance, const char *out_path)
{
	struct ingest_libtracefs *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	const char *const systems[] = {"syscalls", NULL};
	r->tep = tracefs_local_events_system(tracefs_root, systems);
	r->instance = tracefs_instance_alloc(tracefs_root, instance);
	r->file = fopen(out_path, "wb");
	if (!r->tep || !r->instance || !r->file) {
		ingest_libtracefs_close(r);
		return NULL;
	}
	return r;
}

int ingest_libtracefs_iterate(struct ingest_libtracefs *r)
{
	if (tracefs_iterate_raw_events(r->tep, r->instance, NULL, 0, on_record, r) < 0)
		return -1;
	return r->failed ? -1 : 0;
}

int ingest_libtracefs_close(struct ingest_libtracefs *r)
{
	int failed = 0;
	if (r->file) {
		flush(r);
		if (fclose(r->file) != 0 && !r->failed)
			r->failed = errno;
	}
	failed = r->failed;
	if (r->instance)
		tracefs_instance_free(r->instance);
	if (r->tep)
		tep_free(r->tep);
	free(r->by_id);
	free(r);
	return failed ? -1 : 0;
}

uint64_t ingest_libtracefs_events(const struct ingest_libtracefs *r) { return r->events; }
uint64_t ingest_libtracefs_missed(const struct ingest_libtracefs *r) { return r->missed; }
uint64_t ingest_libtracefs_bytes(const struct ingest_libtracefs *r) { return r->bytes + r->used * sizeof r->out[0]; }
