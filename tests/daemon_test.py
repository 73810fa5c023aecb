"""The session daemon end to end: a real traceryd in a private run directory,
driven by the tracery command, tracing real instrumented programs; traces
read back with babeltrace2 (bt2)."""
import collections
import os
import re
import signal
import subprocess
import time
import unittest

from daemontest import DaemonTestCase, go, read_line
from tracetest import Trace, program


def lost_counts(stop_output):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"channel (\S+): (\d+) events? lost", stop_output)}


class Basics(DaemonTestCase):
    def test_hello_traced_through_the_daemon(self):
        self.d.start_daemon()
        path = self.session("s", events=("hello:*",), context=("vpid", "procname"))
        self.d.tracery("start")
        before = time.time_ns()
        self.d.run([program("examples", "hello-c"), "daemon"])
        after = time.time_ns()
        stop = self.d.tracery("stop").stdout
        self.assertEqual(lost_counts(stop), {"channel0": 0})
        trace = Trace(path)
        names = [e["name"] for e in trace.events]
        self.assertEqual(names, ["hello:greeting"] + ["hello:step"] * 8)
        # The program timestamps in the unit the daemon's metadata declares
        # (TSC cycles or ns): readers show when it ran.
        stamps = [e["ts"] for e in trace.events]
        self.assertGreaterEqual(stamps[0], before - 50_000)
        self.assertLessEqual(stamps[-1], after + 50_000)
        self.assertEqual(trace.events[0]["payload"], {"who": "daemon", "count": 6})
        self.assertEqual(trace.events[0]["context"]["procname"], "hello-c")
        view = self.d.tracery("view")
        self.assertEqual(view.stdout.count("hello:step"), 8)
        self.assertEqual(view.stderr, "")

    def test_exact_counts_with_small_buffers(self):
        n = 200_000
        self.d.start_daemon()
        path = self.session("s", channel_args=["--subbuf-size", "16k", "--num-subbuf", "4"])
        self.d.tracery("start")
        self.d.run([program("tests", "daemon-emitter"), "count", str(n)])
        lost = lost_counts(self.d.tracery("stop").stdout)["chan"]
        trace = Trace(path)
        self.assertEqual(len(trace.events) + trace.discarded, 2 * n)
        self.assertEqual(trace.discarded, lost)
        self.assertEqual(self.d.tracery("status").stdout.count(f"lost: {lost} event"), 1)

    def test_program_started_before_the_daemon(self):
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "count", "1000", "wait"])
        pid = int(read_line(emitter, "ready")[0])
        self.d.start_daemon()
        path = self.session("s")
        self.d.tracery("start")
        self.d.wait_registered(pid)
        # Registered after the daemon appeared: the session reaches it.
        deadline = time.time() + 10
        while f"programs tracing into it: {pid}" not in self.d.tracery("status").stdout:
            self.assertLess(time.time(), deadline)
            time.sleep(0.05)
        go(emitter)
        self.assertEqual(read_line(emitter, "done"), ["1000"])
        self.assertEqual(emitter.wait(timeout=30), 0)
        self.d.tracery("stop")
        self.assertEqual(len(Trace(path).events), 2000, self.d.log() + emitter.stderr.read())

    def test_list_userspace_events_of_running_programs(self):
        self.d.start_daemon()
        emitter, pid = self.d.spawn_registered([program("tests", "daemon-emitter"), "count", "1", "wait"])
        listing = self.d.tracery("list", "-u").stdout
        self.assertIn(f"PID: {pid} - Name: daemon-emitter", listing)
        self.assertIn("emit:tick (i u64)", listing)
        self.assertIn("emit:other (i u64, tag string)", listing)

    def test_no_daemon_means_no_wait(self):
        start = time.time()
        self.d.run([program("examples", "hello-c")])
        self.assertLess(time.time() - start, 2.0)


class Processes(DaemonTestCase):
    def check_fork(self, channel_args):
        n = 5000
        self.d.start_daemon()
        path = self.session("s", events=("fork:*",), channel_args=channel_args, context=("vpid",))
        self.d.tracery("start")
        out = self.d.run([program("tests", "forker"), str(n)])
        parent, child = (int(x) for x in out.split()[1::2])
        self.d.tracery("stop")
        trace = Trace(path)
        by_pid = collections.defaultdict(collections.Counter)
        for e in trace.events:
            by_pid[e["context"]["vpid"]][e["payload"]["phase"]] += 1
        self.assertEqual(trace.discarded, 0)
        self.assertEqual(dict(by_pid[parent]), {0: n, 2: n})
        self.assertEqual(dict(by_pid[child]), {1: n})

    def test_fork_per_uid_buffers(self):
        self.check_fork(["--subbuf-size", "256k"])

    def test_fork_per_pid_buffers(self):
        self.check_fork(["--buffers-pid"])

    def test_exec_of_a_traced_program(self):
        self.d.start_daemon()
        path = self.session("s", events=("emit:*", "hello:*"))
        self.d.tracery("start")
        self.d.run([program("tests", "daemon-emitter"), "exec", program("examples", "hello-c")])
        self.d.tracery("stop")
        names = collections.Counter(e["name"] for e in Trace(path).events)
        self.assertEqual(names, {"emit:tick": 1, "hello:greeting": 1, "hello:step": 8})

    def test_events_of_a_dlopened_library(self):
        self.d.start_daemon()
        path = self.session("s", events=("*",))
        self.d.tracery("start")
        self.d.run([program("tests", "dlopen-host"), program("tests", "libtracery-test-plugin.so")])
        self.d.tracery("stop")
        names = [e["name"] for e in Trace(path).events]
        self.assertEqual(names, ["host:mark", "shlib:call"] + ["plugin:work"] * 10 + ["host:mark"])

    def check_sigkill(self, channel_args):
        n = 100_000
        self.d.start_daemon()
        path = self.session("s", events=("emit:tick",), channel_args=channel_args)
        self.d.tracery("start")
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "hold", str(n)])
        self.assertEqual(read_line(emitter, "done"), [str(n)])
        emitter.send_signal(signal.SIGKILL)
        emitter.wait(timeout=30)
        self.d.tracery("stop")
        trace = Trace(path)
        values = [e["payload"]["i"] for e in trace.events]
        self.assertEqual(trace.discarded, 0)
        self.assertEqual(sorted(values), list(range(n)))

    def test_sigkilled_program_keeps_its_events_per_pid(self):
        self.check_sigkill(["--buffers-pid"])

    def test_sigkilled_program_keeps_its_events_per_uid(self):
        self.check_sigkill([])


class Sessions(DaemonTestCase):
    def test_two_sessions_get_exactly_their_events(self):
        n = 20_000
        self.d.start_daemon()
        a = self.session("a", events=("emit:tick",))
        b = self.session("b", events=("emit:other",), context=("vtid",))
        self.d.tracery("start", "a")
        self.d.tracery("start", "b")
        self.d.run([program("tests", "daemon-emitter"), "count", str(n)])
        self.d.tracery("stop", "a")
        self.d.tracery("stop", "b")
        ta, tb = Trace(a), Trace(b)
        self.assertEqual(collections.Counter(e["name"] for e in ta.events), {"emit:tick": n})
        self.assertEqual(collections.Counter(e["name"] for e in tb.events), {"emit:other": n})
        self.assertEqual([e["payload"]["i"] for e in ta.events], list(range(n)))
        self.assertEqual([e["payload"]["i"] for e in tb.events], list(range(n)))

    def test_snapshot_holds_the_newest_events(self):
        n = 500_000
        self.d.start_daemon()
        path = self.session("snap", "--snapshot", events=("emit:tick",),
                            channel_args=["--subbuf-size", "16k", "--num-subbuf", "4"])
        self.d.tracery("start")
        # On one CPU: each per-CPU buffer keeps its own newest data, so a thread
        # that migrates would leave a gap between the CPUs' windows.
        emitter = self.d.spawn(["taskset", "-c", "0", program("tests", "daemon-emitter"), "hold", str(n)])
        self.assertEqual(read_line(emitter, "done"), [str(n)])
        rec = self.d.tracery("snapshot", "record").stdout
        snap = re.search(r"recorded in (\S+)", rec).group(1)
        self.assertTrue(snap.startswith(path))
        values = [e["payload"]["i"] for e in Trace(snap).events]
        self.assertGreater(len(values), 100)
        self.assertLess(len(values), n)
        self.assertEqual(values[-1], n - 1, "the newest event is in the snapshot")
        self.assertEqual(values, list(range(values[0], n)), "the snapshot holds the newest events, contiguous")

    def test_enable_event_while_running(self):
        self.d.start_daemon()
        path = self.session("s", events=("emit:other",))
        self.d.tracery("start")
        emitter, pid = self.d.spawn_registered([program("tests", "daemon-emitter"), "count", "100", "wait"])
        self.d.tracery("enable-event", "-u", "emit:tick")
        self.d.tracery("disable-event", "-u", "emit:other")
        go(emitter)
        self.assertEqual(emitter.wait(timeout=30), 0)
        self.d.tracery("stop")
        self.assertEqual(collections.Counter(e["name"] for e in Trace(path).events), {"emit:tick": 100})


class DaemonDeath(DaemonTestCase):
    def test_program_survives_sigkill_of_the_daemon(self):
        self.d.start_daemon()
        self.session("s", events=("emit:tick",))
        self.d.tracery("start")
        emitter, pid = self.d.spawn_registered([program("tests", "daemon-emitter"), "spin", "3"])
        time.sleep(0.5)
        self.d.kill_daemon(signal.SIGKILL)
        count = int(read_line(emitter, "done", timeout=60)[0])
        self.assertEqual(emitter.wait(timeout=30), 0, emitter.stderr.read())
        self.assertGreater(count, 0)
        # A new daemon serves new sessions.
        self.d.start_daemon()
        path = self.session("after", events=("hello:*",))
        self.d.tracery("start")
        self.d.run([program("examples", "hello-c")])
        self.d.tracery("stop")
        self.assertEqual(len(Trace(path).events), 9)

    def test_stuck_daemon_delays_a_program_boundedly(self):
        pid = self.d.start_daemon()
        os.kill(pid, signal.SIGSTOP)
        self.addCleanup(os.kill, pid, signal.SIGCONT)
        start = time.time()
        self.d.run([program("examples", "hello-c")], extra_env={"TRACERY_REGISTER_TIMEOUT_MS": "300"})
        self.assertLess(time.time() - start, 3.0)
        os.kill(pid, signal.SIGCONT)
        self.d.tracery("list")

    def test_second_daemon_of_the_same_scope_refuses(self):
        pid = self.d.start_daemon()
        proc = subprocess.run([self.d.traceryd], env=self.d.env, capture_output=True, text=True, timeout=30)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn(f"another traceryd (pid {pid})", proc.stderr)
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)


class View(DaemonTestCase):
    """tracery view: what it says before babeltrace2's output."""

    def daemonless_trace(self, n):
        """A trace of n bench:ev events in 4 KiB packets (room for all of them)."""
        path = self.out("t")
        env = {k: v for k, v in self.d.env.items() if not k.startswith("TRACERY_")}
        env.update({"TRACERY_OUTPUT": path, "TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "64"})
        subprocess.run([program("bench", "tracery-bench"), str(n), "1", "ev"], env=env, check=True,
                       capture_output=True, timeout=120)
        return path

    def test_empty_and_cut_stream_files_are_named_with_the_fix(self):
        path = self.daemonless_trace(3000)
        streams = [os.path.join(path, f) for f in os.listdir(path) if f != "metadata"]
        view = self.d.tracery("view", path)
        self.assertEqual(view.stderr, "")
        self.assertEqual(view.stdout.count("bench:ev"), 3000)

        empty = os.path.join(path, "channel0_1_0")
        open(empty, "w").close()
        view = self.d.tracery("view", path)
        self.assertEqual(view.stderr.splitlines(),
                         [f"tracery: warning: {empty} is empty (0 bytes): none of its events reached the disk; "
                          "the trace is shown without them"])
        self.assertEqual(view.stdout.count("bench:ev"), 3000)
        os.unlink(empty)

        # A packet cut short, as a writer killed in the middle of it leaves it.
        cut = max(streams, key=os.path.getsize)
        size = os.path.getsize(cut)
        os.truncate(cut, size - 1)
        view = self.d.tracery("view", path, check=False)
        lines = view.stderr.splitlines()
        self.assertTrue(lines, view.stderr)
        m = re.match(rf"tracery: warning: {re.escape(cut)}: at offset (\d+), the packet there declares (\d+) bytes "
                     r"but only (\d+) remain: readers may reject the whole trace; `truncate -s (\d+) (\S+)` keeps",
                     lines[0])
        self.assertIsNotNone(m, lines[0])
        offset, declared, left = int(m.group(1)), int(m.group(2)), int(m.group(3))
        self.assertEqual(offset + declared, size)
        self.assertEqual(offset + left, size - 1)
        self.assertEqual((int(m.group(4)), m.group(5)), (offset, cut))
        self.assertGreater(offset, 0, "packets before the cut one")
        # The fix it names works: babeltrace2 reads the whole packets.
        subprocess.run(["truncate", "-s", str(offset), cut], check=True)
        view = self.d.tracery("view", path)
        self.assertEqual(view.stderr, "")


    def test_a_path_that_is_not_a_trace_is_named_as_such(self):
        self.d.start_daemon()  # so that a name would find sessions

        def fails(target, expect):
            proc = self.d.tracery("view", target, check=False)
            self.assertNotEqual(proc.returncode, 0, proc.stdout)
            self.assertEqual(proc.stderr.splitlines(), [f"tracery: {expect}"])

        for target in ("/nonexistent/dir", "no/such/dir"):
            fails(target, f"no trace directory '{target}': it does not exist; give the directory of a trace, or a "
                          "session name (see `tracery list`)")
        os.makedirs(self.out("empty/sub"))
        fails(self.out("empty"), f"'{self.out('empty')}' is not a trace: neither it nor a directory below it has a "
                                 "metadata file; give the directory of a trace")
        open(self.out("file"), "w").close()
        fails(self.out("file"), f"'{self.out('file')}' is not a directory: give the directory of a trace (the one "
                                "holding its metadata file), or a session name")
        fails("nosuch", "no session named 'nosuch': see `tracery list`, or create it with `tracery create nosuch`")
        self.d.tracery("create", "s", "--output", self.out("s"))
        fails("s", f"session 's' has no trace in {self.out('s')} yet (no metadata file): `tracery start s` it first")
        self.d.tracery("create", "snap", "--output", self.out("snap"), "--snapshot")
        self.d.tracery("start", "snap")
        fails("snap", f"session 'snap' has no snapshot in {self.out('snap')} yet: record one with "
                      "`tracery snapshot record -s snap`")


    def test_a_running_session_is_shown_with_a_warning(self):
        self.d.start_daemon()
        self.session("s")
        self.d.tracery("start")
        self.d.run([program("tests", "daemon-emitter"), "count", "10"])
        view = self.d.tracery("view")  # what is on disk: here nothing, the sub-buffer is not full
        self.assertEqual(view.stderr.splitlines(),
                         ["tracery: warning: session 's' is still running: its newest events are still in its buffers "
                          "and are not shown; run `tracery stop s` first to see them all"])
        self.d.tracery("stop")
        view = self.d.tracery("view")
        self.assertEqual(view.stderr, "")
        self.assertEqual(view.stdout.count("emit:"), 20)

        self.session("snap", "--snapshot")
        self.d.tracery("start", "snap")
        self.d.run([program("tests", "daemon-emitter"), "count", "10"])
        self.d.tracery("snapshot", "record", "-s", "snap")
        view = self.d.tracery("view", "snap")
        self.assertEqual(view.stderr.splitlines(),
                         ["tracery: warning: session 'snap' is still running: its snapshots hold the events up to "
                          "when they were recorded; `tracery snapshot record -s snap` for the newest"])
        self.assertEqual(view.stdout.count("emit:"), 20)

def possible_cpus():
    """The CPUs the daemon makes a per-CPU buffer for: the same count as base::possible_cpus()."""
    return os.sysconf("SC_NPROCESSORS_CONF")


def vm_size(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmSize for {pid}")


class Quotas(DaemonTestCase):
    """Channel sizes and the per-user buffer quota: refused with
    the limit in the message, and a failed command changes nothing."""

    def fails(self, *args, expect):
        proc = self.d.tracery(*args, check=False)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        for e in [expect] if isinstance(expect, str) else expect:
            self.assertIn(e, lines[0])
        return lines[0]

    def alive(self, pid):
        os.kill(pid, 0)  # raises if the daemon is gone
        with open(f"/proc/{pid}/stat") as f:
            self.assertNotEqual(f.read().split()[2], "Z", "the daemon died\n" + self.d.log())

    def status(self, *args):
        return self.d.tracery("status", *args).stdout

    def test_oversized_channels_are_refused_and_the_session_still_works(self):
        pid = self.d.start_daemon()
        path = self.session("s", events=())
        # 1024 x 1 GiB per CPU: beyond the 2^40 bytes a ring buffer may hold (once aborted the daemon).
        self.fails("enable-channel", "-u", "big", "--subbuf-size", "1G", "--num-subbuf", "1024",
                   expect=["cannot enable channel 'big'", "exceeds 2^40", f"({possible_cpus()} CPU",
                           "use a smaller --subbuf-size or --num-subbuf"])
        # 512 x 1 GiB per CPU fits a ring buffer, not the default quota (a quarter of the memory; it once woke the OOM killer).
        self.fails("enable-channel", "-u", "big", "--subbuf-size", "1G", "--num-subbuf", "512",
                   expect=["cannot enable channel 'big'", "more than the buffer quota of", "per user",
                           "--buffer-quota"])
        self.fails("enable-channel", "-u", "big", "--num-subbuf", "3",
                   expect="num_subbuf = 3 must be a power of two in 2..65536; change --num-subbuf")
        self.alive(pid)
        self.assertNotIn("channel big", self.status())
        self.d.tracery("enable-event", "-u", "hello:*")
        self.d.tracery("start")
        self.d.run([program("examples", "hello-c")])
        self.d.tracery("stop")
        self.assertEqual(len(Trace(path).events), 9)

    def test_bad_buffer_quota_option(self):
        proc = subprocess.run([self.d.traceryd, "--buffer-quota", "12x"], env=self.d.env, capture_output=True,
                              text=True, timeout=30)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr.splitlines(),
                         ["traceryd: bad --buffer-quota '12x': give a size in bytes, optionally with k, M or G "
                          "(e.g. 512M or 8G)"])

    def test_channels_over_a_small_quota_are_refused(self):
        self.d.start_daemon("--buffer-quota", "1M")
        self.d.tracery("create", "s", "--output", self.out("s"))
        # Every possible CPU gets 4 x 256 KiB: over 1 MiB.
        self.fails("enable-channel", "-u", "c", "--subbuf-size", "256k", "--num-subbuf", "4",
                   expect=["cannot enable channel 'c': its buffers take", f"({possible_cpus()} CPU",
                           "more than the buffer quota of 1 MiB per user"])
        # The default channel (4 x 512 KiB), made by enable-event, is checked too.
        self.fails("enable-event", "-u", "emit:*", expect="cannot enable channel 'channel0'")
        # A small channel fits.
        self.d.tracery("enable-channel", "-u", "small", "--subbuf-size", "4k", "--num-subbuf", "4")
        status = self.status()
        self.assertIn("channel small", status)
        self.assertNotIn("channel c:", status)
        self.assertNotIn("channel channel0", status)
        self.assertIn("buffer quota of uid 0: 0 bytes of 1 MiB in use", status)

    def test_a_program_over_its_users_quota_is_not_traced(self):
        # Per-PID buffers: "chan" 4 x 64 KiB per CPU, "small" 4 x 16 KiB. The
        # quota holds both for one program, and only "small" for a second.
        n = possible_cpus()
        pid = self.d.start_daemon("--buffer-quota", str(n * 448 * 1024))
        path = self.out("s")
        self.d.tracery("create", "s", "--output", path)
        self.d.tracery("enable-channel", "-u", "chan", "--subbuf-size", "64k", "--num-subbuf", "4", "--buffers-pid")
        self.d.tracery("enable-channel", "-u", "small", "--subbuf-size", "16k", "--num-subbuf", "4", "--buffers-pid")
        self.d.tracery("enable-event", "-u", "emit:tick", "-c", "chan")
        self.d.tracery("enable-event", "-u", "emit:other", "-c", "small")
        self.d.tracery("add-context", "-u", "-t", "vpid")
        self.d.tracery("start")
        first = self.d.spawn([program("tests", "daemon-emitter"), "count", "1000", "wait"])
        first_pid = int(read_line(first, "ready")[0])
        second = self.d.spawn([program("tests", "daemon-emitter"), "count", "1000", "wait"])
        second_pid = int(read_line(second, "ready")[0])  # registered: not held up by the refusal
        self.alive(pid)
        status = self.status()
        chan, small = status.split("channel small:")
        self.assertIn("not traced: 1 program\n", chan)
        self.assertIn(f"pid {second_pid} (uid 0): the buffer quota of uid 0 is", chan)
        self.assertNotIn(f"pid {first_pid} (uid 0)", chan)
        self.assertNotIn("not traced", small)
        self.assertIn(f"channel chan does not trace program {second_pid} (uid 0)", self.d.log())
        for p in (first, second):
            go(p)
            self.assertEqual(p.wait(timeout=30), 0)
        # Their buffers went with them: a third program fits in both channels.
        deadline = time.time() + 10
        while "buffer quota of uid 0: 0 bytes" not in self.status():
            self.assertLess(time.time(), deadline, self.status())
            time.sleep(0.05)
        out = self.d.run([program("tests", "daemon-emitter"), "count", "500"])
        third_pid = int(out.split()[1])
        self.d.tracery("stop")
        self.alive(pid)
        events = Trace(path).events
        ticks = collections.Counter(e["context"]["vpid"] for e in events if e["name"] == "emit:tick")
        others = collections.Counter(e["context"]["vpid"] for e in events if e["name"] == "emit:other")
        self.assertEqual(ticks, {first_pid: 1000, third_pid: 500})
        self.assertEqual(others, {first_pid: 1000, second_pid: 1000, third_pid: 500})
        self.assertIn("not traced: 1 program\n", self.status())  # reported until the next start

    def test_start_reports_the_running_programs_over_quota(self):
        one = possible_cpus() * 4 * 64 * 1024  # a per-PID buffer, headers aside
        self.d.start_daemon("--buffer-quota", str(one + one // 2))
        path = self.session("s", events=("emit:tick",), context=("vpid",),
                            channel_args=["--subbuf-size", "64k", "--num-subbuf", "4", "--buffers-pid"])
        emitters, pids = [], []
        for _ in range(2):
            emitters.append(self.d.spawn([program("tests", "daemon-emitter"), "count", "100", "wait"]))
            pids.append(int(read_line(emitters[-1], "ready")[0]))
            self.d.wait_registered(pids[-1])
        # The programs are joined in the order they registered: the second one finds the quota used.
        out = self.d.tracery("start").stdout
        self.assertIn("(1 running programs)", out)
        self.assertIn(f"warning: channel chan does not trace program {pids[1]}: the buffer quota of uid 0 is", out)
        self.assertNotIn(f"program {pids[0]}", out)
        for p in emitters:
            go(p)
            self.assertEqual(p.wait(timeout=30), 0)
        self.d.tracery("stop")
        self.assertEqual(collections.Counter(e["context"]["vpid"] for e in Trace(path).events), {pids[0]: 100})

    def limit_address_space(self, pid, headroom):
        """Lowers the daemon's RLIMIT_AS to what it maps now + headroom: a larger mmap fails (ENOMEM)."""
        import resource
        old = resource.prlimit(pid, resource.RLIMIT_AS)
        resource.prlimit(pid, resource.RLIMIT_AS, (vm_size(pid) + headroom, old[1]))
        return lambda: resource.prlimit(pid, resource.RLIMIT_AS, old)

    def test_a_start_that_fails_leaves_the_session_as_it_was(self):
        pid = self.d.start_daemon("--buffer-quota", "8G")
        # 4 x 32 MiB per CPU: more than the address space left to the daemon below.
        path = self.session("s", events=("emit:tick",), channel_args=["--subbuf-size", "32M", "--num-subbuf", "4"])
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "count", "100", "wait"])
        emitter_pid = int(read_line(emitter, "ready")[0])
        restore = self.limit_address_space(pid, 64 << 20)
        self.addCleanup(restore)
        self.fails("start", expect=["cannot start session 's': cannot make the", "buffer of channel 'chan'",
                                    "Cannot allocate memory", "free some memory"])
        # This once left the session "started" with an empty buffer slot, and status crashed the daemon.
        self.alive(pid)
        status = self.status()
        self.assertIn("[created]", status)
        self.assertIn("buffer quota of uid 0: 0 bytes of 8 GiB in use", status)
        self.assertIn("programs tracing into it: none", status)
        self.fails("stop", expect="session 's' is not started")
        restore()
        # Nothing was left behind: channels may still be added, and the next start traces the program.
        self.d.tracery("enable-channel", "-u", "later", "-s", "s")
        self.d.tracery("start")
        self.assertIn(f"programs tracing into it: {emitter_pid}", self.status())
        go(emitter)
        self.assertEqual(emitter.wait(timeout=30), 0)
        self.d.tracery("stop")
        self.assertEqual(len(Trace(path).events), 100)
        self.d.tracery("destroy")
        self.alive(pid)

    def test_a_buffer_that_cannot_be_made_for_a_registering_program(self):
        pid = self.d.start_daemon("--buffer-quota", "8G")
        path = self.session("s", events=("emit:tick",), channel_args=["--subbuf-size", "32M", "--num-subbuf", "4",
                                                                      "--buffers-pid"])
        self.d.tracery("start")
        restore = self.limit_address_space(pid, 64 << 20)
        self.addCleanup(restore)
        # An uncaught exception here once aborted the daemon.
        out = self.d.run([program("tests", "daemon-emitter"), "count", "100"])
        untraced = int(out.split()[1])
        restore()
        self.alive(pid)
        status = self.status()
        self.assertIn("not traced: 1 program\n", status)
        self.assertIn(f"pid {untraced} (uid 0): cannot make the", status)
        self.assertIn("Cannot allocate memory", status)
        self.d.run([program("tests", "daemon-emitter"), "count", "100"])
        self.d.tracery("stop")
        self.assertEqual(len(Trace(path).events), 100)


class BadInput(DaemonTestCase):
    def fails(self, *args, expect):
        proc = self.d.tracery(*args, check=False)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(expect, lines[0])
        return lines[0]

    def test_missing_daemon(self):
        self.fails("list", expect="no session daemon: `tracery create` starts one, or start one with "
                                  "`traceryd --daemonize`")

    def test_errors_leave_other_sessions_untouched(self):
        self.d.start_daemon()
        self.session("good", events=("hello:*",))
        self.d.tracery("start", "good")
        self.fails("frobnicate", expect="unknown verb 'frobnicate'")
        self.fails("create", "x", "--bogus", expect="--bogus")
        self.fails("start", "nosuch", expect="no session named 'nosuch'")
        self.fails("create", "bad", "--output", "/proc/no/such/dir", expect="cannot create output directory")
        os.makedirs(self.out("full"))
        open(os.path.join(self.out("full"), "x"), "w").close()
        self.fails("create", "bad2", "--output", self.out("full"), expect="is not empty")
        bad_filter = self.d.tracery("enable-event", "-u", "emit:*", "--filter", "i >", "-s", "good", check=False)
        self.assertNotEqual(bad_filter.returncode, 0)
        self.assertIn("bad filter: expected an operand here", bad_filter.stderr)  # then the caret lines
        self.fails("enable-event", "-u", "nocolon", "-s", "good", expect="bad event pattern")
        self.fails("enable-channel", "-u", "c2", "--subbuf-size", "1000", "-s", "good", expect="channel")
        self.fails("create", "good", "--output", self.out("other"), expect="already exists")
        self.fails("start", "good", expect="already started")
        status = self.d.tracery("status", "good").stdout
        self.assertIn("[started]", status)
        self.d.run([program("examples", "hello-c")])
        self.d.tracery("stop", "good")
        self.assertEqual(len(Trace(self.out("good")).events), 9)

    def test_a_fifo_in_place_of_the_metadata_blocks_nothing(self):
        """The owner of a session puts a FIFO where its metadata was, then a program brings events the session
        has not seen: the daemon adds their classes by writing the metadata anew from what it holds (never
        opening what is there), so it answers every command at once and the trace reads whole."""
        self.d.start_daemon()
        path = self.session("fifo")
        self.d.tracery("start", "fifo")
        metadata = os.path.join(path, "metadata")
        os.unlink(metadata)
        os.mkfifo(metadata)
        self.d.run([program("tests", "daemon-emitter"), "count", "10"], timeout=20)
        start = time.monotonic()
        self.d.tracery("list")
        self.assertLess(time.monotonic() - start, 5.0)  # blocked, it would never answer
        self.d.tracery("stop", "fifo")
        self.assertTrue(os.path.isfile(metadata))
        self.assertEqual(collections.Counter(e["name"] for e in Trace(path).events),
                         {"emit:tick": 10, "emit:other": 10})

    def test_bad_payload_jit_under_the_daemon_is_named_and_traced(self):
        self.d.start_daemon()
        path = self.session("s")
        self.d.tracery("start")
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "count", "100"], stdin=subprocess.DEVNULL,
                               extra_env={"TRACERY_PAYLOAD_JIT": "maybe", "TRACERY_LOG": "stderr"})
        _, err = emitter.communicate(timeout=60)
        self.assertEqual(emitter.returncode, 0, err)
        self.assertEqual(err.splitlines(), ["tracery: TRACERY_PAYLOAD_JIT='maybe' is not valid: use 0 (the generic "
                                            "loop) or 1 (code generated per layout, the default); using the generated "
                                            "code"])
        self.d.tracery("stop")
        self.assertEqual(len(Trace(path).events), 200)

    def test_full_disk(self):
        tiny = self.out("tiny")
        os.makedirs(tiny)
        if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", tiny],
                                               capture_output=True).returncode != 0:
            self.skipTest("needs root to mount a tiny tmpfs")
        self.addCleanup(subprocess.run, ["umount", "-l", tiny], capture_output=True)
        self.d.start_daemon()
        self.session("other", events=("hello:*",))
        self.d.tracery("start", "other")
        self.d.tracery("create", "full", "--output", os.path.join(tiny, "t"))
        self.d.tracery("enable-event", "-u", "emit:*", "-s", "full")
        self.d.tracery("start", "full")
        self.d.run([program("tests", "daemon-emitter"), "count", "100000"])
        self.fails("stop", "full", expect="disk full")
        self.assertIn("[started]", self.d.tracery("status", "other").stdout)
        self.d.run([program("examples", "hello-c")])
        self.d.tracery("stop", "other")
        self.assertEqual(len(Trace(self.out("other")).events), 9)

    def test_help_for_every_verb(self):
        for verb in ["create", "destroy", "enable-channel", "enable-event", "disable-event", "add-context",
                     "start", "stop", "status", "list", "snapshot", "view", "version"]:
            proc = self.d.tracery(verb, "--help")
            self.assertIn("Usage", proc.stdout, verb)


if __name__ == "__main__":
    unittest.main()
