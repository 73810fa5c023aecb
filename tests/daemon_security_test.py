"""Permissions of the session daemon: a second, unprivileged user (made here
with useradd and removed afterwards; skipped unless root) cannot list,
control or read the first user's sessions, programs, buffers or traces."""
import os
import shutil
import subprocess
import unittest
import uuid

from daemontest import DaemonTestCase, read_line
from tracetest import Trace, program


def run(*argv):
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


class OtherUser(DaemonTestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to create a user")
        if not shutil.which("useradd") or not shutil.which("runuser"):
            self.skipTest("needs useradd and runuser")
        super().setUp()
        tag = uuid.uuid4().hex[:8]
        self.user, self.group = f"trcu{tag}", f"trcg{tag}"
        run("groupadd", self.group)
        self.addCleanup(subprocess.run, ["groupdel", self.group], capture_output=True)
        run("useradd", "-M", "-N", "-s", "/usr/sbin/nologin", self.user)
        self.addCleanup(subprocess.run, ["userdel", self.user], capture_output=True)
        os.chmod(self.d.tmp, 0o755)  # the run directory inside must be reachable
        self.user_home = os.path.join(self.d.tmp, "userhome")
        os.makedirs(self.user_home)
        shutil.chown(self.user_home, self.user)
        self.user_env = dict(self.d.env, HOME=self.user_home)

    def as_user(self, *args):
        return self.d.tracery(*args, check=False, env=self.user_env, user=self.user)

    def test_other_user_cannot_see_or_control_or_read(self):
        daemon_pid = self.d.start_daemon("--group", self.group)
        path = self.session("secret", events=("emit:*",))
        self.d.tracery("start", "secret")
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "count", "10", "wait"])
        pid = int(read_line(emitter, "ready")[0])
        self.d.wait_registered(pid)

        # Not in the daemon's group: refused outright.
        proc = self.as_user("list")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("permission denied", proc.stderr)

        # In the group: may talk to the daemon, but sees none of root's things.
        run("usermod", "-a", "-G", self.group, self.user)
        proc = self.as_user("list")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("secret", proc.stdout)
        self.assertNotIn(f"PID: {pid}", self.as_user("list", "-u").stdout)
        for args in (["status", "secret"], ["stop", "secret"], ["destroy", "secret"],
                     ["enable-event", "-u", "x:y", "-s", "secret"], ["snapshot", "record", "-s", "secret"],
                     ["view", "secret"]):
            proc = self.as_user(*args)
            self.assertNotEqual(proc.returncode, 0, args)
            self.assertIn("no session named 'secret'", proc.stderr, args)
        proc = self.as_user("destroy", "--all")
        self.assertEqual(proc.returncode, 0, proc.stderr)

        # Files and buffers: owner-only.
        for target in (os.path.join(path, "metadata"), f"/proc/{daemon_pid}/fd/"):
            proc = subprocess.run(["runuser", "-u", self.user, "--", "ls", "-l", target], capture_output=True)
            self.assertNotEqual(proc.returncode, 0, target)

        # The user's own session works, in a directory of its own.
        mine = os.path.join(self.user_home, "mine")
        proc = self.as_user("create", "mine", "--output", mine)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.stat(mine).st_uid, int(subprocess.check_output(["id", "-u", self.user])))
        self.assertIn("mine", self.d.tracery("list").stdout)  # root sees every session

        # Root's session went on untouched.
        emitter.stdin.write("go\n")
        emitter.stdin.flush()
        self.assertEqual(emitter.wait(timeout=30), 0)
        self.assertIn("[started]", self.d.tracery("status", "secret").stdout)
        self.d.tracery("stop", "secret")
        self.assertEqual(len(Trace(path).events), 20)

    def test_per_user_daemon(self):
        xdg = os.path.join(self.d.tmp, "userxdg")
        os.makedirs(xdg, mode=0o700)
        shutil.chown(xdg, self.user)
        env = {k: v for k, v in self.user_env.items() if k != "TRACERY_RUNDIR"}
        env["XDG_RUNTIME_DIR"] = xdg
        pidfile = os.path.join(xdg, "tracery", "traceryd.pid")

        def kill_user_daemon():
            try:
                with open(pidfile) as f:
                    os.kill(int(f.read()), 15)
            except (OSError, ValueError):
                pass
        self.addCleanup(kill_user_daemon)

        def as_user(*argv):
            return subprocess.run(["runuser", "-p", "-u", self.user, "--", *argv], env=env, capture_output=True,
                                  text=True, timeout=60)
        proc = as_user(self.d.traceryd, "--daemonize")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(os.stat(os.path.join(xdg, "tracery")).st_mode & 0o777, 0o700)
        out = os.path.join(self.user_home, "t")
        for args in (["create", "mine", "--output", out], ["enable-event", "-u", "hello:*"], ["start"]):
            proc = as_user(self.d.cli, *args)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = as_user(program("examples", "hello-c"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = as_user(self.d.cli, "stop")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(Trace(out).events), 9)
        self.assertEqual(os.stat(os.path.join(out, "metadata")).st_mode & 0o777, 0o600)
        # root's own daemon (another run directory) knows nothing of it.
        self.d.start_daemon()
        self.assertNotIn("mine", self.d.tracery("list").stdout)


if __name__ == "__main__":
    unittest.main()
