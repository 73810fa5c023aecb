#!/usr/bin/env python3
"""Rotation and clear under traceryd: `tracery rotate`, `enable-rotation --size/--timer`, `disable-rotation`
and `clear` while a program emits. Each archived chunk (OUTPUT/archives/BEGIN-END-ID, LTTng's naming) is a
trace that babeltrace2 reads alone without a word on stderr; all of them together, read by `tracery view` on
the session's output directory, hold exactly the events emitted, none lost and none twice (the buffers are
far larger than a round, so nothing is discarded); after `clear`, only the events emitted later remain.
A session with kernel events rotates its user and kernel traces together (root and tracefs: skipped
otherwise): its system calls, marked by the file descriptor the test closes, are each in one chunk."""
import collections
import json
import os
import re
import subprocess
import time
import unittest

from daemontest import DaemonTestCase, read_line
from kerneltest import KernelMixin
from tracetest import program

CHUNK = re.compile(r"^(\d{8}T\d{6}[+-]\d{4})-(\d{8}T\d{6}[+-]\d{4})-(\d+)$")
TICK = re.compile(r"emit:tick: .*\{ i = (\d+) \}")
# A kernel session's marker: close() of a descriptor no process has, MARK + the round.
MARK = 100_000
CLOSE = re.compile(r"syscall_entry_close: .*\{ fd = (\d+) \}")


class Chunks:
    """What the rotation tests share: rounds emitted, the archives listed and read."""

    def emit_rounds(self, emitter, first, last, pause=0.0):
        """Rounds first..last of `daemon-emitter rounds N` (each N emit:tick of value R), pause seconds apart."""
        for r in range(first, last + 1):
            emitter.stdin.write("go\n")
            emitter.stdin.flush()
            self.assertEqual(read_line(emitter, "round"), [str(r)])
            time.sleep(pause)

    def archives(self, path):
        """The archived chunks, by ID: their directory names checked against LTTng's naming."""
        names = os.listdir(os.path.join(path, "archives"))
        by_id = {}
        for name in names:
            m = CHUNK.match(name)
            self.assertIsNotNone(m, f"archive {name} is not named BEGIN-END-ID")
            self.assertLessEqual(m.group(1), m.group(2), name)
            by_id[int(m.group(3))] = os.path.join(path, "archives", name)
        self.assertEqual(sorted(by_id), list(range(len(by_id))), "chunk IDs count from 0 without a gap")
        return [by_id[i] for i in sorted(by_id)]

    def read_alone(self, chunk, traces=("ust",)):
        """babeltrace2's text of the chunk read alone, which must hold the traces named and give no warning."""
        for trace in traces:
            self.assertTrue(os.path.isfile(os.path.join(chunk, trace, "metadata")), f"{chunk}/{trace}")
        proc = subprocess.run(["babeltrace2", chunk], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "", f"babeltrace2 {chunk} warned")
        return proc.stdout

    def check_alone(self, chunk):
        """babeltrace2 reads the chunk alone, without a warning; returns its emit:tick values."""
        return [int(m.group(1)) for m in TICK.finditer(self.read_alone(chunk))]

    def viewed(self, path):
        """The emit:tick values `tracery view` shows of the session's output directory, counted."""
        out = self.d.tracery("view", path).stdout
        return collections.Counter(int(m.group(1)) for m in TICK.finditer(out))

    def start_emitter(self, per_round):
        emitter, _ = self.d.spawn_registered([program("tests", "daemon-emitter"), "rounds", str(per_round)])
        return emitter

    def finish(self, emitter):
        emitter.stdin.close()
        self.assertEqual(emitter.wait(timeout=30), 0)
        emitter.stdout.close()
        emitter.stderr.close()


class Rotation(Chunks, DaemonTestCase):
    def test_rotation_by_size_then_timer_loses_and_repeats_nothing(self):
        per_round, rounds = 2000, 24
        self.d.start_daemon()
        path = self.session("r", events=("emit:tick",), channel_args=["--subbuf-size", "16k", "--num-subbuf", "8"])
        self.d.tracery("start")
        emitter = self.start_emitter(per_round)
        # By size first: a round is some 50 KiB of packets, so 64 KiB chunks end every round or two.
        out = self.d.tracery("enable-rotation", "--size=64k").stdout
        self.assertIn("when its chunk holds 64 KiB", out)
        self.emit_rounds(emitter, 1, rounds // 2, pause=0.15)
        by_size = len(os.listdir(os.path.join(path, "archives")))
        self.assertGreaterEqual(by_size, 3, "rotations by size")
        # Then by time only: a round every 0.1 s, a rotation every 0.4 s.
        self.d.tracery("disable-rotation", "--size")
        self.d.tracery("enable-rotation", "--timer=400ms")
        self.emit_rounds(emitter, rounds // 2 + 1, rounds, pause=0.1)
        time.sleep(0.5)
        self.assertGreater(len(os.listdir(os.path.join(path, "archives"))), by_size, "rotations by the timer")
        status = self.d.tracery("status").stdout
        self.assertRegex(status, r"rotation: every 400 ms; \d+ chunks? archived; current chunk: " + re.escape(path))
        self.assertIn("last archived chunk: " + os.path.join(path, "archives"), status)
        self.d.tracery("disable-rotation")
        self.finish(emitter)
        self.d.tracery("stop")
        self.d.tracery("destroy")  # archives the last chunk
        self.assertEqual(sorted(os.listdir(path)), ["archives"], "every chunk is archived")
        chunks = self.archives(path)
        together = collections.Counter()
        for chunk in chunks:
            together.update(self.check_alone(chunk))
        expected = collections.Counter({r: per_round for r in range(1, rounds + 1)})
        self.assertEqual(together, expected, "babeltrace2, chunk by chunk")
        self.assertEqual(self.viewed(path), expected, "tracery view of the session's directory")
        stats = json.loads(self.d.tracery("stats", "--json", path).stdout)
        self.assertEqual(stats["total"][0]["count"], per_round * rounds, "tracery stats of every chunk")
        # babeltrace2 given the whole directory: the chunks of one trace (one UUID), as LTTng's are read.
        proc = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=120)
        self.assertEqual((proc.returncode, proc.stderr), (0, ""))
        self.assertEqual(collections.Counter(int(m.group(1)) for m in TICK.finditer(proc.stdout)), expected)

    def test_rotate_archives_the_current_chunk(self):
        self.d.start_daemon()
        path = self.session("m", events=("emit:tick",))
        self.d.tracery("start")
        emitter = self.start_emitter(100)
        self.emit_rounds(emitter, 1, 2)
        first = re.search(r"readable at (\S+)", self.d.tracery("rotate").stdout).group(1)
        self.assertEqual(os.path.dirname(first), os.path.join(path, "archives"))
        self.assertEqual(collections.Counter(self.check_alone(first)), {1: 100, 2: 100},
                         "the buffers' partial sub-buffers are in the archive")
        self.emit_rounds(emitter, 3, 3)
        self.assertIn("under way", self.d.tracery("rotate", "--no-wait").stdout)
        deadline = time.time() + 10
        while len(os.listdir(os.path.join(path, "archives"))) < 2 and time.time() < deadline:
            time.sleep(0.05)
        self.emit_rounds(emitter, 4, 4)
        self.finish(emitter)
        self.d.tracery("stop")
        # A stopped session rotates once: what it recorded since the last rotation.
        self.d.tracery("rotate", "m")
        again = self.d.tracery("rotate", "m", check=False)
        self.assertNotEqual(again.returncode, 0)
        self.assertIn("recorded nothing since its last rotation", again.stderr)
        chunks = self.archives(path)
        self.assertEqual(len(chunks), 3)
        self.assertEqual([collections.Counter(self.check_alone(c)) for c in chunks],
                         [{1: 100, 2: 100}, {3: 100}, {4: 100}])
        self.assertIn("3 chunks archived", self.d.tracery("status").stdout)
        self.d.tracery("destroy")
        self.assertEqual(len(self.archives(path)), 3, "an empty last chunk is removed, not archived")

    def test_shutdown_archives_the_last_chunk(self):
        self.d.start_daemon()
        path = self.session("d", events=("emit:tick",))
        self.d.tracery("start")
        emitter = self.start_emitter(100)
        self.emit_rounds(emitter, 1, 1)
        self.d.tracery("rotate")
        self.emit_rounds(emitter, 2, 2)
        self.finish(emitter)
        self.d.kill_daemon()  # SIGTERM: the sessions are stopped, the last chunk archived as destroy would
        self.assertEqual(sorted(os.listdir(path)), ["archives"])
        self.assertEqual([collections.Counter(self.check_alone(c)) for c in self.archives(path)],
                         [{1: 100}, {2: 100}])

    def test_clear_keeps_only_later_events(self):
        self.d.start_daemon()
        path = self.session("c", events=("emit:tick",))
        self.d.tracery("start")
        emitter = self.start_emitter(500)
        self.emit_rounds(emitter, 1, 3)
        self.assertIn("cleared", self.d.tracery("clear").stdout)
        self.emit_rounds(emitter, 4, 5)
        self.d.tracery("stop")
        self.assertEqual(self.viewed(path), {4: 500, 5: 500})
        # Stopped: its files go; a new start writes new ones beside the metadata.
        out = self.d.tracery("clear", "c").stdout
        self.assertRegex(out, r"\([1-9]\d* trace files removed\)")
        self.d.tracery("start")
        self.emit_rounds(emitter, 6, 6)
        self.finish(emitter)
        self.d.tracery("stop")
        self.assertEqual(self.viewed(path), {6: 500})

    def test_overwrite_channel_writes_at_stop_into_the_last_chunk(self):
        self.d.start_daemon()
        path = self.session("o", events=("emit:tick",), channel_args=["--overwrite"])
        self.d.tracery("start")
        emitter = self.start_emitter(300)
        self.emit_rounds(emitter, 1, 2)
        self.d.tracery("rotate")  # its buffers move at once: an overwrite channel is written at stop
        self.emit_rounds(emitter, 3, 3)
        self.finish(emitter)
        self.d.tracery("stop")
        self.d.tracery("destroy")
        chunks = self.archives(path)
        self.assertEqual(len(chunks), 2)
        self.assertEqual(self.check_alone(chunks[0]), [])
        self.assertEqual(collections.Counter(self.check_alone(chunks[1])), {1: 300, 2: 300, 3: 300})

    def test_refusals(self):
        self.d.start_daemon()
        self.session("s", "--snapshot")
        for verb in (["rotate", "s"], ["enable-rotation", "-s", "s", "--timer=1s"], ["clear", "s"]):
            proc = self.d.tracery(*verb, check=False)
            self.assertNotEqual(proc.returncode, 0, verb)
            self.assertIn("snapshot", proc.stderr)
        self.session("t")
        for bad in ("--timer=soon", "--size=lots", "--timer=10ms"):
            proc = self.d.tracery("enable-rotation", "-s", "t", bad, check=False)
            self.assertNotEqual(proc.returncode, 0, bad)
            self.assertRegex(proc.stderr, r"--(timer|size)")
        proc = self.d.tracery("enable-rotation", "-s", "t", check=False)
        self.assertIn("give --timer=PERIOD, --size=SIZE or both", proc.stderr)
        proc = self.d.tracery("rotate", "t", check=False)
        self.assertIn("recorded nothing since it was created", proc.stderr)
        proc = self.d.tracery("disable-rotation", "-s", "t", check=False)
        self.assertIn("has no rotation schedule", proc.stderr)


class KernelChunks(Chunks):
    """Chunks of a session with kernel events: rounds marked by a system call."""

    def track_closes(self, name, all_syscalls=False):
        """The session records the close() calls (or all system calls) of this test's own threads: not of its
        children (the relay, the emitter, a `tracery` command), whose calls would only fill the trace."""
        self.d.tracery("enable-event", "-k", "--syscall", *(["-a"] if all_syscalls else ["close"]), "-s", name)
        self.d.tracery("track", "-k", "--pid", str(os.getpid()), "--no-follow-children", "-s", name)

    def emit_marked_rounds(self, emitter, first, last, pause=0.0):
        """Each round preceded by close(MARK + R), a system call the kernel trace records."""
        for r in range(first, last + 1):
            with self.assertRaises(OSError):
                os.close(MARK + r)
            self.emit_rounds(emitter, r, r, pause)

    def marks(self, text):
        return [int(m.group(1)) - MARK for m in CLOSE.finditer(text) if int(m.group(1)) > MARK]


class KernelRotation(KernelChunks, KernelMixin, DaemonTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()

    def kernel_session(self, name):
        """A session of emit:tick (small sub-buffers: written as it goes) and of the close() calls of this test
        and its children."""
        path = self.session(name, events=("emit:tick",), channel_args=["--subbuf-size", "16k", "--num-subbuf", "8"])
        self.track_closes(name)
        return path

    def test_user_and_kernel_traces_rotate_together(self):
        per_round, rounds = 1000, 16
        self.d.start_daemon()
        path = self.kernel_session("k")
        self.d.tracery("start")
        emitter = self.start_emitter(per_round)
        self.d.tracery("enable-rotation", "--size=64k")
        self.emit_marked_rounds(emitter, 1, rounds // 2, pause=0.15)
        self.d.tracery("disable-rotation")
        self.d.tracery("enable-rotation", "--timer=300ms")
        self.emit_marked_rounds(emitter, rounds // 2 + 1, rounds, pause=0.1)
        self.d.tracery("disable-rotation")
        deadline = time.time() + 10
        while True:  # a rotation by the timer may be under way: rotate refuses until it ends
            proc = self.d.tracery("rotate", check=False)
            if proc.returncode == 0 or "being rotated" not in proc.stderr or time.time() > deadline:
                break
            time.sleep(0.05)
        self.assertIn("readable at", proc.stdout, proc.stderr)
        self.finish(emitter)
        self.assertIn("channel0 (kernel): 0 events lost", self.d.tracery("stop").stdout)
        self.d.tracery("destroy")
        chunks = self.archives(path)
        self.assertGreaterEqual(len(chunks), 4, "rotations by size, by the timer and by rotate")
        ticks, marks = collections.Counter(), collections.Counter()
        for chunk in chunks:
            text = self.read_alone(chunk, ("ust", "kernel"))
            ticks.update(int(m.group(1)) for m in TICK.finditer(text))
            marks.update(self.marks(text))
        self.assertEqual(ticks, collections.Counter({r: per_round for r in range(1, rounds + 1)}))
        self.assertEqual(marks, collections.Counter(range(1, rounds + 1)), "each close() in one chunk")
        self.assertGreater(sum(1 for c in chunks if self.marks(self.read_alone(c, ("ust", "kernel")))), 2,
                           "the kernel trace's events are spread over the chunks")
        view = self.d.tracery("view", path).stdout
        self.assertEqual(collections.Counter(int(m.group(1)) for m in TICK.finditer(view)), ticks)
        self.assertEqual(collections.Counter(self.marks(view)), marks, "tracery view of every chunk")
        whole = self.read_alone(path, ())
        self.assertEqual(collections.Counter(self.marks(whole)), marks, "babeltrace2 of the output directory")

    def test_clear_of_a_kernel_session(self):
        self.d.start_daemon()
        path = self.kernel_session("c")
        self.d.tracery("start")
        emitter = self.start_emitter(200)
        self.emit_marked_rounds(emitter, 1, 2)
        self.assertIn("cleared", self.d.tracery("clear").stdout)
        self.emit_marked_rounds(emitter, 3, 4)
        self.d.tracery("stop")
        view = self.d.tracery("view", path).stdout
        self.assertEqual(self.marks(view), [3, 4])
        self.assertEqual(collections.Counter(int(m.group(1)) for m in TICK.finditer(view)), {3: 200, 4: 200})
        # Stopped: its kernel streams are still open; a clear begins a new chunk for them.
        self.assertIn("cleared", self.d.tracery("clear", "c").stdout)
        self.d.tracery("start")
        self.emit_marked_rounds(emitter, 5, 5)
        self.finish(emitter)
        self.d.tracery("stop")
        view = self.d.tracery("view", path).stdout
        self.assertEqual(self.marks(view), [5])
        self.assertEqual(collections.Counter(int(m.group(1)) for m in TICK.finditer(view)), {5: 200})
        self.d.tracery("destroy")
        # The chunks cleared are gone; the last one is archived.
        archives = os.listdir(os.path.join(path, "archives"))
        self.assertEqual(len(archives), 1, archives)
        self.assertEqual(self.marks(self.read_alone(os.path.join(path, "archives", archives[0]), ("ust", "kernel"))),
                         [5])


if __name__ == "__main__":
    unittest.main()
