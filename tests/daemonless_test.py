"""Daemonless mode end to end: real instrumented programs run with
TRACERY_OUTPUT, their traces read back with babeltrace2."""
import collections
import os
import re
import subprocess
import time
import unittest

from tracetest import FlatTrace, Trace, TraceDirTestCase, program, run_traced


class BenchTrace(TraceDirTestCase):
    def test_two_threads_every_event_recorded_or_counted(self):
        n, threads = 250_000, 2
        run_traced([program("bench", "tracery-bench"), str(n), str(threads), "ev"], self.trace_dir,
                   {"TRACERY_CONTEXT": "vtid"})
        trace = FlatTrace(self.trace_dir)
        self.assertEqual(len(trace.events) + trace.discarded, n * threads)
        per_thread = collections.defaultdict(list)
        for e in trace.events:
            self.assertEqual(e["name"], "bench:ev")
            self.assertEqual(e["fields"]["b"], 42)
            per_thread[e["fields"]["vtid"]].append(e["fields"]["a"])
        self.assertLessEqual(len(per_thread), threads)
        for tid, values in per_thread.items():
            self.assertTrue(all(x < y for x, y in zip(values, values[1:])), f"thread {tid}: a not increasing")
            self.assertLess(values[-1], n)

    def test_babeltrace2_reads_bench_trace_without_warning(self):
        n = 200_000
        run_traced([program("bench", "tracery-bench"), str(n), "2", "ev"], self.trace_dir)
        trace = FlatTrace(self.trace_dir)
        self.assertEqual(len(trace.named("bench:ev")) + trace.discarded, 2 * n)
        if trace.discarded == 0:
            self.assertEqual(trace.stderr, "")

    def test_timestamps_are_the_time_of_day_with_each_clock(self):
        # tsc: the trace counts TSC cycles and its metadata gives their rate;
        # vdso: nanoseconds. Either way readers show when each event happened.
        for backend, tsc in (("tsc", True), ("vdso", False)):
            with self.subTest(backend=backend):
                trace_dir = os.path.join(self.tmp, backend)
                before = time.time_ns()
                run_traced([program("bench", "tracery-bench"), "1000", "1", "ev"], trace_dir,
                           {"TRACERY_CLOCK": backend})
                after = time.time_ns()
                with open(os.path.join(trace_dir, "metadata")) as f:
                    freq = int(re.search(r"freq = (\d+);", f.read()).group(1))
                if tsc:
                    self.assertNotEqual(freq, 1_000_000_000)
                else:
                    self.assertEqual(freq, 1_000_000_000)
                stamps = [e["ts"] for e in Trace(trace_dir).events]
                self.assertEqual(len(stamps), 1000)
                self.assertEqual(stamps, sorted(stamps))
                # 50 us of slack for the offset measured at trace start.
                self.assertGreaterEqual(stamps[0], before - 50_000)
                self.assertLessEqual(stamps[-1], after + 50_000)

    def test_string_event(self):
        run_traced([program("bench", "tracery-bench"), "1000", "1", "str"], self.trace_dir)
        trace = Trace(self.trace_dir)
        self.assertEqual(len(trace.events), 1000)
        self.assertTrue(all(e["payload"] == {"s": "hello tracer", "b": 42} for e in trace.events))

    def test_overwrite_mode_keeps_newest_events(self):
        # Pinned to one CPU, all events go to one per-CPU flight recorder,
        # which must end up holding the newest events, contiguous.
        n = 2_000_000
        cpu = sorted(os.sched_getaffinity(0))[0]
        run_traced(["taskset", "-c", str(cpu), program("bench", "tracery-bench"), str(n), "1", "ev"], self.trace_dir,
                   {"TRACERY_MODE": "overwrite", "TRACERY_SUBBUF_SIZE": "64k", "TRACERY_NUM_SUBBUF": "4"})
        trace = Trace(self.trace_dir)
        values = [e["payload"]["a"] for e in trace.events]
        self.assertGreater(len(values), 3 * 4096, "at least three of the four 64 KiB sub-buffers are full")
        self.assertLessEqual(len(values), 4 * 4096, "a 256 KiB flight recorder cannot hold more")
        self.assertEqual(values[-1], n - 1, "the newest event is kept")
        self.assertEqual(values, list(range(values[0], n)), "the kept events are the newest, contiguous")

    def test_overwrite_mode_per_cpu_buffers_end_with_newest(self):
        n = 1_000_000
        run_traced([program("bench", "tracery-bench"), str(n), "1", "ev"], self.trace_dir,
                   {"TRACERY_MODE": "overwrite", "TRACERY_SUBBUF_SIZE": "64k", "TRACERY_NUM_SUBBUF": "4"})
        values = [e["payload"]["a"] for e in Trace(self.trace_dir).events]
        self.assertEqual(values[-1], n - 1)
        self.assertTrue(all(a < b for a, b in zip(values, values[1:])), "each event once, in order")

    def test_event_patterns(self):
        run_traced([program("bench", "tracery-bench"), "100", "1", "ev"], self.trace_dir,
                   {"TRACERY_EVENTS": "bench:str"})
        self.assertEqual(len(Trace(self.trace_dir).events), 0)


class Processes(TraceDirTestCase):
    def test_fork_child_traces_into_own_streams(self):
        n = 5000
        proc = run_traced([program("tests", "forker"), str(n)], self.trace_dir, {"TRACERY_CONTEXT": "vpid"})
        parent, child = (int(x) for x in proc.stdout.split()[1::2])
        trace = Trace(self.trace_dir)
        by_pid = collections.defaultdict(lambda: collections.Counter())
        for e in trace.events:
            by_pid[e["context"]["vpid"]][e["payload"]["phase"]] += 1
        self.assertEqual(trace.discarded, 0)
        self.assertEqual(dict(by_pid[parent]), {0: n, 2: n})
        self.assertEqual(dict(by_pid[child]), {1: n})
        files = os.listdir(self.trace_dir)
        self.assertTrue(any(f"_{child}_" in f for f in files), files)
        self.assertTrue(any(f"_{parent}_" in f for f in files), files)

    def test_events_of_shared_and_dlopened_libraries(self):
        plugin = program("tests", "libtracery-test-plugin.so")
        proc = run_traced([program("tests", "dlopen-host"), plugin], self.trace_dir)
        listed = proc.stdout.splitlines()
        self.assertIn("before host:mark", listed)
        self.assertIn("before shlib:call", listed)
        self.assertNotIn("before plugin:work", listed)
        self.assertIn("loaded plugin:work", listed)
        self.assertNotIn("after plugin:work", listed)
        self.assertIn("after shlib:call", listed)
        names = [e["name"] for e in Trace(self.trace_dir).events]
        self.assertEqual(names, ["host:mark", "shlib:call"] + ["plugin:work"] * 10 + ["host:mark"])

    def test_libtracery_dlopened_while_a_thread_runs(self):
        # The thread's TLS predates libtracery's (initial-exec, from the static TLS surplus): its first events,
        # one of them in a signal handler, register it with the read side as any thread's.
        plugin = program("tests", "libtracery-test-late-plugin.so")
        n = 1000
        run_traced([program("tests", "late-tracery-host"), plugin, str(n)], self.trace_dir)
        trace = Trace(self.trace_dir)
        who = collections.Counter(e["payload"]["who"] for e in trace.events)
        self.assertEqual(trace.discarded, 0)
        self.assertEqual(dict(who), {0: n, 1: n, 2: 1})


class DiskFull(TraceDirTestCase):
    def test_full_at_exit_every_event_recorded_or_counted(self):
        # A 4 MiB tmpfs takes about 230,000 of the 2,000,000 events; the
        # disk is still full when the program exits, so the sub-buffers left
        # in its buffers are counted by decoding them, event by event.
        if os.geteuid() != 0:
            self.skipTest("needs root: mounts a 4 MiB tmpfs for the trace")
        disk = os.path.join(self.tmp, "disk")
        os.makedirs(disk)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", disk], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", disk], capture_output=True)
        n, threads = 1_000_000, 2
        trace_dir = os.path.join(disk, "t")
        proc = run_traced([program("bench", "tracery-bench"), str(n), str(threads), "ev"], trace_dir,
                          {"TRACERY_LOG": "stderr"})
        lost = re.findall(r"^tracery: (\d+) events? lost because writes were refused \(disk full .+?writing "
                          + re.escape(trace_dir) + r"/[^)]+\)(.*)$", proc.stderr, re.M)
        self.assertEqual(len(lost), 1, proc.stderr)
        self.assertNotIn("unknown", proc.stderr)
        # The line counts what the refusals cost; the buffers may also have
        # dropped events while the disk still took them (the program writes
        # faster than the consumer): the trace counts both as discarded.
        reported, rest = int(lost[0][0]), lost[0][1]
        not_in_trace = int(re.search(r"does not count (\d+)", rest).group(1)) if rest else 0
        trace = FlatTrace(trace_dir)
        self.assertGreater(len(trace.events), 10_000)
        self.assertGreater(reported, 100_000)
        self.assertLessEqual(reported, trace.discarded + not_in_trace)
        self.assertEqual(len(trace.events) + trace.discarded + not_in_trace, n * threads, proc.stderr)

class BadSettings(TraceDirTestCase):
    def run_bench(self, env):
        """tracery-bench with env, its diagnostics asked for on its stderr (TRACERY_LOG)."""
        return run_traced([program("bench", "tracery-bench"), "10", "1", "ev"], self.trace_dir,
                          {"TRACERY_LOG": "stderr", **env})

    def test_nothing_on_the_programs_stderr_unless_asked(self):
        proc = run_traced([program("bench", "tracery-bench"), "10", "1", "ev"], self.trace_dir,
                          {"TRACERY_MODE": "ring"})
        self.assertEqual(proc.stderr, "")
        self.assertIn("TOTAL threads 1 events 10", proc.stdout)
        self.assertFalse(os.path.exists(self.trace_dir))
        log = os.path.join(self.tmp, "tracery.log")
        proc = run_traced([program("bench", "tracery-bench"), "10", "1", "ev"], self.trace_dir,
                          {"TRACERY_MODE": "ring", "TRACERY_LOG": log})
        self.assertEqual(proc.stderr, "")
        with open(log) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("tracery: TRACERY_MODE='ring'"), lines[0])
        self.assertTrue(lines[0].endswith("; this run is not traced"), lines[0])

    def test_bad_values_print_one_line_and_run_untraced(self):
        for var, value in [("TRACERY_MODE", "ring"), ("TRACERY_SUBBUF_SIZE", "1000"),
                           ("TRACERY_NUM_SUBBUF", "x"), ("TRACERY_EVENTS", "nocolon"),
                           ("TRACERY_PAYLOAD_JIT", "maybe")]:
            proc = self.run_bench({var: value})
            self.assertEqual(proc.returncode, 0)
            lines = proc.stderr.splitlines()
            self.assertEqual(len(lines), 1, proc.stderr)
            self.assertIn(f"{var}='{value}'", lines[0])
            self.assertIn("not traced", lines[0])
            self.assertIn("TOTAL threads 1 events 10", proc.stdout)
            self.assertFalse(os.path.exists(self.trace_dir))

    def test_payload_jit_names_its_accepted_values(self):
        proc = self.run_bench({"TRACERY_PAYLOAD_JIT": "maybe"})
        self.assertIn("TRACERY_PAYLOAD_JIT='maybe' is not valid: use 0 (the generic loop) or 1", proc.stderr)
        self.assertFalse(os.path.exists(self.trace_dir))
        for value in ("0", "1"):
            with self.subTest(value=value):
                trace_dir = os.path.join(self.tmp, value)
                proc = run_traced([program("bench", "tracery-bench"), "10", "1", "ev"], trace_dir,
                                  {"TRACERY_PAYLOAD_JIT": value, "TRACERY_LOG": "stderr"})
                self.assertEqual(proc.stderr, "")
                self.assertEqual(len(Trace(trace_dir).events), 10)

    def test_existing_trace_is_never_overwritten(self):
        self.run_bench({})
        with open(os.path.join(self.trace_dir, "metadata"), "rb") as f:
            before = f.read()
        proc = self.run_bench({})
        self.assertIn("not empty", proc.stderr)
        with open(os.path.join(self.trace_dir, "metadata"), "rb") as f:
            self.assertEqual(f.read(), before)

    def test_unwritable_output(self):
        proc = run_traced([program("bench", "tracery-bench"), "10", "1", "ev"], "/proc/tracery-no-such-dir",
                          {"TRACERY_LOG": "stderr"})
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
        self.assertIn("not traced", proc.stderr)


if __name__ == "__main__":
    unittest.main()
