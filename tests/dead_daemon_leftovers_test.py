"""What a session daemon killed with SIGKILL leaves in tracefs, removed by the next one, which logs it: its tracefs
instance, its uprobe groups. Any root daemon removes such leftovers when it starts, so this test runs alone
(RUN_SERIAL): another test's daemon would remove them first. Needs root and a mounted tracefs."""
import os
import signal
import subprocess
import time
import unittest

from daemontest import DaemonTestCase
from kerneltest import KernelMixin, our_instances, read_text


class DeadDaemonLeftoversTest(KernelMixin, DaemonTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()

    def test_sigkill_leaves_an_instance_the_next_daemon_removes(self):
        daemon = self.d.start_daemon()
        self.d.tracery("create", "s", "--output", self.out("s"))
        self.d.tracery("enable-event", "-k", "sched_switch", "-s", "s")
        self.d.tracery("start", "s")
        name = f"tracery-{daemon}-u0-s"
        self.assertEqual(our_instances(self.root, daemon), [name])
        self.d.kill_daemon(signal.SIGKILL)
        # Until its parent reaps it, a killed daemon is a zombie, a process still there for kill(pid, 0).
        deadline = time.time() + 30
        while os.path.exists(f"/proc/{daemon}") and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(our_instances(self.root, daemon), [name])
        self.d.start_daemon()
        self.assertEqual(our_instances(self.root, daemon), [])
        self.assertIn(f"removed tracefs instance {self.root}/instances/{name}, left by a session daemon",
                      self.d.log())

    def test_stale_probes_of_a_dead_daemon_are_removed_at_start(self):
        """A group tracery_PID_* in uprobe_events whose PID is gone (a daemon killed with SIGKILL) is
        removed by the next daemon, which says so."""
        events = os.path.join(self.root, "uprobe_events")

        def append(line):  # O_APPEND without a seek: tracefs refuses lseek on this file
            fd = os.open(events, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

        child = subprocess.Popen(["true"])
        child.wait()
        group = f"tracery_{child.pid}_s1"
        append(f"p:{group}/probe /bin/true:0x1000\n")
        try:
            self.assertIn(f"p:{group}/probe ", read_text(events))
            self.d.start_daemon()
            self.assertNotIn(group, read_text(events))
            self.assertIn(f"removed uprobe group {group}, left by a session daemon", self.d.log())
        finally:
            if group in read_text(events):
                append(f"-:{group}/probe\n")


if __name__ == "__main__":
    unittest.main()
