"""traceryd's kernel domain: `tracery enable-event -k` (tracepoints, --syscall), `track -k` and
user events in one session, written as OUTPUT/ust + OUTPUT/kernel and read back merged by babeltrace2; the
one-line refusal of -k for a user neither root nor in the daemon's group; a session stopped, changed and started
again continuing its kernel trace; a snapshot session's kernel part; `-k -a`; user-space probes. tracefs's
global settings are the same after each test as before. Needs root and a mounted tracefs (skipped with a message
otherwise). kernel_analyses_test.py checks the traces with lttng-analyses; dead_daemon_leftovers_test.py what a
killed daemon leaves."""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
import unittest

from daemontest import DaemonTestCase, UsersTestCase, go, read_line
from kerneltest import DUMP, GETPIDS, ROUNDS, KernelMixin, our_instances, read_text
from tracetest import program


class KernelSessionTest(KernelMixin, DaemonTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()

    def new_session(self, name, *create_options):
        """The daemon started and a session NAME writing to self.out(NAME): (its pid, tracery, the path)."""
        daemon = self.d.start_daemon()
        path = self.out(name)
        self.d.tracery("create", name, *create_options, "--output", path)
        return daemon, self.d.tracery, path

    def test_merged_user_and_kernel_trace(self):
        workload = program("tests", "kernel-workload")
        daemon, t, path = self.new_session("k")
        t("enable-event", "-u", "kw:*", "-s", "k")
        t("enable-event", "-k", "--syscall", "getpid", "-s", "k")
        t("enable-event", "-k", "sched_switch", "-s", "k")
        p, pid = self.d.spawn_registered([workload, str(GETPIDS), str(ROUNDS)])
        out = t("track", "-k", "--pid", str(pid), "-s", "k").stdout
        self.assertIn(f"    Process IDs:          {pid} and their descendants\n", out)
        t("start", "k")
        instances = our_instances(self.root, daemon)
        self.assertEqual(instances, [f"tracery-{daemon}-u0-k"])
        go(p)
        read_line(p, "done")
        p.wait(timeout=30)
        stop = t("stop", "k").stdout
        self.assertIn("channel0 (kernel): 0 events lost", stop)
        status = t("status", "k").stdout
        self.assertIn("tracepoints: sched_switch; system calls: getpid", status)
        self.assertIn(f"processes: {pid} and their descendants", status)
        self.assertIn(", 0 lost", status)
        self.assertTrue(os.path.isfile(os.path.join(path, "ust", "metadata")))
        self.assertTrue(os.path.isfile(os.path.join(path, "kernel", "metadata")))
        self.assertFalse(os.path.exists(os.path.join(path, "metadata")))

        dump = subprocess.run([sys.executable, DUMP, path], capture_output=True, text=True, timeout=300)
        self.assertEqual(dump.returncode, 0, dump.stderr)
        msgs = [json.loads(line) for line in dump.stdout.splitlines()]
        self.assertEqual([m for m in msgs if "discarded" in m], [])
        events = [m for m in msgs if "e" in m]
        # Every getpid: its user event, then its entry, then its exit returning the pid, in the merged timeline.
        # The loop's calls are those from its first user event on; the runtime may make more before or after
        # (a sanitizer's at exit).
        loop = [m for m in events if m["e"] in ("kw:before_getpid", "syscall_entry_getpid", "syscall_exit_getpid")]
        first = next(i for i, m in enumerate(loop) if m["e"] == "kw:before_getpid")
        loop = loop[first:first + 3 * GETPIDS]
        self.assertEqual([m["e"] for m in loop],
                         ["kw:before_getpid", "syscall_entry_getpid", "syscall_exit_getpid"] * GETPIDS)
        self.assertEqual([m["f"]["ret"] for m in loop if m["e"] == "syscall_exit_getpid"], [pid] * GETPIDS)
        loop_and_runtime_exits = [m for m in events if m["e"] == "syscall_exit_getpid"]
        self.assertEqual({m["d"] for m in events if m["e"].startswith("syscall_")}, {"kernel"})
        switches = [m["f"] for m in events if m["e"] == "sched_switch"]
        names = {s["prev_comm"] for s in switches if s["prev_tid"] != 0} | \
                {s["next_comm"] for s in switches if s["next_tid"] != 0}
        self.assertLessEqual({"kw-ping", "kw-pong"}, names)
        # The two threads switch to each other ROUNDS times at least: each round trip blocks both.
        self.assertGreaterEqual(sum(1 for s in switches if s["prev_comm"] in ("kw-ping", "kw-pong")), ROUNDS)

        bt = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=300)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stderr, "")
        self.assertEqual(bt.stdout.count("syscall_exit_getpid:"), len(loop_and_runtime_exits))
        self.assertEqual(bt.stdout.count("kw:before_getpid:"), GETPIDS)
        view = t("view", "k")
        self.assertEqual(view.stdout, bt.stdout)

        t("destroy", "k")
        self.assertEqual(our_instances(self.root, daemon), [])

    def test_kernel_refused_after_first_start_of_a_user_session(self):
        self.d.start_daemon()
        self.session("u")
        self.d.tracery("start", "u")
        self.d.tracery("stop", "u")
        r = self.d.tracery("enable-event", "-k", "sched_switch", "-s", "u", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("session 'u' was started without kernel events", r.stderr)
        # A user trace in OUTPUT itself, as before the kernel domain.
        self.assertTrue(os.path.isfile(os.path.join(self.out("u"), "metadata")))

    def test_bad_kernel_requests(self):
        self.d.start_daemon()
        self.d.tracery("create", "b", "--output", self.out("b"))
        for args, message in (
                (["enable-event", "-k", "no_such_tracepoint_xyz"], "no kernel tracepoint matches 'no_such_tracepoint_xyz'"),
                (["enable-event", "-k", "--syscall", "no_such_call"], "no system call 'no_such_call'"),
                (["enable-event", "-k", "sched/../x"], "bad kernel event pattern 'sched/../x'"),
                (["enable-event", "-k", "-u", "sched_switch"], "-u and -k exclude each other"),
                (["enable-event", "-k", "-a", "sched_switch"], "-a and event names exclude each other"),
                (["enable-event", "-k", "sched_switch", "--filter", "x == 1"], "no field 'x' in this event"),
                (["enable-channel", "-k", "kc", "--subbuf-size", "64k"], "give both --subbuf-size and --num-subbuf"),
                (["track", "-k", "--pid", "0"], "bad --pid '0'"),
                (["track", "--pid", "5"], "--pid is the kernel domain's (-k)"),
                (["untrack", "-k", "--pid", "5"], "pid 5 is not tracked"),
                (["disable-event", "-k", "sched_switch"], "kernel event 'sched_switch' is not enabled")):
            r = self.d.tracery(*args, "-s", "b", check=False)
            self.assertEqual(r.returncode, 1, (args, r.stderr))
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn(message, r.stderr)
        out = self.d.tracery("track", "-k", "--pid", "1", "--no-follow-children", "-s", "b").stdout
        self.assertIn("    Process IDs:          1\n", out)
        self.assertIn("    processes: 1 only\n", self.d.tracery("status", "b").stdout)
        listing = self.d.tracery("list", "-k").stdout
        self.assertIn("      sched:sched_switch\n", listing)
        self.assertIn("      getpid\n", listing)

    def workload(self, calls, rounds):
        """A kernel-workload registered with the daemon, waiting for its go: (process, pid)."""
        return self.d.spawn_registered([program("tests", "kernel-workload"), str(calls), str(rounds)])

    @staticmethod
    def run_workload(p):
        go(p)
        read_line(p, "done")
        p.wait(timeout=30)

    def test_restart_continues_the_kernel_trace_with_the_changes_made_while_stopped(self):
        """Stopped, a session's kernel events and tracked pids change; started again, its kernel trace goes
        on in the same streams (nothing reported discarded), with the new events' classes."""
        daemon, t, path = self.new_session("r")
        t("enable-event", "-k", "--syscall", "getpid", "-s", "r")
        first, first_pid = self.workload(GETPIDS, 0)
        t("track", "-k", "--pid", str(first_pid), "-s", "r")
        t("start", "r")
        # A change the daemon refuses while tracing leaves the session as it was.
        r = t("enable-event", "-k", "no_such_tracepoint", "-s", "r", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no kernel tracepoint matches 'no_such_tracepoint'", r.stderr)
        self.run_workload(first)
        t("stop", "r")
        r = t("enable-channel", "-k", "kc", "--subbuf-size", "64k", "--num-subbuf", "4", "-s", "r", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("its kernel buffer was made then", r.stderr)
        t("enable-event", "-k", "sched_switch", "-s", "r")
        second, second_pid = self.workload(GETPIDS // 2, ROUNDS)
        t("untrack", "-k", "--pid", str(first_pid), "-s", "r")
        t("track", "-k", "--pid", str(second_pid), "-s", "r")
        t("start", "r")
        self.assertEqual(our_instances(self.root, daemon), [f"tracery-{daemon}-u0-r"])
        self.run_workload(second)
        stop = t("stop", "r").stdout
        self.assertIn("channel0 (kernel): 0 events lost", stop)
        status = t("status", "r").stdout
        self.assertIn("tracepoints: sched_switch; system calls: getpid", status)
        self.assertIn(f"processes: {second_pid} and their descendants", status)

        msgs = self.dump(os.path.join(path, "kernel"))
        self.assertEqual([m for m in msgs if "discarded" in m], [])
        events = [m for m in msgs if "e" in m]
        returns = [m["f"]["ret"] for m in events if m["e"] == "syscall_exit_getpid"]
        # The loops' calls, and at most a few of each C library's own.
        self.assertGreaterEqual(returns.count(first_pid), GETPIDS)
        self.assertLessEqual(returns.count(first_pid), GETPIDS + 4)
        self.assertGreaterEqual(returns.count(second_pid), GETPIDS // 2)
        self.assertLessEqual(returns.count(second_pid), GETPIDS // 2 + 4)
        self.assertEqual(set(returns), {first_pid, second_pid})
        # sched_switch only from the second run on: after the first program's last call.
        last_of_first = max(m["t"] for m in events if m["e"] == "syscall_exit_getpid" and m["f"]["ret"] == first_pid)
        switches = [m for m in events if m["e"] == "sched_switch"]
        self.assertGreaterEqual(sum(1 for m in switches if m["f"]["prev_comm"] in ("kw-ping", "kw-pong")), ROUNDS)
        self.assertGreater(min(m["t"] for m in switches), last_of_first)
        self.assertEqual(sum(1 for m in events if m["e"] == "lttng_statedump_start"), 2)
        bt = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=300)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stderr, "")
        t("destroy", "r")
        self.assertEqual(our_instances(self.root, daemon), [])

    def test_a_start_failing_after_the_kernel_part_keeps_its_kernel_trace_for_the_next(self):
        """The user part of a first start fails (OUTPUT/ust cannot be made) after the kernel part began:
        the start fails in one line, and the next start continues the same kernel trace."""
        daemon, t, path = self.new_session("f")
        t("enable-event", "-u", "kw:*", "-s", "f")
        t("enable-event", "-k", "--syscall", "getpid", "-s", "f")
        blocker = os.path.join(path, "ust")
        with open(blocker, "w") as f:
            f.write("not a directory")
        r = t("start", "f", check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("cannot start session 'f': cannot write the trace metadata", r.stderr)
        self.assertIn("[created]", t("status", "f").stdout)
        os.unlink(blocker)
        p, pid = self.workload(GETPIDS, 0)
        t("track", "-k", "--pid", str(pid), "-s", "f")
        t("start", "f")
        self.run_workload(p)
        t("stop", "f")
        t("destroy", "f")
        self.assertEqual(our_instances(self.root, daemon), [])
        bt = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=300)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stderr, "")
        self.assertEqual(bt.stdout.count("kw:before_getpid:"), GETPIDS)
        self.assertGreaterEqual(bt.stdout.count("syscall_entry_getpid:"), GETPIDS)
        self.assertEqual(bt.stdout.count("lttng_statedump_start:"), 2)

    def test_snapshot_session_records_kernel_and_user_events(self):
        """A snapshot session keeps its kernel buffer in overwrite mode and writes nothing while tracing;
        `snapshot record` writes SNAPSHOT/ust and SNAPSHOT/kernel, read back as one timeline. A kernel
        snapshot holds what the kernel kept since the previous one: the next snapshot has the user events
        again (their buffers are copied) but not the kernel's (reading tracefs consumes them)."""
        _, t, path = self.new_session("sn", "--snapshot")
        t("enable-event", "-u", "kw:*", "-s", "sn")
        t("enable-event", "-k", "--syscall", "getpid", "-s", "sn")
        p, pid = self.workload(GETPIDS, 0)
        t("track", "-k", "--pid", str(pid), "-s", "sn")
        t("start", "sn")
        self.run_workload(p)
        status = t("status", "sn").stdout
        self.assertIn("kernel channel channel0: overwrite mode", status)
        self.assertIn("each `snapshot record` reads the newest the kernel kept since the previous one", status)
        self.assertFalse(os.path.exists(os.path.join(path, "kernel")))
        snapshots = []
        for _ in range(2):
            out = t("snapshot", "record", "-s", "sn").stdout
            snapshots.append(out.rsplit(" ", 1)[1].strip())
        t("destroy", "sn")
        for i, snap in enumerate(snapshots):
            self.assertTrue(os.path.isfile(os.path.join(snap, "ust", "metadata")), snap)
            self.assertTrue(os.path.isfile(os.path.join(snap, "kernel", "metadata")), snap)
            bt = subprocess.run(["babeltrace2", snap], capture_output=True, text=True, timeout=300)
            self.assertEqual(bt.returncode, 0, bt.stderr)
            self.assertEqual(bt.stderr, "")
            events = [m for m in self.dump(snap) if "e" in m]
            self.assertEqual(sum(1 for m in events if m["e"] == "kw:before_getpid"), GETPIDS, snap)
            loop = [m["e"] for m in events if m["e"] in ("kw:before_getpid", "syscall_entry_getpid")]
            if i == 0:
                first = loop.index("kw:before_getpid")
                self.assertEqual(loop[first:first + 2 * GETPIDS],
                                 ["kw:before_getpid", "syscall_entry_getpid"] * GETPIDS)
            else:
                self.assertNotIn("syscall_entry_getpid", loop)
            self.assertEqual(sum(1 for m in events if m["e"] == "lttng_statedump_start"), 1)

    def test_kernel_filters(self):
        """`enable-event -k --filter`: the kernel evaluates the filter, so the trace holds only the events it
        accepts; a rule's event lacking the field records nothing (and the reply says so); an expression the
        kernel cannot evaluate is refused with a caret under the part it cannot take."""
        _, t, path = self.new_session("kf")
        t("enable-channel", "-k", "kchan", "-s", "kf")
        p, pid = self.workload(GETPIDS, ROUNDS)
        out = t("enable-event", "-k", "--syscall", "getpid", "--filter", f"ret == {pid}", "-s", "kf").stdout
        self.assertIn(f"Kernel event syscall getpid (filter: ret == {pid}) enabled", out)
        self.assertIn("syscalls:sys_enter_getpid is not recorded for 'syscall getpid': no field 'ret'", out)
        t("enable-event", "-k", "sched_switch", "--filter", 'prev_comm == "kw-p*" && prev_prio == 20', "-s", "kf")
        r = t("enable-event", "-k", "sched_wakeup", "--filter", "prio * 2 > 3", "-s", "kf", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("the kernel cannot compute '*'", r.stderr)
        self.assertIn("\n  prio * 2 > 3\n       ^\n", r.stderr)
        status = t("status", "kf").stdout
        self.assertIn(f"system calls: getpid (filter: ret == {pid})", status)
        t("start", "kf")
        self.run_workload(p)
        t("stop", "kf")
        t("destroy", "kf")
        # The stream files take the kernel channel's name, as LTTng's do.
        streams = sorted(n for n in os.listdir(os.path.join(path, "kernel")) if n.startswith("kchan_"))
        self.assertEqual(streams, [f"kchan_{cpu}" for cpu in range(os.cpu_count())])
        events = [m for m in self.dump(os.path.join(path, "kernel")) if "e" in m]
        exits = [m["f"]["ret"] for m in events if m["e"] == "syscall_exit_getpid"]
        # Every process's getpid ran through the filter: only the workload's are here, all of its loop's.
        self.assertGreaterEqual(len(exits), GETPIDS)
        self.assertLessEqual(len(exits), GETPIDS + 4)
        self.assertEqual(set(exits), {pid})
        self.assertNotIn("syscall_entry_getpid", {m["e"] for m in events})
        switches = [m["f"] for m in events if m["e"] == "sched_switch"]
        self.assertGreaterEqual(len(switches), ROUNDS)
        self.assertEqual({s["prev_comm"] for s in switches}, {"kw-ping", "kw-pong"})
        self.assertEqual({s["prev_prio"] for s in switches}, {20})

    def test_all_kernel_events(self):
        """`enable-event -k -a`: every tracepoint and every system call, read back by babeltrace2;
        `disable-event -k -a` takes them all away."""
        _, t, path = self.new_session("a")
        out = t("enable-event", "-k", "-a", "-s", "a").stdout
        self.assertIn("Kernel event * enabled", out)
        self.assertIn("Kernel event every system call enabled", out)
        p, pid = self.workload(GETPIDS, ROUNDS)
        t("track", "-k", "--pid", str(pid), "-s", "a")
        t("start", "a")
        self.run_workload(p)
        t("stop", "a")
        status = t("status", "a").stdout
        self.assertIn("tracepoints: *; system calls: *", status)
        enabled = int(status.split(" kernel events enabled")[0].rsplit(" ", 1)[1])
        # `list -k` shows the tracepoints but those of system calls, then the system calls: each two.
        listing = t("list", "-k").stdout
        tracepoints = int(listing.split("Kernel tracepoints (")[1].split(")")[0])
        syscalls = int(listing.split("Kernel system calls (")[1].split(";")[0])
        self.assertGreater(syscalls, 100)
        self.assertEqual(enabled, tracepoints + 2 * syscalls)
        bt = subprocess.run(["babeltrace2", os.path.join(path, "kernel")], capture_output=True, text=True,
                            timeout=300)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stderr, "")
        self.assertGreaterEqual(bt.stdout.count("syscall_entry_getpid:"), GETPIDS)
        self.assertGreaterEqual(bt.stdout.count("sched_switch:"), ROUNDS)
        t("destroy", "a")
        t("create", "b", "--output", self.out("b"))
        t("enable-event", "-k", "-a", "-s", "b")
        t("enable-event", "-k", "sched_switch", "-s", "b")
        self.assertIn("tracepoints: *, sched_switch; system calls: *", t("status", "b").stdout)
        t("disable-event", "-k", "-a", "-s", "b")
        self.assertNotIn("kernel", t("status", "b").stdout, "no kernel event left")

    def test_userspace_probes(self):
        """enable-event -k --userspace-probe on a program built without Tracery: entry probes record the
        arguments by name (DWARF), return probes the value returned, a filter on an argument records only the
        hits it accepts; the probes are in uprobe_events only while a session runs with them (two sessions
        each their own), and uprobe_events is as before once both are destroyed."""
        target = program("src", "kernel", "probe-target-O2")
        events_file = os.path.join(self.root, "uprobe_events")
        before = read_text(events_file)
        daemon, t, path = self.new_session("up")
        out = t("enable-event", "-k", f"--userspace-probe=elf:{target}:pt_ints", "ints", "-s", "up").stdout
        self.assertIn(f"Kernel event probe ints (elf:{target}:pt_ints) enabled", out)
        self.assertIn("arguments: DWARF", out)
        t("enable-event", "-k", f"--userspace-probe=elf:{target}:pt_ret_string%return", "rstr", "-s", "up")
        t("enable-event", "-k", f"--userspace-probe=elf:{target}:pt_ret_void", "rvoid", "--filter", "n >= 3",
          "-s", "up")
        r = t("enable-event", "-k", f"--userspace-probe=elf:{target}:pt_ret_void", "bad", "--filter",
              "n * 2 > 3", "-s", "up", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("the kernel cannot compute '*'", r.stderr)
        r = t("enable-event", "-k", f"--userspace-probe=elf:{target}:pt_nosuch", "x", "-s", "up", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("pt_nosuch", r.stderr)
        status = t("status", "up").stdout
        self.assertIn("probe ints: elf:", status)
        self.assertIn("(filter: n >= 3)", status)
        self.assertEqual(read_text(events_file), before, "probes are defined at start, not before")
        # A second session probing the same function: its own probe event.
        t("create", "up2", "--output", self.out("up2"))
        t("enable-event", "-k", f"--userspace-probe=elf:{target}:pt_ints", "ints", "-s", "up2")
        t("start", "up")
        t("start", "up2")
        defined = read_text(events_file)
        self.assertEqual(defined.count("/ints "), 2, defined)
        self.assertEqual(defined.count(f"tracery_{daemon}_"), 4, defined)
        subprocess.run([target, "5"], check=False)
        t("stop", "up")
        t("stop", "up2")
        events = [m for m in self.dump(os.path.join(path, "kernel")) if "e" in m]
        ints = [m["f"] for m in events if m["e"] == "ints"]
        self.assertEqual(len(ints), 5)
        for f in ints:
            self.assertEqual((f["a"], f["b"], f["c"], f["d"], f["e"], f["s"]),
                             (-5, -70000000000, 200, 1, 4, "hello"))
        self.assertEqual([m["f"]["ret"] for m in events if m["e"] == "rstr"], ["positive"] * 5)
        # pt_ret_void(i) for i = 0..4: the kernel recorded only n >= 3.
        self.assertEqual([m["f"]["n"] for m in events if m["e"] == "rvoid"], [3, 4])
        other = [m for m in self.dump(os.path.join(self.out("up2"), "kernel")) if m.get("e") == "ints"]
        self.assertEqual(len(other), 5)
        # The kernel's counters: 5 runs of pt_ret_void, 2 recorded; the 3 the filter rejected took no buffer
        # space (the trace has 2).
        status = t("status", "up").stdout
        self.assertRegex(status, r"probe rvoid: [^\n]*\n +5 hits \(runs of it by any process\), 2 recorded")
        self.assertRegex(status, r"probe ints: [^\n]*\n +5 hits [^\n]*, 5 recorded")
        t("destroy", "up")
        self.assertEqual(read_text(events_file).count("/ints "), 1, "the other session's probe stays")
        t("destroy", "up2")
        self.assertEqual(read_text(events_file), before)

    def test_sdt_probes_record_their_operands_and_set_the_semaphore(self):
        """--userspace-probe=sdt: a <sys/sdt.h> probe point of a program built here records its operands
        (a constant, a register, a memory operand) as arg1..argN; its semaphore is set only while a session
        traces it, so a program can skip preparing costly arguments otherwise; a probe name used at two
        places of the program gives two events, NAME and NAME_2."""
        sdt = program("src", "kernel", "probe-sdt")
        _, t, path = self.new_session("sdt")
        out = t("enable-event", "-k", f"--userspace-probe=sdt:{sdt}:tracery_test:work", "work", "-s", "sdt").stdout
        self.assertIn("arguments: SDT note", out)
        out = t("enable-event", "-k", f"--userspace-probe=sdt:{sdt}:tracery_test:pair", "pair", "-s", "sdt").stdout
        self.assertIn("2 probe sites", out)
        self.assertEqual(self.d.run([sdt, "1"]).strip(), "work enabled 0 of 1", "not set before the start")
        t("start", "sdt")
        self.assertEqual(self.d.run([sdt, "3"]).strip(), "work enabled 3 of 3")
        t("stop", "sdt")
        self.assertEqual(self.d.run([sdt, "1"]).strip(), "work enabled 0 of 1", "nor after the stop")
        events = [m for m in self.dump(os.path.join(path, "kernel")) if "e" in m]
        self.assertEqual([(m["f"]["arg1"], m["f"]["arg2"], m["f"]["arg3"]) for m in events if m["e"] == "work"],
                         [(42, 100, -9), (42, 101, -9), (42, 102, -9)])
        self.assertEqual([(m["f"]["arg1"], m["f"]["arg2"]) for m in events if m["e"] == "pair"],
                         [(0, 1), (1, 1), (2, 1)])
        self.assertEqual([(m["f"]["arg1"], m["f"]["arg2"]) for m in events if m["e"] == "pair_2"],
                         [(1, 2), (2, 2), (3, 2)])
        t("destroy", "sdt")

    def test_python_import_sdt_probe(self):
        """The real-world SDT example of README.md: Debian's python3.11 carries <sys/sdt.h> probe points;
        python:import__find__load__start fires for each module the interpreter loads, its one operand a
        pointer to the module's name, which --args reads as a string through $arg1. The interpreter tests
        the probe's semaphore first: set only while the session traces it."""
        python = "/usr/bin/python3.11"
        if not os.access(python, os.X_OK):
            self.skipTest(f"{python} absent")
        notes = subprocess.run(["readelf", "-n", python], capture_output=True, text=True).stdout
        if "import__find__load__start" not in notes:
            self.skipTest(f"{python} has no python:import__find__load__start SDT probe")
        _, t, path = self.new_session("py")
        t("enable-event", "-k", f"--userspace-probe=sdt:{python}:python:import__find__load__start", "py_import",
          "--args", "module=+0($arg1):string", "-s", "py")
        t("start", "py")
        subprocess.run([python, "-S", "-c", "import json"], check=True)
        t("stop", "py")
        modules = [m["f"]["module"] for m in self.dump(os.path.join(path, "kernel")) if m.get("e") == "py_import"]
        for module in ("json", "json.decoder", "json.scanner", "json.encoder"):
            self.assertIn(module, modules)
        self.assertEqual(len(modules), len(set(modules)), "each module is loaded once")
        t("destroy", "py")

    def test_a_shared_library_probe_hits_every_process_mapping_it(self):
        """A probe on a shared library's function hits in each process that maps the library: one running
        before the session started, one started after."""
        user = program("src", "kernel", "probe-lib-user")
        lib = program("src", "kernel", "libprobe-lib.so")
        self.d.start_daemon()
        t = self.d.tracery
        path = self.out("lib")
        early = self.d.spawn([user, "3"])
        early_pid = int(read_line(early, "ready")[0])
        t("create", "lib", "--output", path)
        out = t("enable-event", "-k", f"--userspace-probe=elf:{lib}:pl_add", "add", "-s", "lib").stdout
        self.assertIn("arguments: DWARF", out)
        t("start", "lib")
        late = self.d.spawn([user, "2"])
        late_pid = int(read_line(late, "ready")[0])
        for p in (early, late):
            go(p)
            read_line(p, "done")
            p.wait(timeout=30)
        t("stop", "lib")
        events = [m for m in self.dump(os.path.join(path, "kernel")) if m.get("e") == "add"]
        self.assertEqual(sorted((m["f"]["who"], m["f"]["round"]) for m in events),
                         sorted([(early_pid, r) for r in range(3)] + [(late_pid, r) for r in range(2)]))
        t("destroy", "lib")

    def test_args_on_a_copy_without_debug_information(self):
        """A copy of the probed program without DWARF (symbols kept): the probe records the address only,
        unless --args says what to record: registers of the calling convention and a string through the
        seventh parameter, on the stack."""
        target = program("src", "kernel", "probe-target-nodebug")
        _, t, path = self.new_session("nd")
        out = t("enable-event", "-k", f"--userspace-probe=elf:{target}:pt_ints", "bare", "-s", "nd").stdout
        self.assertIn("arguments: none", out)
        out = t("enable-event", "-k", f"--userspace-probe=elf:{target}:pt_ints", "ints", "--args",
                "a=%di:s32,b=%si:s64,c=%dx:u8,s=+0(+8(%sp)):string", "-s", "nd").stdout
        self.assertIn("arguments: --args", out)
        t("start", "nd")
        subprocess.run([target, "2"], check=False)
        t("stop", "nd")
        events = [m for m in self.dump(os.path.join(path, "kernel")) if "e" in m]
        self.assertEqual([(m["f"]["a"], m["f"]["b"], m["f"]["c"], m["f"]["s"]) for m in events if m["e"] == "ints"],
                         [(-5, -70000000000, 200, "hello")] * 2)
        bare = [m for m in events if m["e"] == "bare"]
        self.assertEqual(len(bare), 2)
        self.assertEqual(sorted(bare[0]["f"]), ["__probe_ip"], "the address only")
        self.assertNotEqual(bare[0]["f"]["__probe_ip"], 0)
        t("destroy", "nd")

    def test_bash_readline_return_probe(self):
        """The classic uretprobe example, as README.md shows it: the lines /bin/bash's readline returns
        while an interactive bash (on a pseudo-terminal) is fed three lines. This bash has no DWARF, so
        --args says what to record: the string the return value points to."""
        if not os.access("/bin/bash", os.R_OK):
            self.skipTest("no /bin/bash")
        _, t, path = self.new_session("rl")
        out = t("enable-event", "-k", "--userspace-probe=elf:/bin/bash:readline%return", "readline",
                "--args", "line=+0($retval):string", "-s", "rl").stdout
        self.assertIn("arguments: --args", out)
        t("start", "rl")
        lines = ["echo first line", "true second", "exit"]
        pid, fd = pty.fork()
        if pid == 0:
            os.execv("/bin/bash", ["bash", "--norc", "--noprofile", "-i"])

        def drain(seconds):
            end = time.time() + seconds
            while time.time() < end:
                if select.select([fd], [], [], 0.05)[0]:
                    try:
                        os.read(fd, 4096)
                    except OSError:
                        return

        for line in lines:
            drain(0.3)  # its prompt: readline is waiting
            os.write(fd, (line + "\n").encode())
        drain(0.5)
        os.waitpid(pid, 0)
        os.close(fd)
        t("stop", "rl")
        t("destroy", "rl")
        events = [m for m in self.dump(os.path.join(path, "kernel")) if m.get("e") == "readline"]
        self.assertEqual([m["f"]["line"] for m in events], lines)


class KernelAccessTest(KernelMixin, UsersTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()

    def test_only_root_and_the_group_trace_the_kernel(self):
        """The system daemon lets only root and its group in at all, and its group may trace the kernel; a
        user's own daemon (not root) refuses -k in one line naming the way."""
        self.d.start_daemon("--group", self.group)
        member, home, uid = self.add_user("kin", in_group=True)
        env = dict(self.d.env, HOME=home)
        out = os.path.join(home, "t")
        self.d.tracery("create", "s", "--output", out, env=env, user=member)
        r = self.d.tracery("enable-event", "-k", "sched_switch", "-s", "s", env=env, user=member)
        self.assertIn("Kernel event sched_switch enabled in channel 'channel0' of session 's'", r.stdout)
        # Root's session of the same name traces the kernel meanwhile, in an instance of its own.
        self.d.tracery("create", "s", "--output", self.out("root-s"))
        self.d.tracery("enable-event", "-k", "sched_switch", "-s", "s")
        self.d.tracery("start", "s")
        self.d.tracery("start", "s", env=env, user=member)
        daemon = self.d.daemon_pid()
        self.assertEqual(our_instances(self.root, daemon), [f"tracery-{daemon}-u0-s", f"tracery-{daemon}-u{uid}-s"])
        time.sleep(0.2)
        self.d.tracery("stop", "s", env=env, user=member)
        self.d.tracery("destroy", "s")
        # The root daemon wrote the member's kernel trace as the member.
        files = [os.path.join(out, "kernel")] + \
                [os.path.join(out, "kernel", f) for f in os.listdir(os.path.join(out, "kernel"))]
        self.assertIn(os.path.join(out, "kernel", "metadata"), files)
        self.assertEqual({os.stat(f).st_uid for f in files}, {uid})
        bt = subprocess.run(["runuser", "-u", member, "--", "babeltrace2", out], capture_output=True, text=True,
                            timeout=300)
        self.assertEqual((bt.returncode, bt.stderr), (0, ""))
        self.assertIn("sched_switch:", bt.stdout)
        self.d.tracery("destroy", "s", env=env, user=member)

        other, home, _ = self.add_user("kout")
        r = self.d.tracery("enable-event", "-k", "sched_switch", "-s", "s", env=dict(self.d.env, HOME=home),
                           user=other, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, f"tracery: permission denied: only root and members of group '{self.group}' "
                                   f"may control this session daemon; run your own with `traceryd --daemonize`\n")
        own = dict(self.d.env, HOME=home, TRACERY_RUNDIR=os.path.join(home, "run"),
                   XDG_RUNTIME_DIR=os.path.join(home, "xdg"))
        subprocess.run(["runuser", "-p", "-u", other, "--", self.d.traceryd, "--daemonize"], env=own, check=True,
                       capture_output=True, timeout=30)
        self.addCleanup(self.stop_own_daemon, os.path.join(home, "run", "traceryd.pid"))
        self.d.tracery("create", "s", "--output", os.path.join(home, "t"), env=own, user=other)
        r = self.d.tracery("enable-event", "-k", "sched_switch", "-s", "s", env=own, user=other, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "tracery: kernel tracing (-k) needs root or membership in group 'tracing' of "
                                   "the system session daemon: ask an administrator to add you to it, or trace "
                                   "user space only (-u)\n")

    @staticmethod
    def stop_own_daemon(pidfile):
        with open(pidfile) as f:
            pid = int(f.read().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 30
        while os.path.exists(f"/proc/{pid}") and time.time() < deadline:
            time.sleep(0.05)


if __name__ == "__main__":
    unittest.main()
