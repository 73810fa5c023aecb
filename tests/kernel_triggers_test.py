"""Kernel event triggers against a real traceryd (root): a trigger on sched_process_exec with a filter fires for
the programs it names only, `tracery watch` prints the captured fields, its snapshot-session action writes a
kernel snapshot holding the exec; the trigger has a tracefs instance of its own, outlives the session it acts on,
and its instance goes with it; once-after:3 fires once, on the third match; a kernel channel's buffer usage and what
its readers wrote counted in the session's consumed size; a filter the kernel cannot evaluate is refused. tracefs's global settings are compared before and after each test."""
import os
import re
import shutil
import subprocess
import time
import unittest

from daemontest import DaemonTestCase, go, read_line
from kerneltest import GETPIDS, KernelMixin, our_instances
from tracetest import program


class KernelTriggers(KernelMixin, DaemonTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()
        self.daemon = self.d.start_daemon()

    def marker(self, name):
        """A copy of /bin/true named NAME in the test's directory: its exec is what the triggers look for."""
        path = self.out(name)
        shutil.copy("/bin/true", path)
        return path

    def exec_marker(self, path):
        self.assertEqual(subprocess.run([path]).returncode, 0)

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
        self.wait_for("both actions counted", lambda: t("list-triggers").stdout.count("executed: 1") == 2)
        bt = subprocess.run(["babeltrace2", snap], capture_output=True, text=True, timeout=300)
        self.assertEqual((bt.returncode, bt.stderr), (0, ""))
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

    def test_kernel_buffer_usage_condition(self):
        """A snapshot session's kernel buffer (nothing reads it while tracing) sampled every 10 ms: a trigger on
        its usage fires once the buffer holds the bytes, with what was sampled."""
        t = self.d.tracery
        t("create", "fill", "--snapshot", "--output", self.out("fill"))
        out = t("enable-channel", "-k", "kc", "-s", "fill", "--subbuf-size=4k", "--num-subbuf=16",
                "--monitor-timer=10ms").stdout
        self.assertIn("(64 KiB per CPU)", out)
        t("enable-event", "-k", "sched_process_exec", "-s", "fill", "-c", "kc")
        t("add-trigger", "--condition=channel-buffer-usage-ge", "--session=fill", "--channel=kc", "--domain=kernel",
          "--threshold-size=1", "--action=notify", "--id=filled")
        watcher = self.watch("filled")
        t("start", "fill")
        marker = self.marker("ktrig-fill")
        self.exec_marker(marker)
        n = self.read_notifications(watcher, 1)[0]
        c = n["captures"]
        self.assertEqual((n["trigger"], n["event"], n["pid"]), ("filled", "", 0))
        # The kernel rounds the 64 KiB asked to its pages: the size is the instance's own.
        with open(os.path.join(self.root, "instances", f"tracery-{self.daemon}-u0-fill", "buffer_size_kb")) as f:
            size = int(f.read()) * 1024
        self.assertGreaterEqual(size, 65536)
        self.assertEqual((c["session"], c["channel"], c["domain"], c["stream_bytes"]), ("fill", "kc", "kernel", size))
        # At least the exec's event (its header and payload, the path included).
        self.assertGreaterEqual(c["buffer_usage_bytes"], len(marker) + 20)
        self.assertLessEqual(c["buffer_usage_bytes"], size)
        t("destroy", "fill")

    def test_session_consumed_size_counts_the_kernel_channel(self):
        """A session whose only channel is the kernel's: session-consumed-size-ge fires once its readers have
        written the threshold into the kernel trace; the bytes sampled are at most what its stream files hold
        once stopped."""
        t = self.d.tracery
        path = self.out("consume")
        t("create", "consume", "--output", path)
        t("enable-channel", "-k", "kc", "-s", "consume", "--monitor-timer=10ms")
        t("enable-event", "-k", "--syscall", "getpid", "-s", "consume", "-c", "kc")
        calls = 4 * GETPIDS
        p, pid = self.d.spawn_registered([program("tests", "kernel-workload"), str(calls), "0"])
        t("track", "-k", "--pid", str(pid), "-s", "consume")
        t("add-trigger", "--condition=session-consumed-size-ge", "--session=consume", "--threshold-size=4k",
          "--action=notify", "--id=kconsumed")
        watcher = self.watch("kconsumed")
        t("start", "consume")
        go(p)
        read_line(p, "done")
        p.wait(timeout=30)
        n = self.read_notifications(watcher, 1)[0]
        t("stop", "consume")
        self.assertEqual((n["trigger"], n["event"], n["pid"]), ("kconsumed", "", 0))
        c = n["captures"]
        self.assertEqual(c["session"], "consume")
        self.assertGreaterEqual(c["consumed_bytes"], 4096)
        kernel = os.path.join(path, "kernel")
        written = sum(os.path.getsize(os.path.join(kernel, f)) for f in os.listdir(kernel)
                      if re.fullmatch(r"kc_(syscalls_)?\d+", f))
        self.assertLessEqual(c["consumed_bytes"], written)
        t("destroy", "consume")

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
