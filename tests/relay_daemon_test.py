"""relay_daemon_test: traceryd streaming sessions to a real tracery-relayd on
loopback (`tracery create --set-url`, `--local-copy`, `--live`), real traced
programs, the relay's copy read back with babeltrace2: the same events as a
local session of the same program; --local-copy gives two identical traces;
per-PID buffers with programs coming and going; a kernel session (root with
tracefs); the relay killed and restarted mid-session (the program
unaffected, what was lost counted, the rest readable); no relay at create;
the URL's errors."""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import unittest

from daemontest import DaemonTestCase, read_line
from relaytest import Relay, RelayBesideDaemon
from tracetest import Trace, program


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def relay_counts(text):
    """The relay's line of `tracery stop` or `status`: {sent, confirmed, dropped, unconfirmed}."""
    out = {}
    m = re.search(r"(\d+) packets sent, (\d+) confirmed written", text)
    if m:
        out["sent"], out["confirmed"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"relay: (\d+) packets \([^)]*\).* not sent", text)
    out["dropped"] = int(m.group(1)) if m else 0
    m = re.search(r"relay: (\d+) packets sent on connections that broke", text)
    out["unconfirmed"] = int(m.group(1)) if m else 0
    return out


def count_events(path):
    """babeltrace2's counts of a trace (sink.utils.counter): {"events", "discarded packets", "discarded events"}
    (of the discarded, the messages saying so)."""
    p = subprocess.run(["babeltrace2", path, "-c", "sink.utils.counter"], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    counts = {m.group(2): int(m.group(1)) for m in re.finditer(r"(\d+) (.*?) messages?$", p.stdout, re.M)}
    return {"events": counts.get("Event", 0), "discarded packets": counts.get("Discarded packet", 0),
            "discarded events": counts.get("Discarded event", 0)}


def payloads(trace):
    return sorted((e["name"], tuple(sorted(e["payload"].items()))) for e in trace.events)


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelayDaemonTest(RelayBesideDaemon, DaemonTestCase):
    def emit(self, n):
        out = self.d.run([program("tests", "daemon-emitter"), "count", str(n)])
        self.assertIn(f"done {n}", out)

    def copy_of(self, name, relay=None):
        """The relay's copy of session `name` (its one directory), once the relay logged its end."""
        relay = relay or self.relay
        dirs = relay.sessions(name)
        self.assertEqual(len(dirs), 1, dirs)
        return dirs[0]

    def destroy(self, name):
        self.d.tracery("destroy", name)
        self.relay.wait_log(f"/{name}-", "ended with BYE")

    def test_streamed_session_has_the_events_of_a_local_one(self):
        n = 20_000
        self.d.start_daemon()
        local = self.session("local")
        self.d.tracery("start", "local")
        self.emit(n)
        self.d.tracery("stop", "local")
        self.d.tracery("destroy", "local")

        out = self.d.tracery("create", "sent", "--set-url", self.url).stdout
        self.assertRegex(out, rf"traces go to the relay at 127\.0\.0\.1:{self.relay.port} \(its [^/]+/sent-\d{{8}}-\d{{6}}\)")
        self.d.tracery("enable-event", "-u", "emit:*", "-s", "sent")
        self.d.tracery("start", "sent")
        self.emit(n)
        stop = self.d.tracery("stop", "sent").stdout
        counts = relay_counts(stop)
        self.assertGreater(counts["sent"], 0, stop)
        self.assertEqual(counts["confirmed"], counts["sent"], stop)
        self.assertEqual((counts["dropped"], counts["unconfirmed"]), (0, 0), stop)
        self.assertIn("channel0: 0 events lost", stop)
        self.assertIn(f"sent [stopped] -> relay 127.0.0.1:{self.relay.port}", self.d.tracery("list").stdout)
        view = self.d.tracery("view", "sent", check=False)
        self.assertIn("session 'sent' is sent to the relay at 127.0.0.1", view.stderr)
        self.assertIn("or create the session with --local-copy", view.stderr)
        self.destroy("sent")
        copy = self.copy_of("sent")
        self.assertEqual(sorted(os.listdir(copy)), ["ust"])
        a, b = Trace(local), Trace(copy)
        self.assertEqual(len(b.events), 2 * n)
        self.assertEqual((b.discarded, b.discarded_packets), (0, 0))
        self.assertEqual(payloads(a), payloads(b))
        # The index lists every packet of every stream.
        for stream in glob.glob(os.path.join(copy, "ust", "channel0_*")):
            idx = os.path.join(copy, "ust", "index", os.path.basename(stream) + ".idx")
            self.assertGreater(os.path.getsize(idx), 16)
        self.assertFalse(os.path.exists(self.out("sent")))

    def test_local_copy_gives_two_identical_traces(self):
        self.d.start_daemon()
        path = self.out("both")
        self.d.tracery("create", "both", "--set-url", self.url, "--local-copy", "--output", path)
        self.d.tracery("enable-channel", "-u", "chan", "-s", "both", "--subbuf-size", "16k", "--num-subbuf", "8")
        self.d.tracery("enable-event", "-u", "emit:*", "-s", "both", "-c", "chan")
        self.d.tracery("start", "both")
        self.emit(10_000)
        self.d.tracery("stop", "both")
        self.destroy("both")
        copy = os.path.join(self.copy_of("both"), "ust")
        files = sorted(f for f in os.listdir(path) if os.path.isfile(os.path.join(path, f)))
        self.assertIn("metadata", files)
        self.assertGreater(len(files), 1)
        for f in files:
            with open(os.path.join(path, f), "rb") as x, open(os.path.join(copy, f), "rb") as y:
                self.assertEqual(x.read(), y.read(), f)
        trace = Trace(copy)  # small sub-buffers: the ring buffer may lose some, which both copies tell
        self.assertEqual(len(trace.events) + trace.discarded, 20_000)
        self.assertGreater(len(trace.events), 0)

    def test_per_pid_buffers_with_programs_coming_and_going(self):
        self.d.start_daemon()
        self.d.tracery("create", "pp", "--set-url", self.url)
        self.d.tracery("enable-channel", "-u", "chan", "-s", "pp", "--buffers-pid")
        self.d.tracery("enable-event", "-u", "emit:*", "-s", "pp", "-c", "chan")
        self.d.tracery("start", "pp")
        total = 0
        for round_ in range(3):
            procs = [self.d.spawn([program("tests", "daemon-emitter"), "count", str(1000 * (i + 1))],
                                  stdin=subprocess.DEVNULL) for i in range(3)]
            for i, p in enumerate(procs):
                self.assertEqual(p.wait(timeout=60), 0)
                total += 2 * 1000 * (i + 1)
        stop = self.d.tracery("stop", "pp").stdout
        self.assertEqual(relay_counts(stop)["dropped"], 0, stop)
        self.destroy("pp")
        trace = Trace(self.copy_of("pp"))
        self.assertEqual(len(trace.events) + trace.discarded, total)  # what the ring buffers lost, if any, is told
        self.assertEqual(trace.discarded, int(re.search(r"channel chan: (\d+) events? lost", stop).group(1)))
        self.assertEqual(trace.discarded_packets, 0)
        streams = os.listdir(os.path.join(self.copy_of("pp"), "ust"))
        self.assertGreaterEqual(len({s.split("_")[1] for s in streams if s.startswith("chan_pid")}), 9)

    def test_kernel_session_streamed(self):
        if os.geteuid() != 0:
            self.skipTest("kernel tracing needs root (tracefs instances); skipped")
        if not any(os.path.isdir(p + "/instances") for p in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")):
            self.skipTest("no tracefs mounted at /sys/kernel/tracing or /sys/kernel/debug/tracing; skipped")
        self.d.start_daemon()
        path = self.out("k")
        # Live: the user buffers flushed and idle streams (kernel CPUs too) given beacons every 100 ms.
        self.d.tracery("create", "k", "--live=100ms", "--set-url", self.url, "--local-copy", "--output", path)
        self.d.tracery("enable-event", "-u", "emit:*", "-s", "k")
        self.d.tracery("enable-event", "-k", "--syscall", "getpid,write", "-s", "k")
        self.d.tracery("enable-event", "-k", "sched_switch", "-s", "k")
        self.d.tracery("start", "k")
        self.emit(1000)
        time.sleep(0.5)
        stop = self.d.tracery("stop", "k").stdout
        self.assertIn("channel0 (kernel): 0 events lost", stop)
        self.assertIn("1 connection;", stop)
        self.assertEqual(relay_counts(stop)["dropped"], 0, stop)
        self.destroy("k")
        copy = self.copy_of("k")
        self.assertEqual(sorted(os.listdir(copy)), ["kernel", "ust"])
        for trace in ("kernel", "ust"):
            for f in sorted(os.listdir(os.path.join(path, trace))):
                if os.path.isfile(os.path.join(path, trace, f)):
                    with open(os.path.join(path, trace, f), "rb") as x, open(os.path.join(copy, trace, f), "rb") as y:
                        self.assertEqual(x.read(), y.read(), f"{trace}/{f}")
        bt = subprocess.run(["babeltrace2", copy], capture_output=True, text=True, timeout=300)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stdout.count("emit:tick:"), 1000)
        self.assertGreater(bt.stdout.count("sched_switch:"), 0)
        self.assertGreater(bt.stdout.count("lttng_statedump_process_state:"), 0)

    def test_relay_killed_and_restarted_mid_session(self):
        """Before the kill, a program's events reach the relay; while it is down, a program at full speed
        fills the send queue, then its buffer (the rest is dropped and counted there) and never waits; once
        it is back, the session goes on in a new directory with the whole metadata, and a last program's
        events reach it; stop fails, saying what the relay's absence cost."""
        self.d.start_daemon()
        self.d.tracery("create", "kill", "--set-url", self.url)
        self.d.tracery("enable-event", "-u", "emit:*", "-s", "kill")
        self.d.tracery("start", "kill")
        port = self.relay.port
        self.emit(100_000)  # several sub-buffers: sent before the kill
        self.d.tracery("status", "kill")  # the link has had time to send them
        time.sleep(0.5)
        self.relay.stop(signal.SIGKILL)
        t0 = time.monotonic()
        spin = self.d.run([program("tests", "daemon-emitter"), "spin", "2"])
        self.assertLess(time.monotonic() - t0, 10)  # the program never waited on the relay
        spun = int(spin.split()[-1])
        self.assertGreater(spun, 0)
        status = self.d.tracery("status", "kill").stdout
        self.assertIn("not connected", status)
        lost = re.search(r"(\d+) events lost because writes were refused: the relay at 127\.0\.0\.1:(\d+) is not "
                         r"connected \([^)]*\) and the queue of packets for it is full", status)
        self.assertIsNotNone(lost, status)
        self.assertGreater(int(lost.group(1)), 0, status)
        self.relay = Relay(self.d.tmp, port=port)
        deadline = time.time() + 20
        while "2 connections" not in self.d.tracery("status", "kill").stdout:
            self.assertLess(time.time(), deadline, self.d.tracery("status", "kill").stdout + self.d.log())
            time.sleep(0.1)
        self.emit(10_000)
        proc = self.d.tracery("stop", "kill", check=False)
        stop = proc.stdout
        self.assertNotEqual(proc.returncode, 0, stop)
        # The last refusal's reason: the relay not connected, or, on a loaded machine, the queue still full of
        # what waited for the new connection.
        self.assertRegex(proc.stderr, r"events lost, (the relay at 127\.0\.0\.1:\d+ is not connected|"
                                      r"the queue of packets for the relay at 127\.0\.0\.1:\d+ is full)")
        counts = relay_counts(stop)
        self.assertEqual(counts["confirmed"] + counts["unconfirmed"], counts["sent"], stop)
        self.assertNotIn("warning: relay: the relay", stop)  # everything queued at stop was confirmed
        self.assertIn("lost the relay at 127.0.0.1", self.d.log())
        self.assertIn("again: the session goes on in its directory", self.d.log())
        self.destroy("kill")
        first, second = self.relay.sessions("kill")
        before, after = count_events(os.path.join(first, "ust")), count_events(os.path.join(second, "ust"))
        # What the first relay confirmed is there whole; the second has the end of the session.
        self.assertGreaterEqual(before["events"], 1)
        self.assertGreaterEqual(after["events"], 20_000)
        self.assertLess(before["events"] + after["events"], 2 * 100_000 + spun + 2 * 10_000)
        self.assertGreater(after["discarded events"], 0)  # what the buffer dropped while its packets waited

    def test_no_relay_at_create_is_an_error(self):
        self.d.start_daemon()
        port = free_port()
        r = self.d.tracery("create", "none", "--set-url", f"net://127.0.0.1:{port}", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"cannot reach the relay at 127.0.0.1:{port}", r.stderr)
        self.assertIn("start tracery-relayd there, or fix --set-url", r.stderr)
        self.assertNotIn("none", self.d.tracery("list").stdout)

    def test_set_url_errors_name_the_argument_and_the_fix(self):
        self.d.start_daemon()
        for args, expected in (
                (["--set-url", "http://example.com"], "bad --set-url 'http://example.com': the relay's address starts with net://"),
                (["--set-url", "net://host:0"], "bad --set-url 'net://host:0': the port '0' is not a number from 1 to 65535"),
                (["--set-url", "net://host:99999"], "the port '99999' is not a number from 1 to 65535"),
                (["--set-url", "net://host:x1"], "the port 'x1' is not a number"),
                (["--set-url", "net://"], "no host"),
                (["--set-url", "net://ho st"], "the host holds a character"),
                (["--set-url", "net://h/path"], "a path after the host is not supported"),
                (["--local-copy"], "--local-copy keeps a copy of what --set-url sends"),
                (["--set-url", self.url, "--output", self.out("x")], "--output names the local copy"),
                (["--live=5us"], "bad --live period '5us'"),
                (["--set-url", self.url, "--public-live"], "--public-live marks a live session"),
                (["--live", "--snapshot"], "--live does not take --snapshot")):
            with self.subTest(args=args):
                r = self.d.tracery("create", "bad", *args, check=False)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(expected, r.stderr)
        self.assertNotIn("bad", self.d.tracery("list").stdout)

    def test_live_session_sends_partial_sub_buffers_every_period(self):
        self.d.start_daemon()
        out = self.d.tracery("create", "live", "--live=200ms", "--set-url", self.url).stdout
        self.assertIn("live every 200 ms", out)
        self.assertNotIn("public", out)
        self.d.tracery("enable-event", "-u", "emit:*", "-s", "live")
        self.d.tracery("start", "live")
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "hold", "100"], stdin=subprocess.DEVNULL)
        read_line(emitter, "done")
        # 100 events fill no sub-buffer: only the live flush sends them, within two periods.
        copy = None
        deadline = time.time() + 2
        while time.time() < deadline:
            dirs = self.relay.sessions("live")
            if dirs:
                copy = os.path.join(dirs[0], "ust")
                idx = glob.glob(os.path.join(copy, "index", "channel0_*.idx"))
                if idx and any(os.path.getsize(i) > 16 for i in idx):
                    break
            time.sleep(0.05)
        else:
            self.fail("no packet reached the relay within 2 s of a live session with a 200 ms period")
        time.sleep(0.5)  # beacons of the idle streams go out meanwhile: the relay takes them
        emitter.kill()
        emitter.wait()
        stop = self.d.tracery("stop", "live").stdout
        self.assertIn("1 connection;", stop)  # the relay refused nothing (it closes a connection on a bad frame)
        self.destroy("live")
        self.assertEqual(len(Trace(copy).named("emit:tick")), 100)


if __name__ == "__main__":
    unittest.main()
