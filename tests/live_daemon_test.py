"""live_daemon_test: the live path end to end on loopback. A real traceryd
session made with `tracery create --live` sends to a real tracery-relayd, and
real babeltrace2 (`babeltrace2 -i lttng-live net://...`), attached before any
program runs, prints the events of real programs (daemon-emitter, pinned to
one CPU and then the other) as they happen:
- per-UID buffers: each program's events within two live periods of its last
  one, while the other CPU's stream is idle (beacons only);
- per-PID buffers: programs starting and exiting during the view, two at a
  time on both CPUs, then one after the other, beside one that stays idle;
- a viewer attached late prints the events of the programs that run after it
  attached, none of those before;
- a kernel trace (as root, with tracefs): its events printed while the
  session runs; a per-PID program beside its streams, busy or idle,
  printed as above;
- babeltrace2 ends (exit 0) once the session is destroyed, having printed
  exactly the events of the relay's copy (read by babeltrace2 from disk).
Each session has a vpid context, so each line names its program."""
import collections
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import unittest

from daemontest import DaemonTestCase, go, read_line
from relaytest import RelayBesideDaemon
from tracetest import program

PERIOD_MS = 400
N = 50  # events of each kind (emit:tick and emit:other) a program emits


def without_deltas(lines):
    return [re.sub(r" \(\+[^)]*\)", "", l) for l in lines]


class LiveViewer:
    """babeltrace2 -i lttng-live on a session, its lines read as they come (with the time each came)."""

    def __init__(self, live_port, session):
        self.proc = subprocess.Popen(
            ["babeltrace2", "-i", "lttng-live", f"net://127.0.0.1:{live_port}/host/{socket.gethostname()}/{session}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines, self.stamps, self.err = [], [], []
        self.cond = threading.Condition()
        self.readers = [threading.Thread(target=self._read), threading.Thread(target=self._read_err)]
        for t in self.readers:
            t.start()

    def _read(self):
        for line in iter(self.proc.stdout.readline, ""):
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.stamps.append(time.monotonic())
                self.cond.notify_all()

    def _read_err(self):
        self.err.append(self.proc.stderr.read())

    def of(self, pid):
        """The lines of program pid (its vpid context)."""
        with self.cond:
            return [l for l in self.lines if f"vpid = {pid} " in l]

    def wait_for(self, pid, count, timeout=15):
        """Waits until count lines of program pid came; returns when the last of them came (time.monotonic)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                stamps = [s for l, s in zip(self.lines, self.stamps) if f"vpid = {pid} " in l]
                if len(stamps) >= count:
                    return stamps[count - 1]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"babeltrace2 printed {len(stamps)} of {count} lines of program {pid} "
                                         f"(exit {self.proc.poll()}):\n" + "\n".join(self.lines[-5:]) +
                                         "\n" + "".join(self.err))
                self.cond.wait(min(left, 0.1))

    def end(self, timeout=20):
        """Waits for babeltrace2 to exit; returns (exit code, stdout lines, stderr)."""
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            self.kill()
        return code, self.lines, "".join(self.err)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for t in self.readers:
            t.join()
        self.proc.stdout.close()
        self.proc.stderr.close()


@unittest.skipIf(shutil.which("babeltrace2") is None,
                 "babeltrace2 is not installed: the live viewer of these tests (apt install babeltrace2)")
class LiveDaemonTest(RelayBesideDaemon, DaemonTestCase):
    def setUp(self):
        super().setUp()
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            self.skipTest("needs two CPUs (a busy stream beside an idle one)")
        self.cpus = cpus[:2]
        self.d.start_daemon()

    def live_session(self, name, *channel_args):
        """A live session (PERIOD_MS) sent to the relay: emit:* with a vpid context, in a channel with
        channel_args (per-UID buffers by default)."""
        self.d.tracery("create", name, f"--live={PERIOD_MS}ms", "--public-live", "--set-url",
                       f"net://127.0.0.1:{self.relay.port}")
        self.d.tracery("enable-channel", "-u", "chan", "-s", name, *channel_args)
        self.d.tracery("enable-event", "-u", "emit:*", "-s", name, "-c", "chan")
        self.d.tracery("add-context", "-u", "-t", "vpid", "-s", name, "-c", "chan")
        self.d.tracery("start", name)

    def attach(self, name):
        viewer = LiveViewer(self.relay.live_port, name)
        self.addCleanup(viewer.kill)
        self.relay.wait_log(f"attached to {socket.gethostname()}/{name} (session ")
        return viewer

    def program(self, cpu):
        """daemon-emitter count N wait on one CPU: registered, its events waiting for emit_all()."""
        return self.d.spawn_registered(["taskset", "-c", str(cpu), program("tests", "daemon-emitter"), "count", str(N),
                                        "wait"])

    @staticmethod
    def emit_all(p):
        """Lets the program emit; returns once it has (the time of its last event, time.monotonic)."""
        go(p)
        read_line(p, "done")
        return time.monotonic()

    def assertPrintedSoon(self, viewer, pid, emitted):
        """Every event of program pid printed, the last one within two live periods of its emission."""
        printed = viewer.wait_for(pid, 2 * N)
        self.assertLess(printed - emitted, 2 * PERIOD_MS / 1000,
                        f"program {pid}'s events printed {printed - emitted:.3f} s after they were emitted")
        lines = viewer.of(pid)
        self.assertEqual(sorted(int(re.search(r"\bi = (\d+)", l).group(1)) for l in lines if "emit:tick:" in l),
                         list(range(N)))
        return lines

    def destroy_and_check(self, name, viewer, pids):
        """Destroys the session: babeltrace2 ends (exit 0, no error) having printed, for the programs pids,
        exactly what babeltrace2 reads of them in the relay's copy."""
        self.d.tracery("destroy", name)
        code, lines, err = viewer.end()
        self.assertEqual(code, 0, err)
        self.assertFalse([l for l in err.splitlines() if " E " in l or " W " in l or "ERROR" in l], err)
        self.relay.wait_log(f"/{name}-", "ended with BYE")
        (copy,) = self.relay.sessions(name)
        disk = subprocess.run(["babeltrace2", os.path.join(copy, "ust")], capture_output=True, text=True, timeout=60)
        self.assertEqual(disk.returncode, 0, disk.stderr)
        def mine(ls):
            return sorted(l for l in without_deltas(ls) if re.search(r"vpid = (%s) " % "|".join(map(str, pids)), l))

        self.assertEqual(mine(lines), mine(disk.stdout.splitlines()))
        self.assertEqual(len(mine(lines)), 2 * N * len(pids))
        return lines

    def wait_in_copy(self, name, pid, timeout=15):
        """Waits until the relay's copy of session `name` holds every event of program pid."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for copy in self.relay.sessions(name):
                p = subprocess.run(["babeltrace2", os.path.join(copy, "ust")], capture_output=True, text=True,
                                   timeout=60)
                if p.returncode == 0 and p.stdout.count(f"vpid = {pid} ") == 2 * N:
                    return
            time.sleep(0.1)
        self.fail(f"the events of program {pid} never reached the relay's copy")

    def test_per_uid_buffers_attached_before_any_program(self):
        self.live_session("uid")
        viewer = self.attach("uid")
        pids = []
        for cpu in self.cpus:  # one CPU busy, the other idle: its beacons hold nothing back
            p, pid = self.program(cpu)
            emitted = self.emit_all(p)
            lines = self.assertPrintedSoon(viewer, pid, emitted)
            self.assertEqual({re.search(r"cpu_id = (\d+)", l).group(1) for l in lines}, {str(cpu)})
            self.assertEqual(p.wait(timeout=10), 0)
            pids.append(pid)
        self.destroy_and_check("uid", viewer, pids)

    def test_per_pid_buffers_programs_coming_and_going(self):
        self.live_session("pid", "--buffers-pid")
        viewer = self.attach("pid")
        # A program that stays, idle after its first events: its streams have beacons only, which must not keep
        # babeltrace2 from the programs that start beside it (2.0.4 looks for new streams only on packets).
        idle = self.d.spawn(["taskset", "-c", str(self.cpus[0]), program("tests", "daemon-emitter"), "hold", str(N)])
        idle_pid = int(read_line(idle, "ready")[0])
        read_line(idle, "done")
        viewer.wait_for(idle_pid, N)
        time.sleep(2 * PERIOD_MS / 1000)  # beacons given out
        pids = []
        # Two at a time, one on each CPU, each with its own buffers: both printed, then both gone.
        both = [self.program(cpu) for cpu in self.cpus]
        emitted = [self.emit_all(p) for p, _ in both]
        for (p, pid), t in zip(both, emitted):
            self.assertPrintedSoon(viewer, pid, t)
            self.assertEqual(p.wait(timeout=10), 0)
            pids.append(pid)
        # Then one after the other, each starting once the last is gone.
        for cpu in self.cpus:
            p, pid = self.program(cpu)
            self.assertPrintedSoon(viewer, pid, self.emit_all(p))
            self.assertEqual(p.wait(timeout=10), 0)
            pids.append(pid)
        idle.kill()
        idle.wait()
        lines = self.destroy_and_check("pid", viewer, pids)
        self.assertEqual(collections.Counter(re.search(r"vpid = (\d+)", l).group(1) for l in lines),
                         {str(idle_pid): N, **{str(pid): 2 * N for pid in pids}})

    def kernel_session(self, name, *kernel_events):
        """A live session with a kernel trace (kernel_events: enable-event -k arguments) and per-PID user
        buffers (emit:*, vpid), started, babeltrace2 attached; skips without root or tracefs."""
        if os.geteuid() != 0:
            self.skipTest("kernel tracing needs root (tracefs instances); skipped")
        if not any(os.path.isdir(p + "/instances") for p in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")):
            self.skipTest("no tracefs mounted at /sys/kernel/tracing or /sys/kernel/debug/tracing; skipped")
        self.d.tracery("create", name, f"--live={PERIOD_MS}ms", "--public-live", "--set-url",
                       f"net://127.0.0.1:{self.relay.port}")
        self.d.tracery("enable-event", "-k", *kernel_events, "-s", name)
        self.d.tracery("enable-channel", "-u", "chan", "-s", name, "--buffers-pid")
        self.d.tracery("enable-event", "-u", "emit:*", "-s", name, "-c", "chan")
        self.d.tracery("add-context", "-u", "-t", "vpid", "-s", name, "-c", "chan")
        self.d.tracery("start", name)
        return self.attach(name)

    def test_kernel_events_printed_while_the_session_runs(self):
        # The state dump's stream, idle after the start, has beacons: it holds nothing back.
        viewer = self.kernel_session("kbusy", "sched_switch")
        deadline = time.monotonic() + 4 * PERIOD_MS / 1000
        while time.monotonic() < deadline and not any("sched_switch:" in l for l in list(viewer.lines)):
            time.sleep(0.02)
        self.assertTrue(any("sched_switch:" in l for l in list(viewer.lines)),
                        "no kernel event printed within four periods:\n" + "".join(viewer.err))
        p, pid = self.program(self.cpus[1])
        self.assertPrintedSoon(viewer, pid, self.emit_all(p))
        self.assertEqual(p.wait(timeout=10), 0)
        self.destroy_and_check("kbusy", viewer, [pid])

    def test_per_pid_program_beside_idle_kernel_streams(self):
        # A syscall nothing calls: the kernel's CPU streams are idle, with their first (empty) packets only.
        viewer = self.kernel_session("kidle", "--syscall", "acct")
        time.sleep(2 * PERIOD_MS / 1000)  # beacons given out
        p, pid = self.program(self.cpus[1])
        self.assertPrintedSoon(viewer, pid, self.emit_all(p))
        self.assertEqual(p.wait(timeout=10), 0)
        self.destroy_and_check("kidle", viewer, [pid])

    def test_late_attach_sees_new_events(self):
        self.live_session("late")
        p, before = self.program(self.cpus[0])
        self.emit_all(p)
        self.assertEqual(p.wait(timeout=10), 0)
        self.wait_in_copy("late", before)  # sent by a live flush, written by the relay
        viewer = self.attach("late")
        p, after = self.program(self.cpus[1])
        self.assertPrintedSoon(viewer, after, self.emit_all(p))
        self.assertEqual(p.wait(timeout=10), 0)
        lines = self.destroy_and_check("late", viewer, [after])
        self.assertEqual(viewer.of(before), [])
        self.assertEqual(len(lines), 2 * N)


if __name__ == "__main__":
    unittest.main()
