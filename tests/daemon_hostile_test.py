"""A hostile program cannot hang, crash or starve the session daemon (shared
memory is input). A root daemon's session traces well-behaved
programs of root and, as a second unprivileged user, a program that writes
random bytes over its own ring buffer mappings while it emits. For several
seeds, throughout: every command of root and of a `tracing`-group user answers
within 1 s; the well-behaved programs' events are all in the trace or counted
lost, exactly; the hostile program's buffer is reported quarantined by `stop`
and by one log line; the daemon's threads and memory stay bounded and its
threads come back to where they were. Needs root (it makes the two users);
skipped otherwise."""
import os
import shutil
import subprocess
import threading
import time
import unittest

from daemontest import UsersTestCase, read_line
from tracetest import FlatTrace, program

SEEDS = (1, 2, 3)
WELL_BEHAVED = 4          # root's programs per seed, started one by one while the hostile one scribbles
EVENTS_EACH = 25_000      # emit:tick and emit:other each, per well-behaved program
SCRIBBLE_SECONDS = 3
COMMAND_BOUND_S = 1.0



def user_group(user):
    return int(subprocess.check_output(["id", "-g", user]))


def proc_status(pid):
    """Threads and resident KiB of a process."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.split()
    return int(fields["Threads"][0]), int(fields["VmRSS"][0])


class CommandClock:
    """Runs `tracery list` as root and as the group user in a loop and keeps the slowest answer of each. The
    user's command runs with its credentials set by the child itself (no runuser and its PAM session, whose own
    time is not the daemon's)."""

    def __init__(self, test, user, user_env):
        self.test, self.user_env = test, user_env
        self.creds = {"user": user, "group": user_group(user), "extra_groups": [test.group]}
        self.slowest = {"root": 0.0, "group user": 0.0}
        self.failures = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.loop, args=(who,)) for who in self.slowest]

    def loop(self, who):
        while not self.stop.is_set():
            start = time.monotonic()
            creds = {} if who == "root" else self.creds
            proc = subprocess.run([self.test.d.cli, "list"], env=self.test.d.env if who == "root" else self.user_env,
                                  capture_output=True, text=True, timeout=60, **creds)
            took = time.monotonic() - start
            self.slowest[who] = max(self.slowest[who], took)
            if proc.returncode != 0:
                self.failures.append(f"{who}: {proc.stderr.strip()}")
            time.sleep(0.02)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()


class HostileProgram(UsersTestCase):
    def setUp(self):
        super().setUp()
        self.hostile, home, self.hostile_uid = self.add_user("h")
        self.hostile_env = dict(self.d.env, HOME=home)
        self.member, home, _ = self.add_user("m", in_group=True)
        self.member_env = dict(self.d.env, HOME=home)

    def part_of(self, path, prefix):
        """A trace of the metadata and the stream files starting with prefix."""
        part = self.out(f"{os.path.basename(path)}-{prefix}")
        os.makedirs(part)
        shutil.copy(os.path.join(path, "metadata"), part)
        files = [f for f in os.listdir(path) if f.startswith(prefix)]
        self.assertTrue(files, f"no stream file {prefix}* in {sorted(os.listdir(path))}")
        for f in files:
            shutil.copy(os.path.join(path, f), part)
        return part

    def test_program_writing_over_its_buffers(self):
        daemon = self.d.start_daemon("--group", self.group)
        threads_before, _ = proc_status(daemon)
        for seed in SEEDS:
            with self.subTest(seed=seed):
                self.one_seed(daemon, seed, threads_before)
        self.d.tracery("destroy", "--all")
        deadline = time.time() + 10
        while proc_status(daemon)[0] > threads_before and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(proc_status(daemon)[0], threads_before, "the daemon's threads did not come back")

    def one_seed(self, daemon, seed, threads_before):
        name = f"hostile{seed}"
        path = self.session(name)
        self.d.tracery("start", name)
        _, rss_before = proc_status(daemon)
        peak_threads, peak_rss = 0, 0
        with CommandClock(self, self.member, self.member_env) as clock:
            bad = self.d.spawn(["runuser", "-p", "-u", self.hostile, "--", program("tests", "daemon-emitter"),
                                "scribble", str(seed), str(SCRIBBLE_SECONDS)], extra_env={"HOME": "/"})
            bad_pid = int(read_line(bad, "ready")[0])
            self.assertGreater(int(read_line(bad, "scribbling")[0]), 0, "the hostile program found no buffer")
            good = []
            for _ in range(WELL_BEHAVED):
                good.append(self.d.spawn([program("tests", "daemon-emitter"), "count", str(EVENTS_EACH)]))
                time.sleep(SCRIBBLE_SECONDS / (WELL_BEHAVED + 1))
            deadline = time.time() + 120
            while any(p.poll() is None for p in good + [bad]) and time.time() < deadline:
                threads, rss = proc_status(daemon)
                peak_threads, peak_rss = max(peak_threads, threads), max(peak_rss, rss)
                time.sleep(0.05)
            for p in good:
                out, err = p.communicate(timeout=10)
                self.assertEqual(p.returncode, 0, err)
                self.assertIn(f"done {EVENTS_EACH}", out)
            bad_out, bad_err = bad.communicate(timeout=10)
            # A later program of that user gets a buffer of its own, and is traced.
            later = subprocess.run(["runuser", "-p", "-u", self.hostile, "--", program("tests", "daemon-emitter"),
                                    "count", "100"], env=dict(self.d.env, HOME="/"), capture_output=True,
                                   text=True, timeout=60)
            self.assertEqual(later.returncode, 0, later.stderr)
            start = time.monotonic()
            stop = self.d.tracery("stop", name)
            stop_took = time.monotonic() - start
        print(f"seed {seed}: slowest list {clock.slowest['root'] * 1000:.0f} ms (root), "
              f"{clock.slowest['group user'] * 1000:.0f} ms (group user), stop {stop_took * 1000:.0f} ms; "
              f"daemon peak {peak_threads} threads, RSS +{(peak_rss - rss_before) // 1024} MiB; "
              f"hostile program: exit {bad.returncode}, {bad_out.strip()}")

        self.assertEqual(clock.failures, [])
        for who, took in clock.slowest.items():
            self.assertLess(took, COMMAND_BOUND_S, f"a command of {who} took {took:.2f} s")
        self.assertLess(stop_took, COMMAND_BOUND_S + 3.0, "stop (programs already gone) took too long")
        self.assertLess(peak_threads, threads_before + 16)
        self.assertLess(peak_rss - rss_before, 256 * 1024, "daemon memory grew by more than 256 MiB")

        # The hostile program's buffer is reported, in stop's reply and in one log line.
        self.assertEqual(bad.returncode, 0, bad_err)
        self.assertIn(f"buffer uid{self.hostile_uid} was written over by its program", stop.stdout)
        log_lines = [line for line in self.d.log().splitlines()
                     if f"session {name} channel channel0 buffer uid{self.hostile_uid}:" in line]
        self.assertEqual(len(log_lines), 1, log_lines)
        self.assertIn("inconsistent", log_lines[0])
        status = self.d.tracery("status", name).stdout
        self.assertIn(f"buffer uid{self.hostile_uid} was written over", status)

        # Root's programs, and the hostile user's later one: every event is in the trace or counted lost.
        # Their stream files and the metadata make traces of their own (the hostile program's files hold
        # whatever it wrote before it was caught).
        trace = FlatTrace(self.part_of(path, "channel0_uid0_"))
        emitted = WELL_BEHAVED * EVENTS_EACH * 2
        self.assertGreater(len(trace.events), 0)
        self.assertEqual(len(trace.events) + trace.discarded, emitted)
        later = FlatTrace(self.part_of(path, f"channel0_uid{self.hostile_uid}-2_"))
        self.assertEqual(len(later.events) + later.discarded, 200)
        self.assertNotIn(f"PID: {bad_pid} ", self.d.tracery("list", "-u").stdout)

    def test_program_cannot_resize_its_buffers(self):
        """A program of another user that shrinks or grows the ring buffer files the daemon sent it is refused
        (their size is sealed): the daemon maps the same files, and a shrink would make its next access a SIGBUS.
        The daemon lives on and traces the next program."""
        daemon = self.d.start_daemon("--group", self.group)
        path = self.session("sealed")
        self.d.tracery("start", "sealed")
        bad = subprocess.run(["runuser", "-p", "-u", self.hostile, "--", program("tests", "daemon-emitter"),
                              "truncate"], env=dict(self.d.env, HOME="/"), capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(bad.returncode, 0, bad.stderr)
        refused, attempts = map(int, bad.stdout.split("refused ")[1].split(" of "))
        self.assertGreater(attempts, 0)
        self.assertEqual(refused, attempts, bad.stdout)
        self.d.run([program("tests", "daemon-emitter"), "count", "100"])
        time.sleep(0.3)  # the consumer's next look at every buffer, the hostile user's included
        self.assertEqual(self.d.daemon_pid(), daemon)
        self.assertIn("sealed", self.d.tracery("stop", "sealed").stdout)
        trace = FlatTrace(self.part_of(path, "channel0_uid0_"))
        self.assertEqual(len(trace.events) + trace.discarded, 200)


if __name__ == "__main__":
    unittest.main()
