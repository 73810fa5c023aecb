/*
 * bench/kernel_ingest_libtracefs.h — kernel-ingest-bench's libtracefs
 * reader, a C interface (tracefs.h does not compile as C++).
 *
 * ingest_libtracefs_iterate() makes one tracefs_iterate_raw_events() call
 * on the instance: it reads what every CPU's buffer holds (full and partial
 * pages), in time order, and returns when they are empty. Its callback
 * reads each event's fields that Tracery writes (none for a system call's
 * entry, `ret` for its exit) with tep_read_number_field() and appends the
 * timestamp, the event id and the fields, as 64-bit words, to a buffer
 * written to the file in 64 KiB writes.
 */
#ifndef TRACERY_BENCH_KERNEL_INGEST_LIBTRACEFS_H
#define TRACERY_BENCH_KERNEL_INGEST_LIBTRACEFS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ingest_libtracefs;

/* The formats of the syscalls system (tracefs_local_events_system), a handle
 * of the existing instance, the output file. NULL on failure. */
struct ingest_libtracefs *ingest_libtracefs_open(const char *tracefs_root, const char *instance, const char *out_path);
/* One tracefs_iterate_raw_events() call. 0, or -1 on failure. */
int ingest_libtracefs_iterate(struct ingest_libtracefs *r);
/* Writes what is buffered, frees everything. 0, or -1 if a write failed. */
int ingest_libtracefs_close(struct ingest_libtracefs *r);

uint64_t ingest_libtracefs_events(const struct ingest_libtracefs *r);
/* The sum of the records' missed_events counts (those known). */
uint64_t ingest_libtracefs_missed(const struct ingest_libtracefs *r);
uint64_t ingest_libtracefs_bytes(const struct ingest_libtracefs *r);

#ifdef __cplusplus
}
#endif

#endif
