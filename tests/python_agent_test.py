"""The Python package (src/agents/python/) end to end: tests/apps/python_events.py's typed events and logging
records traced through a real traceryd, read back with babeltrace2 (every field of every event checked) and
`tracery view` (the same text); filters on a Python event's fields and on a logger's level; an event defined
after the session started; threads and a fork child; refusals of bad definitions and values, and loggers'
event names and their bound (daemonless); and the refusal to load in a sub-interpreter."""
import os
import subprocess
import sys
import unittest

from daemontest import DaemonTestCase, go, read_line
from tracetest import BUILD_DIR, Trace, TraceDirTestCase, babeltrace2_text, run_traced

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps"))
import python_events as app  # noqa: E402

APP = os.path.abspath(app.__file__)
PACKAGE_DIR = os.path.join(BUILD_DIR, "src", "agents", "python")
LOGGING_FIELDS = ["logger", "level", "level_name", "msg", "module", "function", "file", "line", "thread_id",
                  "thread_name", "pid"]


def package_env():
    # A sanitizer's runtime must be the first library of a process: an extension built with it (and the
    # libtracery it loads) cannot be loaded into Debian's python3.
    if os.environ.get("TRACERY_SANITIZE"):
        raise unittest.SkipTest("the package is built with sanitizers: Debian's python3 cannot load it")
    if not os.path.exists(os.path.join(PACKAGE_DIR, "tracery", "__init__.py")):
        raise unittest.SkipTest(f"the Python package is not built in {PACKAGE_DIR}")
    return {"PYTHONPATH": PACKAGE_DIR}


def printed(stdout, name):
    """The words of every `name ...` line the program printed."""
    return [line.split()[1:] for line in stdout.splitlines() if line.split()[:1] == [name]]


class PythonAgentDaemon(DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.env = package_env()
        self.d.start_daemon()

    def traced(self, scenario, *enables):
        """Runs the program in `scenario` under a session of the `enables` (tuples of enable-event arguments):
        (trace path, its stdout)."""
        path = self.out(scenario)
        self.d.tracery("create", scenario, "--output", path)
        for args in enables:
            self.d.tracery("enable-event", "-u", *args)
        self.d.tracery("start")
        out = self.d.run([sys.executable, APP, scenario], extra_env=self.env)
        self.assertIn("0 events lost", self.d.tracery("stop").stdout)
        return path, out

    def check_request(self, payload, i):
        v = app.request_values(i)
        color = v["color"]
        expected = dict(v, ok=int(v["ok"]), data=list(v["data"]), color=(int(color), [color.name]),
                        _data_length=len(v["data"]))
        self.assertEqual(payload, expected)

    def test_typed_events_and_logging_records(self):
        path, out = self.traced("typed", ("myapp:*",), ("python:myapp.*",))
        self.assertEqual(printed(out, "enabled"), [["1"]])
        trace = Trace(path)
        self.assertEqual(sorted({e["name"] for e in trace.events}), ["myapp:request", "python:myapp.db"])
        requests = trace.named("myapp:request")
        self.assertEqual(len(requests), app.REQUESTS)
        for i, e in enumerate(requests):
            self.check_request(e["payload"], i)
        records = trace.named("python:myapp.db")
        pid = int(printed(out, "pid")[0][0])
        line = int(printed(out, "log_line")[0][0])
        self.assertEqual(len(records), app.RECORDS)
        for i, e in enumerate(records):
            level = app.LEVELS[i % len(app.LEVELS)]
            self.assertEqual(list(e["payload"]), LOGGING_FIELDS)
            thread_id = e["payload"].pop("thread_id")
            self.assertGreater(thread_id, 0)
            self.assertEqual(e["payload"], {
                "logger": "myapp.db", "level": level, "level_name": app.logging.getLevelName(level),
                "msg": app.log_message("myapp.db", i), "module": "python_events", "function": "log_records",
                "file": APP, "line": line, "thread_name": "MainThread", "pid": pid})
        rc, text, err = babeltrace2_text(path)
        self.assertEqual((rc, err), (0, ""))
        self.assertIn('path = "/p/1/é☃"', text)
        view = self.d.tracery("view", path)
        self.assertEqual(view.stdout, text)

    def test_filters_on_python_fields(self):
        path, _ = self.traced("typed", ("myapp:request", "--filter", 'small < 240 && path == "/p/2*"'),
                              ("python:myapp.*", "--filter", "level >= 30"), ("python:other",))
        trace = Trace(path)
        wanted = [i for i in range(app.REQUESTS) if 255 - i < 240 and f"/p/{i}/".startswith("/p/2")]
        self.assertEqual([e["payload"]["small"] for e in trace.named("myapp:request")], [255 - i for i in wanted])
        for e, i in zip(trace.named("myapp:request"), wanted):
            self.check_request(e["payload"], i)
        levels = [app.LEVELS[i % len(app.LEVELS)] for i in range(app.RECORDS)]
        self.assertEqual([(e["payload"]["level"], e["payload"]["msg"]) for e in trace.named("python:myapp.db")],
                         [(level, app.log_message("myapp.db", i)) for i, level in enumerate(levels) if level >= 30])
        self.assertEqual([e["payload"]["msg"] for e in trace.named("python:other")],
                         [app.log_message("other", i) for i in range(app.OTHER_RECORDS)])

    def test_event_defined_after_start(self):
        emitter, pid = self.d.spawn_registered([sys.executable, APP, "late"], extra_env=self.env)
        path = self.out("late")
        self.d.tracery("create", "late", "--output", path)
        self.d.tracery("enable-event", "-u", "myapp:*")
        self.d.tracery("start")
        self.assertNotIn("myapp:late", self.d.tracery("list", "-u").stdout)
        go(emitter)
        read_line(emitter, "done")
        self.assertIn("myapp:late", self.d.tracery("list", "-u").stdout)
        go(emitter)
        self.assertEqual(emitter.wait(timeout=30), 0)
        self.assertIn("0 events lost", self.d.tracery("stop").stdout)
        self.assertEqual([e["payload"] for e in Trace(path).events],
                         [{"n": i, "word": f"w{i}"} for i in range(10)])

    def test_threads_and_a_fork_child(self):
        path, out = self.traced("threads", ("myapp:tick",), ("python:myapp.worker",))
        threads = {int(k): (int(ident), name) for k, ident, name in printed(out, "thread")}
        self.assertEqual(sorted(threads), list(range(app.THREADS)))
        child = printed(out, "child")[0]
        self.assertEqual(child[1], "0")
        trace = Trace(path)
        ticks = {}
        for e in trace.named("myapp:tick"):
            ticks.setdefault(e["payload"]["thread"], []).append(e["payload"]["seq"])
        self.assertEqual(sorted(ticks), [*range(app.THREADS), 99])
        for k, seqs in ticks.items():
            self.assertEqual(sorted(seqs), list(range(app.CHILD_TICKS if k == 99 else app.TICKS)), k)
        records = {}
        for e in trace.named("python:myapp.worker"):
            p = e["payload"]
            k = int(p["thread_name"].split("-")[1])
            self.assertEqual((p["thread_id"], p["thread_name"]), threads[k])
            records.setdefault(k, []).append(p["msg"])
        self.assertEqual(sorted(records), list(range(app.THREADS)))
        for k, msgs in records.items():
            self.assertEqual(sorted(msgs), sorted(f"thread {k} record {j}" for j in range(app.TICKS)))


class PythonAgentAlone(TraceDirTestCase):
    def test_bad_definitions_and_values_are_refused_clearly(self):
        proc = run_traced([sys.executable, APP, "errors"], self.trace_dir,
                          dict(package_env(), TRACERY_EVENTS="myapp:*"))
        errors = [line for line in proc.stdout.splitlines() if line.startswith("error ")]
        expected = [
            ("ValueError", "the name must be PROVIDER:NAME"),
            ("ValueError", "the provider 'bad provider' must begin with a letter or '_'"),
            ("ValueError", "a provider of 10000000 bytes, at most 64"),
            ("TypeError", "<class 'list'> is not a field type"),
            ("ValueError", "17 fields, at most 16"),
            ("ValueError", "myapp:checked is already defined with other fields"),
            ("OverflowError", "myapp:checked: the value does not fit field 'small' (0 to 255)"),
            ("OverflowError", "myapp:checked: the value does not fit field 'small' (0 to 255)"),
            ("OverflowError", "myapp:checked: the value does not fit field 'n' (-128 to 127)"),
            ("OverflowError", "myapp:checked: the value does not fit field 'n' (-128 to 127)"),
            ("TypeError", "field 'small' takes an int, not str"),
            ("TypeError", "field 'name' takes a str, not bytes"),
            ("TypeError", "unexpected keyword argument 'nmae'"),
            ("TypeError", "got two values for field 'small'"),
            ("TypeError", "takes at most 3 values (4 given)"),
            ("ValueError", "myapp:checked: its values take more than 65536 bytes"),
            ("TypeError", "myapp:real: field 'x' takes a float, not str"),
        ]
        self.assertEqual(len(errors), len(expected), proc.stdout)
        for line, (kind, text) in zip(errors, expected):
            self.assertTrue(line.startswith(f"error {kind} "), line)
            self.assertIn(text, line)
        self.assertEqual(printed(proc.stdout, "same"), [["1"]])
        self.assertEqual([e["payload"] for e in Trace(self.trace_dir).events],
                         [{"small": 7, "name": "kept", "n": -128}])

    def test_logger_names_become_event_names_and_their_number_is_bounded(self):
        proc = run_traced([sys.executable, APP, "names"], self.trace_dir,
                          dict(package_env(), TRACERY_EVENTS="python:*"))
        self.assertEqual(printed(proc.stdout, "event_names"),
                         [["python:a.b", "python:my_app__", "python:_1st", "python:late.one", "python:late.two"]])
        # The first three loggers have an event each; the records of the others are python:_other_loggers. The
        # handler's filter drops the records of logger 1st.
        self.assertEqual([(e["name"], e["payload"]["logger"], e["payload"]["msg"], e["payload"]["level"])
                          for e in Trace(self.trace_dir).events],
                         [("python:a.b", "a.b", "from a.b", 30),
                          ("python:my_app__", "my app/\u00fc", "from my app/\u00fc", 30),
                          ("python:_other_loggers", "late.one", "from late.one", 30),
                          ("python:_other_loggers", "late.two", "from late.two", 30)])

    def test_sub_interpreters_are_refused(self):
        code = ("import _xxsubinterpreters as interpreters\n"
                "interp = interpreters.create()\n"
                "try:\n"
                "    interpreters.run_string(interp, 'import tracery\\ntracery.Event')\n"
                "except interpreters.RunFailedError as e:\n"
                "    print('refused', e)\n"
                "import tracery\n"
                "print('main', tracery.Event('myapp:main', a=int).name)\n")
        env = dict(os.environ, **package_env())
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("refused <class 'ImportError'>: tracery cannot be imported in a sub-interpreter", proc.stdout)
        self.assertIn("main myapp:main", proc.stdout)


if __name__ == "__main__":
    unittest.main()
