"""The Java agent (src/agents/java/): a Java program's typed events and java.util.logging records traced by
traceryd and read back with babeltrace2 (every field's value) and `tracery view` (babeltrace2's text, byte for
byte); a filter on a log record's field; an event defined after the session started; four threads emitting
at once; definitions and values refused with the reason. One JVM run does all of it (a JVM starts in about
0.3 s)."""
import os
import shutil
import subprocess
import time
import unittest

from daemontest import DaemonTestCase, go
from tracetest import BUILD_DIR, Trace

JAVA = os.environ.get("TRACERY_JAVA") or shutil.which("java")
TRACERY_JAR = os.path.join(BUILD_DIR, "src", "agents", "java", "tracery.jar")
PROGRAM_JAR = os.path.join(BUILD_DIR, "tests", "java-agent-program.jar")


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
        self.d.tracery("start")
        start_ns = time.time_ns()
        proc = self.d.spawn([JAVA, "-cp", f"{TRACERY_JAR}:{PROGRAM_JAR}", "JavaAgentProgram"])
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
        self.assertEqual(len(refusals), 4, refusals)
        for line in refusals:
            self.assertTrue(line.startswith("refused "), refusals)
        self.assertIn("bad provider", refusals[0])
        self.assertIn("jtest:request is already defined with other fields", refusals[1])
        self.assertEqual(refusals[2], "refused field small of event jtest:request is int8 small: 300 does not fit")
        self.assertEqual(refusals[3], "refused event jtest:request has 7 fields, emit got 1 values")
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
        self.assertEqual(names, ["jtest:request"] * 3 + ["java:com.example.app"] * 5 + ["java:com.example._n_",
                                                                                         "jtest:late"])
        self.assertEqual([e["payload"] for e in trace.named("jtest:request")], [
            {"id": 42, "path": "/index.html", "ok": True, "ms": 1.5, "code": -7, "mid": -300, "small": -128},
            {"id": -2**63, "path": "h\u00e9llo \u2713 \U0001d11e lone\ufffd", "ok": False, "ms": -0.25,
             "code": 2**31 - 1, "mid": 2**15 - 1, "small": 127},
            {"id": 2**63 - 1, "path": "", "ok": True, "ms": 1e300, "code": 0, "mid": 0, "small": 0},
        ])
        records = [e["payload"] for e in trace.named("java:com.example.app")]
        for r in records:
            self.assertTrue(start_ns <= r.pop("time_ns") <= end_ns, records)
        # An exception's stack trace follows the message; a long message is cut.
        failed = records.pop(3)["msg"].splitlines()
        self.assertEqual(failed[:3], ["failed", "java.lang.IllegalStateException: boom",
                                      "\tat JavaAgentProgram.main(JavaAgentProgram.java:56)"])
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

        # tracery view shows what babeltrace2 shows.
        view = self.d.tracery("view", path)
        bt2 = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=60, check=True)
        self.assertEqual(view.stdout, bt2.stdout)
        self.assertEqual(view.stdout.count("\n"), 4010)
        self.assertIn('msg = "disk sda at 93%"', view.stdout)


if __name__ == "__main__":
    unittest.main()
