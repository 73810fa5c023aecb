"""tracery.ctl: Tracery's control library (libtracery-ctl, tracery/ctl.h) from Python.

Every function sends one request to the session daemon and returns its
result, or raises tracery.ctl.Error (a subclass per error code) whose text is
the message the `tracery` command prints for the same failure
(docs/control-library.md):

    from tracery import ctl
    ctl.setup("/tmp/traces", "demo", buf_size=65536, buf_nr=4, overwrite=True)
    ctl.start("demo")
    ...                             # run the programs to trace
    ctl.stop("demo")
    print(ctl.dropped("demo"))      # events lost
    ctl.cleanup("demo")             # the trace in /tmp/traces/demo is complete

Results the daemon describes at length (status, the sessions, the events,
the triggers, notifications) are the JSON documents of the C API, decoded.
"""
import ctypes
import json
import os
from dataclasses import dataclass

from tracery import _ctl_location

_lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), _ctl_location.LIBRARY))

# ---- Errors (enum tracery_ctl_error).


class Error(Exception):
    """A call failed: str() is its message, code the C API's error code."""
    code = None

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


class InvalidArgument(Error):
    """An argument is wrong: nothing was sent."""


class NoDaemon(Error):
    """No session daemon answers."""


class PermissionDenied(Error):
    """The daemon's socket refuses this user."""


class Refused(Error):
    """The daemon refused the request (no such session, ...)."""


class ConnectionFailed(Error):
    """The daemon closed the connection, or could not be written to."""


class ProtocolError(Error):
    """A reply that does not fit: a daemon of another release."""


class WatchClosed(Error):
    """The daemon ended a watch."""


_ERRORS = {-1: InvalidArgument, -2: NoDaemon, -3: PermissionDenied, -4: Refused, -5: ConnectionFailed,
           -6: ProtocolError, -7: MemoryError, -9: WatchClosed}
_AGAIN = -8

# ---- The C declarations used.

_c_str = ctypes.c_char_p
_c_strs = ctypes.POINTER(ctypes.c_char_p)
_c_json = ctypes.POINTER(ctypes.c_void_p)


class _SessionAttr(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("output", _c_str), ("url", _c_str),
                ("live_period_ns", ctypes.c_uint64), ("relay_key_file", _c_str), ("relay_ca_file", _c_str)]


class _ChannelAttr(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("subbuf_size", ctypes.c_uint64),
                ("num_subbuf", ctypes.c_uint64), ("blocking_timeout_us", ctypes.c_int64),
                ("tracefile_size", ctypes.c_uint64), ("tracefile_count", ctypes.c_uint64)]


class _TriggerCondition(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("type", ctypes.c_int), ("domain", ctypes.c_int),
                ("pattern", _c_str), ("filter", _c_str), ("captures", _c_strs), ("capture_count", ctypes.c_size_t),
                ("session", _c_str), ("channel", _c_str), ("threshold_bytes", ctypes.c_uint64),
                ("threshold_percent", ctypes.c_uint32)]


class _TriggerAction(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("type", ctypes.c_int), ("session", _c_str),
                ("policy", ctypes.c_int), ("count", ctypes.c_uint64)]


_SIGNATURES = {
    "setup": [_c_str, _c_str, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32],
    "start": [_c_str],
    "stop": [_c_str],
    "cleanup": [_c_str],
    "get_state": [_c_str, ctypes.POINTER(ctypes.c_int)],
    "get_dropped": [_c_str, ctypes.POINTER(ctypes.c_uint64)],
    "create_session": [_c_str, ctypes.POINTER(_SessionAttr)],
    "destroy_session": [_c_str],
    "list_sessions": [_c_json],
    "session_status": [_c_str, _c_json],
    "enable_channel": [_c_str, ctypes.c_int, _c_str, ctypes.POINTER(_ChannelAttr)],
    "enable_events": [_c_str, ctypes.c_int, _c_str, _c_strs, ctypes.c_size_t, _c_str, _c_strs, ctypes.c_size_t],
    "disable_events": [_c_str, ctypes.c_int, _c_str, _c_strs, ctypes.c_size_t],
    "enable_syscalls": [_c_str, _c_str, _c_strs, ctypes.c_size_t, _c_str],
    "add_context": [_c_str, ctypes.c_int, _c_str, _c_strs, ctypes.c_size_t],
    "track": [_c_str, ctypes.c_int, _c_str, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
    "untrack": [_c_str, ctypes.c_int, _c_str, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
    "list_events": [ctypes.c_int, _c_json],
    "snapshot_record": [_c_str, _c_str, ctypes.c_uint64, _c_json],
    "rotate": [_c_str, _c_json],
    "enable_rotation": [_c_str, ctypes.c_uint64, ctypes.c_uint64],
    "disable_rotation": [_c_str, ctypes.c_uint32],
    "clear": [_c_str],
    "add_trigger": [_c_str, ctypes.POINTER(_TriggerCondition), ctypes.POINTER(ctypes.POINTER(_TriggerAction)),
                    ctypes.c_size_t, _c_json],
    "remove_trigger": [_c_str],
    "list_triggers": [_c_json],
    "watch_open": [_c_strs, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)],
    "watch_fd": [ctypes.c_void_p],
    "watch_next": [ctypes.c_void_p, _c_json],
    "snapshot_add_output": [_c_str, _c_str, _c_str, ctypes.c_uint64, _c_json],
    "snapshot_del_output": [_c_str, _c_str, _c_json],
    "snapshot_list_outputs": [_c_str, _c_json],
    "enable_userspace_probe": [_c_str, _c_str, _c_str, _c_str, _c_str, _c_str, _c_json],
    "save_session": [_c_str, _c_json],
    "load_session": [_c_str, _c_str, _c_str, ctypes.c_uint32, _c_json],
}
_c = {}
for _name, _args in _SIGNATURES.items():
    _f = getattr(_lib, "tracery_ctl_" + _name)
    _f.argtypes = _args
    _f.restype = ctypes.c_int
    _c[_name] = _f
_lib.tracery_ctl_error_message.restype = ctypes.c_char_p
_lib.tracery_ctl_error_message.argtypes = []
_lib.tracery_ctl_free.argtypes = [ctypes.c_void_p]
_lib.tracery_ctl_free.restype = None
_lib.tracery_ctl_watch_close.argtypes = [ctypes.c_void_p]
_lib.tracery_ctl_watch_close.restype = None

_DOMAINS = {"user": 0, "kernel": 1}
_OVERWRITE, _PER_PID, _SNAPSHOT = 1, 2, 4
_STATES = {1: "created", 2: "started", 3: "stopping", 4: "stopped"}
_CONDITIONS = {"event-rule-matches": 1, "channel-buffer-usage-ge": 2, "channel-buffer-usage-le": 3,
               "session-consumed-size-ge": 4}
_ACTIONS = {"notify": 1, "start-session": 2, "stop-session": 3, "snapshot-session": 4, "rotate-session": 5}
_POLICIES = {"every": 0, "once-after": 1}


def _call(name, *args):
    """Calls tracery_ctl_NAME; raises its error with the library's message."""
    code = _c[name](*args)
    if code < 0 and code != _AGAIN:
        message = _lib.tracery_ctl_error_message().decode("utf-8", "replace")
        raise _ERRORS.get(code, Error)(message, code)
    return code


def _text(value):
    return None if value is None else os.fsencode(value)


def _texts(values):
    """A C array of strings and its count (values: a str is one value)."""
    values = [values] if isinstance(values, str) else list(values)
    return (ctypes.c_char_p * len(values))(*[os.fsencode(v) for v in values]), len(values)


def _domain(domain):
    if domain not in _DOMAINS:
        raise InvalidArgument(f"unknown domain {domain!r}: 'user' or 'kernel'", -1)
    return _DOMAINS[domain]


def _choice(table, value, what):
    if value not in table:
        raise InvalidArgument(f"unknown {what} {value!r}: one of {', '.join(table)}", -1)
    return table[value]


def _taken_text(out):
    """The string a call returned in OUT (a char *, freed here), or None."""
    if not out.value:
        return None
    try:
        return ctypes.string_at(out.value).decode("utf-8", "replace")
    finally:
        _lib.tracery_ctl_free(out)


def _returned_text(name, *args):
    """Calls a function whose last argument is a char ** result: the string."""
    out = ctypes.c_void_p()
    _call(name, *args, ctypes.byref(out))
    return _taken_text(out)


def _returned_json(name, *args):
    return json.loads(_returned_text(name, *args))


# ---- The simplest path.


def setup(root_dir, name, buf_size=0, buf_nr=0, *, overwrite=False, per_pid=False, snapshot=False):
    """Session NAME writing into ROOT_DIR/NAME, one user space channel of BUF_NR sub-buffers of BUF_SIZE bytes
    per CPU (0: the defaults) recording every user space event; overwrite: a flight recorder."""
    flags = (_OVERWRITE if overwrite else 0) | (_PER_PID if per_pid else 0) | (_SNAPSHOT if snapshot else 0)
    _call("setup", _text(root_dir), _text(name), buf_size, buf_nr, flags)


def start(name):
    _call("start", _text(name))


def stop(name):
    _call("stop", _text(name))


def cleanup(name):
    """Destroys the session, waiting until its trace is complete."""
    _call("cleanup", _text(name))


def state(name):
    """'created', 'started', 'stopping' or 'stopped'."""
    value = ctypes.c_int()
    _call("get_state", _text(name), ctypes.byref(value))
    return _STATES[value.value]


def dropped(name):
    """Events the session lost so far, all channels and both domains."""
    value = ctypes.c_uint64()
    _call("get_dropped", _text(name), ctypes.byref(value))
    return value.value


# ---- Sessions.


def create_session(name, output=None, *, url=None, snapshot=False, live_period_ns=0, relay_key_file=None,
                   relay_ca_file=None):
    """Session NAME writing into OUTPUT, or sent to the relay at URL (net://HOST[:PORT]), or both; with URL,
    relay_key_file is the key the relay asks for (a keys file of one key, readable by its owner only) and
    relay_ca_file the PEM file of the CAs that sign its TLS certificate."""
    attr = _SessionAttr(ctypes.sizeof(_SessionAttr), _SNAPSHOT if snapshot else 0, _text(output), _text(url),
                        live_period_ns, _text(relay_key_file), _text(relay_ca_file))
    _call("create_session", _text(name), ctypes.byref(attr))


def destroy_session(name):
    _call("destroy_session", _text(name))


def list_sessions():
    """[{"name", "owner", "output", "state", "snapshot", "relay"}, ...]"""
    return _returned_json("list_sessions")["sessions"]


def status(name):
    """The session's status, as `tracery status NAME` shows it."""
    return _returned_json("session_status", _text(name))


# ---- Channels, events, contexts, tracking.


def enable_channel(session, channel, domain="user", *, subbuf_size=0, num_subbuf=0, overwrite=False,
                   per_pid=False, blocking_timeout_us=0, tracefile_size=0, tracefile_count=0):
    flags = (_OVERWRITE if overwrite else 0) | (_PER_PID if per_pid else 0)
    attr = _ChannelAttr(ctypes.sizeof(_ChannelAttr), flags, subbuf_size, num_subbuf, blocking_timeout_us,
                        tracefile_size, tracefile_count)
    _call("enable_channel", _text(session), _domain(domain), _text(channel), ctypes.byref(attr))


def enable_events(session, patterns=(), domain="user", *, channel=None, filter=None, exclusions=()):
    """Events matching PATTERNS (none: every event), recorded when FILTER accepts them."""
    p, n = _texts(patterns)
    e, m = _texts(exclusions)
    _call("enable_events", _text(session), _domain(domain), _text(channel), p, n, _text(filter), e, m)


def disable_events(session, patterns=(), domain="user", *, channel=None):
    p, n = _texts(patterns)
    _call("disable_events", _text(session), _domain(domain), _text(channel), p, n)


def enable_syscalls(session, names=(), *, channel=None, filter=None):
    """Kernel system calls NAMES (none: all of them)."""
    p, n = _texts(names)
    _call("enable_syscalls", _text(session), _text(channel), p, n, _text(filter))


def add_context(session, types, domain="user", *, channel=None):
    t, n = _texts(types)
    _call("add_context", _text(session), _domain(domain), _text(channel), t, n)


def _tracking(call, session, attribute, values, domain):
    values = list(values)
    array = (ctypes.c_uint64 * len(values))(*values)
    _call(call, _text(session), _domain(domain), _text(attribute), array, len(values))


def track(session, attribute, values=(), domain="user"):
    """Records only the processes whose ATTRIBUTE (pid, vpid, uid, ...) is in VALUES (none: every process)."""
    _tracking("track", session, attribute, values, domain)


def untrack(session, attribute, values=(), domain="user"):
    _tracking("untrack", session, attribute, values, domain)


def list_events(domain="user"):
    return _returned_json("list_events", _domain(domain))


# ---- Snapshots, rotation.


def snapshot_record(session, path=None, max_size=0):
    """Writes a snapshot; returns its directory."""
    return _returned_text("snapshot_record", _text(session), _text(path), max_size)


def rotate(session):
    """Archives the current trace chunk; returns the archive's directory."""
    return _returned_text("rotate", _text(session))


def enable_rotation(session, timer_ns=0, size_bytes=0):
    _call("enable_rotation", _text(session), timer_ns, size_bytes)


def disable_rotation(session, *, timer=False, size=False):
    _call("disable_rotation", _text(session), (1 if timer else 0) | (2 if size else 0))


def clear(session):
    _call("clear", _text(session))


def snapshot_add_output(session, url, *, name=None, max_size=0):
    """Where snapshot_record writes when given no path: a directory (DIR, file://DIR) or a relay
    (net://HOST[:PORT]), NAME (None: snapshot-N), at most MAX_SIZE bytes a snapshot (0: no limit). Returns the
    outputs now: [{"name", "path", "max_size"}, ...], the first one's id 1."""
    return _returned_json("snapshot_add_output", _text(session), _text(url), _text(name), max_size)["outputs"]


def snapshot_del_output(session, output):
    """Removes the output OUTPUT (its id, "1", or its name); returns the outputs left."""
    return _returned_json("snapshot_del_output", _text(session), _text(str(output)))["outputs"]


def snapshot_list_outputs(session):
    return _returned_json("snapshot_list_outputs", _text(session))["outputs"]


# ---- Userspace probes.


def enable_userspace_probe(session, name, spec, *, channel=None, args=None, filter=None):
    """A kernel probe on a program's code (SPEC elf:PATH:SYMBOL[+OFFSET] or sdt:PATH:PROVIDER:NAME), recorded as
    event NAME; ARGS (None: from DWARF) what to record, 'name=FETCH:TYPE,...'. Returns {"session", "channel",
    "events", "sites", "args_source", "notes"}."""
    return _returned_json("enable_userspace_probe", _text(session), _text(channel), _text(name), _text(spec),
                          _text(args), _text(filter))


# ---- Sessions saved and loaded.


def save_session(name):
    """Session NAME as the text of a session file, what `tracery save` writes."""
    return _returned_text("save_session", _text(name))


def load_session(text, *, origin=None, name=None, start=False):
    """A session made again from a session file's TEXT (ORIGIN: where it was read, named in errors), named NAME
    instead of the file's name when given, started if START or it was when saved: {"session", "output",
    "started"}."""
    return _returned_json("load_session", _text(text), _text(origin), _text(name), 1 if start else 0)


# ---- Triggers and notifications.


@dataclass
class Action:
    """What a trigger does: notify, start-session, stop-session, snapshot-session, rotate-session; every COUNT-th
    time it fires (policy "every") or only the COUNT-th ("once-after")."""
    type: str
    session: str = None
    policy: str = "every"
    count: int = 1


def add_trigger(actions, *, name=None, condition="event-rule-matches", domain="user", pattern=None, filter=None,
                captures=(), session=None, channel=None, threshold_bytes=0, threshold_percent=0):
    """Adds a trigger; returns its name."""
    caps, ncaps = _texts(captures)
    cond = _TriggerCondition(ctypes.sizeof(_TriggerCondition), _choice(_CONDITIONS, condition, "condition"),
                             _domain(domain), _text(pattern), _text(filter), caps, ncaps, _text(session),
                             _text(channel), threshold_bytes, threshold_percent)
    structs = [_TriggerAction(ctypes.sizeof(_TriggerAction), _choice(_ACTIONS, a.type, "action"), _text(a.session),
                              _choice(_POLICIES, a.policy, "rate policy"), a.count) for a in actions]
    pointers = (ctypes.POINTER(_TriggerAction) * len(structs))(*[ctypes.pointer(s) for s in structs])
    return _returned_text("add_trigger", _text(name), ctypes.byref(cond), pointers, len(structs))


def remove_trigger(name):
    _call("remove_trigger", _text(name))


def list_triggers():
    return _returned_json("list_triggers")["triggers"]


class Watch:
    """The notifications of triggers NAMES (none: all this user's), as `tracery watch` receives them: poll
    fileno() for reading, then next() returns one ({"trigger", "time_ns", "event", "pid", "captures", "dropped"})
    or None when none is there yet."""

    def __init__(self, names=()):
        n, count = _texts(names)
        self._handle = ctypes.c_void_p()
        _call("watch_open", n, count, ctypes.byref(self._handle))

    def fileno(self):
        return _call("watch_fd", self._handle)

    def next(self):
        out = ctypes.c_void_p()
        if _call("watch_next", self._handle, ctypes.byref(out)) == _AGAIN:
            return None
        return json.loads(_taken_text(out))

    def close(self):
        if self._handle:
            _lib.tracery_ctl_watch_close(self._handle)
            self._handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
