"""`tracery analyze locks` and `tracery analyze calls` on traces LTTng's own preload helpers write (Debian's
liblttng-ust-dev): `xz -T2` (a Debian program, not written here) under liblttng-ust-pthread-wrapper, and a
program built with -finstrument-functions (tests/apps/instrumented_calls.c) under liblttng-ust-cyg-profile.
The figures are checked against the events themselves, read with babeltrace2 (acquisitions, waits and holds
per mutex), and the call counts per function against `uftrace report` on the same binary; the call tree and
the folded stacks against the same events; with --symbols (the traces record LTTng's state dump), the same
figures under the functions' names, and the program's lock call site named by its function and line; narrowed to
one thread (--tid) and to a time (--begin), each analysis's figures of those events alone. Their exports: the Perfetto trace (decoded with `protoc --decode`) has
a slice per call, nested per thread, a wait slice per lock request and a hold slice per acquisition on the lock's
track; the HTML timeline (in headless Chromium) draws the calls nested on their threads. Skipped when lttng-tools, the helpers, uftrace or xz are missing."""
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import unittest
import uuid

import instrumented_calls
from export_test import HAVE_PROTOC, Structure, decode, one
from html_test import CHROMIUM, Browser
from tracetest import Trace, program

LIBDIR = "/usr/lib/x86_64-linux-gnu"
# the objects each process loaded, for --symbols
STATEDUMP = "lttng_ust_statedump:*"
PTHREAD_WRAPPER = os.path.join(LIBDIR, "liblttng-ust-pthread-wrapper.so.1")
CYG_PROFILE = os.path.join(LIBDIR, "liblttng-ust-cyg-profile.so.1")
CYG_PROFILE_FAST = os.path.join(LIBDIR, "liblttng-ust-cyg-profile-fast.so.1")


def duration_text(ns, fixed):
    """A duration as the text tables print it: in the unit that fits it, or (fixed) in µs."""
    if fixed:
        return f"{ns / 1e3:.3f}"
    if ns < 1e3:
        return f"{ns} ns"
    for limit, unit, scale in ((1e6, "µs", 1e3), (1e9, "ms", 1e6)):
        if ns < limit:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns / 1e9:.3f} s"


class Lttng:
    """An LTTng session daemon (the one running, else one started here and stopped at the end) and sessions
    with unique names, so that tests running at the same time do not meet."""

    def __init__(self, test):
        if shutil.which("lttng") is None or shutil.which("lttng-sessiond") is None:
            raise unittest.SkipTest("lttng-tools is not installed (apt-get install lttng-tools liblttng-ust-dev)")
        self.tmp = tempfile.mkdtemp(prefix="tracery-preload-analyses-")
        test.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = dict(os.environ, LTTNG_HOME=self.tmp)
        started = subprocess.run(["lttng-sessiond", "--daemonize"], env=self.env, timeout=60, capture_output=True)
        if started.returncode != 0 and self.lttng("list", check=False).returncode != 0:
            test.fail(f"lttng-sessiond does not start: {started.stderr.decode()}")
        if started.returncode == 0:
            test.addCleanup(self.stop_sessiond)

    def lttng(self, *args, check=True):
        return subprocess.run(["lttng", *args], env=self.env, check=check, timeout=60, capture_output=True)

    def stop_sessiond(self):
        for pidfile in (os.path.join(self.tmp, ".lttng", "lttng-sessiond.pid"), "/var/run/lttng/lttng-sessiond.pid"):
            if os.path.exists(pidfile):
                subprocess.run(["kill", open(pidfile).read().strip()], timeout=30)
                break

    def unique_copy(self, path):
        """A copy of the program under a name of its own, so that the sessions' filter keeps the events of this
        test's processes only (the session daemon may serve other tests' programs)."""
        copy = os.path.join(self.tmp, "t" + uuid.uuid4().hex[:10])
        shutil.copy(path, copy)
        return copy

    def trace(self, events, argv, preload, cwd=None):
        """Runs argv (a unique_copy) with the helper preloaded in a session recording events of its processes
        only; returns the trace directory."""
        name = "tracery-" + uuid.uuid4().hex[:12]
        out = os.path.join(self.tmp, name)
        self.lttng("create", name, f"--output={out}")
        try:
            procname = os.path.basename(argv[0])
            self.lttng("enable-event", "-u", events, "-s", name, "--filter", f'$ctx.procname == "{procname}*"')
            self.lttng("add-context", "-u", "-s", name, "-t", "vpid", "-t", "vtid", "-t", "ip", "-t", "procname")
            self.lttng("start", name)
            env = dict(self.env, LD_PRELOAD=preload)
            proc = subprocess.run(argv, env=env, cwd=cwd, timeout=120, capture_output=True)
            if proc.returncode != 0:
                raise AssertionError(f"{argv} exited {proc.returncode}: {proc.stderr.decode()}")
            self.lttng("stop", name)
        finally:
            self.lttng("destroy", name, check=False)
        return out


def tracery(*args):
    proc = subprocess.run([program("src", "cli", "tracery"), *args], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"tracery {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def export(trace, fmt, out):
    tracery("export", "--format", fmt, "--force", trace, out)
    return out


def perfetto_slices(test, path):
    """{(track name or tid, slice name): [begins, ends]} of the Perfetto export, checked as export_test checks
    it (slices nest per track: an end never comes with none open), and the slices left open per track."""
    s = Structure(test, decode(path))
    slices = {}
    for p, e in s.track_events:
        d = s.tracks[one(e, "track_uuid")]
        where = one(d, "name") or one(one(d, "thread", {}), "tid")
        kind = one(e, "type")
        if kind in (1, 2):
            slices.setdefault((where, s.names[one(e, "name_iid")]), [0, 0])[kind - 1] += 1
    return slices, {one(s.tracks[u], "name"): n for u, n in s.open.items() if n}


def nearest_rank(values, p):
    values = sorted(values)
    return values[max((len(values) * p + 99) // 100, 1) - 1]


def rows_by(report, table, *keys):
    return {tuple(r[k] for k in keys): r for r in report[table]}


class LocksTest(unittest.TestCase):
    def test_xz_under_lttng_pthread_wrapper(self):
        if not os.path.exists(PTHREAD_WRAPPER):
            self.skipTest(f"{PTHREAD_WRAPPER} is missing (apt-get install liblttng-ust-dev)")
        xz = shutil.which("xz")
        if xz is None:
            self.skipTest("xz is not installed")
        lttng = Lttng(self)
        # 3 MiB of text: three 1 MiB blocks for xz -0's two threads
        rnd = random.Random(33)
        data = os.path.join(lttng.tmp, "input.txt")
        with open(data, "w") as f:
            for _ in range(3 * 1024 * 1024 // 64):
                f.write("".join(rnd.choice("abcdefghij klmnop\n") for _ in range(64)))
        xz = lttng.unique_copy(xz)
        out = lttng.trace("lttng_ust_pthread:*", [xz, "-T2", "-0", "-k", "-f", data], PTHREAD_WRAPPER)

        trace = Trace(out)
        # xz's process: its threads, and LTTng-UST's own (named "NAME-ust")
        xz_pid = next(e["context"]["vpid"] for e in trace.events
                      if e["context"].get("procname") == os.path.basename(xz))
        events = [e for e in trace.events if e["context"]["vpid"] == xz_pid]
        self.assertGreater(len(events), 100, "xz made too few lock calls to be a test")
        # the expected figures, from the events, by the rules of src/analysis/analyze/locks.hpp
        acquired, waits, holds, contended, threads = {}, {}, {}, {}, {}
        pending, holders = {}, {}
        acquired_by, waited_by = {}, {}  # per thread
        for e in events:
            name = e["name"].split(":")[1]
            pid, tid, mutex = e["context"]["vpid"], e["context"]["vtid"], e["payload"]["mutex"]
            key = (pid, mutex)
            held = holders.setdefault(key, {})
            if name == "pthread_mutex_lock_req":
                pending[(pid, tid)] = (mutex, e["ts"], any(t != tid for t in held))
                continue
            if name in ("pthread_mutex_lock_acq", "pthread_mutex_trylock"):
                request = pending.pop((pid, tid), None) if name.endswith("acq") else None
                if e["payload"]["status"] != 0:
                    continue
                acquired[key] = acquired.get(key, 0) + 1
                acquired_by[tid] = acquired_by.get(tid, 0) + 1
                threads.setdefault(key, set()).add(tid)
                if request and request[0] == mutex:
                    wait = e["ts"] - request[1]
                    waits.setdefault(key, []).append(wait)
                    waited_by[tid] = waited_by.get(tid, 0) + wait
                    contended[key] = contended.get(key, 0) + (request[2] or wait >= 1000)
                depth, since = held.get(tid, (0, e["ts"]))
                held[tid] = (depth + 1, since)
            elif name == "pthread_mutex_unlock":
                owner = tid if tid in held else (next(iter(held)) if len(held) == 1 else None)
                if owner is None:
                    continue
                depth, since = held[owner]
                if depth == 1:
                    holds.setdefault(key, []).append(e["ts"] - since)
                    del held[owner]
                else:
                    held[owner] = (depth - 1, since)
        self.assertGreater(sum(len(w) for w in waits.values()), 50)
        self.assertGreaterEqual(max(len(t) for t in threads.values()), 2, "no mutex shared by xz's threads")

        report = json.loads(tracery("analyze", "locks", "--json", out))
        self.assertEqual(report["kind"], "locks")
        rows = rows_by(report, "per_lock", "pid", "lock")
        xz_rows = {k: r for k, r in rows.items() if k[0] == xz_pid}
        self.assertEqual({int(k[1], 16) for k in xz_rows}, {k[1] for k in acquired} | {k[1] for k in holders})
        for (pid, mutex), n in acquired.items():
            r = rows[(pid, hex(mutex))]
            with self.subTest(mutex=hex(mutex)):
                self.assertEqual(r["kind"], "mutex")
                self.assertEqual(r["acquisitions"], n)
                self.assertEqual(r["threads"], len(threads[(pid, mutex)]))
                self.assertEqual(r["tids"], " ".join(str(t) for t in sorted(threads[(pid, mutex)])))
                w = waits.get((pid, mutex), [])
                self.assertEqual(r["wait_total_ns"], sum(w) if w else None)
                self.assertEqual(r["contended"], contended.get((pid, mutex), 0))
                if w:
                    self.assertEqual(r["wait_max_ns"], max(w))
                    self.assertEqual(r["wait_p50_ns"], nearest_rank(w, 50))
                    self.assertEqual(r["wait_p99_ns"], nearest_rank(w, 99))
                h = holds.get((pid, mutex), [])
                self.assertEqual(r["hold_total_ns"], sum(h) if h else None)
                if h:
                    self.assertEqual(r["hold_max_ns"], max(h))
        # narrowed to the thread of the most acquisitions: its acquisitions and waits alone, though the other
        # threads' events still say who holds each lock
        busiest = max(acquired_by, key=acquired_by.get)
        narrowed = json.loads(tracery("analyze", "locks", "--json", "--tid", str(busiest), out))
        self.assertEqual(sum(r["acquisitions"] for r in narrowed["per_lock"]), acquired_by[busiest])
        self.assertEqual(sum(r["wait_total_ns"] or 0 for r in narrowed["per_lock"]), waited_by.get(busiest, 0))
        self.assertTrue(all(r["tids"] in ("", str(busiest)) for r in narrowed["per_lock"]), narrowed["per_lock"])
        # per call site: the same acquisitions, split by caller
        sites = report["per_call_site"]
        self.assertEqual(sum(s["acquisitions"] for s in sites if s["pid"] == xz_pid),
                         sum(acquired.values()))
        self.assertTrue(all(s["call_site"].startswith("0x") for s in sites))
        # --symbols without the state dump in the trace: nothing names the call sites, hex as without
        self.assertEqual(json.loads(tracery("analyze", "locks", "--json", "--symbols", out))["per_call_site"], sites)
        # the longest waits, longest first: the longest of all the waits, at its acquisition's time
        longest = report["longest_waits"]
        all_waits = sorted((w for ws in waits.values() for w in ws), reverse=True)
        self.assertEqual([w["wait_ns"] for w in longest], all_waits[:10])
        # text: the tables and the definition of contended
        text = tracery("analyze", "locks", "--contended", "5000", out)
        self.assertIn("Per lock", text)
        self.assertIn("Longest waits", text)
        self.assertIn("contended: held by another thread when requested, or a wait of at least 5000 ns", text)

        if not HAVE_PROTOC:
            return
        slices, still_open = perfetto_slices(self, export(out, "perfetto", os.path.join(lttng.tmp, "xz.pftrace")))
        requests = {}
        for e in events:
            if e["name"].endswith("lock_req"):
                requests[e["context"]["vtid"]] = requests.get(e["context"]["vtid"], 0) + 1
        # a wait per request on its thread's track, each ended by its acquisition
        self.assertEqual({tid: n for (tid, name), n in slices.items() if name == "mutex wait"},
                         {tid: [n, n] for tid, n in requests.items()})
        # a hold per acquisition on the lock's track; those the trace ends in, still open
        held = {int(where.split()[1], 16): n for (where, name), n in slices.items() if name == "mutex held"}
        per_mutex = {}
        for (pid, mutex), n in acquired.items():
            per_mutex[mutex] = per_mutex.get(mutex, 0) + n
        self.assertEqual({m: n[0] for m, n in held.items()}, per_mutex)
        self.assertEqual(sum(n[0] - n[1] for n in held.values()), sum(still_open.values()))


class CallsTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(CYG_PROFILE):
            self.skipTest(f"{CYG_PROFILE} is missing (apt-get install liblttng-ust-dev)")
        self.lttng = Lttng(self)
        self.prog = self.lttng.unique_copy(program("tests", "instrumented-calls"))

    def functions(self):
        """The program's functions by address (nm: it is built without PIE)."""
        nm = subprocess.run(["nm", self.prog], capture_output=True, text=True, check=True).stdout
        return {int(a, 16): n for a, kind, n in (l.split() for l in nm.splitlines() if len(l.split()) == 3)
                if kind in "tT"}

    def test_counts_agree_with_uftrace_and_the_events(self):
        if shutil.which("uftrace") is None:
            self.skipTest("uftrace is not installed (apt-get install uftrace)")
        out = self.lttng.trace("lttng_ust_cyg_profile:*," + STATEDUMP, [self.prog, "7"], CYG_PROFILE)
        names = self.functions()
        report = json.loads(tracery("analyze", "calls", "--json", out))
        ours = {names[int(r["function"], 16)]: r for r in report["per_function"]}
        # --symbols: the same rows, each function named (the program has them; LTTng's state dump says where)
        named = json.loads(tracery("analyze", "calls", "--json", "--symbols", out))
        self.assertEqual(named["per_function"], [dict(r, function=names[int(r["function"], 16)])
                                                 for r in report["per_function"]])

        uf = os.path.join(self.lttng.tmp, "uftrace.data")
        subprocess.run(["uftrace", "record", "-d", uf, self.prog, "7"], check=True, timeout=120, capture_output=True)
        theirs = {}
        for line in subprocess.run(["uftrace", "report", "-d", uf], check=True, timeout=60, capture_output=True,
                                   text=True).stdout.splitlines():
            parts = line.split()
            if len(parts) == 6 and parts[4].isdigit():
                theirs[parts[5]] = int(parts[4])
        program_functions = {n: c for n, c in theirs.items() if n in names.values()}
        self.assertEqual({n: r["calls"] for n, r in ours.items()}, program_functions)
        self.assertEqual({r["function"]: r["calls"] for r in named["per_function"]}, program_functions)
        # and the arithmetic of the program's arguments
        self.assertEqual(program_functions, instrumented_calls.calls(7))

        # against the events: entries per thread, and the times of main's one call
        trace = Trace(out)
        entries = {}
        for e in trace.events:
            if e["name"] == "lttng_ust_cyg_profile:func_entry":
                entries[e["context"]["vtid"]] = entries.get(e["context"]["vtid"], 0) + 1
        self.assertEqual({r["tid"]: r["calls"] for r in report["per_thread"]}, entries)
        # narrowed to one worker thread, then to the second half of the exits by time: those calls alone
        worker = max(t for t in entries if t != next(iter(entries)))
        exits = [e for e in trace.events if e["name"] == "lttng_ust_cyg_profile:func_exit"]
        narrowed = json.loads(tracery("analyze", "calls", "--json", "--tid", str(worker), out))
        self.assertEqual(sum(r["calls"] for r in narrowed["per_function"]),
                         sum(1 for e in exits if e["context"]["vtid"] == worker))
        self.assertEqual({r["tid"]: r["calls"] for r in narrowed["per_thread"]}, {worker: entries[worker]})
        middle = sorted(e["ts"] for e in exits)[len(exits) // 2]
        narrowed = json.loads(tracery("analyze", "calls", "--json", "--begin", str(middle), out))
        self.assertEqual(sum(r["calls"] for r in narrowed["per_function"]), sum(1 for e in exits if e["ts"] >= middle))
        # per thread too, the calls whose exits are within (not the entries: some calls began before `middle`)
        exits_after = {}
        for e in exits:
            if e["ts"] >= middle:
                exits_after[e["context"]["vtid"]] = exits_after.get(e["context"]["vtid"], 0) + 1
        self.assertEqual({r["tid"]: r["calls"] for r in narrowed["per_thread"]}, exits_after)
        self.assertNotEqual(exits_after, {t: sum(1 for e in trace.events if e["ts"] >= middle and
                                                 e["name"] == "lttng_ust_cyg_profile:func_entry" and
                                                 e["context"]["vtid"] == t) for t in exits_after})
        main_addr = next(a for a, n in names.items() if n == "main")
        main_events = [e["ts"] for e in trace.events if e["payload"].get("addr") == main_addr]
        self.assertEqual(len(main_events), 2)
        self.assertEqual(ours["main"]["inclusive_total_ns"], main_events[1] - main_events[0])
        self.assertEqual(ours["main"]["inclusive_max_ns"], main_events[1] - main_events[0])
        # exclusive time: inclusive less the callees'; summed over all functions, the roots' inclusive time
        roots = ours["main"]["inclusive_total_ns"] + ours["worker"]["inclusive_total_ns"]
        self.assertEqual(sum(r["exclusive_total_ns"] for r in ours.values()), roots)
        self.assertEqual(report["notes"], [])

    def test_tree_and_folded_stacks_and_exports(self):
        out = self.lttng.trace("lttng_ust_cyg_profile_fast:*," + STATEDUMP, [self.prog, "3"], CYG_PROFILE_FAST)
        names = self.functions()
        name = lambda addr: names[int(addr, 16)]
        report = json.loads(tracery("analyze", "calls", "--json", "--tree", out))
        tree = report["call_tree"]
        # depth first: main and worker are the roots; fib under outer under worker
        self.assertEqual(sorted(name(r["function"]) for r in tree if r["depth"] == 0), ["main", "worker"])
        path, paths = [], {}
        for r in tree:
            path[r["depth"]:] = [name(r["function"])]
            paths[";".join(path)] = r
        self.assertEqual(paths["worker"]["calls"], 2)
        self.assertEqual(paths["worker;outer;inner;leaf"]["calls"], 2 * 3 * 2)
        self.assertEqual(paths["main;outer"]["calls"], 1)
        self.assertEqual(paths["main;fib"]["calls"], 1)
        # folded: one line per stack, the same stacks; weights: calls, or self time adding up to the roots'
        per_function = {name(r["function"]): r for r in report["per_function"]}
        for weight in ("calls", "time"):
            lines = tracery("analyze", "calls", "--folded", "--weight", weight, out).splitlines()
            folded = {}
            for line in lines:
                stack, value = line.rsplit(" ", 1)
                folded[";".join(name(f) for f in stack.split(";"))] = int(value)
            named = tracery("analyze", "calls", "--folded", "--weight", weight, "--symbols", out).splitlines()
            self.assertEqual(named, [";".join(name(f) for f in stack.split(";")) + " " + value
                                     for stack, value in (line.rsplit(" ", 1) for line in lines)])
            if weight == "calls":
                self.assertEqual(folded, {p: r["calls"] for p, r in paths.items()})
                self.assertEqual(sum(folded.values()), sum(r["calls"] for r in per_function.values()))
            else:
                self.assertEqual(folded, {p: r["exclusive_ns"] for p, r in paths.items() if r["exclusive_ns"] > 0})
                self.assertEqual(sum(folded.values()), per_function["main"]["inclusive_total_ns"] +
                                 per_function["worker"]["inclusive_total_ns"])
        # the tree with --symbols: the same nodes, named; drawn
        named = json.loads(tracery("analyze", "calls", "--json", "--tree", "--symbols", out))
        self.assertEqual(named["call_tree"], [dict(r, function=name(r["function"])) for r in tree])
        text = tracery("analyze", "calls", "--tree", out)
        self.assertIn("calls  function", text)
        # drawn in the order of the table, each duration in the unit that fits it (--fixed-units: all in µs)
        for fixed in (False, True):
            drawn = tracery("analyze", "calls", "--tree", *(["--fixed-units"] if fixed else []), out)
            lines = [line for line in drawn.splitlines() if re.search(r"  (\+- )?0x[0-9a-f]+$", line)]
            self.assertEqual(len(lines), len(tree))
            for line, r in zip(lines, tree):
                unit = r"[0-9]+\.[0-9]{3}" if fixed else r"[0-9.]+ (?:ns|µs|ms|s)"
                m = re.match(rf"^ *({unit}) +({unit}) +([0-9]+)  ", line)
                self.assertTrue(m, line)
                self.assertEqual((m.group(1), m.group(2), int(m.group(3))),
                                 (duration_text(r["inclusive_ns"], fixed), duration_text(r["exclusive_ns"], fixed),
                                  r["calls"]), line)
        self.assertEqual(tracery("analyze", "calls", "--tree", "--symbols", out),
                         re.sub(r"0x[0-9a-f]+", lambda m: name(m.group()), text))

        # the exports: a slice per call, named after its function, on its thread
        trace = Trace(out)
        calls = {}
        for e in trace.events:
            if e["name"].endswith("func_entry"):
                key = (e["context"]["vtid"], name(hex(e["payload"]["addr"])))
                calls[key] = calls.get(key, 0) + 1
        if HAVE_PROTOC:
            slices, still_open = perfetto_slices(self, export(out, "perfetto", os.path.join(self.lttng.tmp, "p")))
            self.assertEqual({(tid, name(f)): n for (tid, f), n in slices.items()},
                             {k: [n, n] for k, n in calls.items()})
            self.assertEqual(still_open, {})
            # --symbols: the slices named by their functions
            path = os.path.join(self.lttng.tmp, "named")
            tracery("export", "--format", "perfetto", "--force", "--symbols", out, path)
            slices, still_open = perfetto_slices(self, path)
            self.assertEqual(slices, {k: [n, n] for k, n in calls.items()})
            self.assertEqual(still_open, {})
        if CHROMIUM:
            page = export(out, "html", os.path.join(self.lttng.tmp, "calls.html"))
            browser = Browser()
            self.addCleanup(browser.close)
            browser.open(page)
            drawn = browser.js("""JSON.stringify(tracery.model.tracks.filter(t => t && t.kind === 2).map(t =>
                [t.tid, t.depths.map(d => d.start.length)]))""")
            per_thread = {}
            for (tid, _), n in calls.items():
                per_thread[tid] = per_thread.get(tid, 0) + n
            depths = {tid: d for tid, d in json.loads(drawn)}
            # (LTTng's listener thread has a track too: its state dump's events)
            self.assertEqual({tid: sum(d) for tid, d in depths.items() if d}, per_thread)
            # main > fib(12) > ... > fib(1) > leaf: 14 deep
            self.assertEqual(len(depths[min(depths)]), 14)

    def test_a_lock_call_site_named_and_no_function_events(self):
        out = self.lttng.trace("lttng_ust_pthread:*," + STATEDUMP, [self.prog, "1"], PTHREAD_WRAPPER)
        proc = subprocess.run([program("src", "cli", "tracery"), "analyze", "calls", out], capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("has no lttng_ust_cyg_profile(_fast):func_entry/func_exit event", proc.stderr)

        # the workers' mutex (its static address, from nm), locked once by each, at one line of worker
        nm = subprocess.run(["nm", self.prog], capture_output=True, text=True, check=True).stdout
        sink_lock = next(int(l.split()[0], 16) for l in nm.splitlines() if l.endswith(" sink_lock"))
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps", "instrumented_calls.c")
        with open(source) as f:
            line = next(n for n, text in enumerate(f, 1) if "pthread_mutex_lock(&sink_lock)" in text)
        report = json.loads(tracery("analyze", "locks", "--json", out))
        named = json.loads(tracery("analyze", "locks", "--json", "--symbols", out))
        sites = [s for s in report["per_call_site"] if s["lock"] == hex(sink_lock)]
        self.assertEqual([s["acquisitions"] for s in sites], [2])
        named_sites = [s for s in named["per_call_site"] if s["lock"] == hex(sink_lock)]
        offset = int(sites[0]["call_site"], 16) - next(a for a, n in self.functions().items() if n == "worker")
        # the line of the return address: the call's, or the next statement's when a row of it starts there
        self.assertEqual(len(named_sites), 1)
        self.assertIn(named_sites[0], [dict(sites[0], call_site=f"worker+{offset:#x} (instrumented_calls.c:{n})")
                                       for n in (line, line + 1)])
        # the same rows otherwise
        self.assertEqual(len(named["per_call_site"]), len(report["per_call_site"]))
        self.assertEqual(named["per_lock"], report["per_lock"])


if __name__ == "__main__":
    unittest.main()
