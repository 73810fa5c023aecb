/*
 * tracery/ctl.h — libtracery-ctl, the C control library: what the `tracery`
 * command does to sessions, as calls (link with `pkg-config --libs
 * tracery-ctl`). Each call sends one request to the session daemon (traceryd)
 * of this user, or the system one it may use, and waits for its reply; the
 * `tracery` command itself is built on the same client, so a call and the
 * verb of the same name do the same thing and fail with the same message.
 *
 * Errors: every call returning int returns TRACERY_CTL_OK (0) or one of
 * enum tracery_ctl_error (negative); tracery_ctl_error_message() is then the
 * reason as one line (the daemon's own message when it refused), kept per
 * thread until the thread's next call.
 *
 * A session daemon is started when none answers, as the command starts one,
 * by the calls that make a session or a trigger (tracery_ctl_setup,
 * tracery_ctl_create_session, tracery_ctl_load_session,
 * tracery_ctl_add_trigger): they run `traceryd
 * --daemonize` and say so in one line on stderr (the command's line). With
 * TRACERY_NO_AUTOSTART=1 in the environment they start none and fail with
 * TRACERY_CTL_ERROR_NO_DAEMON, as the other calls do when none answers.
 *
 * Results the daemon describes at length (a session's status, the sessions,
 * the events, the triggers, a notification) come as a JSON document in a
 * string the caller frees with tracery_ctl_free(): the control protocol's
 * reply, whose fields docs/control-library.md lists; new fields may appear,
 * none is renamed or removed within SONAME libtracery-ctl.so.0.
 *
 * ABI: opaque handles, structs that begin with their size (struct_size:
 * set it to sizeof the struct you built against, and zero what you do not
 * set; a later library reads only that much, an earlier one refuses fields it
 * does not know unless they are zero), symbols versioned TRACERY_CTL_0.1, or
 * TRACERY_CTL_0.2 for the calls of release 0.2 (marked "since 0.2").
 * Calls are thread-safe: each opens its own connection.
 */
#ifndef TRACERY_CTL_H
#define TRACERY_CTL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TRACERY_CTL_BUILDING)
#define TRACERY_CTL_API __attribute__((visibility("default")))
#else
#define TRACERY_CTL_API
#endif

enum tracery_ctl_error {
	TRACERY_CTL_OK = 0,
	TRACERY_CTL_ERROR_INVALID = -1,    /* an argument is wrong: nothing was sent */
	TRACERY_CTL_ERROR_NO_DAEMON = -2,  /* no session daemon answers */
	TRACERY_CTL_ERROR_PERMISSION = -3, /* the daemon's socket refuses this user */
	TRACERY_CTL_ERROR_REFUSED = -4,    /* the daemon refused the request (no such session, ...) */
	TRACERY_CTL_ERROR_CONNECTION = -5, /* the daemon closed the connection, or could not be written to */
	TRACERY_CTL_ERROR_PROTOCOL = -6,   /* a reply that does not fit: a daemon of another release */
	TRACERY_CTL_ERROR_NO_MEMORY = -7,
	TRACERY_CTL_ERROR_AGAIN = -8,  /* tracery_ctl_watch_next: no notification ready yet */
	TRACERY_CTL_ERROR_CLOSED = -9, /* tracery_ctl_watch_next: the daemon ended the watch */
};

/* The reason the calling thread's last call failed, one line ("" after a
 * call that succeeded). Valid until the thread's next call. */
TRACERY_CTL_API const char *tracery_ctl_error_message(void);
/* Frees a string a call returned (NULL is fine). */
TRACERY_CTL_API void tracery_ctl_free(void *p);

enum tracery_ctl_domain {
	TRACERY_CTL_DOMAIN_USER = 0,   /* instrumented programs (libtracery) */
	TRACERY_CTL_DOMAIN_KERNEL = 1, /* the kernel's tracepoints and system calls (root or group tracing) */
};

/* Buffer flags (tracery_ctl_setup, struct tracery_ctl_channel_attr). Buffers
 * are always a set per CPU; these choose who shares a set and what a full one
 * does. */
#define TRACERY_CTL_OVERWRITE (1u << 0) /* flight recorder: the newest events overwrite the oldest */
#define TRACERY_CTL_PER_PID (1u << 1)   /* user space: a set per process instead of per user */
/* tracery_ctl_setup and struct tracery_ctl_session_attr: a snapshot session,
 * written only by tracery_ctl_snapshot_record (implies OVERWRITE in setup). */
#define TRACERY_CTL_SNAPSHOT (1u << 2)

/* ---- The simplest path: one session, one channel, every user space event. */

/* Creates session NAME writing into ROOT_DIR/NAME (relative: to the current
 * directory), with one user space channel of BUF_NR sub-buffers of BUF_SIZE
 * bytes per CPU (0: the defaults; BUF_SIZE a power of two, at least a page)
 * recording every user space event. FLAGS: TRACERY_CTL_OVERWRITE,
 * TRACERY_CTL_PER_PID, TRACERY_CTL_SNAPSHOT. When a step fails, the session
 * is destroyed again. */
TRACERY_CTL_API int tracery_ctl_setup(const char *root_dir, const char *name, uint64_t buf_size, uint32_t buf_nr,
                                      uint32_t flags);
/* Starts recording (the programs running and those started later). */
TRACERY_CTL_API int tracery_ctl_start(const char *name);
/* Stops recording; once it returns, the trace on disk is complete up to the stop. */
TRACERY_CTL_API int tracery_ctl_stop(const char *name);
/* Destroys the session (stopping it first), waiting until its trace is complete. */
TRACERY_CTL_API int tracery_ctl_cleanup(const char *name);

enum tracery_ctl_state {
	TRACERY_CTL_STATE_CREATED = 1,
	TRACERY_CTL_STATE_STARTED = 2,
	TRACERY_CTL_STATE_STOPPING = 3,
	TRACERY_CTL_STATE_STOPPED = 4,
};
/* The session's state (enum tracery_ctl_state). */
TRACERY_CTL_API int tracery_ctl_get_state(const char *name, int *state);
/* Events the session lost so far, all channels and both domains together:
 * the `lost` counts of its status. */
TRACERY_CTL_API int tracery_ctl_get_dropped(const char *name, uint64_t *dropped);

/* ---- Sessions. */

struct tracery_ctl_session_attr {
	uint32_t struct_size; /* sizeof(struct tracery_ctl_session_attr) */
	uint32_t flags;       /* TRACERY_CTL_SNAPSHOT */
	const char *output;   /* the trace's directory (relative: to the current directory); NULL: sent to URL only */
	const char *url;      /* a relay, net://HOST[:PORT]; NULL: none */
	uint64_t live_period_ns; /* with URL: a live session, flushed that often (0: not live) */
	/* Since 0.2, with URL or TRACERY_CTL_SNAPSHOT (its snapshots sent to a relay) (NULL: none): the key
	 * the relay asks for, a keys file holding one key (NAME SECRET, readable and writable by its owner
	 * only), and the PEM file of the CAs that sign the relay's TLS certificate (then the session talks
	 * TLS to it), as `tracery create --relay-key`, `--relay-ca`; both read by the library with the
	 * caller's rights. */
	const char *relay_key_file;
	const char *relay_ca_file;
};
/* Creates session NAME, whose trace goes to ATTR's output, or URL's relay, or both. */
TRACERY_CTL_API int tracery_ctl_create_session(const char *name, const struct tracery_ctl_session_attr *attr);
/* Destroys session NAME, waiting until its trace is complete. */
TRACERY_CTL_API int tracery_ctl_destroy_session(const char *name);
/* The sessions this user may see: {"sessions": [{"name", "owner", "output", "state", "snapshot", "relay"}]}. */
TRACERY_CTL_API int tracery_ctl_list_sessions(char **json);
/* Session NAME's status, as `tracery status NAME` shows it: {"name", "output", "state", "channels": [...], ...}. */
TRACERY_CTL_API int tracery_ctl_session_status(const char *name, char **json);

/* ---- Channels, events, contexts, tracking. */

struct tracery_ctl_channel_attr {
	uint32_t struct_size;        /* sizeof(struct tracery_ctl_channel_attr) */
	uint32_t flags;              /* TRACERY_CTL_OVERWRITE, TRACERY_CTL_PER_PID (user space) */
	uint64_t subbuf_size;        /* bytes; 0: the default */
	uint64_t num_subbuf;         /* 0: the default */
	int64_t blocking_timeout_us; /* user space: how long an emitter waits for space; -1: no limit; 0: never */
	uint64_t tracefile_size;     /* each stream in files of at most that many bytes (0: one file) */
	uint64_t tracefile_count;    /* with tracefile_size: the newest that many kept (0: all) */
};
/* Creates (or, stopped, changes) CHANNEL of SESSION in DOMAIN; ATTR NULL: the defaults. */
TRACERY_CTL_API int tracery_ctl_enable_channel(const char *session, int domain, const char *channel,
                                               const struct tracery_ctl_channel_attr *attr);

/* Enables the events matching PATTERNS (PROVIDER:NAME in user space,
 * SYSTEM:NAME in the kernel, * wildcards; COUNT 0: every event) in CHANNEL
 * (NULL: the default channel), recorded when FILTER (NULL: none) accepts them
 * (docs/filters.md); EXCLUSIONS (user space): events the patterns match that
 * are left out. */
TRACERY_CTL_API int tracery_ctl_enable_events(const char *session, int domain, const char *channel,
                                              const char *const *patterns, size_t count, const char *filter,
                                              const char *const *exclusions, size_t exclusion_count);
/* Disables what tracery_ctl_enable_events enabled (COUNT 0: every event). */
TRACERY_CTL_API int tracery_ctl_disable_events(const char *session, int domain, const char *channel,
                                               const char *const *patterns, size_t count);
/* Kernel system calls NAMES (COUNT 0: all of them), with FILTER (NULL: none). */
TRACERY_CTL_API int tracery_ctl_enable_syscalls(const char *session, const char *channel, const char *const *names,
                                                size_t count, const char *filter);
/* Adds context fields (vpid, vtid, procname, ...: `tracery add-context --list`) to CHANNEL's events (NULL: every
 * channel of the domain). */
TRACERY_CTL_API int tracery_ctl_add_context(const char *session, int domain, const char *channel,
                                            const char *const *types, size_t count);
/* Tracks (records only) the processes whose ATTRIBUTE (pid, vpid, uid, vuid, gid, vgid) is one of VALUES;
 * COUNT 0: every process again. */
TRACERY_CTL_API int tracery_ctl_track(const char *session, int domain, const char *attribute, const uint64_t *values,
                                      size_t count);
/* Stops tracking VALUES; COUNT 0: no process is tracked (none recorded). */
TRACERY_CTL_API int tracery_ctl_untrack(const char *session, int domain, const char *attribute, const uint64_t *values,
                                        size_t count);
/* The events that may be enabled. User space: {"programs": [{"pid", "uid", "procname", "events": [{"name",
 * "fields"}]}]}; kernel: {"tracepoints": [...], "syscalls": [...]}. */
TRACERY_CTL_API int tracery_ctl_list_events(int domain, char **json);

/* ---- Snapshots, rotation. */

/* Writes a snapshot of a snapshot session's buffers into PATH (NULL: the session's snapshot output), at most
 * MAX_SIZE bytes of user space buffers (0: all); *SNAPSHOT_DIR (may be NULL): where it went, to free. */
TRACERY_CTL_API int tracery_ctl_snapshot_record(const char *session, const char *path, uint64_t max_size,
                                                char **snapshot_dir);
/* Archives the current trace chunk; *ARCHIVE (may be NULL): its directory, to free. */
TRACERY_CTL_API int tracery_ctl_rotate(const char *session, char **archive);
/* Rotates every TIMER_NS nanoseconds and/or once a chunk holds SIZE_BYTES (0: not by that). */
TRACERY_CTL_API int tracery_ctl_enable_rotation(const char *session, uint64_t timer_ns, uint64_t size_bytes);
#define TRACERY_CTL_ROTATION_TIMER (1u << 0)
#define TRACERY_CTL_ROTATION_SIZE (1u << 1)
/* Stops the scheduled rotations WHICH (TRACERY_CTL_ROTATION_TIMER, _SIZE; 0: both). */
TRACERY_CTL_API int tracery_ctl_disable_rotation(const char *session, uint32_t which);
/* Drops what the session recorded so far, on disk and in its buffers. */
TRACERY_CTL_API int tracery_ctl_clear(const char *session);

/* Since 0.2: where tracery_ctl_snapshot_record writes when given no path, as `tracery snapshot add-output`,
 * `del-output` and `list-output`. Each call's *JSON (may be NULL; to free) lists the outputs now: {"session",
 * "outputs": [{"name", "path", "max_size"}]}, the first one's id 1. */
/* Adds an output: URL a directory (DIR, file://DIR; relative: to the current directory) or a relay
 * (net://HOST[:PORT]), NAME (NULL: snapshot-N), at most MAX_SIZE bytes a snapshot (0: no limit). */
TRACERY_CTL_API int tracery_ctl_snapshot_add_output(const char *session, const char *url, const char *name,
                                                    uint64_t max_size, char **json);
/* Removes the output OUTPUT: its id ("1") or its name. */
TRACERY_CTL_API int tracery_ctl_snapshot_del_output(const char *session, const char *output, char **json);
TRACERY_CTL_API int tracery_ctl_snapshot_list_outputs(const char *session, char **json);

/* ---- Since 0.2: userspace probes. */

/* Enables in the kernel domain a dynamic probe on a program's code, recorded as event NAME in CHANNEL (NULL: the
 * default channel), as `tracery enable-event -k --userspace-probe=SPEC NAME`: SPEC elf:PATH:SYMBOL[+OFFSET] or
 * sdt:PATH:PROVIDER:NAME (PATH relative: to the current directory); ARGS (NULL: from DWARF) what to record,
 * 'name=FETCH:TYPE,...'; FILTER (NULL: none). *JSON (may be NULL; to free): {"session", "channel", "events",
 * "sites", "args_source", "notes"}. */
TRACERY_CTL_API int tracery_ctl_enable_userspace_probe(const char *session, const char *channel, const char *name,
                                                       const char *spec, const char *args, const char *filter,
                                                       char **json);

/* ---- Since 0.2: sessions saved and loaded (docs/session-files.md), as `tracery save` and `load`. */

/* Session NAME as a session file's text (JSON), what `tracery save` writes: *TEXT, to free. */
TRACERY_CTL_API int tracery_ctl_save_session(const char *name, char **text);
/* Makes a session again from a session file's TEXT; ORIGIN names where it was read in the errors (NULL: "text");
 * NAME (NULL: the file's) names the session; FLAGS: TRACERY_CTL_LOAD_START to start it even if it was not
 * started when saved. *JSON (may be NULL; to free): {"session", "output", "started"}. */
#define TRACERY_CTL_LOAD_START (1u << 0)
TRACERY_CTL_API int tracery_ctl_load_session(const char *text, const char *origin, const char *name, uint32_t flags,
                                             char **json);

/* ---- Triggers and their notifications (docs/triggers.md). */

enum tracery_ctl_condition_type {
	TRACERY_CTL_CONDITION_EVENT_RULE_MATCHES = 1,
	TRACERY_CTL_CONDITION_BUFFER_USAGE_GE = 2,
	TRACERY_CTL_CONDITION_BUFFER_USAGE_LE = 3,
	TRACERY_CTL_CONDITION_SESSION_CONSUMED_SIZE_GE = 4,
};
struct tracery_ctl_trigger_condition {
	uint32_t struct_size; /* sizeof(struct tracery_ctl_trigger_condition) */
	int type;             /* enum tracery_ctl_condition_type */
	int domain;           /* enum tracery_ctl_domain */
	/* event-rule-matches: the event's name pattern, a filter (NULL: none), the payload fields sent along */
	const char *pattern;
	const char *filter;
	const char *const *captures;
	size_t capture_count;
	/* the other conditions: the session (and channel) watched, and the threshold: bytes when not 0, else
	 * percent of the buffers */
	const char *session;
	const char *channel;
	uint64_t threshold_bytes;
	uint32_t threshold_percent;
};
enum tracery_ctl_action_type {
	TRACERY_CTL_ACTION_NOTIFY = 1,
	TRACERY_CTL_ACTION_START_SESSION = 2,
	TRACERY_CTL_ACTION_STOP_SESSION = 3,
	TRACERY_CTL_ACTION_SNAPSHOT_SESSION = 4,
	TRACERY_CTL_ACTION_ROTATE_SESSION = 5,
};
enum tracery_ctl_rate_policy {
	TRACERY_CTL_RATE_EVERY = 0,      /* every COUNT-th time the trigger fires */
	TRACERY_CTL_RATE_ONCE_AFTER = 1, /* only the COUNT-th time */
};
struct tracery_ctl_trigger_action {
	uint32_t struct_size; /* sizeof(struct tracery_ctl_trigger_action) */
	int type;             /* enum tracery_ctl_action_type */
	const char *session;  /* the session the action acts on (not for NOTIFY) */
	int policy;           /* enum tracery_ctl_rate_policy */
	uint64_t count;       /* 0: 1 */
};
/* Adds a trigger named NAME (NULL: the daemon names it; *ADDED_NAME, may be NULL: the name, to free). */
TRACERY_CTL_API int tracery_ctl_add_trigger(const char *name, const struct tracery_ctl_trigger_condition *condition,
                                            const struct tracery_ctl_trigger_action *const *actions,
                                            size_t action_count, char **added_name);
TRACERY_CTL_API int tracery_ctl_remove_trigger(const char *name);
/* {"triggers": [{"name", "owner", "condition", "actions", "fired", "dropped"}]} */
TRACERY_CTL_API int tracery_ctl_list_triggers(char **json);

/* Notifications of triggers with a NOTIFY action, as `tracery watch` receives them. */
typedef struct tracery_ctl_watch tracery_ctl_watch;
/* Watches the triggers NAMES (COUNT 0: all this user's, those added later too). */
TRACERY_CTL_API int tracery_ctl_watch_open(const char *const *names, size_t count, tracery_ctl_watch **watch);
/* A descriptor that polls readable (POLLIN) when a notification is there
 * (TRACERY_CTL_ERROR_INVALID for a NULL watch); the watch owns it. */
TRACERY_CTL_API int tracery_ctl_watch_fd(const tracery_ctl_watch *watch);
/* The next notification, without waiting: {"trigger", "time_ns", "event", "pid", "captures", "dropped"};
 * TRACERY_CTL_ERROR_AGAIN when none is there yet, TRACERY_CTL_ERROR_CLOSED when the daemon ended. */
TRACERY_CTL_API int tracery_ctl_watch_next(tracery_ctl_watch *watch, char **json);
TRACERY_CTL_API void tracery_ctl_watch_close(tracery_ctl_watch *watch);

#ifdef __cplusplus
}
#endif

#endif /* TRACERY_CTL_H */
