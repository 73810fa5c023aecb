"""tracery.LoggingHandler: each logging record as a Tracery event of its logger.

The records of logger `a.b` are events `python:a.b` (logger_event_name), so
a session selects loggers by pattern and records by level:

    tracery enable-event -u 'python:myapp.*' --filter 'level >= 30'

Every such event has the fields of LOGGING_FIELDS: the logger's name, the
level (an integer) and its name, the formatted message, where the record was
made (module, function, file, line), the thread's name and identifier and the
process id.
"""
import logging
import re

from tracery._tracery import Event, s32, u64

PROVIDER = "python"
# The fields of a logger's event, in order (what each becomes: docs/languages.md).
LOGGING_FIELDS = {
    "logger": str, "level": s32, "level_name": str, "msg": str, "module": str, "function": str, "file": str,
    "line": s32, "thread_id": u64, "thread_name": str, "pid": s32,
}
# The loggers with an event of their own; the records of loggers beyond them are events OTHER_LOGGERS (their
# logger field still names them): the process's events are never freed, so their number is bounded.
MAX_LOGGER_EVENTS = 1000
OTHER_LOGGERS = "_other_loggers"
# Characters of a logger's name that an event name cannot hold become '_'; the name is cut to the longest an
# event name may be.
_NOT_IN_EVENT_NAMES = re.compile(r"[^A-Za-z0-9_.$-]")
_MAX_NAME = 200
# A message longer than this many characters is cut, ending with how many were cut (so that the event fits the
# 64 KiB a record's fields may take, whatever the characters).
MAX_MESSAGE = 8000

_events = {}  # logger name -> Event, shared by every handler (an event is the process's)
_OTHER_KEY = None  # the key of OTHER_LOGGERS' event in _events (no logger's name)


def logger_event_name(logger_name):
    """The event that records the records of logger_name: 'python:' + the name, its characters other than
    letters, digits and '_.$-' replaced by '_', with '_' before a first character that is not a letter or '_',
    cut to 200 characters."""
    name = _NOT_IN_EVENT_NAMES.sub("_", logger_name)
    if not name or not (name[0].isalpha() or name[0] == "_"):
        name = "_" + name
    return f"{PROVIDER}:{name[:_MAX_NAME]}"


def _event_of(logger_name):
    """The Event of a logger, defined on its first record (OTHER_LOGGERS' once MAX_LOGGER_EVENTS loggers have
    one). Without a lock: two threads that define the same event get the same descriptor, and dict operations
    are atomic."""
    ev = _events.get(logger_name)
    if ev is None:
        if len(_events) >= MAX_LOGGER_EVENTS:
            return _events.get(_OTHER_KEY) or _events.setdefault(
                _OTHER_KEY, Event(f"{PROVIDER}:{OTHER_LOGGERS}", **LOGGING_FIELDS))
        ev = _events.setdefault(logger_name, Event(logger_event_name(logger_name), **LOGGING_FIELDS))
    return ev


class LoggingHandler(logging.Handler):
    """A logging.Handler that records each record as event python:LOGGER while a session records it.

    Records of a logger whose event no session records cost a dict lookup and one load of a byte. The
    handler takes no lock: recording is safe from any number of threads at once."""

    def handle(self, record):
        # Without the handler's lock, which logging.Handler.handle takes around emit().
        ev = _events.get(record.name) or _event_of(record.name)
        if not ev.enabled:
            return False
        rv = self.filter(record) if self.filters else True
        if rv:
            self._record(ev, record)
        return rv

    def emit(self, record):
        ev = _events.get(record.name) or _event_of(record.name)
        if ev.enabled:
            self._record(ev, record)

    def _record(self, ev, record):
        try:
            if self.formatter is None and not record.exc_info and not record.stack_info:
                msg = record.getMessage()  # what the default Formatter makes of such a record, sooner
            else:
                msg = self.format(record)
            if len(msg) > MAX_MESSAGE:
                msg = f"{msg[:MAX_MESSAGE]}... [{len(msg) - MAX_MESSAGE} characters cut]"
            ev.emit(record.name, record.levelno, record.levelname, msg, record.module or "",
                    record.funcName or "", record.pathname or "", record.lineno or 0, record.thread or 0,
                    record.threadName or "", record.process or 0)
        except Exception:
            self.handleError(record)
