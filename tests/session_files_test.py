"""Sessions saved and loaded (`tracery save`, `tracery load`, docs/session-files.md) through a real traceryd: a
reloaded session records what the saved one did (the traces compared event by event), a session in the auto/
folder is tracing before a program that starts right after the daemon emits its first event, hostile session
files are refused naming the file and the JSON path of the bad value; and the smaller session verbs:
`enable-event --exclude`, `set-session`, `destroy --no-wait`."""
import json
import os
import time
import unittest

from daemontest import DaemonTestCase
from tracetest import Trace, program

EMITTER = ("tests", "daemon-emitter")


class SessionFiles(DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.sessions = self.out("sessions")
        self.d.env["TRACERY_SESSIONS_DIR"] = self.sessions

    def emit(self, n):
        self.d.run([program(*EMITTER), "count", str(n)])

    def configured_session(self, name):
        """A session of every kind of setting a file holds: a channel of its own options, a rule with an
        exclusion, one with a filter, a disabled pattern, contexts."""
        path = self.out(name)
        t = self.d.tracery
        t("create", name, "--output", path)
        t("enable-channel", "-u", "chan", "-s", name, "--subbuf-size", "8k", "--num-subbuf", "8", "--buffers-pid")
        t("enable-event", "-u", "-s", name, "-c", "chan", "--exclude", "emit:other", "emit:*")
        t("enable-event", "-u", "emit:other", "-s", name, "-c", "chan", "--filter", 'tag == "fizz"')
        t("disable-event", "-u", "nothing:*", "-s", name, "-c", "chan")
        t("add-context", "-u", "-s", name, "-c", "chan", "-t", "vpid", "-t", "procname")
        return path

    @staticmethod
    def comparable(trace):
        """Events as two runs of the same program in the same session must record them: name, payload, the
        context's fields (the procname's value; the vpid's differs from run to run)."""
        return [(e["name"], e["payload"], sorted(e["context"]), e["context"].get("procname"))
                for e in trace.events]

    def test_save_destroy_load_records_the_same_events(self):
        n = 30
        self.d.start_daemon()
        first = self.configured_session("s")
        self.d.tracery("start", "s")
        saved = self.d.tracery("save", "s").stdout
        file = os.path.join(self.sessions, "s.json")
        self.assertIn(f"Session 's' saved to {file}", saved)
        self.emit(n)
        self.d.tracery("stop", "s")
        self.d.tracery("destroy", "s")

        with open(file) as f:
            doc = json.load(f)
        self.assertEqual(doc["format"], 3)
        self.assertTrue(doc["started"])
        chan = doc["user"]["channels"][1 if doc["user"]["channels"][0]["name"] == "channel0" else 0]
        self.assertEqual((chan["name"], chan["subbuf_size"], chan["num_subbuf"], chan["per_pid"]),
                         ("chan", 8192, 8, True))
        self.assertEqual(chan["events"], [{"pattern": "emit:*", "exclude": ["emit:other"]},
                                          {"pattern": "emit:other", "filter": 'tag == "fizz"'}])
        self.assertEqual(chan["disabled"], ["nothing:*"])
        self.assertEqual(chan["context"], ["vpid", "procname"])

        # Saved while tracing: loaded and started. Its directory holds the first trace: a new one beside it.
        out = self.d.tracery("load", "s").stdout
        self.assertIn("loaded from " + file + " and started", out)
        second = out.strip().rsplit(" ", 1)[1]
        self.assertTrue(second.startswith(first + "-"), out)
        status = self.d.tracery("status").stdout  # load made it the current session
        self.assertIn("emit:* (excluding: emit:other)", status)
        self.emit(n)
        self.d.tracery("stop", "s")

        a, b = self.comparable(Trace(first)), self.comparable(Trace(second))
        expected_names = ["emit:tick"] * n + ["emit:other"] * len(range(0, n, 3))
        self.assertEqual(sorted(e[0] for e in a), sorted(expected_names))
        self.assertTrue(all(e[1]["tag"] == "fizz" for e in a if e[0] == "emit:other"))
        self.assertEqual(a[0][2], ["procname", "vpid"])
        self.assertEqual(a, b)

    def test_load_overrides_the_name_and_the_output(self):
        self.d.start_daemon()
        self.configured_session("s")
        self.d.tracery("save", "s")
        self.assertIn("exists: save over it with -f", self.d.tracery("save", "s", check=False).stderr)
        self.d.tracery("save", "s", "-f")
        other = self.out("elsewhere")
        out = self.d.tracery("load", "s", "--override-name", "t", "--override-url", "file://" + other).stdout
        self.assertIn(f"Session 't' loaded from {self.sessions}/s.json; traces go to {other}", out)
        self.assertIn("a session named 's' already exists", self.d.tracery("load", "s", check=False).stderr)
        self.d.tracery("start", "t")
        self.emit(6)
        self.d.tracery("stop", "t")
        self.assertEqual([e["payload"]["i"] for e in Trace(other).events], [0, 0, 1, 2, 3, 3, 4, 5])
        # -f replaces the session of that name.
        self.assertIn("Session 's' loaded", self.d.tracery("load", "s", "-f").stdout)

    def test_the_kernel_domain_is_saved_and_loaded(self):
        if os.geteuid() != 0 or not any(os.path.isdir(p + "/events") for p in ("/sys/kernel/tracing",
                                                                                 "/sys/kernel/debug/tracing")):
            self.skipTest("the kernel domain needs root and tracefs; skipped")
        self.d.start_daemon()
        t = self.d.tracery
        t("create", "k", "--output", self.out("k"))
        t("enable-channel", "-k", "kchan", "--subbuf-size", "64k", "--num-subbuf", "4", "--monitor-timer", "250ms")
        t("enable-event", "-k", "sched_switch", "--filter", "prev_prio < 200")
        t("enable-event", "-k", "--syscall", "openat,close", "--capture-buffers=128")
        t("add-context", "-k", "-t", "tid", "-t", "procname")
        t("track", "-k", "--pid", "1", "--no-follow-children")
        t("track", "-u", "--vuid", "0")
        before = t("status", "k").stdout
        for shown in ("sched_switch", "prev_prio < 200", "openat", "kchan", "Virtual user IDs:     0",
                      "    monitor timer: 250 ms\n"):
            self.assertIn(shown, before)
        t("save", "k")
        t("destroy", "k")
        t("load", "k")
        self.assertEqual(t("status", "k").stdout, before)
        # Saved again, the loaded session is the same file.
        t("save", "k", "--output-path", self.out("again"))
        with open(os.path.join(self.sessions, "k.json")) as f, open(self.out("again/k.json")) as g:
            saved, again = json.load(f), json.load(g)
        self.assertEqual(saved, again)
        kernel = saved["kernel"]
        self.assertEqual(kernel["context"], ["tid", "procname"])
        self.assertEqual(kernel["tracepoints"], [{"name": "sched_switch", "filter": "prev_prio < 200"}])
        self.assertEqual(kernel["syscalls"], [{"name": "close"}, {"name": "openat"}])
        self.assertEqual((kernel["capture_buffers"], kernel["follow_children"]), (128, False))
        self.assertEqual(kernel["monitor_timer_us"], 250_000)
        # A kernel channel without the timer (0: none) is saved as such too; the default (1 s) is not written.
        t("create", "quiet", "--output", self.out("quiet"))
        t("enable-channel", "-k", "qchan", "--monitor-timer", "0", "-s", "quiet")
        t("enable-event", "-k", "sched_switch", "-s", "quiet")
        self.assertIn("    monitor timer: none\n", t("status", "quiet").stdout)
        t("create", "usual", "--output", self.out("usual"))
        t("enable-event", "-k", "sched_switch", "-s", "usual")
        self.assertIn("    monitor timer: 1 s\n", t("status", "usual").stdout)
        t("save", "--all", "--output-path", self.out("timers"))
        for name, timer in (("quiet", 0), ("usual", None)):
            with open(self.out(f"timers/{name}.json")) as f:
                self.assertEqual(json.load(f)["kernel"].get("monitor_timer_us"), timer, name)
        t("destroy", "quiet")
        t("load", "quiet", "--input-path", self.out("timers"))
        self.assertIn("    monitor timer: none\n", t("status", "quiet").stdout)

    def test_a_session_in_auto_traces_a_program_started_right_after_the_daemon(self):
        self.d.start_daemon()
        path = self.out("boot")
        self.d.tracery("create", "boot", "--output", path)
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", "boot")
        auto = os.path.join(self.sessions, "auto")
        self.d.tracery("save", "boot", "--output-path", auto)
        self.d.tracery("destroy", "boot")
        self.d.kill_daemon()

        self.d.start_daemon()  # returns once it serves, its auto/ sessions started
        self.emit(5)  # the first event is the program's first instruction past its constructors
        self.assertIn("boot [started]", self.d.tracery("list").stdout)
        self.d.tracery("stop", "boot")
        self.assertEqual([e["payload"]["i"] for e in Trace(path).events], [0, 1, 2, 3, 4])
        self.assertIn(f"auto session boot loaded from {auto}/boot.json and started", self.d.log())

    def test_a_hostile_auto_file_is_logged_and_the_daemon_serves(self):
        auto = os.path.join(self.sessions, "auto")
        os.makedirs(auto)
        with open(os.path.join(auto, "bad.json"), "w") as f:
            f.write('{"format": 1, "name": 7}')
        writable = os.path.join(auto, "writable.json")
        with open(writable, "w") as f:
            f.write("{}")
        os.chmod(writable, 0o666)
        self.d.start_daemon()
        self.assertIn("No session", self.d.tracery("list").stdout)
        log = self.d.log()
        self.assertIn(f"auto session {auto}/bad.json not loaded: session file: field 'name' is 7, expected a string",
                      log)
        self.assertIn("writable by no one else", log)

    def test_hostile_session_files_are_refused_naming_the_value(self):
        self.d.start_daemon()
        good = {"format": 1, "name": "h", "snapshot": False, "output": self.out("h"), "started": False,
                "user": {"channels": [{"name": "c", "subbuf_size": 4096, "num_subbuf": 4, "overwrite": False,
                                       "per_pid": False, "context": [], "disabled": [],
                                       "events": [{"pattern": "emit:*"}]}], "tracking": []},
                "snapshot_outputs": []}

        def changed(path, value):
            doc = json.loads(json.dumps(good))
            *parents, last = path
            node = doc
            for p in parents:
                node = node[p]
            if value is None:
                del node[last]
            else:
                node[last] = value
            return json.dumps(doc)

        cases = [
            ("not JSON", "{\"format\": 1,", "not JSON"),
            ("empty", "", "not JSON"),
            ("an array", "[]", "the body is an array, expected an object"),
            ("later format", changed(["format"], 99), "format 99 is later than this tracery reads (3)"),
            ("format 0", changed(["format"], 0), "field 'format' is 0"),
            ("wrong type deep", changed(["user", "channels", 0, "subbuf_size"], "big"),
             "field 'user.channels[0].subbuf_size' is a string"),
            ("unknown field", changed(["user", "channels", 0, "events", 0, "level"], 3),
             "unknown field 'user.channels[0].events[0].level'"),
            ("missing field", changed(["user", "tracking"], None), "missing field 'user.tracking'"),
            ("negative size", changed(["user", "channels", 0, "num_subbuf"], -4),
             "field 'user.channels[0].num_subbuf' is -4"),
            ("bad size", changed(["user", "channels", 0, "subbuf_size"], 3000), "user.channels[0]: "),
            ("bad filter", changed(["user", "channels", 0, "events", 0, "filter"], "i >"),
             "user.channels[0].events[0]: bad filter"),
            ("bad pattern", changed(["user", "channels", 0, "events", 0, "pattern"], "nocolon"),
             "user.channels[0].events[0]: bad event pattern 'nocolon'"),
            ("bad context", changed(["user", "channels", 0, "context"], ["nope"]),
             "user.channels[0].context: unknown context 'nope'"),
            ("bad tracking", changed(["user", "tracking"], [{"attribute": "pid", "all": False, "values": [1]}]),
             "user.tracking: "),
            ("bad name", changed(["name"], "../x"), "bad session name '../x'"),
            ("relative output", changed(["output"], "rel/dir"), "output: 'rel/dir' is not an absolute path"),
            ("no output", changed(["output"], None), "neither an 'output' nor a 'relay'"),
            ("huge", " " * (600 * 1024) + "{}", "over 512 KiB, too large for a session file"),
        ]
        for i, (what, text, expected) in enumerate(cases):
            with self.subTest(what=what):
                file = self.out(f"hostile-{i}.json")
                with open(file, "w") as f:
                    f.write(text)
                proc = self.d.tracery("load", "--input-path", file, check=False)
                self.assertEqual(proc.returncode, 1, proc.stdout)
                # One line naming the file (a filter's adds the expression with a caret under the error).
                self.assertTrue(proc.stderr.startswith(f"tracery: {file}: "), proc.stderr)
                self.assertIn(expected, proc.stderr.splitlines()[0])
                # A load that fails leaves no session.
                self.assertIn("No session", self.d.tracery("list").stdout)
        self.d.tracery("load", "--input-path", self.out("hostile-0.json"), check=False)
        with open(self.out("good.json"), "w") as f:
            f.write(json.dumps(good))
        self.assertIn("Session 'h' loaded", self.d.tracery("load", "-i", self.out("good.json")).stdout)


class SessionVerbs(DaemonTestCase):
    def emit(self, n):
        self.d.run([program(*EMITTER), "count", str(n)])

    def test_exclude_keeps_the_excluded_events_out(self):
        self.d.start_daemon()
        path = self.out("x")
        self.d.tracery("create", "x", "--output", path)
        refused = self.d.tracery("enable-event", "-u", "emit:tick", "--exclude", "emit:other", check=False)
        self.assertIn("'emit:tick' has no wildcard", refused.stderr)
        refused = self.d.tracery("enable-event", "-u", "emit:*", "--exclude", "other", check=False)
        self.assertIn("bad --exclude name 'other'", refused.stderr)
        self.d.tracery("enable-event", "-u", "emit:*", "-x", "emit:oth*")
        self.d.tracery("start")
        self.d.run([program(*EMITTER), "count", "20"])
        self.d.tracery("stop")
        events = Trace(path).events
        self.assertEqual([e["payload"]["i"] for e in events], list(range(20)))
        self.assertEqual({e["name"] for e in events}, {"emit:tick"})

    def test_set_session_changes_the_current_one(self):
        self.d.start_daemon()
        self.d.tracery("create", "a", "--output", self.out("a"))
        self.d.tracery("create", "b", "--output", self.out("b"))
        self.assertIn("Session 'b'", self.d.tracery("status").stdout)
        self.assertIn("Session 'a' is now the current session", self.d.tracery("set-session", "a").stdout)
        self.assertIn("Session 'a'", self.d.tracery("status").stdout)
        refused = self.d.tracery("set-session", "nope", check=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("nope", refused.stderr)
        self.assertIn("Session 'a'", self.d.tracery("status").stdout)

    def test_destroy_no_wait_returns_and_the_trace_completes(self):
        self.d.start_daemon()
        path = self.out("w")
        self.d.tracery("create", "w", "--output", path)
        self.d.tracery("enable-event", "-u", "emit:tick")
        self.d.tracery("start")
        self.d.run([program(*EMITTER), "count", "100"])
        self.assertIn("no session named 'nope'", self.d.tracery("destroy", "nope", "--no-wait", check=False).stderr)
        self.assertIn("Session 'w' being destroyed", self.d.tracery("destroy", "--no-wait").stdout)
        deadline = time.time() + 10
        while "Session 'w'" in self.d.tracery("list").stdout:
            self.assertLess(time.time(), deadline)
            time.sleep(0.05)
        self.assertEqual([e["payload"]["i"] for e in Trace(path).events], list(range(100)))

    def test_snapshot_outputs_and_max_size(self):
        n = 20000
        self.d.start_daemon()
        t = self.d.tracery
        t("create", "snap", "--snapshot", "--output", self.out("snap"))
        t("enable-channel", "-u", "chan", "--subbuf-size", "4k", "--num-subbuf", "8")
        t("enable-event", "-u", "emit:tick", "-c", "chan")
        self.assertIn("has no snapshot output", t("snapshot", "list-output").stdout)
        snapshots = self.out("snapshots")
        out = t("snapshot", "add-output", "--name", "before", "--max-size", "1M", "file://" + snapshots).stdout
        self.assertIn(f"[1] before: {snapshots} (max size: 1 MiB)", out)
        self.assertIn("has a snapshot output already ('before')",
                      t("snapshot", "add-output", self.out("other"), check=False).stderr)
        self.assertIn("snapshots are written to a directory",
                      t("snapshot", "record", "tcp://localhost", check=False).stderr)
        t("start")
        self.emit(n)

        full = t("snapshot", "record").stdout.strip().rsplit(" ", 1)[1]
        self.assertTrue(full.startswith(snapshots + "/before-1-"), full)
        whole = [e["payload"]["i"] for e in Trace(full).events]
        # The streams: as many as the buffer has CPUs, each given an equal share of --max-size.
        refused = t("snapshot", "record", "--max-size", "4k", check=False).stderr
        self.assertIn("leaves less than a sub-buffer to each of the", refused)
        streams = int(refused.split("each of the ")[1].split()[0])
        limit = streams * 4096 * 2
        small = t("snapshot", "record", "--max-size", str(limit), "--name", "small").stdout.strip().rsplit(" ", 1)[1]
        self.assertTrue(small.startswith(snapshots + "/small-"), small)
        sizes = [os.path.getsize(os.path.join(small, f)) for f in os.listdir(small)
                 if f != "metadata" and os.path.isfile(os.path.join(small, f))]
        self.assertLessEqual(sum(sizes), limit)
        part = [e["payload"]["i"] for e in Trace(small).events]
        # The newest events: the end of the whole snapshot's, fewer of them.
        self.assertEqual(whole[-1], n - 1)
        self.assertEqual(part, whole[len(whole) - len(part):])
        self.assertLess(len(part), len(whole))
        self.assertGreater(len(part), 0)

        self.assertIn("has no snapshot output", t("snapshot", "del-output", "before").stdout)
        default = t("snapshot", "record").stdout.strip().rsplit(" ", 1)[1]
        self.assertTrue(default.startswith(self.out("snap") + "/snapshot-"), default)


if __name__ == "__main__":
    unittest.main()
