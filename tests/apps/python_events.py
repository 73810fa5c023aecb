"""The traced program of python_agent_test: typed events and logging records made through the tracery package,
in one of several scenarios (the first argument). The values it records are functions of a sequence number
(request_values, log_message), which the test imports to check every field; what only the program knows (its
pid, threads, the lines of its logging calls) it prints on stdout as `NAME VALUE...` lines.

  typed     50 myapp:request events, then 20 records of logger myapp.db (levels 10 to 50 in turn) and 5 of
            logger other.
  late      loads the tracing part (its first use of tracery.Event), prints "ready PID", waits for a line on
            stdin, then defines myapp:late, emits 10, prints "done"
            and waits for another line before it exits.
  threads   4 threads, each 300 myapp:tick events and 300 records of logger myapp.worker; then a fork child
            emits 100 myapp:tick events of its own (thread 99).
  errors    defines and emits wrong things, printing `error TYPE MESSAGE` for each refusal (run traced).
  names     one WARNING record of each logger of LOGGER_NAMES, with the handler's bound on loggers with an
            event of their own lowered to 3 and a filter of the handler's that drops logger 1st's records.
"""
import enum
import logging
import os
import sys
import threading

REQUESTS = 50
RECORDS = 20
OTHER_RECORDS = 5
THREADS = 4
TICKS = 300
CHILD_TICKS = 100
LOGGER_NAMES = ("a.b", "my app/\u00fc", "1st", "late.one", "late.two")
LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)


class Color(enum.IntEnum):
    RED = 0
    GREEN = 1
    BLUE = -5


def request_values(i):
    """The fields of the i-th myapp:request, in field order."""
    return {
        "id": i * 1_000_003 - 7 if i % 2 else -(2**63) + i,
        "path": f"/p/{i}/é☃",
        "ok": i % 3 == 0,
        "ms": i * 0.25,
        "data": bytes(range(i % 7)),
        "color": list(Color)[i % 3],
        "small": 255 - i,
        "delta": -i * 100,
        "ratio": i / 4,
        "big": 2**64 - 1 - i,
    }


def log_message(logger, i):
    return f"record {i} of {logger}"


def typed(tracery):
    request = tracery.Event("myapp:request", id=int, path=str, ok=bool, ms=float, data=bytes, color=Color,
                            small=tracery.u8, delta=tracery.s16, ratio=tracery.f32, big=tracery.u64)
    print("enabled", int(request.enabled))
    for i in range(REQUESTS):
        v = request_values(i)
        if i % 2:
            request.emit(*v.values())
        else:  # keywords, in another order
            request.emit(**dict(reversed(list(v.items()))))
    root = logging.getLogger()
    root.addHandler(tracery.LoggingHandler())
    root.setLevel(logging.DEBUG)
    log_records()
    other = logging.getLogger("other")
    for i in range(OTHER_RECORDS):
        other.warning(log_message("other", i))


def log_records():
    db = logging.getLogger("myapp.db")
    print("log_line", sys._getframe().f_lineno + 2)
    for i in range(RECORDS):
        db.log(LEVELS[i % len(LEVELS)], "record %d of %s", i, "myapp.db")


def late(tracery):
    event = tracery.Event  # libtracery loads here: the program registers before the session starts
    print("ready", os.getpid(), flush=True)
    sys.stdin.readline()
    ev = event("myapp:late", n=int, word=str)
    for i in range(10):
        ev.emit(n=i, word=f"w{i}")
    print("done", flush=True)
    sys.stdin.readline()


def threads(tracery):
    tick = tracery.Event("myapp:tick", thread=int, seq=int)
    logging.getLogger().addHandler(tracery.LoggingHandler())
    worker_log = logging.getLogger("myapp.worker")
    worker_log.setLevel(logging.INFO)
    start = threading.Barrier(THREADS)
    seen = {}

    def work(k):
        seen[k] = (threading.get_ident(), threading.current_thread().name)
        start.wait()
        for j in range(TICKS):
            tick.emit(thread=k, seq=j)
            worker_log.info("thread %d record %d", k, j)

    workers = [threading.Thread(target=work, args=(k,), name=f"worker-{k}") for k in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for k, (ident, name) in sorted(seen.items()):
        print("thread", k, ident, name, flush=True)
    child = os.fork()
    if child == 0:
        for j in range(CHILD_TICKS):
            tick.emit(thread=99, seq=j)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    print("child", child, os.waitstatus_to_exitcode(status), flush=True)


def errors(tracery):
    def refused(what):
        try:
            what()
        except Exception as e:
            print("error", type(e).__name__, str(e).replace("\n", " "), flush=True)
        else:
            print("error none", flush=True)

    refused(lambda: tracery.Event("no-colon", a=int))
    refused(lambda: tracery.Event("bad provider:x", a=int))
    refused(lambda: tracery.Event("p" * 10_000_000 + ":x", a=int))
    refused(lambda: tracery.Event("myapp:x", a=list))
    refused(lambda: tracery.Event("myapp:x", **{f"f{i}": int for i in range(tracery.MAX_FIELDS + 1)}))
    ev = tracery.Event("myapp:checked", small=tracery.u8, name=str, n=tracery.s8)
    print("same", int(tracery.Event("myapp:checked", small=tracery.u8, name=str, n=tracery.s8).enabled))
    refused(lambda: tracery.Event("myapp:checked", small=tracery.u16, name=str, n=tracery.s8))
    refused(lambda: ev.emit(small=256))
    refused(lambda: ev.emit(small=-1))
    refused(lambda: ev.emit(n=-129))
    refused(lambda: ev.emit(n=-10**5000))
    refused(lambda: ev.emit(small="1"))
    refused(lambda: ev.emit(name=b"bytes"))
    refused(lambda: ev.emit(nmae="x"))
    refused(lambda: ev.emit(1, small=2))
    refused(lambda: ev.emit(1, "a", 2, 3))
    refused(lambda: ev.emit(name="x" * 70000))
    refused(lambda: tracery.Event("myapp:real", x=float).emit(x="1.5"))
    ev.emit(7, "kept", -128)


def names(tracery):
    import tracery.logging_handler
    tracery.logging_handler.MAX_LOGGER_EVENTS = 3
    handler = tracery.LoggingHandler()
    handler.addFilter(lambda record: record.name != "1st")  # the handler's filters apply
    logging.getLogger().addHandler(handler)
    for name in LOGGER_NAMES:
        logging.getLogger(name).warning("from %s", name)
    print("event_names", *(tracery.logger_event_name(name) for name in LOGGER_NAMES))


def main():
    import tracery
    {"typed": typed, "late": late, "threads": threads, "errors": errors, "names": names}[sys.argv[1]](tracery)
    print("pid", os.getpid(), flush=True)


if __name__ == "__main__":
    main()
