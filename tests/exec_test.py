"""`tracery exec`: a command run traced under a private traceryd. Without helpers (--preload none): a temporary
session (created, started, stopped and destroyed around the command; the trace where it says, with the
command's events and their vpid, vtid, procname and ip contexts), the command's exit status and a signal's
(128 + N), a command that cannot be run (127), signals forwarded to it, an existing session (-s) used as it is
and left; bad arguments. With the pthread helper, when the build has it (build/src/preload/
libtracery-preload-pthread.so), `xz -T2` traced and `analyze locks` on its trace; skipped clearly otherwise. With
the function and pthread helpers, a -finstrument-functions program's functions and lock call site named through
the temporary session's own state dump (`analyze calls/locks --symbols`)."""
import json
import os
import re
import shutil
import signal
import subprocess
import unittest

import instrumented_calls
from daemontest import DaemonTestCase
from tracetest import BUILD_DIR, Trace, program

PTHREAD_HELPER = os.path.join(BUILD_DIR, "src", "preload", "libtracery-preload-pthread.so")


class ExecTest(DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.d.start_daemon()
        self.emitter = program("tests", "daemon-emitter")

    def exec(self, *args, check=True):
        proc = self.d.tracery("exec", *args, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"tracery exec {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    def sessions(self):
        return self.d.tracery("list").stdout

    def test_temporary_session(self):
        out = self.out("t")
        proc = self.exec("--preload", "none", "-o", out, "--", self.emitter, "count", "5")
        self.assertIn("done 5", proc.stdout)  # the command's own output, untouched
        self.assertIn(f"tracery: trace written to {out}", proc.stderr)
        self.assertNotIn("exec-", self.sessions())  # destroyed
        ticks = [e for e in Trace(out).events if e["name"] == "emit:tick"]
        self.assertEqual(len(ticks), 5)
        pid = int(re.search(r"ready (\d+)", proc.stdout).group(1))
        for e in ticks:
            self.assertEqual(e["context"]["vpid"], pid)
            self.assertEqual(e["context"]["vtid"], pid)
            self.assertEqual(e["context"]["procname"], "daemon-emitter")
            self.assertGreater(e["context"]["ip"], 0)

    def test_exit_status_and_signals(self):
        self.assertEqual(self.exec("--preload", "none", "--", "sh", "-c", "exit 7", check=False).returncode, 7)
        self.assertEqual(self.exec("--preload", "none", "--", "sh", "-c", "kill -USR1 $$",
                                   check=False).returncode, 128 + signal.SIGUSR1)
        missing = self.exec("--preload", "none", "--", "/nonexistent/program", check=False)
        self.assertEqual(missing.returncode, 127)
        self.assertIn("cannot run '/nonexistent/program'", missing.stderr)
        self.assertNotIn("exec-", self.sessions())
        # a signal to tracery goes to the command, whose exit tracery reports: the session still ends
        env = dict(self.d.env)
        p = subprocess.Popen([self.d.cli, "exec", "--preload", "none", "--", "sh", "-c",
                              "trap 'echo got TERM; exit 3' TERM; echo waiting; while :; do sleep 0.05; done"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.d.procs.append(p)
        self.assertEqual(p.stdout.readline().strip(), "waiting")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 3, err)
        self.assertIn("got TERM", out)
        self.assertIn("trace written to", err)
        self.assertNotIn("exec-", self.sessions())

    def test_named_session(self):
        out = self.session("named", events=("emit:*",), context=("vpid",))
        idle = self.exec("-s", "named", "--preload", "none", "--", "true")
        self.assertIn("warning: session 'named' is created: the command's events are not recorded", idle.stderr)
        self.d.tracery("start", "named")
        proc = self.exec("-s", "named", "--preload", "none", "--", self.emitter, "count", "3")
        self.assertIn(f"traced in session 'named' ({out})", proc.stderr)
        self.assertNotIn("warning", proc.stderr)
        self.assertIn("named", self.sessions())  # not destroyed, still tracing
        self.d.tracery("stop", "named")
        pid = int(re.search(r"ready (\d+)", proc.stdout).group(1))
        ticks = [e for e in Trace(out).events if e["name"] == "emit:tick"]
        self.assertEqual([e["context"]["vpid"] for e in ticks], [pid] * 3)

    def test_bad_arguments(self):
        bad = self.exec("--preload", "pthread,bogus", "--", "true", check=False)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("unknown helper 'bogus'", bad.stderr)
        self.assertEqual(self.exec("--preload", "none", check=False).returncode, 2)  # no command
        missing = self.exec("-s", "nosuch", "--preload", "none", "--", "touch", self.out("ran"), check=False)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("nosuch", missing.stderr)
        self.assertFalse(os.path.exists(self.out("ran")), "the command ran without its session")
        both = self.exec("-s", "x", "-o", self.out("o"), "--preload", "none", "--", "true", check=False)
        self.assertEqual(both.returncode, 1)
        self.assertIn("give one of them", both.stderr)
        self.assertNotIn("exec-", self.sessions())

    def test_pthread_helper_and_analyze_locks(self):
        if not os.path.exists(PTHREAD_HELPER):
            self.skipTest(f"{PTHREAD_HELPER} is not built (the pthread preload helper)")
        if os.environ.get("TRACERY_SANITIZE"):
            self.skipTest("a helper built with sanitizers cannot be preloaded into xz, built without")
        xz = shutil.which("xz")
        if xz is None:
            self.skipTest("xz is not installed")
        data = self.out("input")
        with open(data, "wb") as f:
            f.write(os.urandom(256 * 1024).hex().encode() * 6)  # 3 MiB: three blocks for xz -0's two threads
        out = self.out("locks")
        proc = self.exec("--preload", "pthread", "-o", out, "--", xz, "-T2", "-0", "-k", "-f", data)
        self.assertTrue(os.path.exists(data + ".xz"), proc.stderr)
        report = json.loads(self.d.tracery("analyze", "locks", "--json", out).stdout)
        acquired = sum(1 for e in Trace(out).events
                       if e["name"] in ("lttng_ust_pthread:pthread_mutex_lock_acq",
                                        "lttng_ust_pthread:pthread_mutex_trylock")
                       and e["payload"]["status"] == 0)
        self.assertGreater(acquired, 10)
        self.assertEqual(sum(r["acquisitions"] for r in report["per_lock"]), acquired)

    def test_function_and_pthread_helpers_named_by_our_state_dump(self):
        """instrumented-calls (-finstrument-functions, -g) under our func and pthread helpers: the temporary
        session's own state dump names every function with --symbols, with the call counts the program's
        arguments give, and the workers' mutex call site as a line of worker()."""
        if os.environ.get("TRACERY_SANITIZE"):
            self.skipTest("a helper built with sanitizers cannot be preloaded into a program built without")
        prog = program("tests", "instrumented-calls")
        out = self.out("calls")
        rounds = 5
        self.exec("--preload", "func,pthread", "-o", out, "--", prog, str(rounds))
        rows = json.loads(self.d.tracery("analyze", "calls", "--json", "--symbols", out).stdout)["per_function"]
        self.assertEqual({r["function"]: r["calls"] for r in rows}, instrumented_calls.calls(rounds))
        locks = json.loads(self.d.tracery("analyze", "locks", "--json", "--symbols", out).stdout)
        sites = {r["call_site"] for r in locks["per_call_site"]}
        self.assertTrue(sites, locks)
        for site in sites:
            self.assertRegex(site, r"^worker\+0x[0-9a-f]+ \(instrumented_calls\.c:\d+\)$")


if __name__ == "__main__":
    unittest.main()
