#!/usr/bin/python3
# kernel/kernel_session_dump.py — prints the messages of the traces under
# DIR as babeltrace2's Python bindings (bt2) read them, merged into one
# timeline, one JSON object per line, for kernel_session_test.cpp:
#   {"e": NAME, "d": DOMAIN, "t": NS_FROM_ORIGIN, "cpu": CPU_ID, "f": {FIELD: VALUE},
#    "c": {CONTEXT FIELD: VALUE}}
#   {"discarded": COUNT, "d": DOMAIN, "cpu": CPU_ID}
# DOMAIN is the trace's env.domain; CPU_ID the packet context's (or -1).
# Usage: kernel_session_dump.py DIR
import json
import sys

import bt2


def value(f):
    if isinstance(f, bt2._IntegerFieldConst):
        return int(f)
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._ArrayFieldConst):
        return [value(e) for e in f]
    if isinstance(f, bt2._StructureFieldConst):
        return {k: value(v) for k, v in f.items()}
    return repr(f)


def domain(stream):
    env = stream.trace.environment
    return str(env["domain"]) if "domain" in env else ""


def cpu(packet):
    ctx = packet.context_field if packet is not None else None
    return int(ctx["cpu_id"]) if ctx is not None and "cpu_id" in ctx else -1


def main():
    for msg in bt2.TraceCollectionMessageIterator(sys.argv[1]):
        if isinstance(msg, bt2._EventMessageConst):
            ev = msg.event
            print(json.dumps({"e": ev.cls.name, "d": domain(ev.stream),
                              "t": msg.default_clock_snapshot.ns_from_origin,
                              "cpu": cpu(ev.packet), "f": value(ev.payload_field) if ev.payload_field else {},
                              "c": value(ev.common_context_field) if ev.common_context_field else {}}))
        elif isinstance(msg, bt2._DiscardedEventsMessageConst):
            print(json.dumps({"discarded": msg.count, "d": domain(msg.stream), "cpu": -1}))


main()
