"""A session daemon killed with SIGKILL at random moments during heavy
tracing, 20 times (more, up to 60, until a kill cuts a packet): every trace
it leaves reads in babeltrace2 with no error and holds every whole packet,
once the next daemon has started.

A write() of a regular file stops between two pages when its writer gets
SIGKILL, so a daemon killed while it writes a packet leaves the start of that
packet at the end of a stream file, which babeltrace2 refuses (the whole
trace). The next daemon truncates such a packet away before it serves
(src/daemon/trace_repair.hpp). This test counts the whole packets of each
stream file and their events itself (parsing packet and event headers, not
with babeltrace2) before the restart, then checks that the repair named every
cut packet and that babeltrace2 reads exactly those packets and events.

TRACERY_CRASH_SEED=N repeats the runs of a seed (printed by each run)."""
import fcntl
import os
import random
import re
import signal
import struct
import subprocess
import sys
import time
import unittest

from daemontest import DaemonTestCase, read_line
from tracetest import program

MAGIC = 0xC1FC1FC1
PREFIX = 84            # packet header + context (src/ctf/packet.hpp)
TICK = 8               # emit:tick's payload: one u64
COMPACT, EXTENDED = 4, 13  # event headers (src/ctf/event_header.hpp)
# First byte of an event header of event id 0 (the only one enabled):
# 0 -> compact header (id in bits 0-4), 1 -> extended (31), 2 -> neither.
HEADER_KIND = bytes(1 if b == 31 else 0 if b & 31 == 0 else 2 for b in range(256))


def count_events(buf, p, end):
    """emit:tick events in buf[p:end], walking their headers. The stride of a
    compact event is taken in C (a slice), only extended ones in Python."""
    n = 0
    while p < end:
        kinds = buf[p:end:COMPACT + TICK].translate(HEADER_KIND)
        k = kinds.find(b"\x01")
        bad = kinds.find(b"\x02", 0, len(kinds) if k < 0 else k)
        if bad >= 0:
            raise AssertionError(f"no event header at offset {p + bad * (COMPACT + TICK)}")
        if k < 0:
            if (end - p) % (COMPACT + TICK):
                raise AssertionError(f"events end past the packet's content at {end}")
            return n + (end - p) // (COMPACT + TICK)
        n += k + 1
        p += k * (COMPACT + TICK) + EXTENDED + TICK
    if p != end:
        raise AssertionError(f"an event runs past the packet's content at {end}")
    return n


def whole_packets(path):
    """(whole packets, their events, offset where they end, file size)."""
    with open(path, "rb") as f:
        buf = f.read()
    packets = events = off = 0
    while len(buf) - off >= PREFIX:
        magic, = struct.unpack_from("<I", buf, off)
        content_bits, packet_bits = struct.unpack_from("<QQ", buf, off + 48)
        if magic != MAGIC:
            raise AssertionError(f"{path}: no packet at offset {off}")
        if off + packet_bits // 8 > len(buf):
            break  # the packet the crash cut
        events += count_events(buf, off + PREFIX, off + content_bits // 8)
        packets += 1
        off += packet_bits // 8
    return packets, events, off, len(buf)


def wait_lock_released(lock_path, timeout=30):
    """Until no process holds the daemon's lock: a killed daemon's threads
    (one in the middle of a write) end after its main thread shows as a
    zombie, and its files are closed only then."""
    deadline = time.time() + timeout
    with open(lock_path) as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                if time.time() > deadline:
                    raise AssertionError(f"{lock_path} still locked {timeout} s after SIGKILL")
                time.sleep(0.01)


def babeltrace2_counts(path):
    proc = subprocess.run(["babeltrace2", path, "-c", "sink.utils.counter", "-p", "step=+0"],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or proc.stderr:
        raise AssertionError(f"babeltrace2 {path} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    count = lambda what: int(re.search(rf"(\d+) {what} messages?\b", proc.stdout).group(1))
    return count("Packet beginning"), count("Event")


class CrashTest(DaemonTestCase):
    RUNS = 20
    # Runs added, one at a time, while no kill has cut a packet yet: on a loaded machine (a sanitizer build,
    # other work sharing the CPUs) the emitter is slower, the consumer writes less of the time, and 20 kills may
    # all land between two writes.
    MAX_RUNS = 60

    def test_sigkill_during_heavy_tracing_leaves_readable_traces(self):
        seed = int(os.environ.get("TRACERY_CRASH_SEED") or random.randrange(1 << 32))
        print(f"\nseed {seed} (TRACERY_CRASH_SEED={seed} repeats these runs)", file=sys.stderr)
        rng = random.Random(seed)
        self.d.start_daemon()
        cut_runs = runs = 0
        while runs < self.RUNS or (cut_runs == 0 and runs < self.MAX_RUNS):
            with self.subTest(run=runs, seed=seed):
                cut_runs += self.one_run(runs, rng)
            runs += 1
        # At full speed the consumer writes most of the time: most kills cut a packet.
        print(f"{cut_runs} of {runs} kills cut a packet", file=sys.stderr)
        self.assertGreater(cut_runs, 0, f"no kill of {runs} cut a packet: the repair was not exercised")

    def one_run(self, run, rng):
        """Traces, kills the daemon, restarts it; returns whether a packet was cut."""
        name = f"crash{run}"
        path = self.out(name)
        self.d.tracery("create", name, "--output", path)
        # Large packets: each takes the consumer long to write, so a kill
        # often lands in the middle of one.
        self.d.tracery("enable-channel", "-u", "chan", "-s", name, "--subbuf-size", "4M", "--num-subbuf", "4")
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", name, "-c", "chan")
        self.d.tracery("start", name)
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "spin", "10"])  # killed below
        read_line(emitter, "ready")
        # Once packets flow (a stream file is made with its first packet),
        # at a random moment.
        deadline = time.time() + 30
        while not any(f != "metadata" for f in os.listdir(path)):
            if time.time() > deadline:
                self.fail(f"run {run}: no packet written\n{self.d.log()}")
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.15))
        self.d.kill_daemon(signal.SIGKILL)
        emitter.kill()
        emitter.communicate(timeout=30)
        wait_lock_released(os.path.join(self.d.rundir, "traceryd.pid"))

        streams = sorted(f for f in os.listdir(path) if f != "metadata" and not f.startswith("."))
        found = {f: whole_packets(os.path.join(path, f)) for f in streams}
        self.d.start_daemon()  # repairs, then serves the next run
        log = self.d.log()
        cut = False
        for f, (packets, events, whole, size) in found.items():
            file = os.path.join(path, f)
            said = [line for line in log.splitlines() if f"repair: {file}:" in line]
            if whole < size:
                cut = True
                self.assertEqual(len(said), 1, log)
                self.assertIn(f"its last packet was cut short by the crash (at offset {whole}, ", said[0])
                self.assertIn(f"truncated to {whole} bytes, dropping {size - whole} bytes; {packets} whole "
                              "packets kept", said[0])
            else:
                self.assertEqual(said, [])
            self.assertEqual(os.path.getsize(file), whole, file)
        self.assertEqual(babeltrace2_counts(path),
                         (sum(p for p, _, _, _ in found.values()), sum(e for _, e, _, _ in found.values())))
        return cut


if __name__ == "__main__":
    unittest.main()
