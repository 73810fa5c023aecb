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

libtracery is loaded on the first use of one of these names, not by `import
tracery`: a control script (`from tracery import ctl`, the control library)
loads only libtracery-ctl and so does not register with the session daemon
as a traced program.
"""
import importlib

# Each public name and the module that defines it, imported on first use.
_DEFINED_IN = {
    **{name: "tracery._tracery" for name in ("MAX_FIELDS", "Event", "FieldType", "f32", "f64", "s8", "s16", "s32",
                                             "s64", "u8", "u16", "u32", "u64")},
    "LoggingHandler": "tracery.logging_handler",
    "logger_event_name": "tracery.logging_handler",
}

__all__ = sorted(_DEFINED_IN)


def __getattr__(name):
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module 'tracery' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
