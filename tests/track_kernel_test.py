"""`tracery track -k` and `untrack -k` by user, group and namespace ids (--uid, --vuid, --vpid, --all) against a
real daemon and kernel: workers making getppid() calls on command, some as root, one as user nobody from its
start (setpriv), one that becomes nobody while the session traces (setresuid), one in new user and pid namespaces
(unshare: uid 1000 and pid 1 inside). Each worker's recorded calls are counted per thread and compared with the
calls it made while it matched: a second user's calls are not recorded under --uid 0, only they under --uid of
that user, the worker that becomes that user from its next calls on, and tracking changed while tracing takes
effect. The window in which a thread that starts matching is not yet listed is measured by
kernel_process_filter_test (milliseconds); here a worker's calls wait until its change shows in the session's
instance (set_event_pid, set_event_notrace_pid), so a loaded machine cannot make them early. tracefs's global
settings are the same after each test as before. Needs root and a mounted tracefs (skipped otherwise)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

from daemon_kernel_test import KernelMixin
from daemontest import DaemonTestCase

NOBODY = 65534
UNSHARE = ("unshare", "--user", "--map-user=1000", "--map-group=1000", "--pid", "--fork")  # uid 1000 and pid 1 inside
WORKER = ("import os, sys\n"
          "print(os.readlink('/proc/self'), flush=True)\n"  # its pid as the daemon sees it
          "for line in sys.stdin:\n"
          "    if line.startswith('become'):\n"
          "        os.setresgid(65534, 65534, 65534)\n"
          "        os.setresuid(65534, 65534, 65534)\n"
          "    else:\n"
          "        for _ in range(int(line)):\n"
          "            os.getppid()\n"
          "    print('done', flush=True)\n")

# A process with a second thread and a child process, both made before it is tracked; on a line from stdin, its
# main thread calls getppid() 5 times, its second thread 7 times, its child 9 times.
THREADED = ("import os, subprocess, sys, threading\n"
            "go, done = threading.Event(), threading.Event()\n"
            "def second():\n"
            "    go.wait()\n"
            "    for _ in range(7):\n"
            "        os.getppid()\n"
            "    done.set()\n"
            "thread = threading.Thread(target=second)\n"
            "thread.start()\n"
            "child = subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdin=subprocess.PIPE,\n"
            "                         stdout=subprocess.PIPE, text=True)\n"
            "print(os.getpid(), thread.native_id, child.stdout.readline().strip(), flush=True)\n"
            "sys.stdin.readline()\n"
            "for _ in range(5):\n"
            "    os.getppid()\n"
            "go.set()\n"
            "done.wait()\n"
            "child.stdin.write('9\\n')\n"
            "child.stdin.flush()\n"
            "child.stdout.readline()\n"
            "thread.join()\n"
            "child.stdin.close()\n"
            "child.wait()\n"
            "print('done', flush=True)\n")


class TrackKernelTest(KernelMixin, DaemonTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()

    def session(self, name):
        self.d.start_daemon()
        path = self.out(name)
        t = self.d.tracery
        t("create", name, "--output", path)
        t("enable-event", "-k", "--syscall", "getppid", "-s", name)
        t("add-context", "-k", "-t", "tid", "-s", name)
        return t, path

    def worker(self, *prefix):
        """A worker (started through `prefix`, a command that runs the next): (process, its pid here)."""
        p = subprocess.Popen([*prefix, sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        self.addCleanup(p.wait, timeout=30)
        self.addCleanup(p.stdin.close)
        self.addCleanup(p.stdout.close)
        return p, int(p.stdout.readline())

    def ask(self, p, what):
        p.stdin.write(f"{what}\n")
        p.stdin.flush()
        self.assertEqual(p.stdout.readline(), "done\n")

    def wait_listed(self, tid, list_file):
        """Waits (10 s at most) until the daemon's instance lists tid in list_file."""
        deadline = time.monotonic() + 10
        while True:
            for f in glob.glob(os.path.join(self.root, "instances", "tracery-*", list_file)):
                with open(f) as lst:
                    if str(tid) in lst.read().split():
                        return
            if time.monotonic() > deadline:
                self.fail(f"thread {tid} not in {list_file} after 10 s")
            time.sleep(0.005)

    def recorded(self, path, pids):
        rows = json.loads(self.d.tracery(
            "query", "--json", path, "SELECT tid, count(*) AS n FROM events WHERE name = 'syscall_entry_getppid' "
            f"AND tid IN ({', '.join(map(str, pids))}) GROUP BY tid ORDER BY tid").stdout)
        return {r["tid"]: r["n"] for r in rows}

    def test_by_uid_a_second_user_and_one_that_becomes_it(self):
        if shutil.which("setpriv") is None:
            self.skipTest("setpriv (util-linux) is needed to run a worker as nobody; skipped")
        t, path = self.session("uid")
        root, root_pid = self.worker()
        nobody, nobody_pid = self.worker("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")
        becomes, becomes_pid = self.worker()
        leaves, leaves_pid = self.worker()
        out = t("track", "-k", "--uid", "0", "-s", "uid").stdout
        self.assertIn("    User IDs:             0\n", out)
        t("start", "uid")
        self.ask(root, 10)
        self.ask(nobody, 11)  # not user 0
        self.ask(leaves, 5)
        self.ask(leaves, "become")  # user 0 no longer: it leaves the list
        self.wait_listed(leaves_pid, "set_event_notrace_pid")
        self.ask(leaves, 6)
        # Tracking changed while tracing: only nobody now.
        t("untrack", "-k", "--uid", "0", "-s", "uid")
        t("track", "-k", "--uid", str(NOBODY), "-s", "uid")
        self.ask(root, 12)  # not tracked any more
        self.ask(nobody, 13)
        self.ask(becomes, 14)  # root still
        self.ask(becomes, "become")
        self.wait_listed(becomes_pid, "set_event_pid")
        self.ask(becomes, 15)
        status = t("status", "uid").stdout
        self.assertIn("tracked process attributes (kernel):\n", status)
        self.assertIn(f"    User IDs:             {NOBODY}\n", status)
        self.assertIn("    Process IDs:          all\n", status)
        m = re.search(r"tracked threads: (\d+) listed; since the start (\d+) joined \(the longest ([\d.]+) ms after "
                      r"their change\), \d+ left; /proc read (\d+) times, 0 watcher records lost", status)
        self.assertIsNotNone(m, status)
        listed, joined, window, scans = int(m[1]), int(m[2]), float(m[3]), int(m[4])
        self.assertGreaterEqual(listed, 3, "nobody's worker and the two that became nobody")
        self.assertGreaterEqual(joined, 1, "the one that became nobody")
        self.assertLess(window, 1000)
        self.assertEqual(scans, 3, "at the start and at each change of tracking while tracing")
        # Every process again: tracefs's empty list, the tracker gone.
        t("track", "-k", "--all", "--uid", "-s", "uid")
        self.ask(root, 16)
        self.ask(nobody, 17)
        t("stop", "uid")
        self.assertEqual(self.recorded(path, [root_pid, nobody_pid, becomes_pid, leaves_pid]),
                         {root_pid: 10 + 16, nobody_pid: 13 + 17, becomes_pid: 15, leaves_pid: 5})

    def test_by_pid_the_threads_and_children_it_had_already(self):
        """tracefs filters by thread: a process tracked by pid is every thread it has (as LTTng's pid tracker is a
        process's), and with its descendants those it has already, not only those it forks later."""
        self.d.start_daemon()
        for follow, name in ((True, "family"), (False, "alone")):
            path = self.out(name)
            t = self.d.tracery
            t("create", name, "--output", path)
            t("enable-event", "-k", "--syscall", "getppid", "-s", name)
            t("add-context", "-k", "-t", "tid", "-s", name)
            p = subprocess.Popen([sys.executable, "-c", THREADED, WORKER], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            self.addCleanup(p.wait, timeout=30)
            main, second, child = map(int, p.stdout.readline().split())
            t("track", "-k", "--pid", str(main), *(() if follow else ("--no-follow-children",)), "-s", name)
            t("start", name)
            p.stdin.write("go\n")
            p.stdin.flush()
            self.assertEqual(p.stdout.readline(), "done\n")
            p.stdin.close()
            p.stdout.close()
            t("stop", name)
            self.assertEqual(self.recorded(path, [main, second, child]),
                             {main: 5, second: 7, **({child: 9} if follow else {})}, name)

    def test_by_vuid_and_vpid_in_new_namespaces(self):
        if shutil.which("unshare") is None:
            self.skipTest("unshare (util-linux) is needed for new namespaces; skipped")
        t, path = self.session("ns")
        root, root_pid = self.worker()
        inside, inside_pid = self.worker(*UNSHARE)
        with open(f"/proc/{inside_pid}/status") as f:
            nstgid = [line.split()[1:] for line in f if line.startswith("NStgid:")][0]
        self.assertEqual(nstgid[-1], "1", "the worker is its namespace's init")
        t("track", "-k", "--vuid", "1000", "-s", "ns")
        t("start", "ns")
        self.ask(root, 20)
        self.ask(inside, 21)
        # While tracing: every vuid again, and vpid 1 (init here, and the worker in its namespace).
        t("track", "-k", "--all", "--vuid", "-s", "ns")
        t("track", "-k", "--vpid", "1", "-s", "ns")
        self.ask(root, 22)
        self.ask(inside, 23)
        # A namespace's init forked while tracing: listed from its fork (event-fork is off under --vpid).
        later, later_pid = self.worker(*UNSHARE)
        self.wait_listed(later_pid, "set_event_pid")
        self.ask(later, 26)
        # Nothing at all: untrack every vpid.
        out = t("untrack", "-k", "--all", "--vpid", "-s", "ns").stdout
        self.assertIn("    Virtual process IDs:  none\n", out)
        self.ask(root, 24)
        self.ask(inside, 25)
        self.ask(later, 27)
        t("stop", "ns")
        self.assertEqual(self.recorded(path, [root_pid, inside_pid, later_pid]),
                         {inside_pid: 21 + 23, later_pid: 26})

    def test_bad_requests(self):
        self.d.start_daemon()
        self.d.tracery("create", "b", "--output", self.out("b"))
        for args, message in ((["track", "-k", "--uid", "4294967295"], "bad uid 4294967295"),
                              (["untrack", "-k", "--gid", "5"], "gid 5 is not tracked"),
                              (["track", "-k", "--vpid", "0"], "bad --vpid '0'")):
            r = self.d.tracery(*args, "-s", "b", check=False)
            self.assertEqual(r.returncode, 1, (args, r.stderr))
            self.assertIn(message, r.stderr)


if __name__ == "__main__":
    unittest.main()
