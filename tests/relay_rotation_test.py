#!/usr/bin/env python3
"""Rotation through the relay: a session sent to a real tracery-relayd (`create --set-url net://...`) rotated
by `tracery rotate`, then `enable-rotation --size` and `--timer`, while a program emits. The relay archives each
chunk as a local rotation does (SESSION-DIR/archives/BEGIN-END-ID/ust, LTTng's naming, IDs from 0 without a
gap); each archive is a trace babeltrace2 reads alone without a word on stderr; all of them together, read by
`tracery view` on the relay's session directory, hold exactly the events emitted, none lost and none twice.
With --local-copy the local archives and the relay's hold the same events chunk by chunk. A live session does
not rotate, and `clear` is refused for a session sent to a relay, each saying why. --tracefile-size/-count of a
session sent to the relay: the relay keeps each stream a ring of files, within its bound, read by babeltrace2
without a warning, the newest events there."""
import collections
import os
import re
import shutil
import subprocess
import unittest

from daemontest import DaemonTestCase
from relaytest import RelayBesideDaemon
from rotation_test import Chunks
from tracetest import FlatTrace, program


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelayRotation(Chunks, RelayBesideDaemon, DaemonTestCase):
    def sent_session(self, name, *create_args):
        self.d.tracery("create", name, "--set-url", self.url, *create_args)
        self.d.tracery("enable-channel", "-u", "chan", "-s", name, "--subbuf-size", "16k", "--num-subbuf", "8")
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", name, "-c", "chan")
        self.d.tracery("start", name)

    def end(self, name):
        self.d.tracery("stop", name)
        self.d.tracery("destroy", name)  # archives the last chunk, then BYE
        self.relay.wait_log(f"/{name}-", "ended with BYE")
        dirs = self.relay.sessions(name)
        self.assertEqual(len(dirs), 1, "one connection, one directory of the relay")
        return dirs[0]

    def test_rotations_through_the_relay_lose_and_repeat_nothing(self):
        per_round, rounds = 2000, 14
        self.d.start_daemon()
        self.sent_session("rr")
        emitter = self.start_emitter(per_round)
        self.emit_rounds(emitter, 1, 2)
        out = self.d.tracery("rotate", "rr").stdout
        self.assertRegex(out, r"readable at \S+/rr-\d{8}-\d{6}/archives/\d{8}T\d{6}[+-]\d{4}-\d{8}T\d{6}[+-]\d{4}-0 "
                              rf"on the relay at 127\.0\.0\.1:{self.relay.port}")
        # By size: a round is some 50 KiB of packets, so 64 KiB chunks end every round or two.
        self.d.tracery("enable-rotation", "-s", "rr", "--size=64k")
        self.emit_rounds(emitter, 3, 8, pause=0.15)
        self.d.tracery("disable-rotation", "-s", "rr", "--size")
        self.d.tracery("enable-rotation", "-s", "rr", "--timer=300ms")
        self.emit_rounds(emitter, 9, rounds, pause=0.1)
        status = self.d.tracery("status", "rr").stdout
        self.assertRegex(status, r"rotation: every 300 ms; \d+ chunks archived; current chunk: chunk \d+ of the "
                                 r"relay's copy\n *last archived chunk: \S+/archives/\S+ on the relay at ")
        self.d.tracery("disable-rotation", "-s", "rr")
        archived = int(re.search(r"(\d+) chunks archived", self.d.tracery("status", "rr").stdout).group(1))
        self.assertGreaterEqual(archived, 4)
        self.finish(emitter)
        copy = self.end("rr")
        self.assertEqual(sorted(os.listdir(copy)), ["archives"], "every chunk is archived, nothing else is left")
        chunks = self.archives(copy)
        self.assertEqual(len(chunks), archived + 1, "the chunks rotated, and the last one archived at destroy")
        together = collections.Counter()
        for chunk in chunks:
            self.assertEqual(sorted(os.listdir(chunk)), ["ust"], chunk)
            together.update(self.check_alone(chunk))
        expected = collections.Counter({r: per_round for r in range(1, rounds + 1)})
        self.assertEqual(together, expected, "babeltrace2, chunk by chunk")
        self.assertEqual(self.viewed(copy), expected, "tracery view of the relay's session directory")

    def test_local_copy_and_relay_archive_the_same_chunks(self):
        self.d.start_daemon()
        path = self.out("both")
        self.sent_session("both", "--local-copy", "--output", path)
        emitter = self.start_emitter(300)
        self.emit_rounds(emitter, 1, 2)
        self.d.tracery("rotate", "both")
        self.emit_rounds(emitter, 3, 3)
        self.d.tracery("rotate", "both")
        self.emit_rounds(emitter, 4, 5)
        self.finish(emitter)
        copy = self.end("both")
        local = [collections.Counter(self.check_alone(c)) for c in self.archives(path)]
        sent = [collections.Counter(self.check_alone(c)) for c in self.archives(copy)]
        self.assertEqual(local, [{1: 300, 2: 300}, {3: 300}, {4: 300, 5: 300}])
        self.assertEqual(sent, local)
        self.assertEqual([os.path.basename(c) for c in self.archives(copy)],
                         [os.path.basename(c) for c in self.archives(path)], "the same names")

    def test_refusals(self):
        self.d.start_daemon()
        self.d.tracery("create", "lv", "--live", f"--set-url={self.url}")
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", "lv")
        self.d.tracery("start", "lv")
        for verb in (["rotate", "lv"], ["enable-rotation", "-s", "lv", "--timer=1s"]):
            r = self.d.tracery(*verb, check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("session 'lv' is live", r.stderr)
        self.d.tracery("destroy", "lv")
        self.sent_session("cl")
        r = self.d.tracery("clear", "cl", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has no local trace (it is only sent to a relay)", r.stderr)
        self.d.tracery("destroy", "cl")


    def test_tracefile_ring_on_the_relay_stays_under_its_bound(self):
        size, count, header, events = 16 * 1024, 3, 84, 100_000
        self.d.start_daemon()
        self.d.tracery("create", "tf", "--set-url", self.url)
        # Blocking: nothing is lost, so the events kept are exactly the newest files' ones.
        self.d.tracery("enable-channel", "-u", "chan", "-s", "tf", "--subbuf-size", "4k", "--num-subbuf", "4",
                       "--tracefile-size", "16k", "--tracefile-count", str(count), "--blocking-timeout=inf")
        self.d.tracery("enable-event", "-u", "blocking:*", "-s", "tf", "-c", "chan")
        self.d.tracery("start", "tf")
        self.d.run([program("tests", "blocking-emitter"), "threads", "1", str(events)])
        copy = self.end("tf")
        ust = os.path.join(copy, "ust")
        streams = collections.defaultdict(list)
        for name in os.listdir(ust):
            m = re.fullmatch(r"(chan_uid\d+_\d+)_(\d+)", name)
            if m:
                streams[m.group(1)].append((int(m.group(2)), os.path.getsize(os.path.join(ust, name))))
                self.assertTrue(os.path.isfile(os.path.join(ust, "index", name + ".idx")), name)
            else:
                self.assertIn(name, ("metadata", "index"))
        self.assertTrue(streams)
        for stream, files in streams.items():
            self.assertLessEqual(len(files), count, stream)
            self.assertLessEqual(sum(s for _, s in files), count * (size + header), stream)
            numbers = sorted(n for n, _ in files)
            self.assertEqual(numbers, list(range(numbers[0], numbers[0] + len(numbers))), stream)
        self.assertGreater(max(n for files in streams.values() for n, _ in files), count, "files were deleted")
        self.assertEqual(sorted(os.listdir(os.path.join(ust, "index"))),
                         sorted(f"{s}_{n}.idx" for s, files in streams.items() for n, _ in files))
        bt = subprocess.run(["babeltrace2", ust], capture_output=True, text=True, timeout=120)
        self.assertEqual((bt.returncode, bt.stderr), (0, ""))
        seen = [e["fields"]["i"] for e in FlatTrace(ust).named("blocking:seq")]
        self.assertEqual(len(seen), len(set(seen)))
        self.assertLess(len(seen), events)
        self.assertIn(events - 1, seen, "the last event")


if __name__ == "__main__":
    unittest.main()
