"""The timed Python program of bench/language-agents: times operations of a Python program that uses a tracing
agent, each in a loop of --count iterations minus an empty loop of as many (the least of 5 runs of each), and
prints one line per
operation: `op NAME ns_per_op X`.

    python_workload.py --agent tracery|lttngust|none [--count N] [--ops LIST]

The agent decides what logs: `tracery` puts tracery.LoggingHandler on the root logger and defines the typed
event bench:request; `lttngust` imports lttngust (its agent registers with lttng-sessiond and puts its
handler on the root logger while a session enables Python events); `none` puts a logging.NullHandler there
(the cost of the logging machinery alone). Whether anything records depends on the sessions that the caller
made before starting it.

The operations (--ops, comma-separated; default all the agent has):
  typed_emit       request.emit(id=i, path="/index.html", ok=True, ms=1.5)   (tracery)
  enabled_check    `if request.enabled: pass`                                 (tracery)
  is_enabled_for   `if logger.isEnabledFor(logging.INFO): pass`               (all: the yardstick)
  logging_record   logger.info("request %d took %.1f ms", i, 1.5)             (all)
"""
import argparse
import importlib
import logging
import time

AGENT_OPS = {
    "tracery": ["typed_emit", "enabled_check", "is_enabled_for", "logging_record"],
    "lttngust": ["is_enabled_for", "logging_record"],
    "none": ["is_enabled_for", "logging_record"],
}


def timed(loop, count, repeats=5):
    """ns per iteration of loop(count), less an empty loop's: the least of `repeats` runs of each (as timeit
    does: a run that another process interrupted is slower, never faster)."""
    def empty(n):
        for i in range(n):
            pass

    def least(f):
        best = None
        for _ in range(repeats):
            start = time.perf_counter_ns()
            f(count)
            elapsed = time.perf_counter_ns() - start
            best = elapsed if best is None else min(best, elapsed)
        return best
    return (least(loop) - least(empty)) / count


def main():
    ap = argparse.ArgumentParser(description="times a Python tracing agent's operations")
    ap.add_argument("--agent", choices=sorted(AGENT_OPS), required=True)
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--ops", default="")
    args = ap.parse_args()
    ops = [o for o in args.ops.split(",") if o] or AGENT_OPS[args.agent]
    unknown = [o for o in ops if o not in AGENT_OPS[args.agent]]
    if unknown:
        ap.error(f"--ops: {','.join(unknown)}: agent {args.agent} has {','.join(AGENT_OPS[args.agent])}")

    root = logging.getLogger()
    request = None
    if args.agent == "tracery":
        import tracery
        root.addHandler(tracery.LoggingHandler())
        request = tracery.Event("bench:request", id=int, path=str, ok=bool, ms=float)
    elif args.agent == "lttngust":
        # Registers with lttng-sessiond before the import returns.
        importlib.import_module("lttngust")
    else:
        root.addHandler(logging.NullHandler())
    logger = logging.getLogger("bench.agent")
    logger.setLevel(logging.INFO)
    INFO = logging.INFO

    def typed_emit(n):
        for i in range(n):
            request.emit(id=i, path="/index.html", ok=True, ms=1.5)

    def enabled_check(n):
        for i in range(n):
            if request.enabled:
                pass

    def is_enabled_for(n):
        for i in range(n):
            if logger.isEnabledFor(INFO):
                pass

    def logging_record(n):
        for i in range(n):
            logger.info("request %d took %.1f ms", i, 1.5)

    loops = {"typed_emit": typed_emit, "enabled_check": enabled_check, "is_enabled_for": is_enabled_for,
             "logging_record": logging_record}
    for op in ops:
        # Records cost 100 times what a check does: a tenth of the iterations keeps each run short.
        count = args.count // 10 if op == "logging_record" else args.count
        loops[op](1000)  # warm-up
        print(f"op {op} ns_per_op {timed(loops[op], max(count, 1)):.2f}", flush=True)


if __name__ == "__main__":
    main()
