#!/usr/bin/env python3
"""The command line's conventions, the same for every verb and program:
--version of tracery, traceryd and tracery-relayd (one line, one style, exit
0); `tracery help VERB`; a session named as NAME or -s NAME alike; a name is a
session, never a directory of the working directory named the same, unless it
has a '/' or --path says so; `create` without a name; errors ending in a
newline; and the session daemon started by `create` when none answers, after
which the README's walk-through works."""
import os
import re
import subprocess
import time
import unittest

from daemontest import DaemonTestCase
from tracetest import program

VERSION_LINE = r"{} \d+\.\d+\.\d+ \(control protocol \d+, relay protocol \d+\)\n"


class Conventions(DaemonTestCase):
    def run_program(self, *argv, check=True):
        proc = subprocess.run(argv, env=self.d.env, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"{argv} exited {proc.returncode}: {proc.stderr}")
        return proc

    def refused(self, *args, expect):
        proc = self.d.tracery(*args, check=False)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn(expect, proc.stderr)
        self.assertTrue(proc.stderr.endswith("\n"), repr(proc.stderr))
        return proc

    def test_version_of_every_program(self):
        lines = {}
        for name, path in [("tracery", self.d.cli), ("traceryd", self.d.traceryd),
                           ("tracery-relayd", program("src", "relay", "tracery-relayd"))]:
            proc = self.run_program(path, "--version")
            self.assertRegex(proc.stdout, "^" + VERSION_LINE.format(name) + "$")
            self.assertEqual(proc.stderr, "")
            lines[name] = proc.stdout.split(" ", 1)[1]
        self.assertEqual(len(set(lines.values())), 1, lines)  # one release, the same protocols
        self.assertEqual(self.d.tracery("version").stdout, "tracery " + lines["tracery"])

    def test_help_verb(self):
        for words in (["create"], ["snapshot", "record"], ["analyze", "latency"]):
            self.assertEqual(self.d.tracery("help", *words).stdout, self.d.tracery(*words, "--help").stdout)
        self.assertEqual(self.d.tracery("help").stdout, self.d.tracery("--help").stdout)
        self.refused("help", "nonsense", expect="no verb 'nonsense'; see `tracery --help`")
        self.refused("help", "snapshot", "nonsense",
                     expect="no verb 'nonsense' in `tracery snapshot`; see `tracery snapshot --help`")

    def test_session_as_name_or_option(self):
        self.d.start_daemon()
        self.session("first", events=("hello:*",))
        self.session("second", events=("hello:*",))  # now the current one
        for how in (["first"], ["-s", "first"]):
            for verb in ("start", "stop"):
                self.assertIn("'first'", self.d.tracery(verb, *how).stdout)
        self.assertEqual(self.d.tracery("status", "first").stdout, self.d.tracery("status", "-s", "first").stdout)
        self.assertEqual(self.d.tracery("list", "first").stdout, self.d.tracery("list", "--session", "first").stdout)
        self.assertIn("Session 'first'", self.d.tracery("status", "-s", "first").stdout)
        self.refused("status", "first", "-s", "second", expect="excludes")
        self.d.tracery("set-session", "-s", "first")
        self.assertIn("Session 'first'", self.d.tracery("status").stdout)
        self.refused("set-session", expect="set-session needs the session: NAME or -s NAME")
        self.d.tracery("destroy", "-s", "second")
        self.assertNotIn("second", self.d.tracery("list").stdout)

    def test_a_name_is_a_session_not_a_directory(self):
        self.d.start_daemon()
        self.session("p4", events=("hello:*",))
        self.d.tracery("start", "p4")
        self.d.run([program("examples", "hello-c")])
        self.d.tracery("stop", "p4")
        here = self.out("here")
        os.makedirs(os.path.join(here, "p4"))  # an empty directory named like the session

        def in_here(*args):
            return subprocess.run([self.d.cli, *args], cwd=here, env=self.d.env, capture_output=True, text=True,
                                  timeout=60)
        by_name = in_here("view", "p4")
        self.assertEqual(by_name.returncode, 0, by_name.stderr)
        self.assertEqual(by_name.stdout, self.d.tracery("view", self.out("p4")).stdout)
        self.assertEqual(by_name.stdout.count("hello:"), 9)
        self.assertEqual(in_here("view", "-s", "p4").stdout, by_name.stdout)
        for as_path in (["./p4"], ["--path", "p4"]):
            proc = in_here("view", *as_path)
            self.assertEqual(proc.returncode, 1)
            self.assertRegex(proc.stderr, r"^tracery: '(\./)?p4' is not a trace: .*\n$")
        proc = in_here("query", "p4", "SELECT count(*) AS n FROM events", "--csv")
        self.assertEqual(proc.stdout, "n\n9\n", proc.stderr)  # (\r\n read as text)
        # a name that is no session, with a directory of that name here: the error says how to name the directory
        os.makedirs(os.path.join(here, "q5"))
        proc = in_here("view", "q5")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("(a name is a session: for the directory 'q5', give ./q5 or --path q5)\n", proc.stderr)

    def test_create_without_a_name(self):
        self.d.start_daemon()
        before = time.strftime("auto-%Y%m%d-%H%M%S")
        out = self.d.tracery("create").stdout
        after = time.strftime("auto-%Y%m%d-%H%M%S")
        name = re.search(r"'(auto-\d{8}-\d{6})'", out)
        self.assertIsNotNone(name, out)
        self.assertTrue(before <= name.group(1) <= after, (before, name.group(1), after))
        self.assertIn(f"Session '{name.group(1)}'", self.d.tracery("status").stdout)  # the current one

    def test_errors_end_in_a_newline(self):
        self.d.start_daemon()
        self.session("s", events=("hello:*",))
        self.d.tracery("start")
        self.d.run([program("examples", "hello-c")])
        self.d.tracery("stop")
        for args, expect in [
                (["query", "s", "SELEC nothing"], "syntax error"),
                (["query", "s", "SELECT * FROM no_such_table"], "no_such_table"),
                (["status", "nothing"], "no session named 'nothing'"),
                (["view", "--path", self.out("missing")], "does not exist"),
                (["create", "bad/name"], "bad session name"),
                (["nonsense"], "unknown verb 'nonsense'"),
                (["enable-event"], "")]:
            self.refused(*args, expect=expect)
        proc = self.run_program(self.d.traceryd, "--nonsense", check=False)
        self.assertEqual((proc.returncode, proc.stderr),
                         (2, "traceryd: The following argument was not expected: --nonsense; see `traceryd --help`\n"))
        proc = self.run_program(program("src", "relay", "tracery-relayd"), "--nonsense", check=False)
        self.assertEqual((proc.returncode, proc.stderr),
                         (2, "tracery-relayd: The following argument was not expected: --nonsense; see "
                             "`tracery-relayd --help`\n"))


class AutoStart(DaemonTestCase):
    def test_create_starts_a_daemon_and_the_walk_through_works(self):
        self.assertEqual(self.d.daemon_pid(), 0)
        self.assertIn("no session daemon", self.d.tracery("list", check=False).stderr)  # list starts none
        path = self.out("mytrace")
        proc = self.d.tracery("create", "mysession", "--output", path)
        self.assertRegex(proc.stderr, r"^tracery: no session daemon answered: started one \(traceryd, "
                         r"(the system daemon|your own); its log: " + re.escape(self.d.rundir) + r"/traceryd.log\)\n$")
        pid = self.d.daemon_pid()
        self.assertGreater(pid, 0)
        with open(f"/proc/{pid}/comm") as f:
            self.assertEqual(f.read().strip(), "traceryd")
        # The README's walk-through, the daemon already there: no second one started.
        self.assertEqual(self.d.tracery("enable-event", "-u", "hello:*").stderr, "")
        self.d.tracery("add-context", "-u", "-t", "vpid", "-t", "procname")
        self.d.tracery("start")
        self.d.run([program("examples", "hello-c")])
        self.d.tracery("stop")
        view = self.d.tracery("view").stdout
        self.assertEqual(view.count("hello:"), 9, view)
        self.assertIn('procname = "hello-c"', view)
        self.assertEqual(self.d.tracery("create", "another").stderr, "")
        self.assertEqual(self.d.daemon_pid(), pid)
        self.d.tracery("destroy", "--all")

    def test_verbs_that_need_a_daemon_say_which_verb_starts_one(self):
        for args in (["start", "s"], ["stop", "s"], ["status", "s"], ["list"], ["list", "-u"], ["destroy", "s"],
                     ["destroy", "--all"], ["enable-event", "-u", "x", "-s", "s"], ["list-triggers"]):
            proc = self.d.tracery(*args, check=False)
            self.assertEqual((proc.returncode, proc.stderr),
                             (1, "tracery: no session daemon: `tracery create` starts one, or start one with "
                                 "`traceryd --daemonize`\n"), args)
        self.assertEqual(self.d.daemon_pid(), 0)

    def test_no_autostart_when_told(self):
        env = dict(self.d.env, TRACERY_NO_AUTOSTART="1")
        proc = self.d.tracery("create", "s", check=False, env=env)
        self.assertEqual((proc.returncode, proc.stderr),
                         (1, "tracery: no session daemon: start one with `traceryd --daemonize` (TRACERY_NO_AUTOSTART "
                             "keeps `tracery create` from starting one)\n"))
        self.assertEqual(self.d.daemon_pid(), 0)

    def test_a_daemon_that_cannot_start_says_why(self):
        # The run directory is a file: traceryd fails, and the command says so after traceryd's own line.
        with open(self.d.rundir, "w"):
            pass
        proc = self.d.tracery("create", "s", check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertRegex(proc.stderr, r"^traceryd: .*\ntracery: no session daemon answered and `traceryd "
                         r"--daemonize` failed \(exit status 1\): start one yourself, or see its error above\n$")


if __name__ == "__main__":
    unittest.main()
