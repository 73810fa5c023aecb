"""The user-space contexts (add-context -u -t, TRACERY_CONTEXT): each value
recorded by tests/apps/context_probe.c checked against what the test sees of
the program (its ids, threads, namespaces, cgroup, the address range of the
emitting function, its page faults), in daemonless mode and under traceryd
with per-user buffers; babeltrace2 reads them without a warning and
`tracery view` prints them byte for byte as babeltrace2 does."""
import ctypes
import os
import re
import subprocess
import tempfile
import shutil
import unittest

from daemontest import DaemonTestCase
from tracetest import Trace, babeltrace2_text, program, run_traced

NAMESPACES = ("pid", "mnt", "net", "user", "cgroup", "uts", "ipc", "time")
SOFTWARE_COUNTERS = ("page-fault", "task-clock", "cpu-clock", "context-switches", "cpu-migrations", "minor-faults",
                     "major-faults")
CONTEXTS = ["vpid", "vtid", "procname", "ip", "pthread_id", "vuid", "vgid", *(n + "_ns" for n in NAMESPACES),
            "cgroup_id", *("perf:thread:" + c for c in SOFTWARE_COUNTERS)]
STEPS = 6
PAGES_PER_STEP = 16  # context_probe.c's kPagesPerStep


def cgroup_id():
    """The id of this process's cgroup v2: the inode of its directory (the same process tree as the probe)."""
    with open("/proc/self/cgroup") as f:
        path = next(line[3:].rstrip("\n") for line in f if line.startswith("0::"))
    for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(mount, "cgroup.controllers")):  # only a cgroup2 root has it
            return os.stat(mount + path).st_ino
    return 0


def symbol_size(binary, name):
    """The size of a function symbol of binary, from nm -S."""
    out = subprocess.run(["nm", "-S", binary], capture_output=True, text=True, check=True).stdout
    m = re.search(rf"^[0-9a-f]+ ([0-9a-f]+) [tT] {name}$", out, re.M)
    return int(m.group(1), 16)


def hardware_counter_opens():
    """Whether perf_event_open(2) counts cycles of this thread here (a machine with a PMU)."""
    attr = bytearray(128)
    attr[0:4] = (0).to_bytes(4, "little")  # PERF_TYPE_HARDWARE
    attr[4:8] = len(attr).to_bytes(4, "little")
    attr[8:16] = (0).to_bytes(8, "little")  # PERF_COUNT_HW_CPU_CYCLES
    attr[40:48] = ((1 << 5) | (1 << 6)).to_bytes(8, "little")  # exclude_kernel, exclude_hv
    libc = ctypes.CDLL(None, use_errno=True)
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    fd = libc.syscall(298, buf, 0, -1, -1, 8)  # SYS_perf_event_open, PERF_FLAG_FD_CLOEXEC
    if fd >= 0:
        os.close(fd)
    return fd >= 0


def events_contexts(events):
    return [e["context"] for e in events]


class ContextChecks:
    """The checks of a trace of context-probe, shared by both modes."""

    def check_trace(self, path, stdout, binary):
        rc, text, err = babeltrace2_text(path)
        self.assertEqual((rc, err), (0, ""))
        view = subprocess.run([program("src", "cli", "tracery"), "view", path], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual((view.returncode, view.stderr), (0, ""))
        self.assertEqual(view.stdout, text)
        self.assertIn("perf_thread_page_fault = ", text)

        lines = dict((words[0], words[1:]) for words in (line.split() for line in stdout.splitlines())
                     if words[0] == "emit_step")
        threads = {int(w[1]): int(w[2]) for w in (line.split() for line in stdout.splitlines()) if w[0] == "thread"}
        emit_at = int(lines["emit_step"][0])
        size = symbol_size(binary, "emit_step")
        events = Trace(path).named("ctx:step")
        self.assertEqual(len(events), STEPS + 1)
        main = [e for e in events if e["payload"]["i"] < STEPS]
        self.assertEqual([e["payload"]["i"] for e in main], list(range(STEPS)))
        pid = main[0]["context"]["vpid"]
        self.assertEqual(set(threads), {pid, events[-1]["context"]["vtid"]})
        ns = {n + "_ns": os.stat(f"/proc/self/ns/{n}").st_ino for n in NAMESPACES if os.path.exists(f"/proc/self/ns/{n}")}
        for e in events:
            c = e["context"]
            self.assertEqual(c["vpid"], pid)
            self.assertEqual(c["pthread_id"], threads[c["vtid"]])
            self.assertEqual((c["vuid"], c["vgid"]), (os.getuid(), os.getgid()))
            for name, ino in ns.items():
                self.assertEqual(c[name], ino, name)
            self.assertEqual(c["cgroup_id"], cgroup_id())
            # The address the event returns to is inside emit_step, after its start.
            self.assertGreater(c["ip"], emit_at)
            self.assertLess(c["ip"], emit_at + size)
        # Each step faults 16 new pages before its event; the counters start at 0 on the thread's first event.
        faults = [e["context"]["perf_thread_page_fault"] for e in main]
        minor = [e["context"]["perf_thread_minor_faults"] for e in main]
        self.assertEqual(faults[0], 0)
        for a, b in zip(faults, faults[1:]):
            self.assertGreaterEqual(b - a, PAGES_PER_STEP)
        for a, b in zip(minor, minor[1:]):
            self.assertGreaterEqual(b - a, PAGES_PER_STEP)
        for counter in ("task_clock", "cpu_clock"):
            values = [e["context"]["perf_thread_" + counter] for e in main]
            self.assertEqual(values, sorted(values), counter)
            self.assertGreater(values[-1], values[0], counter)
        # The second thread has counters of its own, from 0, closed when it exited: the main thread's remain.
        self.assertLess(events[-1]["context"]["perf_thread_page_fault"], PAGES_PER_STEP)
        perf_fds = [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("perf_fds ")]
        self.assertEqual(perf_fds, [len(SOFTWARE_COUNTERS)])


class DaemonlessContextTest(ContextChecks, unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-context-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_every_context(self):
        probe = program("tests", "context-probe")
        out = os.path.join(self.tmp, "trace")
        proc = run_traced([probe, str(STEPS)], out, {"TRACERY_CONTEXT": ",".join(CONTEXTS)})
        self.assertEqual(proc.stderr, "")
        self.check_trace(out, proc.stdout, probe)

    def test_fork_child_reads_its_own(self):
        """A fork child's counters are its own thread's, from 0 (not the parent's inherited ones), and it
        reads its ids again."""
        forker = program("tests", "forker")
        out = os.path.join(self.tmp, "fork")
        run_traced([forker, "2000"], out, {"TRACERY_CONTEXT": "vpid,vtid,pthread_id,pid_ns,perf:thread:task-clock"})
        events = Trace(out).named("fork:tick")
        by_phase = {p: [e["context"] for e in events if e["payload"]["phase"] == p] for p in (0, 1, 2)}
        self.assertEqual([len(v) for v in by_phase.values()], [2000, 2000, 2000])
        parent, child = by_phase[0][0]["vpid"], by_phase[1][0]["vpid"]
        self.assertNotEqual(parent, child)
        self.assertEqual({c["vtid"] for c in by_phase[1]}, {child})
        self.assertEqual({c["pid_ns"] for c in events_contexts(events)}, {os.stat("/proc/self/ns/pid").st_ino})
        # The parent's counter only grows; the child's starts again near 0.
        parent_clock = [c["perf_thread_task_clock"] for c in by_phase[0] + by_phase[2]]
        self.assertEqual(parent_clock, sorted(parent_clock))
        self.assertLess(by_phase[1][0]["perf_thread_task_clock"], by_phase[0][-1]["perf_thread_task_clock"])

    def test_unknown_context_and_missing_counter_refused(self):
        probe = program("tests", "context-probe")
        out = os.path.join(self.tmp, "bad")
        proc = run_traced([probe, "1"], out, {"TRACERY_CONTEXT": "vpid,perf:thread:nope", "TRACERY_LOG": "stderr"})
        self.assertIn("TRACERY_CONTEXT", proc.stderr)
        self.assertIn("add-context --list", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "metadata")))
        if not hardware_counter_opens():
            proc = run_traced([probe, "1"], out, {"TRACERY_CONTEXT": "perf:thread:cycles", "TRACERY_LOG": "stderr"})
            self.assertIn("perf:thread:cycles cannot be counted here: perf_event_open: ", proc.stderr)
            self.assertFalse(os.path.exists(os.path.join(out, "metadata")))


class DaemonContextTest(ContextChecks, DaemonTestCase):
    def test_every_context_per_user_buffers(self):
        self.d.start_daemon()
        probe = program("tests", "context-probe")
        path = self.session("c", events=("ctx:*",), context=CONTEXTS)
        status = self.d.tracery("status", "c").stdout
        self.assertIn("perf:thread:page-fault", status)
        self.d.tracery("start", "c")
        stdout = self.d.run([probe, str(STEPS)])
        self.d.tracery("stop", "c")
        self.check_trace(path, stdout, probe)

    def test_every_context_per_process_buffers(self):
        self.d.start_daemon()
        probe = program("tests", "context-probe")
        path = self.session("p", events=("ctx:*",), channel_args=["--buffers-pid"], context=CONTEXTS)
        self.d.tracery("start", "p")
        stdout = self.d.run([probe, str(STEPS)])
        self.d.tracery("stop", "p")
        self.check_trace(path, stdout, probe)

    def test_add_context_refusals(self):
        self.d.start_daemon()
        self.d.tracery("create", "r", "--output", self.out("r"))
        bad = self.d.tracery("add-context", "-u", "-s", "r", "-t", "vpid", "-t", "nope", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("unknown context 'nope'", bad.stderr)
        self.assertIn("add-context --list", bad.stderr)
        if not hardware_counter_opens():
            refused = self.d.tracery("add-context", "-u", "-s", "r", "-t", "perf:thread:instructions", check=False)
            self.assertNotEqual(refused.returncode, 0)
            self.assertIn("perf:thread:instructions cannot be counted here: perf_event_open: ", refused.stderr)
        # Nothing of a refused request was kept.
        self.assertNotIn("vpid", self.d.tracery("status", "r").stdout)

    def test_list(self):
        listing = self.d.tracery("add-context", "--list").stdout.splitlines()
        rows = {line.split()[0]: line.split(None, 1)[1] for line in listing}
        for name in CONTEXTS + ["perf:thread:cycles", "perf:thread:faults"]:
            self.assertIn(name, rows)
            self.assertIn("user", rows[name])
        self.assertEqual(len(rows), len(listing))


if __name__ == "__main__":
    unittest.main()
