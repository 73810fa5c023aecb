#!/usr/bin/env python3
"""enable-channel --tracefile-size/--tracefile-count through a real traceryd:
a long emission into a channel whose streams are limited to 3 files of
16 KiB keeps the disk use of every stream under that bound, and the trace
that is left is read by babeltrace2 without a warning and by tracery view
alike, its last events there; the options' refusals."""
import collections
import os
import re
import subprocess
import unittest

from daemontest import DaemonTestCase
from tracetest import FlatTrace, program

THREADS = 1  # a thread that finishes first could see its last events overwritten by another's
EVENTS = 200_000  # about 4 MiB of events, 80 times the bound
SIZE, COUNT = 16 * 1024, 3
PACKET_HEADER = 84  # a file's first packet goes in whatever its size


class Tracefiles(DaemonTestCase):
    def test_a_ring_of_stream_files_stays_under_its_bound(self):
        self.d.start_daemon()
        # Blocking: nothing is lost, so that the events kept are exactly the newest files' ones.
        path = self.session("s", channel_args=["--subbuf-size", "4k", "--num-subbuf", "4", "--tracefile-size",
                                               "16k", "--tracefile-count", str(COUNT), "--blocking-timeout=inf"],
                            events=("blocking:*",))
        self.d.tracery("start")
        self.d.run([program("tests", "blocking-emitter"), "threads", str(THREADS), str(EVENTS)])
        self.d.tracery("stop")
        self.assertIn(f"trace files: at most 16 KiB each, the newest {COUNT} of each stream kept",
                      self.d.tracery("status").stdout)
        streams = collections.defaultdict(list)
        for name in os.listdir(path):
            m = re.fullmatch(r"(chan_uid\d+_\d+)_(\d+)", name)
            if m:
                streams[m.group(1)].append((int(m.group(2)), os.path.getsize(os.path.join(path, name))))
            else:
                self.assertEqual(name, "metadata")
        self.assertTrue(streams)
        for stream, files in streams.items():
            self.assertLessEqual(len(files), COUNT, stream)
            self.assertLessEqual(sum(size for _, size in files), COUNT * (SIZE + PACKET_HEADER), stream)
            # The newest files: consecutive numbers, ending with the last one made.
            numbers = sorted(n for n, _ in files)
            self.assertEqual(numbers, list(range(numbers[0], numbers[0] + len(numbers))), stream)
        self.assertGreater(max(n for files in streams.values() for n, _ in files), COUNT)  # files were deleted
        bt = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=120)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stderr, "")
        trace = FlatTrace(path)
        seen = [(e["fields"]["thread"], e["fields"]["i"]) for e in trace.named("blocking:seq")]
        self.assertEqual(len(seen), len(set(seen)))
        self.assertLess(len(seen), THREADS * EVENTS)
        self.assertTrue((0, EVENTS - 1) in set(seen), "the last event")
        view = self.d.tracery("view", path)
        self.assertEqual(view.stderr, "")
        self.assertEqual(view.stdout.count("blocking:seq"), len(seen))
        self.assertEqual(view.stdout, bt.stdout)

    def test_refusals(self):
        self.d.start_daemon()
        self.d.tracery("create", "s", "--output", self.out("s"))
        for args, says in [(["--tracefile-count", "2"], "--tracefile-count needs --tracefile-size"),
                           (["--subbuf-size", "64k", "--tracefile-size", "16k"], "less than a packet"),
                           (["--tracefile-size", "1k"], "bad --tracefile-size '1k'"),
                           (["--tracefile-size", "16k", "--tracefile-count", "0"], "bad --tracefile-count '0'")]:
            proc = self.d.tracery("enable-channel", "-u", "c", *args, check=False)
            self.assertNotEqual(proc.returncode, 0, args)
            self.assertIn(says, proc.stderr, args)
        self.d.tracery("create", "snap", "--snapshot", "--output", self.out("snap"))
        proc = self.d.tracery("enable-channel", "-u", "c", "-s", "snap", "--tracefile-size", "1M", check=False)
        self.assertIn("snapshot session", proc.stderr)


if __name__ == "__main__":
    unittest.main()
