"""tracery: Python events recorded by Tracery.

Typed events defined at run time, and a logging handler that records each
record as an event of its logger (docs/languages.md):

    import tracery
    request = tracery.Event("myapp:request", id=int, path=str, ok=bool, ms=float)
    request.emit(id=7, path="/index.html", ok=True, ms=1.5)
    if request.enabled:            # one load of a byte: guard costly arguments
        request.emit(id=7, path=expensive())

    logging.getLogger().addHandler(tracery.LoggingHandler())

The events are recorded by libtracery (libtracery.so.0) like a C program's:
traceryd lists, enables and filters them (`tracery enable-event -u
'myapp:*'`), or TRACERY_OUTPUT traces the program alone.
"""
from tracery._tracery import MAX_FIELDS, Event, FieldType, f32, f64, s8, s16, s32, s64, u8, u16, u32, u64
from tracery.logging_handler import LoggingHandler, logger_event_name

__all__ = ["Event", "FieldType", "LoggingHandler", "MAX_FIELDS", "f32", "f64", "logger_event_name", "s8", "s16",
           "s32", "s64", "u8", "u16", "u32", "u64"]
