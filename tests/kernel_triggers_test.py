"""Kernel event triggers against a real traceryd (root): a trigger on sched_process_exec with a filter fires for
the programs it names only, `tracery watch` prints the captured fields, its snapshot-session action writes a
kernel snapshot holding the exec; the trigger has a tracefs instance of its own, outlives the session it acts on,
and its instance goes with it; once-after:3 fires once, on the third match; a filter the kernel cannot evaluate
is refused. tracefs's global settings are compared before and after each test."""
import json
import os
import select
import shutil
import subprocess
import time
import unittest

from daemontest import DaemonTestCase
from kerneltest import KernelMixin, our_instances


class KernelTriggers(KernelMixin, DaemonTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()
        self.daemon = self.d.start_daemon()
        self.pending = {}

    def marker(self, name):
        """A copy of /bin/true named NAME in the test's directory: its exec is what the triggers look for."""
        path = self.out(name)
        shutil.copy("/bin/true", path)
        return path

    def exec_marker(self, path):
        self.assertEqual(subprocess.run([path]).returncode, 0)

    def read_notifications(self, watcher, count, timeout=20):
        """The watcher's next `count` notifications, read from its descriptor (fails rather than hangs)."""
        pending = self.pending.setdefault(watcher.pid, [b""])
        got = []
        deadline = time.time() + timeout
        while len(got) < count:
            while b"\n" not in pending[0]:
                ready, _, _ = select.select([watcher.stdout], [], [], max(0, deadline - time.time()))
                chunk = os.read(watcher.stdout.fileno(), 65536) if ready else b""
                if not chunk:
                    raise AssertionError(f"{len(got)} of {count} notifications\n{self.d.log()}")
                pending[0] += chunk
            line, pending[0] = pending[0].split(b"\n", 1)
            got.append(json.loads(line))
        return got

    def test_exec_trigger_notifies_and_snapshots(self):
        t = self.d.tracery
        path = self.out("flight")
        t("create", "flight", "--snapshot", "--output", path)
        t("enable-event", "-k", "sched_process_exec", "-s", "flight")
        t("start", "flight")
        marker = self.marker("ktrig-marker")
        t("add-trigger", "--condition=event-rule-matches", "--type=kernel", "--name=sched_process_exec",
          "--filter", 'filename == "*/ktrig-marker"', "--capture=filename", "--capture=tid",
          "--action=notify", "--action=snapshot-session", "flight", "--id=exec")
        self.assertEqual(our_instances(self.root, self.daemon),
                         [f"tracery-{self.daemon}-trigger-1", f"tracery-{self.daemon}-u0-flight"],
                         "the trigger's own instance, besides the session's")
        listed = t("list-triggers").stdout
        self.assertIn("exec", listed)
        watcher = self.watch("exec")
        self.exec_marker("/bin/true")  # not the filter's: no notification
        p = subprocess.Popen([marker])
        self.assertEqual(p.wait(timeout=30), 0)
        n = self.read_notifications(watcher, 1)[0]
        self.assertEqual(n["trigger"], "exec")
        self.assertEqual(n["event"], "sched:sched_process_exec")
        self.assertEqual(n["captures"], {"filename": marker, "tid": p.pid})
        self.assertEqual(n["pid"], p.pid)
        self.assertEqual(n["dropped"], 0)
        self.assertLess(abs(n["time_ns"] / 1e9 - time.time()), 60)

        def snapshot():
            names = [f for f in os.listdir(path) if f.startswith("snapshot-")] if os.path.isdir(path) else []
            return names and os.path.join(path, names[0])
        snap = self.wait_for("the trigger's snapshot", snapshot)
        self.wait_for("the snapshot's kernel trace", lambda: os.path.isfile(os.path.join(snap, "kernel", "metadata")))
        self.wait_for("the action counted", lambda: "executed: 1" in t("list-triggers").stdout)
        execs = [m for m in self.dump(snap) if m.get("e") == "sched_process_exec"]
        self.assertIn(marker, [m["f"]["filename"] for m in execs], "the snapshot holds what fired it")

        # The trigger outlives its session; its instance goes with it.
        t("destroy", "flight")
        self.exec_marker(marker)
        self.assertEqual(self.read_notifications(watcher, 1)[0]["captures"]["filename"], marker)
        self.wait_for("the failed action counted", lambda: "failed: 1" in t("list-triggers").stdout)
        t("remove-trigger", "exec")
        self.assertEqual(our_instances(self.root, self.daemon), [])

    def test_once_after_fires_on_the_third_match(self):
        t = self.d.tracery
        markers = [self.marker(f"ktrig-once-{i}") for i in range(1, 5)]
        t("add-trigger", "--condition=event-rule-matches", "--type=kernel", "--name=sched:sched_process_exec",
          "--filter", 'filename == "*/ktrig-once-*"', "--capture=filename", "--action=notify",
          "--rate-policy=once-after:3", "--id=third")
        watcher = self.watch("third")
        for m in markers:
            self.exec_marker(m)
        self.wait_for("four matches", lambda: "fired: 4" in t("list-triggers").stdout)
        got = self.read_notifications(watcher, 1)
        self.assertEqual(got[0]["captures"]["filename"], markers[2])
        self.assertEqual(self.notifications(watcher), [], "once: nothing after the third")

    def test_refusals(self):
        t = self.d.tracery
        base = ["add-trigger", "--condition=event-rule-matches", "--type=kernel"]
        r = t(*base, "--name=sched_process_exec", "--filter", "tid * 2 > 3", "--action=notify", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot be evaluated by the kernel", r.stderr)
        r = t(*base, "--name=no_such_tracepoint_anywhere", "--action=notify", check=False)
        self.assertIn("no kernel tracepoint matches 'no_such_tracepoint_anywhere'", r.stderr)
        r = t(*base, "--name=sched_process_exec", "--capture=prev_comm", "--action=notify", check=False)
        self.assertIn("cannot capture 'prev_comm'", r.stderr)
        self.assertEqual(t("list-triggers").stdout.count("- name:"), 0, "nothing added")
        self.assertEqual(our_instances(self.root, self.daemon), [], "nothing left in tracefs")


if __name__ == "__main__":
    unittest.main()
