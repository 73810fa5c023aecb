"""Helpers for the session daemon tests: a private traceryd (its own run
directory, HOME and XDG_RUNTIME_DIR in a temporary directory, so a test never
touches a real daemon), the tracery command, instrumented programs, and
cleanup of all of them even when a test fails."""
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import uuid

from tracetest import program


class DaemonEnv:
    def __init__(self, prefix="tracery-daemon-test-"):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.rundir = os.path.join(self.tmp, "run")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TRACERY_")}
        self.env.update({"TRACERY_RUNDIR": self.rundir, "HOME": self.home,
                         "XDG_RUNTIME_DIR": os.path.join(self.tmp, "xdg")})
        self.procs = []
        self.traceryd = program("src", "daemon", "traceryd")
        self.cli = program("src", "cli", "tracery")

    # ---- the daemon
    def start_daemon(self, *extra, extra_groups=None):
        """traceryd --daemonize; extra_groups: supplementary groups to start it with (as a shell's would be)."""
        proc = subprocess.run([self.traceryd, "--daemonize", "--log-level", "debug", *extra], env=self.env,
                              capture_output=True, text=True, timeout=30, extra_groups=extra_groups)
        if proc.returncode != 0:
            raise AssertionError(f"traceryd failed: {proc.stderr}")
        return self.daemon_pid()

    def daemon_pid(self):
        try:
            with open(os.path.join(self.rundir, "traceryd.pid")) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def kill_daemon(self, sig=signal.SIGTERM, timeout=30):
        pid = self.daemon_pid()
        if pid:
            end_process(pid, sig, timeout)

    def log(self):
        try:
            with open(os.path.join(self.rundir, "traceryd.log")) as f:
                return f.read()
        except OSError:
            return ""

    # ---- the tracery command
    def tracery(self, *args, check=True, env=None, user=None):
        argv = [self.cli, *args]
        if user:
            argv = ["runuser", "-p", "-u", user, "--", *argv]
        proc = subprocess.run(argv, env=env or self.env, capture_output=True, text=True, timeout=120)
        if check and proc.returncode != 0:
            raise AssertionError(f"tracery {' '.join(args)} exited {proc.returncode}: {proc.stderr}"
                                 f"\n--- daemon log ---\n{self.log()}")
        return proc

    # ---- programs
    def spawn(self, argv, stdin=subprocess.PIPE, extra_env=None):
        env = dict(self.env)
        env.update(extra_env or {})
        p = subprocess.Popen(argv, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def run(self, argv, extra_env=None, timeout=300):
        p = self.spawn(argv, stdin=subprocess.DEVNULL, extra_env=extra_env)
        out, err = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise AssertionError(f"{argv} exited {p.returncode}: {err}")
        return out

    def spawn_registered(self, argv, extra_env=None):
        """A test program in its waiting mode (it prints "ready PID", then waits for go()), once `tracery list -u`
        shows it: (process, pid)."""
        p = self.spawn(argv, extra_env=extra_env)
        pid = int(read_line(p, "ready")[0])
        self.wait_registered(pid)
        return p, pid

    def wait_registered(self, pid, timeout=10):
        """Waits until `tracery list -u` shows the program."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if f"PID: {pid} " in self.tracery("list", "-u").stdout:
                return
            time.sleep(0.05)
        raise AssertionError(f"program {pid} never registered\n{self.log()}")

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.communicate(timeout=10)
            except Exception:
                pass
        if self.daemon_pid():
            self.tracery("destroy", "--all", check=False)
        self.kill_daemon()
        shutil.rmtree(self.tmp, ignore_errors=True)


def end_process(pid, sig=signal.SIGTERM, timeout=30):
    """Sends sig to pid and waits until it is gone (SIGKILL after timeout seconds)."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.time() + timeout
    while time.time() < deadline:
        # A zombie is dead once its last thread is: a killed daemon's main thread can be a zombie while
        # another thread still finishes a write, holding the daemon's lock file.
        try:
            with open(f"/proc/{pid}/stat") as f:
                zombie = f.read().split()[2] == "Z"
            tasks = len(os.listdir(f"/proc/{pid}/task"))
        except FileNotFoundError:
            return
        if zombie and tasks <= 1:
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)


def run_admin(*argv):
    """Runs a user or group administration command (useradd, groupadd, usermod), again while another test
    holds the lock of /etc/passwd or /etc/group (exit status 10)."""
    deadline = time.time() + 30
    while True:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if proc.returncode == 0:
            return
        if proc.returncode != 10 or time.time() > deadline:
            raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
        time.sleep(0.1)


def go(proc):
    """Lets a test program waiting on its stdin (spawn_registered) go on."""
    proc.stdin.write("go\n")
    proc.stdin.flush()


def read_line(proc, prefix, timeout=30):
    """The next stdout line of proc starting with prefix (its other words)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith(prefix):
            return line.split()[1:]
    raise AssertionError(f"no '{prefix}' line from {proc.args}")


class DaemonTestCase(unittest.TestCase):
    def setUp(self):
        if shutil.which("babeltrace2") is None:
            self.skipTest("babeltrace2 is not installed")
        self.d = DaemonEnv()
        self.addCleanup(self.d.cleanup)
        self.pending = {}  # per watcher: what it printed after its last whole line (read_notifications)

    def out(self, name):
        return os.path.join(self.d.tmp, name)

    def session(self, name, *create_args, events=("emit:*",), channel_args=None, context=()):
        """Creates a session writing to TMP/NAME, its channel and events."""
        path = self.out(name)
        self.d.tracery("create", name, "--output", path, *create_args)
        if channel_args is not None:
            self.d.tracery("enable-channel", "-u", "chan", "-s", name, *channel_args)
        for ev in events:
            args = ["enable-event", "-u", ev, "-s", name]
            if channel_args is not None:
                args += ["-c", "chan"]
            self.d.tracery(*args)
        if context:
            args = ["add-context", "-u", "-s", name]
            for c in context:
                args += ["-t", c]
            self.d.tracery(*args)
        return path

    def wait_for(self, what, check, timeout=20):
        """check()'s first true value, asked every 50 ms for timeout s; else a failure with the daemon's log."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"{what} never came\n--- daemon log ---\n{self.d.log()}")

    def watch(self, *names):
        """`tracery watch NAMES` (every trigger without), once connected."""
        p = subprocess.Popen([self.d.cli, "watch", *names], env=self.d.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.d.procs.append(p)
        self.assertIn("Watching", p.stderr.readline())
        return p

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

    def notifications(self, watcher):
        """The notifications a watch printed, one JSON object a line, once it is ended (after those
        read_notifications() took)."""
        watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
        out = self.pending.pop(watcher.pid, [b""])[0].decode() + out
        return [json.loads(line) for line in out.splitlines()]


class UsersTestCase(DaemonTestCase):
    """A daemon test that makes users of its own (useradd; removed afterwards) and a `tracing` group for a
    system daemon (self.group): needs root, skipped otherwise."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root: a system daemon, and users made with useradd")
        if not shutil.which("useradd") or not shutil.which("runuser"):
            self.skipTest("needs useradd and runuser")
        super().setUp()
        self.group = f"trcg{uuid.uuid4().hex[:8]}"
        run_admin("groupadd", self.group)
        self.addCleanup(run_admin, "groupdel", self.group)
        os.chmod(self.d.tmp, 0o755)  # the run directory inside must be reachable

    def add_user(self, tag, in_group=False):
        """A new user (its name starts with trc + tag), in self.group if asked, with a home of its own:
        (name, home, uid)."""
        user = f"trc{tag}{uuid.uuid4().hex[:6]}"
        run_admin("useradd", "-M", "-N", *(["-G", self.group] if in_group else []), "-s", "/usr/sbin/nologin", user)
        self.addCleanup(run_admin, "userdel", user)
        home = os.path.join(self.d.tmp, f"home-{user}")
        os.makedirs(home)
        shutil.chown(home, user)
        return user, home, int(subprocess.check_output(["id", "-u", user]))
