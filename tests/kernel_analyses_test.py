"""lttng-analyses' `lttng-syscallstats` and `lttng-cputop` on a kernel trace of traceryd agree with the figures of
the same trace as babeltrace2 reads it, and so do `tracery analyze syscalls` and `tracery analyze cputop`; the
membarrier calls of libtracery count for their thread. Needs root, a mounted tracefs and python3-lttnganalyses
(skipped with a message otherwise)."""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

from daemontest import DaemonTestCase, go, read_line
from kerneltest import DUMP, GETPIDS, ROUNDS, KernelMixin
from tracetest import program


def lttng_analyses_figures(events, payload_cpu_id=True):
    """What lttng-analyses 0.6.1 makes of a kernel trace's events (kernel_session_dump.py's, in timeline order),
    by the rules its sources state: a CPU runs the task of its last sched_switch (none before its first, none
    while idle, tid 0); a system call counts for the task running on the exit's CPU if that task entered a call
    since its last counted exit, under the entry's name. An event's CPU is its `event["cpu_id"]`, which
    babeltrace 1 takes from the payload when it has a field of that name: a membarrier entry (any process of the
    machine may make one while the trace runs) counts for the CPU its cpu_id argument names, 0 unless its flags
    say otherwise. payload_cpu_id=False: the CPU of the event's packet always, as tracery reads it. The time range runs from the first event to the last;
    a task's CPU time adds up its runs from a sched_switch to it until one away from it (a task first seen
    leaving a CPU ran from the start of the range, unless a sched_migrate_task named it before; one still
    running ran to its end); a CPU is busy from the start of the range to its first sched_switch and then while
    it runs a task other than the idle one. Returns (begin, end, {tid: {call: count}}, {tid: ns},
    {tid: migrations}, {cpu: ns busy}, CPUs known)."""
    begin, end = events[0]["t"], events[-1]["t"]
    current, entered, calls = {}, {}, {}
    tid_ns, tid_since, migrations, cpu_ns, cpu_since, cpus = {}, {}, {}, {}, {}, set()
    for m in events:
        name, cpu, f, t = m["e"], m["cpu"], m["f"], m["t"]
        if name == "sched_switch":
            cpus.add(cpu)
            if cpu not in cpu_ns:
                cpu_ns[cpu], cpu_since[cpu] = 0, begin
            if cpu_since[cpu] is not None:
                cpu_ns[cpu] += t - cpu_since[cpu]
            prev, nxt = f["prev_tid"], f["next_tid"]
            cpu_since[cpu] = t if nxt != 0 else None
            if prev not in tid_ns:
                tid_ns[prev], tid_since[prev] = 0, begin
            if tid_since[prev] is not None:
                tid_ns[prev] += t - tid_since[prev]
                tid_since[prev] = None
            if nxt != 0:
                tid_ns.setdefault(nxt, 0)
                tid_since[nxt] = t
            current[cpu] = nxt or None
        elif name in ("sched_wakeup", "sched_waking", "sched_wakeup_new"):
            cpus.update((cpu, f["target_cpu"]))
        elif name == "sched_migrate_task":
            if f["tid"] not in tid_ns:
                tid_ns[f["tid"]], tid_since[f["tid"]] = 0, None
            migrations[f["tid"]] = migrations.get(f["tid"], 0) + 1
        elif name.startswith("syscall_entry_"):
            cpu = f.get("cpu_id", cpu) if payload_cpu_id else cpu
            if current.get(cpu):
                entered[current[cpu]] = name[len("syscall_entry_"):]
        elif name.startswith("syscall_exit_") and entered.get(current.get(cpu)):
            tid = current[cpu]
            per_call = calls.setdefault(tid, {})
            per_call[entered[tid]] = per_call.get(entered[tid], 0) + 1
            entered[tid] = None
    for tid, since in tid_since.items():
        if since is not None:
            tid_ns[tid] += end - since
    for cpu, since in cpu_since.items():
        if since is not None:
            cpu_ns[cpu] += end - since
    return begin, end, calls, tid_ns, migrations, cpu_ns, cpus


def mi_results(tool, trace, *args):
    """The result tables of an lttng-analyses command in machine-interface mode (its `-mi` twin)."""
    r = subprocess.run([tool, *args, trace], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"{tool} failed ({r.returncode}): {r.stdout} {r.stderr}")
    return json.loads(r.stdout)["results"]


class LttngAnalysesTest(KernelMixin, DaemonTestCase):
    """lttng-analyses (Debian's python3-lttnganalyses) as the oracle of the kernel trace's LTTng conventions: it
    knows a kernel trace by its env, follows tasks through sched_switch and the CPU of each packet, reads system
    calls by their syscall_entry_/syscall_exit_ names, and reads the trace through babeltrace 1, which by default
    keeps only the time range every stream file covers."""

    def setUp(self):
        self.check_kernel_prerequisites()
        missing = [t for t in ("lttng-syscallstats-mi", "lttng-cputop-mi", "babeltrace") if not shutil.which(t)]
        if missing:
            self.skipTest(f"lttng-analyses not installed ({', '.join(missing)} not found; "
                          f"apt-get install python3-lttnganalyses); skipped")
        try:
            import babeltrace  # babeltrace 1's Python bindings, lttng-analyses' reader
            self.bt1 = babeltrace
        except ImportError:
            self.skipTest("babeltrace 1's Python bindings missing (apt-get install python3-babeltrace); skipped")
        super().setUp()

    def test_syscallstats_and_cputop_agree_with_the_trace(self):
        workload = program("tests", "kernel-workload")
        self.d.start_daemon()
        path = self.out("a")
        t = self.d.tracery
        t("create", "a", "--output", path)
        # Every system call of the machine: 4 MiB per CPU, so that a busy machine loses none while the readers
        # wait for a CPU; 16 MiB in a sanitizer build, whose readers are several times slower (4 MiB lost 68,306
        # events once there, beside another test).
        subbuf = "4M" if os.environ.get("TRACERY_SANITIZE") else "1M"
        t("enable-channel", "-k", "channel0", "--subbuf-size", subbuf, "--num-subbuf", "4", "-s", "a")
        t("enable-event", "-k", "--syscall", "-a", "-s", "a")
        t("enable-event", "-k", "sched_*", "-s", "a")
        # The workload and a CPU-bound process share one CPU, which is then never idle (busy_cpu).
        cpu, hog = self.busy_cpu()
        p = self.d.spawn([workload, str(GETPIDS), str(ROUNDS)])
        pid = int(read_line(p, "ready")[0])
        os.sched_setaffinity(pid, {cpu})  # its main thread, and the thread it makes later
        t("start", "a")
        go(p)
        read_line(p, "done")
        p.wait(timeout=30)
        hog.kill()
        hog.wait(timeout=30)
        self.assertIn("channel0 (kernel): 0 events lost", t("stop", "a").stdout)
        kernel = os.path.join(path, "kernel")

        dump = subprocess.run([sys.executable, DUMP, kernel], capture_output=True, text=True, timeout=300)
        self.assertEqual(dump.returncode, 0, dump.stderr)
        events = [m for m in map(json.loads, dump.stdout.splitlines()) if "e" in m]
        # Babeltrace 1 as lttng-analyses opens the trace (stream intersection on) reads every event babeltrace2
        # does, at the same time: no stream file spans less than the trace.
        bt1 = self.bt1.TraceCollection(intersect_mode=True)
        self.assertNotEqual(bt1.add_traces_recursive(kernel, "ctf"), {})
        # The CPU of the packet context by its scope: e["cpu_id"] finds a payload's field first, and membarrier's
        # entry has an argument of that name (garbage when its flags say no CPU; libtracery's grace periods call it).
        packet = self.bt1.CTFScope.STREAM_PACKET_CONTEXT
        read = [(e.name, e.timestamp, e.field_with_scope("cpu_id", packet)) for e in bt1.events]
        self.assertEqual(len(read), len(events))
        self.assertEqual([t for _, t, _ in read], sorted(t for _, t, _ in read))
        # Events of different CPUs at the same nanosecond may come in either order (the two readers break such
        # ties differently); each CPU's own order is its stream's in both. The figures below follow babeltrace
        # 1's order, as lttng-analyses does.
        self.assertEqual(sorted(read), sorted((m["e"], m["t"], m["cpu"]) for m in events))
        dump_order = list(events)  # babeltrace2's order, which tracery's reader follows
        same = {}
        for m in events:
            same.setdefault((m["e"], m["t"], m["cpu"]), collections.deque()).append(m)
        events = [same[key].popleft() for key in read]

        begin, end, calls, tid_ns, migrations, cpu_ns, cpus = lttng_analyses_figures(events)
        getpids = sum(1 for m in events if m["e"] == "syscall_exit_getpid" and m["f"]["ret"] == pid)
        self.assertGreaterEqual(getpids, GETPIDS)  # the loop's, and the runtime's if it makes any
        self.assertEqual(calls.get(pid, {}).get("getpid"), getpids)
        pong = next(s["next_tid"] for s in (m["f"] for m in events if m["e"] == "sched_switch")
                    if s["next_comm"] == "kw-pong")
        # Each round trip is a write and a read in each thread.
        self.assertGreaterEqual(calls.get(pong, {}).get("read", 0), ROUNDS)
        self.assertGreaterEqual(calls.get(pong, {}).get("write", 0), ROUNDS)

        stats = mi_results("lttng-syscallstats-mi", kernel)
        per_tid, totals = {}, None
        for table in stats:
            if table["class"] == "total":
                totals = {row[0]["tid"]: row[1]["value"] for row in table["data"]}
                continue
            self.assertEqual((table["time-range"]["begin"]["value"], table["time-range"]["end"]["value"]),
                             (begin, end))
            tid = int(re.search(r"TID: (\d+)\)\]$", table["class"]["title"]).group(1))
            per_tid[tid] = {row[0]["name"]: row[1]["value"] for row in table["data"]}
        # Only the threads counted differently, so that a failure says which (the whole tables run to pages).
        differ = {tid: (per_tid.get(tid), calls.get(tid)) for tid in per_tid.keys() | calls.keys()
                  if per_tid.get(tid) != calls.get(tid)}
        self.assertEqual(differ, {}, "threads whose system calls differ: (lttng-syscallstats, the trace)")
        self.assertEqual(totals, {tid: sum(c.values()) for tid, c in calls.items()})

        # CPU time: lttng-cputop gives each figure as a ratio of the time range (ns * 100 / range, then / 100).
        # Its sums of nanoseconds must be ours exactly (it reads the same timestamps, as checked above), so the
        # ratios (at most 1) may differ only by the rounding of those two floating-point operations, below 1e-15;
        # 1e-12 leaves room for that, and a sum off by 1 ns over a range shorter than 1000 s is off by more.
        top = {table["class"]: table for table in mi_results("lttng-cputop-mi", kernel, "--limit", "0")}
        for table in top.values():
            self.assertEqual((table["time-range"]["begin"]["value"], table["time-range"]["end"]["value"]),
                             (begin, end))
        duration = end - begin
        usage = {row[0]["tid"]: row[3]["value"] for row in top["per-process"]["data"]}
        self.assertEqual(sorted(usage), sorted(tid_ns))
        self.assertEqual({row[0]["tid"]: row[1]["value"] for row in top["per-process"]["data"]},
                         {tid: migrations.get(tid, 0) for tid in tid_ns})
        for tid, ns in tid_ns.items():
            self.assertAlmostEqual(usage[tid], ns / duration, delta=1e-12, msg=f"tid {tid}")
        self.assertGreater(usage[pid], 0)
        busy = {row[0]["id"]: row[1]["value"] for row in top["per-cpu"]["data"]}
        self.assertEqual(sorted(busy), sorted(cpu_ns))
        for cpu, ns in cpu_ns.items():
            self.assertAlmostEqual(busy[cpu], ns / duration, delta=1e-12, msg=f"CPU {cpu}")
        self.assertAlmostEqual(top["total"]["data"][0][0]["value"],
                               sum(cpu_ns.values()) / duration / len(cpus), delta=1e-12)
        self.check_tracery_analyses(kernel, stats, top, dump_order, (begin, end, calls, tid_ns, migrations, cpu_ns))
        t("destroy", "a")

    def test_membarrier_calls_of_libtracery_count_for_their_thread(self):
        """libtracery's grace periods call membarrier (at load: QUERY and REGISTER_PRIVATE_EXPEDITED; when a
        probe array is replaced, as at exit: PRIVATE_EXPEDITED). Its flags are 0, so the kernel ignores its
        cpu_id argument, which is the CPU of the call: lttng-analyses, which takes that argument for the
        event's CPU, counts every call for the thread that made it."""
        self.d.start_daemon()
        path = self.out("m")
        t = self.d.tracery
        t("create", "m", "--output", path)
        t("enable-event", "-k", "--syscall", "membarrier", "-s", "m")
        t("enable-event", "-k", "sched_switch", "-s", "m")
        t("track", "-k", "--pid", str(os.getpid()), "-s", "m")  # the programs below are its children
        # The last CPU, where a call would be misplaced were its cpu_id 0; kept busy, so that each switch to
        # the program is recorded (see test_syscallstats_and_cputop_agree_with_the_trace).
        cpu, hog = self.busy_cpu()
        t("start", "m")
        hello = program("examples", "hello-c")
        p = subprocess.Popen(["taskset", "-c", str(cpu), hello, "lttng-analyses"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**self.d.env, "TRACERY_OUTPUT": self.out("hello")})
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        hog.kill()
        hog.wait(timeout=30)
        self.assertIn("channel0 (kernel): 0 events lost", t("stop", "m").stdout)
        kernel = os.path.join(path, "kernel")
        events = [m for m in self.dump(kernel) if m.get("e") == "syscall_entry_membarrier"]
        self.assertTrue({0, 8, 16} <= {m["f"]["cmd"] for m in events}, events)
        self.assertEqual([(m["f"]["cpu_id"], m["f"]["flags"]) for m in events], [(m["cpu"], 0) for m in events])
        stats = mi_results("lttng-syscallstats-mi", kernel)
        counted = {}
        for table in stats:
            if table["class"] != "total":
                tid = int(re.search(r"TID: (\d+)\)\]$", table["class"]["title"]).group(1))
                counted.update({tid: row[1]["value"] for row in table["data"] if row[0]["name"] == "membarrier"})
        self.assertEqual(counted, {p.pid: len(events)})  # taskset runs hello-c in its own process
        t("destroy", "m")

    def check_tracery_analyses(self, kernel, stats, top, dump_order, bt1_figures):
        """`tracery analyze syscalls` and `cputop` on the trace: the -mi tools' figures (counts per thread and call,
        each call's shortest and longest latency, CPU time per thread and per CPU, migrations). Tracery reads
        events of two CPUs at the same nanosecond in babeltrace2's order, lttng-analyses in babeltrace 1's, and
        tracery takes each event's CPU from its packet, where lttng-analyses takes a membarrier entry's from its
        argument: tracery's figures must be those the rules give in babeltrace2's order with the packets' CPUs,
        which are the -mi tools' whenever both ways give the same (nearly always; the test says when not); and
        narrowed to one thread or one CPU, its figures alone."""
        tracery = program("src", "cli", "tracery")

        def analyze(kind, *narrowing):
            r = subprocess.run([tracery, "analyze", kind, "--json", *narrowing, kernel], capture_output=True,
                               text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "")  # no progress bar when stderr is not a terminal
            return json.loads(r.stdout)

        bt2_figures = lttng_analyses_figures(dump_order, payload_cpu_id=False)
        begin, end, calls, tid_ns, migrations, cpu_ns, _ = bt2_figures
        same_figures = bt2_figures[:6] == bt1_figures
        if not same_figures:
            print("note: babeltrace 1's and 2's orders of simultaneous events, or membarrier entries that "
                  "lttng-analyses puts on another CPU, give different figures here; tracery is checked against "
                  "the rules in babeltrace2's order with the packets' CPUs only", file=sys.stderr)
        duration = end - begin

        sc = analyze("syscalls")
        self.assertEqual((sc["begin_ns"], sc["end_ns"]), (begin, end))
        ours = {}
        for row in sc["per_thread"]:
            ours.setdefault(row["tid"], {})[row["syscall"]] = row
        self.assertEqual({tid: {c: r["count"] for c, r in per.items()} for tid, per in ours.items()}, calls)
        if same_figures:
            for table in stats:
                if table["class"] == "total":
                    continue
                tid = int(re.search(r"TID: (\d+)\)\]$", table["class"]["title"]).group(1))
                for row in table["data"]:
                    mine = ours[tid][row[0]["name"]]
                    self.assertEqual((mine["count"], mine["min_ns"], mine["max_ns"]),
                                     (row[1]["value"], row[2]["value"], row[4]["value"]), f"{tid} {row[0]['name']}")
                    self.assertAlmostEqual(mine["mean_ns"], row[3]["value"], delta=1e-6 * row[3]["value"] + 1e-9)

        ct = analyze("cputop")
        self.assertEqual((ct["begin_ns"], ct["end_ns"]), (begin, end))
        threads = {row["tid"]: row for row in ct["per_thread"]}
        # lttng-cputop lists the idle task (tid 0) too, with what the rules give it; tracery does not
        self.assertEqual(sorted(threads), sorted(tid for tid in tid_ns if tid != 0))
        for tid, row in threads.items():
            self.assertEqual(row["cpu_ns"], tid_ns[tid], f"tid {tid}")
            self.assertEqual(row["migrations"], migrations.get(tid, 0), f"tid {tid}")
        cpus = {row["cpu"]: row for row in ct["per_cpu"]}
        self.assertEqual({cpu: row["busy_ns"] for cpu, row in cpus.items()}, cpu_ns)
        # Narrowed to the thread of the most calls, then to one CPU: the same figures, of it alone.
        busiest = max(calls, key=lambda tid: sum(calls[tid].values()))
        narrowed = analyze("syscalls", "--tid", str(busiest))
        self.assertEqual({(r["tid"], r["syscall"]): r["count"] for r in narrowed["per_thread"]},
                         {(busiest, c): n for c, n in calls[busiest].items()})
        self.assertEqual(analyze("cputop", "--tid", str(busiest))["per_thread"], [threads[busiest]])
        some_cpu = max(cpu_ns)
        narrowed = analyze("cputop", "--cpu", str(some_cpu))
        self.assertEqual([(r["cpu"], r["busy_ns"]) for r in narrowed["per_cpu"]], [(some_cpu, cpu_ns[some_cpu])])
        self.check_schedlat(analyze, dump_order, busiest, some_cpu)
        if same_figures:
            usage = {row[0]["tid"]: (row[1]["value"], row[3]["value"]) for row in top["per-process"]["data"]}
            for tid, row in threads.items():
                self.assertEqual(row["migrations"], usage[tid][0], f"tid {tid}")
                self.assertAlmostEqual(row["usage"], usage[tid][1], delta=1e-12, msg=f"tid {tid}")
                self.assertAlmostEqual(row["usage"], row["cpu_ns"] / duration, delta=1e-15)
            busy = {row[0]["id"]: row[1]["value"] for row in top["per-cpu"]["data"]}
            self.assertEqual(sorted(busy), sorted(cpus))
            for cpu, row in cpus.items():
                self.assertAlmostEqual(row["usage"], busy[cpu], delta=1e-12, msg=f"CPU {cpu}")

    def check_schedlat(self, analyze, events, tid, cpu):
        """`tracery analyze schedlat` against its rules applied to the events (from a task's earliest wake-up since
        it last ran to its sched_switch in; a task woken while still running did not wait), whole and narrowed to a
        thread, a CPU and a time range."""
        woken, waits = {}, []  # waits: (tid, cpu, time of the switch in, latency)
        for m in events:
            name, f = m["e"], m["f"]
            if name in ("sched_waking", "sched_wakeup", "sched_wakeup_new") and f["tid"] != 0:
                woken.setdefault(f["tid"], m["t"])
            elif name == "sched_switch":
                woken.pop(f["prev_tid"], None)
                since = woken.pop(f["next_tid"], None)
                if since is not None:
                    waits.append((f["next_tid"], m["cpu"], m["t"], m["t"] - since))
        self.assertTrue(waits)

        def figures(rows):
            per = {}
            for w in rows:
                n, longest, total = per.get(w[0], (0, 0, 0))
                per[w[0]] = (n + 1, max(longest, w[3]), total + w[3])
            return per

        def ours(report):
            return {r["tid"]: (r["count"], r["max_ns"], r["total_ns"]) for r in report["per_thread"]}

        self.assertEqual(ours(analyze("schedlat")), figures(waits))
        self.assertEqual(ours(analyze("schedlat", "--cpu", str(cpu))), figures(w for w in waits if w[1] == cpu))
        mine = [w for w in waits if w[0] == tid]
        if mine:
            narrowed = analyze("schedlat", "--tid", str(tid))
            self.assertEqual(ours(narrowed), figures(mine))
            self.assertEqual(narrowed["all"][0]["count"], len(mine))
        # the second half of the waits by time of the switch in: from the middle one on, to the end
        middle = sorted(w[2] for w in waits)[len(waits) // 2]
        narrowed = analyze("schedlat", "--begin", str(middle))
        self.assertEqual(ours(narrowed), figures(w for w in waits if w[2] >= middle))
        self.assertEqual(narrowed["begin_ns"], middle)


if __name__ == "__main__":
    unittest.main()
