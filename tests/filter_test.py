"""Filters end to end: `tracery enable-event --filter` through a real traceryd,
and TRACERY_FILTER in daemonless mode, on real instrumented programs, with
both filter engines (JIT and interpreter); traces read back with bt2."""
import os
import unittest

from daemontest import DaemonTestCase, go, read_line
from tracetest import Trace, TraceDirTestCase, program, run_traced

ENGINES = ("jit", "interpreter")


def caret_column(stderr, expression):
    """Column of the caret under `expression` in an error message."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.endswith(expression) and "^" in lines[i + 1]:
            return lines[i + 1].index("^") - (len(line) - len(expression))
    raise AssertionError(f"no caret under '{expression}' in:\n{stderr}")


class DaemonFilters(DaemonTestCase):
    def filtered_session(self, name, event, expression):
        path = self.out(name)
        self.d.tracery("create", name, "--output", path)
        out = self.d.tracery("enable-event", "-u", event, "-s", name, "--filter", expression).stdout
        self.assertIn(f"with filter '{expression}'", out)
        return path

    def test_bench_records_one_event_in_three(self):
        n = 30_000
        self.d.start_daemon()
        for engine in ENGINES:
            with self.subTest(engine=engine):
                path = self.filtered_session(f"s-{engine}", "bench:ev", "a % 3 == 0 && b == 42")
                self.d.tracery("start", f"s-{engine}")
                self.d.run([program("bench", "tracery-bench"), str(n), "1", "ev"],
                           extra_env={"TRACERY_FILTER_ENGINE": engine})
                self.assertIn("channel0: 0 events lost", self.d.tracery("stop", f"s-{engine}").stdout)
                values = [e["payload"]["a"] for e in Trace(path).events]
                self.assertEqual(values, list(range(0, n, 3)))

    def test_filter_on_a_string_field_and_the_procname(self):
        n = 3001
        self.d.start_daemon()
        fizz = self.filtered_session("fizz", "emit:other", 'tag == "fi*"')
        buzz = self.filtered_session("buzz", "emit:other", 'tag != "fizz" && $ctx.procname == "daemon-emit*"')
        none = self.filtered_session("none", "emit:other", '$ctx.procname == "someone-else"')
        for s in ("fizz", "buzz", "none"):
            self.d.tracery("start", s)
        self.d.run([program("tests", "daemon-emitter"), "count", str(n)])
        for s in ("fizz", "buzz", "none"):
            self.d.tracery("stop", s)
        got = {p: [(e["payload"]["i"], e["payload"]["tag"]) for e in Trace(p).events] for p in (fizz, buzz, none)}
        self.assertEqual(got[fizz], [(i, "fizz") for i in range(0, n, 3)])
        self.assertEqual(got[buzz], [(i, "buzz") for i in range(n) if i % 3])
        self.assertEqual(got[none], [])

    def test_two_sessions_with_different_filters_get_exactly_theirs(self):
        n = 1000
        self.d.start_daemon()
        even = self.filtered_session("even", "emit:tick", "i % 2 == 0")
        small = self.filtered_session("small", "emit:*", "i < 100")
        self.d.tracery("start", "even")
        self.d.tracery("start", "small")
        self.d.run([program("tests", "daemon-emitter"), "count", str(n)])
        self.d.tracery("stop", "even")
        self.d.tracery("stop", "small")
        self.assertEqual([e["payload"]["i"] for e in Trace(even).events], list(range(0, n, 2)))
        small_events = [(e["name"], e["payload"]["i"]) for e in Trace(small).events]
        self.assertEqual(sorted(small_events), sorted([("emit:tick", i) for i in range(100)] +
                                                      [("emit:other", i) for i in range(100)]))

    def test_event_without_the_field_records_nothing(self):
        n = 300
        self.d.start_daemon()
        path = self.filtered_session("s", "emit:*", 'tag == "fizz"')  # emit:tick has no field tag
        self.d.tracery("start")
        self.d.run([program("tests", "daemon-emitter"), "count", str(n)])
        self.d.tracery("stop")
        self.assertEqual([(e["name"], e["payload"]["i"]) for e in Trace(path).events],
                         [("emit:other", i) for i in range(0, n, 3)])

    def test_filter_enabled_while_the_program_runs(self):
        self.d.start_daemon()
        emitter, pid = self.d.spawn_registered([program("tests", "daemon-emitter"), "count", "900", "wait"])
        path = self.out("s")
        self.d.tracery("create", "s", "--output", path)
        self.d.tracery("enable-event", "-u", "emit:tick")
        self.d.tracery("start")
        # Running program, started session: the new rule reaches the program
        # before the command returns.
        self.d.tracery("enable-event", "-u", "emit:other", "--filter", "i >= 600")
        go(emitter)
        self.assertEqual(read_line(emitter, "done"), ["900"])
        self.assertEqual(emitter.wait(timeout=30), 0)
        self.d.tracery("stop")
        names = [(e["name"], e["payload"]["i"]) for e in Trace(path).events]
        self.assertEqual([i for name, i in names if name == "emit:tick"], list(range(900)))
        self.assertEqual([i for name, i in names if name == "emit:other"], list(range(600, 900)))


class BadFilters(DaemonTestCase):
    def fails(self, *args, expect):
        proc = self.d.tracery(*args, check=False)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn(expect, proc.stderr)
        return proc.stderr

    def test_syntax_error_shows_a_caret_and_changes_nothing(self):
        self.d.start_daemon()
        self.d.tracery("create", "s", "--output", self.out("s"))
        self.d.tracery("enable-event", "-u", "bench:ev")
        expression = "a % 3 == 0 && (b == 42"
        err = self.fails("enable-event", "-u", "bench:str", "--filter", expression, expect="expected ')'")
        self.assertEqual(caret_column(err, expression), len(expression))
        err = self.fails("enable-event", "-u", "bench:str", "--filter", "b == 4 @ 2", expect="unexpected character '@'")
        self.assertEqual(caret_column(err, "b == 4 @ 2"), 7)
        status = self.d.tracery("status").stdout
        self.assertIn("enabled: bench:ev;", status)
        self.assertNotIn("bench:str", status)

    def test_unknown_field_suggests_the_right_one(self):
        self.d.start_daemon()
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "count", "1", "wait"])
        self.d.wait_registered(int(read_line(emitter, "ready")[0]))
        self.d.tracery("create", "s", "--output", self.out("s"))
        expression = "i > 3 && tga == \"fizz\""
        err = self.fails("enable-event", "-u", "emit:*", "--filter", expression,
                         expect="unknown field 'tga'; did you mean 'tag'?")
        self.assertEqual(caret_column(err, expression), expression.index("tga"))
        err = self.fails("enable-event", "-u", "emit:tick", "--filter", "i < \"x\"", expect="string")
        self.assertNotIn("emit:", self.d.tracery("status").stdout)
        go(emitter)


class DaemonlessFilters(TraceDirTestCase):
    def test_bench_with_tracery_filter(self):
        n = 30_000
        for engine in ENGINES:
            with self.subTest(engine=engine):
                trace_dir = os.path.join(self.tmp, engine)
                run_traced([program("bench", "tracery-bench"), str(n), "1", "ev"], trace_dir,
                           {"TRACERY_FILTER": "bench:ev=a % 3 == 0 && b == 42", "TRACERY_FILTER_ENGINE": engine})
                values = [e["payload"]["a"] for e in Trace(trace_dir).events]
                self.assertEqual(values, list(range(0, n, 3)))

    def test_filter_only_applies_to_its_pattern(self):
        run_traced([program("bench", "tracery-bench"), "100", "1", "str"], self.trace_dir,
                   {"TRACERY_FILTER": 'bench:ev=a > 1000000; bench:str=s == "hello*" && b == 42'})
        self.assertEqual(len(Trace(self.trace_dir).events), 100)

    def test_bad_filter_leaves_the_program_untraced(self):
        proc = run_traced([program("bench", "tracery-bench"), "100", "1", "ev"], self.trace_dir,
                          {"TRACERY_FILTER": "a %% 3", "TRACERY_LOG": "stderr"})
        self.assertIn("TRACERY_FILTER", proc.stderr)
        self.assertIn("expected an operand here", proc.stderr)
        self.assertEqual(caret_column(proc.stderr, "a %% 3"), 3)
        self.assertIn("TOTAL threads 1 events 100", proc.stdout)
        self.assertFalse(os.path.exists(self.trace_dir))


if __name__ == "__main__":
    unittest.main()
