"""Helpers shared by the integration tests: run instrumented programs and read
their traces with babeltrace2 (python3-bt2, the reference CTF reader).

Run with Debian's /usr/bin/python3, which has the bt2 module. Paths of the
built programs come from the environment set by CTest (TRACERY_BUILD_DIR).
"""
import math
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import bt2

BUILD_DIR = os.environ.get("TRACERY_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "build"))


def program(*parts):
    """Path of a built program, e.g. program('bench', 'tracery-bench')."""
    path = os.path.join(BUILD_DIR, *parts)
    if not os.path.exists(path):
        raise unittest.SkipTest(f"{path} is not built")
    return path


def run_traced(argv, trace_dir, extra_env=None, check=True, timeout=300):
    """Runs argv in daemonless mode writing its trace to trace_dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACERY_")}
    env["TRACERY_OUTPUT"] = trace_dir
    env.update(extra_env or {})
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


class Trace:
    """Every event of a trace as plain Python values, and its discarded-event count."""

    def __init__(self, path):
        self.events = []
        self.discarded = 0
        self.discarded_packets = 0
        for msg in bt2.TraceCollectionMessageIterator(path):
            if type(msg) is bt2._EventMessageConst:
                ev = msg.event
                self.events.append({
                    "name": ev.name,
                    "ts": msg.default_clock_snapshot.ns_from_origin,
                    "cpu": int(ev.packet.context_field["cpu_id"]),
                    "payload": to_python(ev.payload_field),
                    "context": to_python(ev.common_context_field) if ev.common_context_field is not None else {},
                })
            elif type(msg) is bt2._DiscardedEventsMessageConst:
                self.discarded += msg.count or 0
            elif type(msg) is bt2._DiscardedPacketsMessageConst:
                self.discarded_packets += msg.count or 0

    def named(self, name):
        return [e for e in self.events if e["name"] == name]


class FlatTrace:
    """The events of a large trace whose fields are all integers (decimal, or
    hex as babeltrace2 shows addresses, read as unsigned) or plain strings (no
    quote, backslash, comma or brace), read from babeltrace2's text output
    (about 5 times faster than Trace, whose cost is bt2's Python objects):
    each event is its name and one dict of every field it shows
    (packet context, contexts and payload; their names must not collide), and
    the discarded counts come from babeltrace2's warnings. A field it cannot
    read that way fails the test instead of being misread."""

    _LINE = re.compile(r"^\[[^]]*\] \S+ ([^:\s]+:[^:\s]+): (.*)$")
    _INTEGER = re.compile(r"-?\d+\Z")
    _HEX = re.compile(r"0x[0-9A-F]+\Z")
    _STRING = re.compile(r'"[^"\\,{}]*"\Z')
    _DISCARDED = re.compile(r"discarded (\d+) (event|packet)s? ")

    def __init__(self, path):
        proc = subprocess.run(["babeltrace2", "--no-delta", path], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise AssertionError(f"babeltrace2 {path} exited {proc.returncode}: {proc.stderr}")
        self.stderr = proc.stderr
        self.discarded = self.discarded_packets = 0
        for count, what in self._DISCARDED.findall(proc.stderr):
            if what == "event":
                self.discarded += int(count)
            else:
                self.discarded_packets += int(count)
        self.events = [self._event(line) for line in proc.stdout.splitlines()]

    @classmethod
    def _event(cls, line):
        m = cls._LINE.match(line)
        if not m:
            raise AssertionError(f"not an event line of babeltrace2: {line!r}")
        fields = {}
        groups = m.group(2)
        if not (groups.startswith("{ ") and groups.endswith(" }")):
            raise AssertionError(f"unexpected fields in {line!r}")
        for group in groups[2:-2].split(" }, { "):
            for item in group.split(", "):
                name, _, value = item.partition(" = ")
                if not name.isidentifier() or name in fields:
                    raise AssertionError(f"not a field, or a name shown twice: {item!r} in {line!r}")
                if cls._INTEGER.match(value):
                    fields[name] = int(value)
                elif cls._HEX.match(value):
                    fields[name] = int(value, 16)
                elif cls._STRING.match(value):
                    fields[name] = value[1:-1]
                else:
                    raise AssertionError(f"not a plain integer or string: {item!r} in {line!r}")
        return {"name": m.group(1), "fields": fields}

    def named(self, name):
        return [e for e in self.events if e["name"] == name]


def to_python(field):
    """Converts a bt2 field to Python values (enums give (value, labels))."""
    if isinstance(field, bt2._StructureFieldConst):
        return {k: to_python(v) for k, v in field.items()}
    if isinstance(field, bt2._StringFieldConst):
        return str(field)
    if isinstance(field, (bt2._ArrayFieldConst,)):
        return [to_python(v) for v in field]
    if isinstance(field, bt2._EnumerationFieldConst):
        return (int(field), sorted(field.labels))
    if isinstance(field, bt2._BoolFieldConst):
        return bool(field)
    if isinstance(field, bt2._RealFieldConst):
        return float(field)
    if isinstance(field, bt2._IntegerFieldConst):
        return int(field)
    raise TypeError(f"unexpected field {type(field)}")


def babeltrace2_text(path):
    """babeltrace2's text output and its stderr (which must stay empty)."""
    proc = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def same_float(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


class TraceDirTestCase(unittest.TestCase):
    """Gives each test a fresh, empty trace directory name, removed afterwards."""

    def setUp(self):
        if shutil.which("babeltrace2") is None:
            self.skipTest("babeltrace2 is not installed")
        self.tmp = tempfile.mkdtemp(prefix="tracery-test-")
        self.trace_dir = os.path.join(self.tmp, "trace")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
