"""What the kernel tests share: the check that the machine can trace the kernel (root, tracefs), with tracefs's
global settings compared before and after each test; a CPU kept busy; the kernel trace's events as
kernel_session_dump.py writes them; the tracefs instances of a daemon."""
import json
import os
import subprocess
import sys

from tracefs_globals import global_settings, tracefs_root

HERE = os.path.dirname(os.path.abspath(__file__))
DUMP = os.path.join(HERE, "..", "src", "kernel", "kernel_session_dump.py")
# kernel-workload's getpid() calls and ping-pong rounds.
GETPIDS = 500
ROUNDS = 200


def read_text(path):
    with open(path) as f:
        return f.read()


def our_instances(root, daemon_pid):
    return sorted(n for n in os.listdir(os.path.join(root, "instances")) if n.startswith(f"tracery-{daemon_pid}-"))


class KernelMixin:
    """Skips without root or tracefs; compares tracefs's global settings before and after the test."""

    def check_kernel_prerequisites(self):
        if os.geteuid() != 0:
            self.skipTest("kernel tracing tests need root (tracefs instances); skipped")
        self.root = tracefs_root()
        if self.root is None:
            self.skipTest("no tracefs mounted at /sys/kernel/tracing or /sys/kernel/debug/tracing; skipped")
        before = global_settings(self.root)
        self.addCleanup(lambda: self.assertEqual(global_settings(self.root), before,
                                                 "a global tracefs setting changed"))

    def busy_cpu(self):
        """The last CPU, kept busy by a CPU-bound process (killed at cleanup at the latest): (cpu, process).
        A program pinned there runs on a CPU that is never idle, so that each switch to it is recorded: a kernel
        may not record the switches away from the idle task (a VM's second CPU recorded none at all, even in a
        bare tracefs instance), and lttng-analyses knows who runs where only from sched_switch."""
        cpu = max(os.sched_getaffinity(0))
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        self.addCleanup(hog.wait)
        self.addCleanup(hog.kill)
        os.sched_setaffinity(hog.pid, {cpu})
        return cpu, hog

    def dump(self, path):
        """The events of the kernel trace at path, as kernel_session_dump.py writes them."""
        r = subprocess.run([sys.executable, DUMP, path], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [json.loads(line) for line in r.stdout.splitlines()]
