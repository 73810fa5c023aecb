"""A machine that boots without tracefs mounted (a fresh Debian 12), seen in a private mount namespace where
tracefs is unmounted: `tracery list -k` makes traceryd mount it, which is what scripts/demo.sh asks before deciding
to show the combined kernel + user trace; where it cannot be mounted (no /sys/kernel/tracing), the one line the
daemon gives is the reason the demo prints. The machine's own mounts are not touched. Needs root, unshare(1) and
tracefs (skipped with a message otherwise)."""
import os
import shutil
import subprocess
import tempfile
import unittest

from tracetest import BUILD_DIR

TRACERYD = os.path.join(BUILD_DIR, "src", "daemon", "traceryd")
TRACERY = os.path.join(BUILD_DIR, "src", "cli", "tracery")

# In the namespace: tracefs unmounted (and, for the refusal, /sys/kernel hidden), then a private daemon asked for
# the kernel's tracepoints; prints the mounts of tracefs before and after, and the command's status and stderr.
SCRIPT = r"""
set -u
umount /sys/kernel/tracing 2>/dev/null
umount /sys/kernel/debug/tracing 2>/dev/null
[ "$HIDE" = 1 ] && mount -t tmpfs none /sys/kernel
echo "before $(grep -c ' tracefs ' /proc/self/mounts)"
"$TRACERYD" --daemonize
"$TRACERY" list -k >/dev/null 2>"$RUNDIR/err"
echo "status $?"
echo "after $(grep -c ' tracefs ' /proc/self/mounts)"
kill "$(cat "$RUNDIR/traceryd.pid")"
cat "$RUNDIR/err"
"""


def tracefs_mounts():
    with open("/proc/self/mounts") as f:
        return f.read().count(" tracefs ")


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare(1)")
class FreshTracefsTest(unittest.TestCase):
    def run_unmounted(self, hide_sys_kernel):
        if not os.path.isdir("/sys/kernel/tracing"):
            self.skipTest("this kernel has no tracefs")
        rundir = tempfile.mkdtemp(prefix="tracery-fresh-tracefs-")
        self.addCleanup(shutil.rmtree, rundir, True)
        env = dict(os.environ, TRACERY_RUNDIR=rundir, RUNDIR=rundir, TRACERYD=TRACERYD, TRACERY=TRACERY,
                   HIDE="1" if hide_sys_kernel else "0")
        before = tracefs_mounts()
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", SCRIPT], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(tracefs_mounts(), before, "the host's mounts changed")
        return r.stdout.splitlines()

    def test_the_daemon_mounts_tracefs_when_asked_for_the_kernel(self):
        out = self.run_unmounted(False)
        self.assertEqual(out[:3], ["before 0", "status 0", "after 1"], out)

    def test_the_reason_when_tracefs_cannot_be_mounted(self):
        out = self.run_unmounted(True)
        self.assertEqual(out[:3], ["before 0", "status 1", "after 0"], out)
        self.assertEqual(out[3:], ["tracery: kernel tracing is not possible here: tracefs: not mounted, and mount -t "
                                   "tracefs nodev /sys/kernel/tracing failed: ENOENT (No such file or directory)"])


if __name__ == "__main__":
    unittest.main()
