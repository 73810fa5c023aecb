#!/usr/bin/python3
# ctf/ctf_roundtrip_dump.py — prints every message of a CTF trace read with
# babeltrace2's Python bindings (bt2), one line each, in a canonical form that
# ctf_roundtrip_test.cpp compares value by value:
#   B <sc> <s> <cycles>              stream beginning of stream class sc, stream s (no clock)
#   P <sc> <s> <cycles> <context>    packet beginning (cycles = timestamp_begin)
#   E <sc> <s> <cycles> <ns_from_origin> <name> <context> <payload>
#   Q <sc> <s> <cycles>              packet end (cycles = timestamp_end)
#   D <sc> <s> <count> <begin> <end> discarded events
#   L <sc> <s> <count> <begin> <end> discarded packets
#   X <sc> <s>                       stream end
# Values: integers in decimal; enumerations as value{"label","label"} (sorted);
# reals as the hex bit pattern of the double (big-endian), or nan;
# strings as "s:" + hex of their UTF-8 bytes; arrays as [a,b]; structures as
# {name=value,...}; a missing scope as -.
# Usage: ctf_roundtrip_dump.py TRACE_DIR
import math
import struct
import sys

import bt2


def fmt(f):
    if isinstance(f, bt2._EnumerationFieldConst):
        return "%d{%s}" % (int(f), ",".join('"%s"' % l for l in sorted(f.labels)))
    if isinstance(f, bt2._IntegerFieldConst):
        return str(int(f))
    if isinstance(f, bt2._RealFieldConst):
        v = float(f)
        if math.isnan(v):
            return "nan"
        return struct.pack(">d", v).hex()
    if isinstance(f, bt2._StringFieldConst):
        return "s:" + str(f).encode("utf-8").hex()
    if isinstance(f, bt2._StructureFieldConst):
        return "{" + ",".join("%s=%s" % (k, fmt(v)) for k, v in f.items()) + "}"
    if isinstance(f, bt2._ArrayFieldConst):
        return "[" + ",".join(fmt(e) for e in f) + "]"
    if isinstance(f, bt2._BoolFieldConst):
        return "true" if bool(f) else "false"
    raise TypeError("unexpected field type %r" % type(f))


def opt(f):
    return "-" if f is None else fmt(f)


def sid(stream):
    return "%d %d" % (stream.cls.id, stream.id)


def cs(snapshot):
    return "-" if snapshot is None else str(snapshot.value)


def main():
    out = []
    for msg in bt2.TraceCollectionMessageIterator(sys.argv[1]):
        if isinstance(msg, bt2._EventMessageConst):
            ev = msg.event
            out.append("E %s %d %d %s %s %s" % (
                sid(ev.stream), msg.default_clock_snapshot.value,
                msg.default_clock_snapshot.ns_from_origin, ev.cls.name,
                opt(ev.common_context_field), opt(ev.payload_field)))
        elif isinstance(msg, bt2._PacketBeginningMessageConst):
            out.append("P %s %d %s" % (sid(msg.packet.stream), msg.default_clock_snapshot.value,
                                       opt(msg.packet.context_field)))
        elif isinstance(msg, bt2._PacketEndMessageConst):
            out.append("Q %s %d" % (sid(msg.packet.stream), msg.default_clock_snapshot.value))
        elif isinstance(msg, bt2._DiscardedEventsMessageConst):
            out.append("D %s %s %s %s" % (sid(msg.stream), msg.count,
                                          cs(msg.beginning_default_clock_snapshot),
                                          cs(msg.end_default_clock_snapshot)))
        elif isinstance(msg, bt2._DiscardedPacketsMessageConst):
            out.append("L %s %s %s %s" % (sid(msg.stream), msg.count,
                                          cs(msg.beginning_default_clock_snapshot),
                                          cs(msg.end_default_clock_snapshot)))
        elif isinstance(msg, bt2._StreamBeginningMessageConst):
            out.append("B %s" % sid(msg.stream))
        elif isinstance(msg, bt2._StreamEndMessageConst):
            out.append("X %s" % sid(msg.stream))
    sys.stdout.write("".join(line + "\n" for line in out))


if __name__ == "__main__":
    main()
