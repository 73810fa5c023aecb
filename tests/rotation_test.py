#!/usr/bin/env python3
"""Rotation and clear under traceryd: `tracery rotate`, `enable-rotation --size/--timer`, `disable-rotation`
and `clear` while a program emits. Each archived chunk (OUTPUT/archives/BEGIN-END-ID, LTTng's naming) is a
trace that babeltrace2 reads alone without a word on stderr; all of them together, read by `tracery view` on
the session's output directory, hold exactly the events emitted, none lost and none twice (the buffers are
far larger than a round, so nothing is discarded); after `clear`, only the events emitted later remain."""
import collections
import json
import os
import re
import subprocess
import time
import unittest

from daemontest import DaemonTestCase, read_line
from tracetest import program

CHUNK = re.compile(r"^(\d{8}T\d{6}[+-]\d{4})-(\d{8}T\d{6}[+-]\d{4})-(\d+)$")
TICK = re.compile(r"emit:tick: .*\{ i = (\d+) \}")


class Rotation(DaemonTestCase):
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

    def check_alone(self, chunk):
        """babeltrace2 reads the chunk alone, without a warning; returns its emit:tick values."""
        self.assertTrue(os.path.isfile(os.path.join(chunk, "ust", "metadata")), chunk)
        proc = subprocess.run(["babeltrace2", chunk], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "", f"babeltrace2 {chunk} warned")
        return [int(m.group(1)) for m in TICK.finditer(proc.stdout)]

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


if __name__ == "__main__":
    unittest.main()
