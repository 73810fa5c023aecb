"""The Java agent (src/agents/java/): a Java program's typed events, java.util.logging records and log4j 2 log
events traced by traceryd and read back with babeltrace2 (every field's value) and `tracery view` (babeltrace2's
text, byte for byte); a filter on a log record's level; an event defined after the session started; four threads
emitting at once; definitions and values refused with the reason; the bound on loggers with an event of their
own. One JVM run does all of it (a JVM starts in about 0.3 s)."""
import os
import shutil
import subprocess
import sys
import time
import unittest

from daemontest import DaemonTestCase, go
from tracetest import BUILD_DIR, Trace

JAVA = os.environ.get("TRACERY_JAVA") or shutil.which("java")
TRACERY_JAR = os.path.join(BUILD_DIR, "src", "agents", "java", "tracery.jar")
PROGRAM_JAR = os.path.join(BUILD_DIR, "tests", "java-agent-program.jar")
# log4j 2's jars where tracery.jar has its log4j 2 appender, else empty.
LOG4J2_CLASSPATH = os.environ.get("TRACERY_LOG4J2_CLASSPATH", "")
LOG4J2_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps", "java", "log4j2-test.xml")
# The line of the program that makes the JUL record's exception.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps", "java", "JavaAgentProgram.java")) as f:
    BOOM_LINE = 1 + next(i for i, line in enumerate(f) if 'new IllegalStateException("boom")' in line)


def lines_until(proc, last, timeout=30):
    """proc's stdout lines up to the one starting with `last` (included)."""
    lines = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith(last):
            return lines
    raise AssertionError(f"no '{last}' line from {proc.args}; got {lines}; stderr: {proc.stderr.read()}")


class JavaAgent(DaemonTestCase):
    def setUp(self):
        if os.environ.get("TRACERY_SANITIZE"):
            self.skipTest("a sanitizer build: the JVM cannot load a JNI library built with a sanitizer unless its "
                          "run-time is preloaded")
        if not JAVA or not os.path.exists(TRACERY_JAR):
            self.skipTest("no JDK found, so the Java agent is not built (install default-jdk-headless)")
        if not os.path.exists(PROGRAM_JAR):
            self.skipTest(f"{PROGRAM_JAR} is not built")
        super().setUp()

    def test_typed_events_and_log_records(self):
        self.d.start_daemon()
        path = self.out("s")
        self.d.tracery("create", "s", "--output", path)
        self.d.tracery("enable-event", "-u", "jtest:*", "-s", "s")
        self.d.tracery("enable-event", "-u", "java:com.example.*", "-s", "s", "--filter", "level >= 900")
        self.d.tracery("enable-event", "-u", "log4j2:com.example.*", "-s", "s", "--filter", "level >= 30000")
        self.d.tracery("start")
        start_ns = time.time_ns()
        argv = [JAVA, "-cp", f"{TRACERY_JAR}:{PROGRAM_JAR}", "JavaAgentProgram"]
        if LOG4J2_CLASSPATH:
            argv[1:3] = [f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}", "-cp",
                         f"{TRACERY_JAR}:{PROGRAM_JAR}:{LOG4J2_CLASSPATH}"]
            argv.append("log4j2")
        else:
            print("tracery.jar has no log4j 2 appender (no liblog4j2-java): its part is not run", file=sys.stderr)
        proc = self.d.spawn(argv)
        *refusals, ready = lines_until(proc, "ready")
        pid = int(ready.split()[1])
        deadline = time.time() + 10
        while f"programs tracing into it: {pid}" not in self.d.tracery("status").stdout:
            self.assertLess(time.time(), deadline, self.d.log())
            time.sleep(0.02)
        self.assertIn("jtest:request", self.d.tracery("list", "-u").stdout)
        go(proc)
        report = dict(line.split(" ", 1) for line in lines_until(proc, "done")[:-1])
        self.assertEqual(proc.wait(timeout=30), 0, proc.stderr.read())
        end_ns = time.time_ns()
        self.d.tracery("stop")

        # Refused with the reason: libtracery's for the definitions, the agent's for the values.
        self.assertEqual(len(refusals), 7, refusals)
        for line in refusals:
            self.assertTrue(line.startswith("refused "), refusals)
        self.assertIn("bad provider", refusals[0])
        self.assertIn("jtest:request is already defined with other fields", refusals[1])
        self.assertEqual(refusals[2], "refused field small of event jtest:request is int8 small: 300 does not fit")
        self.assertEqual(refusals[3], "refused event jtest:request has 7 fields, emit got 1 values")
        # The writer: a value of the wrong kind, too few values, another event written in between.
        self.assertEqual(refusals[4], "refused field id of event jtest:request is int64 id, not a string")
        self.assertEqual(refusals[5], "refused event jtest:request has 7 fields, got 1 values")
        self.assertTrue(refusals[6].startswith("refused tracery: no event is being written on this thread"), refusals)
        self.assertEqual(report["enabled"], "true false")
        self.assertEqual(report["late"], "true")
        self.assertEqual(report["lost"], "0")
        main_tid, worker_tid = map(int, report["thread"].split())

        trace = Trace(path)
        self.assertEqual(trace.discarded, 0)
        # Four threads' events, each thread's in its order and whole.
        burst = [e["payload"] for e in trace.named("jtest:burst")]
        self.assertEqual(sorted((b["thread"], b["i"]) for b in burst), [(t, i) for t in range(4) for i in range(1000)])
        for t in range(4):
            mine = [b for b in burst if b["thread"] == t]
            self.assertEqual(mine, [{"thread": t, "i": i, "s": f"t{t}-{i}"} for i in range(1000)])
        names = [e["name"] for e in trace.events if e["name"] != "jtest:burst"]
        log4j2_names = ["log4j2:com.example.l4j"] * 3 + ["log4j2:com.example.l4j.noloc", "log4j2:com.example.prog",
                                                         "log4j2:com.example.l4j"]
        self.assertEqual(names, ["jtest:request"] * 4 + ["java:com.example.app"] * 5 + [
            "java:com.example._n_", "jtest:late"] + (
                log4j2_names if LOG4J2_CLASSPATH else []))
        self.assertEqual([e["payload"] for e in trace.named("jtest:request")], [
            {"id": 42, "path": "/index.html", "ok": True, "ms": 1.5, "code": -7, "mid": -300, "small": -128},
            {"id": -2**63, "path": "h\u00e9llo \u2713 \U0001d11e lone\ufffd", "ok": False, "ms": -0.25,
             "code": 2**31 - 1, "mid": 2**15 - 1, "small": 127},
            {"id": 2**63 - 1, "path": "", "ok": True, "ms": 1e300, "code": 0, "mid": 0, "small": 0},
            {"id": 7, "path": "/w\u00e9", "ok": True, "ms": 2.5, "code": -1, "mid": -2, "small": -3},
        ])
        records = [e["payload"] for e in trace.named("java:com.example.app")]
        for r in records:
            self.assertTrue(start_ns <= r.pop("time_ns") <= end_ns, records)
        # An exception's stack trace follows the message; a long message is cut.
        failed = records.pop(3)["msg"].splitlines()
        self.assertEqual(failed[:3], ["failed", "java.lang.IllegalStateException: boom",
                                      f"\tat JavaAgentProgram.main(JavaAgentProgram.java:{BOOM_LINE})"])
        self.assertEqual(records.pop(3)["msg"], "x" * 8000 + "... [1000 characters cut]")
        # The INFO record (800) is below the filter; org.other's logger is not enabled.
        self.assertEqual(records, [
            {"logger": "com.example.app", "level": 900, "level_name": "WARNING", "msg": "disk sda at 93%",
             "class": "JavaAgentProgram", "method": "main", "thread_id": main_tid, "thread_name": "main"},
            {"logger": "com.example.app", "level": 1000, "level_name": "SEVERE", "msg": "plain severe",
             "class": "JavaAgentProgram", "method": "main", "thread_id": main_tid, "thread_name": "main"},
            {"logger": "com.example.app", "level": 1000, "level_name": "SEVERE", "msg": "from the worker",
             "class": "com.example.Worker", "method": "run", "thread_id": worker_tid, "thread_name": "worker-1"},
        ])
        accented = trace.named("java:com.example._n_")[0]["payload"]
        self.assertEqual((accented["logger"], accented["msg"]), ("com.example.\u00fcn\u00ef", "accented"))
        self.assertEqual(trace.named("jtest:late")[0]["payload"], {"what": "after start", "n": 7})
        if LOG4J2_CLASSPATH:
            self.check_log4j2(trace, report, start_ns, end_ns)

        # tracery view shows what babeltrace2 shows.
        view = self.d.tracery("view", path)
        bt2 = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=60, check=True)
        self.assertEqual(view.stdout, bt2.stdout)
        self.assertEqual(view.stdout.count("\n"), 4011 + (len(log4j2_names) if LOG4J2_CLASSPATH else 0))
        self.assertIn('msg = "disk sda at 93%"', view.stdout)

    def test_logger_bound(self):
        """The first 1000 loggers get an event each; the records of the others are java:_other_loggers, named in
        their logger field, and counted. Without the daemon (TRACERY_OUTPUT): a thousand definitions, each of
        which a daemon would hear of, take a fraction of a second. enabled() reads through its ByteBuffer here,
        as on the JDKs where sun.misc.Unsafe is not used."""
        path = self.out("bound")
        env = dict(os.environ, TRACERY_OUTPUT=path, TRACERY_EVENTS="java:cap.l0,java:cap.l999,java:_other_loggers")
        for k in [k for k in env if k.startswith("TRACERY_") and k not in ("TRACERY_OUTPUT", "TRACERY_EVENTS")]:
            del env[k]
        out = subprocess.run([JAVA, "-Dorg.tracery.enabledRead=buffer", "-cp", f"{TRACERY_JAR}:{PROGRAM_JAR}",
                              "JavaAgentProgram", "bound"], env=env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "other_loggers 3\n")
        records = [(e["name"], e["payload"]["logger"], e["payload"]["msg"]) for e in Trace(path).events]
        self.assertEqual(records, [
            ("java:cap.l0", "cap.l0", "capped 0"), ("java:cap.l999", "cap.l999", "capped 999"),
            ("java:_other_loggers", "cap.l1000", "capped 1000"), ("java:_other_loggers", "cap.l1001", "capped 1001"),
            ("java:_other_loggers", "cap.l1001", "capped again")])

    def check_log4j2(self, trace, report, start_ns, end_ns):
        """The log4j 2 log events of Log4j2Records, through the appender of the configuration file and the one
        added in code, at WARN (30000) and above."""
        warn_line, error_line, custom_line, in_code_line = map(int, report["l4j_lines"].split())
        main_tid, worker_tid = map(int, report["l4j_thread"].split())
        self.assertEqual(report["l4j_lost"], "0")
        events = [e["payload"] for e in trace.events if e["name"].startswith("log4j2:")]
        for e in events:
            self.assertTrue(start_ns <= e.pop("time_ns") <= end_ns, events)
        here = {"class": "Log4j2Records", "method": "run", "file": "Log4j2Records.java", "thread_id": main_tid,
                "thread_name": "main"}
        failed = events.pop(1)
        self.assertEqual(failed.pop("msg").splitlines()[:3], [
            "failed", "java.lang.IllegalStateException: boom", f"\tat Log4j2Records.run(Log4j2Records.java:{error_line})"])
        self.assertEqual(failed, dict(here, logger="com.example.l4j", level=40000, level_name="ERROR", line=error_line))
        # The INFO event (20000) is below the filter; NOTICE, a custom level of intLevel 250 between ERROR (200)
        # and WARN (300), falls between their values.
        self.assertEqual(events, [
            dict(here, logger="com.example.l4j", level=30000, level_name="WARN", msg="disk sda at 93%", line=warn_line),
            dict(here, logger="com.example.l4j", level=35000, level_name="NOTICE", msg="between error and warn",
                 line=custom_line),
            {**here, "logger": "com.example.l4j.noloc", "level": 40000, "level_name": "ERROR", "msg": "no location",
             "class": "", "method": "", "file": "", "line": -1},
            dict(here, logger="com.example.prog", level=50000, level_name="FATAL", msg="from code", line=in_code_line),
            dict(here, logger="com.example.l4j", level=50000, level_name="FATAL", msg="from the worker",
                 method="lambda$run$0", line=in_code_line + 1, thread_id=worker_tid, thread_name="l4j-worker"),
        ])


if __name__ == "__main__":
    unittest.main()
