#!/usr/bin/env python3
"""disk_full_test: a daemon session writing to a 16 MiB tmpfs while
tracery-bench emits 20,000,000 events (2 threads x 10 M) accounts for every
one of them: emitted = recorded (what `tracery stats` reads in the trace) +
lost (what `tracery stop` reports), exactly; the trace itself counts as
discarded all but what stop says it does not (no packet after them could be
written), and babeltrace2 warns of them; `status` says that writes are
refused, why and where, while it happens; `stop` exits non-zero naming the
disk and the file. Twice: with the disk still full at stop, and with space
freed before stop (writing resumes by itself; the counts still add up and
stop still fails, from the counts, not from the free space at that moment).
And a snapshot to a full disk fails, saying what it did not write, and
leaves the buffers for the next one once there is room; a kernel trace to a
full disk stops reading the kernel's buffers instead of reading pages into
nothing (the kernel counts what it drops), and adds up as well.

Through the relay too: its disk full, then grown before stop (the relay
writes what it kept), or still full at stop, through TLS (the sender and
the relay drop what was not written, and count it in events): the same
sum, from the relay's copy and stop's report.

Needs root (it mounts the tmpfs); skipped otherwise."""
import json
import os
import re
import subprocess
import time
import unittest

from daemontest import DaemonTestCase, go, read_line
from relaytest import Relay
from tracefs_globals import tracefs_root
from tracetest import program

THREADS = 2
PER_THREAD = 10_000_000


class DiskFullTest(DaemonTestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root: mounts a 16 MiB tmpfs for the trace")
        super().setUp()
        self.disk = self.out("disk")
        os.makedirs(self.disk)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", self.disk], check=True)
        self.addCleanup(self.unmount)

    def unmount(self):
        # The daemon's files on it are closed once its sessions are gone.
        self.d.tracery("destroy", "--all", check=False)
        if subprocess.run(["umount", self.disk], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", self.disk], capture_output=True)

    def trace_session(self, filler_bytes=0):
        """A session on the tmpfs (after a filler file, if any), tracery-bench run to its end: (trace, filler)."""
        filler = os.path.join(self.disk, "filler")
        if filler_bytes:
            with open(filler, "wb") as f:
                f.write(b"\0" * filler_bytes)
        self.d.start_daemon()
        trace = os.path.join(self.disk, "t")
        self.d.tracery("create", "full", "--output", trace)
        self.d.tracery("enable-event", "-u", "bench:ev", "-s", "full")
        self.d.tracery("start", "full")
        self.d.run([program("bench", "tracery-bench"), str(PER_THREAD), str(THREADS), "ev"])
        return trace, filler

    def status_write_loss(self):
        """status's lines about refused writes."""
        out = self.d.tracery("status", "full").stdout
        return [line.strip() for line in out.splitlines() if "writes were refused" in line]

    def stop(self):
        """tracery stop, which must fail: (lost, not in trace, its output)."""
        proc = self.d.tracery("stop", "full", check=False)
        out = proc.stdout + proc.stderr
        self.assertNotEqual(proc.returncode, 0, out)
        self.assertIn("disk full (No space left on device) writing " + self.disk + "/t/", proc.stderr)
        lost = sum(int(n) for n in re.findall(r"^  channel .+?: (\d+) events? lost$", proc.stdout, re.M))
        not_in_trace = sum(int(n) for n in re.findall(r"does not count (\d+) of the lost", proc.stdout))
        self.assertNotIn("could not be counted", out)
        return lost, not_in_trace, out

    def trace_counts(self, trace):
        """What our reader finds in the trace: (events, discarded events)."""
        proc = subprocess.run([self.d.cli, "stats", "--json", trace], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = json.loads(proc.stdout)
        events = sum(row["count"] for row in report["total"])
        discarded = sum(row["discarded_events"] for row in report["lost"])
        return events, discarded

    def babeltrace2_discarded(self, trace):
        """The discarded events babeltrace2 warns of, summed."""
        proc = subprocess.run(f"babeltrace2 {trace} 2>&1 >/dev/null | grep -oE 'discarded [0-9]+ events?'",
                              shell=True, capture_output=True, text=True, timeout=300)
        return sum(int(n) for n in re.findall(r"discarded (\d+) events?", proc.stdout))  # "1 event"

    def check_accounted(self, trace, lost, not_in_trace, stop_output):
        recorded, discarded = self.trace_counts(trace)
        self.assertGreater(recorded, 100_000)
        self.assertGreater(lost, 1_000_000)
        self.assertEqual(recorded + lost, THREADS * PER_THREAD,
                         f"recorded {recorded} + lost {lost}\n{stop_output}\n{self.d.log()}")
        self.assertEqual(discarded, lost - not_in_trace, stop_output)
        if discarded:
            self.assertEqual(self.babeltrace2_discarded(trace), discarded)

    def test_full_at_stop(self):
        trace, _ = self.trace_session()
        refused = self.status_write_loss()
        self.assertEqual(len(refused), 1, refused)
        self.assertRegex(refused[0], r"^writes refused now; \d+ events lost because writes were refused: disk full "
                         r"\(No space left on device\) writing " + re.escape(self.disk + "/t/"))
        lost, not_in_trace, out = self.stop()
        self.check_accounted(trace, lost, not_in_trace, out)
        self.assertIn("writing the trace is refused (disk full", self.d.log())

    def test_space_freed_before_stop(self):
        trace, filler = self.trace_session(filler_bytes=4 << 20)
        self.assertTrue(self.status_write_loss()[0].startswith("writes refused now;"))
        os.unlink(filler)
        # Writing resumes by itself (the consumer tries again every 250 ms).
        deadline = time.time() + 20
        while self.status_write_loss()[0].startswith("writes refused now;"):
            self.assertLess(time.time(), deadline, self.d.log())
            time.sleep(0.1)
        self.assertIn("writing the trace resumed", self.d.log())
        lost, not_in_trace, out = self.stop()
        # With space again, the last packets carry every loss.
        self.assertEqual(not_in_trace, 0, out)
        self.check_accounted(trace, lost, not_in_trace, out)

    def test_snapshot_to_a_full_disk(self):
        filler = os.path.join(self.disk, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * (15 << 20))
        self.d.start_daemon()
        self.d.tracery("create", "snap", "--snapshot", "--output", os.path.join(self.disk, "s"))
        self.d.tracery("enable-event", "-u", "bench:ev", "-s", "snap")
        self.d.tracery("start", "snap")
        self.d.run([program("bench", "tracery-bench"), "1000000", "1", "ev"])
        # Half a buffer fits: the command fails and says what it did not write.
        proc = self.d.tracery("snapshot", "record", "-s", "snap", check=False)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        first = re.search(r"snapshot '(\S+)' is incomplete: disk full \(No space left on device\) writing (\S+); "
                          r"(\d+) events of channel channel0 not written; the buffers are intact: free some space "
                          r"and record the snapshot again", proc.stderr)
        self.assertIsNotNone(first, proc.stderr)
        self.assertTrue(first.group(2).startswith(first.group(1) + "/channel0_uid0_"), proc.stderr)
        in_first, discarded = self.trace_counts(first.group(1))
        not_written = int(first.group(3))
        self.assertGreater(not_written, 10_000)
        self.assertEqual(discarded, not_written)  # its last packets carry them
        # With space again, the buffers (untouched since) give a whole snapshot.
        os.unlink(filler)
        rec = self.d.tracery("snapshot", "record", "-s", "snap").stdout
        second = re.search(r"recorded in (\S+)", rec).group(1)
        in_second, _ = self.trace_counts(second)
        self.assertEqual(in_first + not_written, in_second)

    def relay_session(self, tls=False):
        """A relay writing to the tmpfs, a daemon session sent to it, tracery-bench run to its end, the relay's
        disk refusing (said by status) and the daemon's queue for it full (the channel holding its packets,
        counting what it drops as refused writes): (the relay, the events emitted)."""
        args, create = [], []
        if tls:  # a self-signed certificate for 127.0.0.1, the sender's CA
            cert, key = self.out("relay.pem"), self.out("relay.key")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-nodes", "-keyout", key, "-out", cert, "-subj", "/CN=relay", "-days", "1",
                            "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
            args, create = ["--tls-cert", cert, "--tls-key", key], ["--relay-ca", cert]
        relay = Relay(os.path.dirname(self.disk), name=os.path.basename(self.disk), args=args)
        self.addCleanup(relay.stop)
        self.d.start_daemon()
        self.d.tracery("create", "full", "--set-url", f"net://127.0.0.1:{relay.port}", *create)
        self.d.tracery("enable-event", "-u", "bench:ev", "-s", "full")
        self.d.tracery("start", "full")
        emitted = 0
        # A consumer slowed by the machine's load may lose most events to its ring buffers before the queue
        # (64 MiB, after the relay's 16 MiB) fills: tracery-bench runs again until the channel holds.
        for _ in range(4):
            self.d.run([program("bench", "tracery-bench"), str(PER_THREAD), str(THREADS), "ev"])
            emitted += THREADS * PER_THREAD
            relay.wait_log("the disk refuses this session's writes")
            deadline = time.time() + 15
            while "the relay's disk refuses writes" not in (status := self.d.tracery("status", "full").stdout):
                self.assertLess(time.time(), deadline, self.d.log())
                time.sleep(0.2)
            if "writes were refused" in status:
                return relay, emitted
        self.fail(f"the daemon's queue for the relay never filled after {emitted} events:\n{status}")

    def relay_stop(self, relay):
        """tracery stop, which must fail: (lost in events, the relay's trace, stop's output), the relay's copy
        being one session directory (held, never reconnected)."""
        proc = self.d.tracery("stop", "full", check=False)
        out = proc.stdout + proc.stderr
        self.assertNotEqual(proc.returncode, 0, out)
        self.assertNotIn("still queued", out)
        self.assertNotIn("could not be counted", out)
        self.assertNotIn("not confirmed", out)
        lost = sum(int(n) for n in re.findall(r"^  channel .+?: (\d+) events? lost$", proc.stdout, re.M))
        lost += sum(int(n) for n in re.findall(r"holding (\d+) events not sent", proc.stdout))
        lost += sum(int(n) for n in re.findall(r"relay: (\d+) events lost: \d+ packets sent were not written",
                                               proc.stdout))
        sessions = relay.sessions("full")
        self.assertEqual(len(sessions), 1, sessions)
        self.assertGreater(lost, 1_000_000, out)
        return lost, os.path.join(sessions[0], "ust"), out

    def test_relay_disk_full_then_freed(self):
        # The relay writes to the tmpfs: it tells the session's sender that its disk refuses (NOTICE
        # write_failed) and the daemon holds its packets instead of reconnecting; the daemon's queue then its
        # buffers fill and count what they drop. Once the disk has room (the tmpfs grown: what waits in the
        # queues is more than 16 MiB) the relay writes what it kept, the sender sends again, and the trace it
        # wrote adds up exactly.
        relay, emitted = self.relay_session()
        subprocess.run(["mount", "-o", "remount,size=512m", self.disk], check=True)
        relay.wait_log("the disk takes this session's writes again")
        lost, copy, out = self.relay_stop(relay)
        self.assertNotIn("were not written", out)
        recorded, discarded = self.trace_counts(copy)
        self.assertGreater(recorded, 100_000)
        self.assertEqual(recorded + lost, emitted, f"{out}\n{relay.text()}")
        self.assertEqual(discarded, lost, out)

    def test_relay_disk_still_full_at_stop(self):
        # Through TLS (the sender's waits read the relay's notices there too). At stop the sender drops what it
        # still queues and asks the relay to drop what it has not written (DROP_UNWRITTEN): the relay's answer
        # makes the count exact, in events.
        relay, emitted = self.relay_session(tls=True)
        time.sleep(6)  # past the 5 s a send may wait without a word from the relay: still no reconnection
        lost, copy, out = self.relay_stop(relay)
        self.assertIn("were not written, the relay's disk refusing them as the session stopped", out)
        self.assertIn("relay: ", out)
        relay.wait_log("ended with DROP_UNWRITTEN")
        self.assertIn("dropped at the sender's request (the disk refusing: ", relay.text())
        recorded, discarded = self.trace_counts(copy)
        self.assertGreater(recorded, 100_000)
        self.assertEqual(recorded + lost, emitted, f"{out}\n{relay.text()}")
        # The losses after the last packet written are in stop's report only.
        self.assertLessEqual(discarded, lost, out)
        self.assertNotIn("again: the session goes on", self.d.log())  # never reconnected
        self.assertNotIn("took nothing for", self.d.log())

    def test_kernel_trace_to_a_full_disk(self):
        if tracefs_root() is None:
            self.skipTest("no tracefs mounted")
        calls = 400_000
        filler = os.path.join(self.disk, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * (15 << 20))
        self.d.start_daemon()
        trace = os.path.join(self.disk, "t")
        self.d.tracery("create", "full", "--output", trace)
        self.d.tracery("enable-event", "-k", "--syscall", "getpid", "-s", "full")
        p, pid = self.d.spawn_registered([program("tests", "kernel-workload"), str(calls), "0"])
        self.d.tracery("track", "-k", "--pid", str(pid), "-s", "full")
        self.d.tracery("start", "full")
        go(p)
        read_line(p, "done")
        p.wait(timeout=60)
        # The readers wait instead of reading pages into nothing: the kernel counts what it drops.
        refused = self.status_write_loss()
        self.assertEqual(len(refused), 1, refused)
        self.assertIn("writes refused now;", refused[0])
        self.assertIn("writing " + trace + "/kernel/channel0_", refused[0])
        lost, not_in_trace, out = self.stop()
        recorded, discarded = self.trace_counts(os.path.join(trace, "kernel"))
        # Each call's entry and exit, and those of the calls the runtime makes (under 200 on a roomy disk).
        self.assertGreater(lost, 100_000, out)
        self.assertGreaterEqual(recorded + lost, 2 * calls, out)
        self.assertLessEqual(recorded + lost, 2 * calls + 1000, out)
        self.assertEqual(discarded, lost - not_in_trace, out)
        if discarded:
            self.assertEqual(self.babeltrace2_discarded(os.path.join(trace, "kernel")), discarded)


if __name__ == "__main__":
    unittest.main()
