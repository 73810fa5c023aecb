"""Permissions of the session daemon: a second, unprivileged user (made here
with useradd and removed afterwards; skipped unless root) cannot list,
control or read the first user's sessions, programs, buffers or traces."""
import os
import shutil
import subprocess
import unittest

from daemontest import UsersTestCase, end_process, go, read_line, run_admin
from tracetest import Trace, program



class OtherUser(UsersTestCase):
    def setUp(self):
        super().setUp()
        self.user, self.user_home, _ = self.add_user("u")
        self.user_env = dict(self.d.env, HOME=self.user_home)

    def as_user(self, *args):
        return self.d.tracery(*args, check=False, env=self.user_env, user=self.user)

    def test_owners_write_with_their_own_groups_only(self):
        """A member's trace goes only where its own uid and gid may write: not into a directory that only
        root's group may write (root:root, 0770), though the system daemon was started by root, whose
        supplementary groups include root's (as under sudo)."""
        self.d.start_daemon("--group", self.group, extra_groups=[0])
        member, home, _ = self.add_user("g", in_group=True)
        shared = self.out("root-group")
        os.makedirs(shared)
        os.chown(shared, 0, 0)
        os.chmod(shared, 0o770)
        r = self.d.tracery("create", "g", "--output", os.path.join(shared, "t"), check=False,
                           env=dict(self.d.env, HOME=home), user=member)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("cannot create output directory", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(shared, "t")))

    def test_other_user_cannot_see_or_control_or_read(self):
        daemon_pid = self.d.start_daemon("--group", self.group)
        path = self.session("secret", events=("emit:*",))
        self.d.tracery("start", "secret")
        emitter, pid = self.d.spawn_registered([program("tests", "daemon-emitter"), "count", "10", "wait"])

        # Not in the daemon's group: refused outright.
        proc = self.as_user("list")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("permission denied", proc.stderr)

        # In the group: may talk to the daemon, but sees none of root's things.
        run_admin("usermod", "-a", "-G", self.group, self.user)
        proc = self.as_user("list")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("secret", proc.stdout)
        self.assertNotIn(f"PID: {pid}", self.as_user("list", "-u").stdout)
        for args in (["status", "secret"], ["list", "secret"], ["start", "secret"], ["stop", "secret"],
                     ["destroy", "secret"], ["enable-event", "-u", "x:y", "-s", "secret"],
                     ["disable-event", "-u", "x:y", "-s", "secret"], ["enable-channel", "-u", "c", "-s", "secret"],
                     ["add-context", "-u", "-t", "vpid", "-s", "secret"], ["snapshot", "record", "-s", "secret"],
                     ["view", "secret"]):
            proc = self.as_user(*args)
            self.assertNotEqual(proc.returncode, 0, args)
            self.assertIn("no session named 'secret'", proc.stderr, args)
            self.assertNotIn(path, proc.stdout + proc.stderr, args)
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
        go(emitter)
        self.assertEqual(emitter.wait(timeout=30), 0)
        self.assertIn("[started]", self.d.tracery("status", "secret").stdout)
        self.d.tracery("stop", "secret")
        self.assertEqual(len(Trace(path).events), 20)

    def test_users_name_their_sessions_independently(self):
        self.d.start_daemon("--group", self.group)
        root_path = self.session("shared", events=("emit:*",))
        self.d.tracery("start", "shared")
        run_admin("usermod", "-a", "-G", self.group, self.user)
        uid = int(subprocess.check_output(["id", "-u", self.user]))

        # The name root uses is free for the user, and says nothing of root's.
        mine = os.path.join(self.user_home, "shared")
        proc = self.as_user("create", "shared", "--output", mine)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for args in (["enable-event", "-u", "emit:*"], ["start"]):
            proc = self.as_user(*args)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = self.as_user("list")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"shared [started] -> {mine}", proc.stdout)
        self.assertNotIn(root_path, proc.stdout)
        self.assertNotIn("(uid", proc.stdout)
        status = self.as_user("status", "shared")
        self.assertIn(f"-> {mine}", status.stdout)

        # Each acts on its own session of that name.
        proc = subprocess.run(["runuser", "-p", "-u", self.user, "--", program("tests", "daemon-emitter"), "count",
                               "10"], env=self.user_env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = self.as_user("stop", "shared")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(Trace(mine).events), 20)
        self.assertIn("[started]", self.d.tracery("status", "shared").stdout, "root's session still runs")
        view = self.as_user("view", "shared")
        self.assertEqual(view.returncode, 0, view.stderr)
        self.assertEqual(view.stdout.count("emit:"), 20)

        # Root sees both, the user's marked as such, and its own name is its own session.
        listing = self.d.tracery("list").stdout
        self.assertIn(f"shared [started] -> {root_path}", listing)
        self.assertIn(f"shared (uid {uid}) [stopped] -> {mine}", listing)
        self.assertIn(f"-> {root_path}", self.d.tracery("status", "shared").stdout)

        # Destroying is per owner too.
        proc = self.as_user("destroy", "shared")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"-> {root_path}", self.d.tracery("status", "shared").stdout)
        self.assertNotIn(mine, self.d.tracery("list").stdout)

        # With no session of its own of that name, root reaches a user's if
        # only one user has one; of two users', neither.
        self.d.tracery("destroy", "shared")
        other, other_home, other_uid = self.add_user("b", in_group=True)
        for user, home in ((self.user, self.user_home), (other, other_home)):
            proc = self.d.tracery("create", "shared", "--output", os.path.join(home, "again"), check=False,
                                  env=dict(self.d.env, HOME=home), user=user)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            if user == self.user:
                self.assertIn(f"-> {os.path.join(home, 'again')}", self.d.tracery("status", "shared").stdout)
        proc = self.d.tracery("status", "shared", check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(proc.stderr.splitlines(),
                         [f"tracery: users {min(uid, other_uid)}, {max(uid, other_uid)} each have a session named "
                          "'shared' and root has none: run the command as its owner (runuser -u USER -- tracery ...)"])
        self.assertEqual(sorted(self.d.tracery("destroy", "--all").stdout.splitlines()),
                         ["Session 'shared' destroyed"] * 2)

    def test_buffer_quota_is_per_user(self):
        """In root's per-PID session, each program's buffer counts against
        its own user's quota: another user's programs filling theirs leave
        root's programs traced, and theirs are reported."""
        one = os.sysconf("SC_NPROCESSORS_CONF") * 4 * 64 * 1024  # a buffer of 4 x 64 KiB per CPU, headers aside
        self.d.start_daemon("--buffer-quota", str(one + one // 2))
        path = self.session("s", events=("emit:tick",), context=("vpid",),
                            channel_args=["--subbuf-size", "64k", "--num-subbuf", "4", "--buffers-pid"])
        self.d.tracery("start")
        uid = int(subprocess.check_output(["id", "-u", self.user]))
        emitter = [program("tests", "daemon-emitter"), "count", "100", "wait"]
        theirs, their_pids = [], []
        for _ in range(2):  # one after the other: the first one registered takes the user's quota
            theirs.append(self.d.spawn(["runuser", "-p", "-u", self.user, "--", *emitter],
                                       extra_env={"HOME": self.user_home}))
            their_pids.append(int(read_line(theirs[-1], "ready")[0]))
        mine = self.d.spawn(emitter)
        my_pid = int(read_line(mine, "ready")[0])
        status = self.d.tracery("status").stdout
        self.assertIn("not traced: 1 program\n", status)
        self.assertIn(f"pid {their_pids[1]} (uid {uid}): the buffer quota of uid {uid} is", status)
        self.assertIn("buffer quota of uid 0:", status)
        for p in theirs + [mine]:
            go(p)
            self.assertEqual(p.wait(timeout=30), 0)
        self.d.tracery("stop")
        by_pid = {}
        for e in Trace(path).events:
            by_pid[e["context"]["vpid"]] = by_pid.get(e["context"]["vpid"], 0) + 1
        self.assertEqual(by_pid, {their_pids[0]: 100, my_pid: 100})

    def test_per_user_daemon(self):
        xdg = os.path.join(self.d.tmp, "userxdg")
        os.makedirs(xdg, mode=0o700)
        shutil.chown(xdg, self.user)
        env = {k: v for k, v in self.user_env.items() if k != "TRACERY_RUNDIR"}
        env["XDG_RUNTIME_DIR"] = xdg
        pidfile = os.path.join(xdg, "tracery", "traceryd.pid")

        def kill_user_daemon():  # and wait for it: userdel refuses a user with a process left
            try:
                with open(pidfile) as f:
                    end_process(int(f.read()))
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
