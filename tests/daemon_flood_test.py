#!/usr/bin/env python3
"""A flood of the system daemon's socket: an unprivileged
user (made here with useradd, removed afterwards; skipped unless root) opens
3,000 idle connections, then for FLOOD_SECONDS keeps opening more that send
half a header, commands it may not send, commands and hellos over the size
limits, a hello cut short after 1 MiB, garbage and the old protocol version,
while root and a member of the daemon's group each run sessions (create,
enable-event, start, a traced program, stop, status, list; view at the end).
Their commands answer within BOUND_S each (src/daemon/README.md states the
bound), the flood gets its refusals (permission denied from the header, the
size limits, the version), and once the flood is gone the daemon's threads,
descriptors and memory are back where they were (memory only without a
sanitizer: AddressSanitizer keeps freed memory in its quarantine)."""
import json
import os
import pwd
import statistics
import subprocess
import sys
import time
import unittest

from daemontest import UsersTestCase, read_line
from tracetest import Trace, program

FLOOD_SECONDS = 16  # the daemon closes the first idle connections after 10 s
BOUND_S = 1.0  # each command of another user, process start included
RSS_SLACK_KB = 8 * 1024

# The flooding client, run as the unprivileged user. Prints "flooding" once
# its idle connections are open, then one JSON line: what it did and the
# errors the daemon answered.
FLOOD = r'''
import json, random, resource, socket, struct, sys, threading, time
path, seconds = sys.argv[1], float(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
limit = min(hard, 8000) - 100
held, lock, counts = [], threading.Lock(), {}

def count(what):
    with lock:
        counts[what] = counts.get(what, 0) + 1

def header(kind, length, version=4):
    return struct.pack("<IHHI", 0x59435254, version, kind, length)

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(path)
    return s

def keep(s):
    with lock:
        if len(held) < limit:
            held.append(s)
            return
    s.close()

def answer(s):
    """The daemon's error for this connection ("" if it sent none)."""
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    if len(data) < 12:
        return ""
    body = json.loads(data[12:12 + struct.unpack("<I", data[8:12])[0]])
    return body.get("error", "")

for _ in range(3000):
    try:
        keep(connect())
        count("idle")
    except OSError:
        count("idle: connect failed")
print("flooding", flush=True)
deadline = time.monotonic() + seconds

def attack(kind):
    rnd = random.Random(kind)
    mine = []  # the newest 20 connections of a kind that holds them
    while time.monotonic() < deadline:
        try:
            s = connect()
            if kind in ("half-header", "cut-hello"):
                if kind == "half-header":  # 5 of the 12 header bytes, then silence
                    s.sendall(header(1, 100)[:5])
                else:                      # a hello claiming 16 MiB, 1 MiB of it, then silence
                    s.sendall(header(2, 16 << 20) + b" " * (1 << 20))
                mine.append(s)
                if len(mine) > 20:
                    mine.pop(0).close()
                count(kind)
            else:
                if kind == "denied-command":   # within the size limit, not allowed
                    s.sendall(header(1, 512 << 10) + b"{" * 65536)
                elif kind == "huge-command":   # 64 MiB claimed
                    s.sendall(header(1, 64 << 20) + b"{" * 65536)
                elif kind == "huge-hello":
                    s.sendall(header(2, 64 << 20) + b"{" * 65536)
                elif kind == "garbage":
                    s.sendall(rnd.randbytes(4096))
                elif kind == "version-1":
                    s.sendall(header(0, 2, version=1) + b"{}")
                error = answer(s)
                if error.startswith("uid "):  # refused at accept: the user has too many waiting
                    error = "too many connections"
                count(kind + ": " + (error.split(":")[0] if error else "(no answer)"))
        except OSError as e:
            count(kind + ": " + type(e).__name__)
            time.sleep(0.01)

threads = [threading.Thread(target=attack, args=(k,)) for k in
           ("half-header", "cut-hello", "denied-command", "huge-command", "huge-hello", "garbage", "version-1")]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(counts), flush=True)
'''


def usage(pid):
    """The daemon's resident memory (KiB), thread count and open descriptors."""
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f)
    return {"rss_kb": int(status["VmRSS"].split()[0]), "threads": int(status["Threads"]),
            "fds": len(os.listdir(f"/proc/{pid}/fd"))}


class Flood(UsersTestCase):
    def setUp(self):
        super().setUp()
        self.flooder, _, _ = self.add_user("f")
        self.member, self.member_home, _ = self.add_user("m", in_group=True)

    def as_user(self, user):
        if user == "root":
            return {}
        return {"user": user, "env": dict(self.d.env, HOME=self.member_home)}

    def timed(self, latencies, user, *args):
        start = time.monotonic()
        proc = self.d.tracery(*args, **self.as_user(user))
        latencies.append((time.monotonic() - start, user, args[0]))
        return proc

    def cycle(self, user, name, latencies):
        """One session of `user`: made, started, a program traced, stopped."""
        home = self.d.home if user == "root" else self.member_home
        path = os.path.join(home, name)
        self.timed(latencies, user, "create", name, "--output", path)
        self.timed(latencies, user, "enable-event", "-u", "emit:*", "-s", name)
        self.timed(latencies, user, "start", name)
        argv = [program("tests", "daemon-emitter"), "count", "25"]
        if user != "root":
            argv = ["runuser", "-p", "-u", user, "--", *argv]
        proc = subprocess.run(argv, env=self.as_user(user).get("env", self.d.env), capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.timed(latencies, user, "stop", name)
        self.timed(latencies, user, "status", name)
        self.timed(latencies, user, "list")
        return path

    def test_flood_does_not_delay_others_and_leaves_nothing_behind(self):
        pid = self.d.start_daemon("--group", self.group)
        sock = os.path.join(self.d.rundir, "traceryd.sock")
        calm = []
        for user in ("root", self.member):
            self.cycle(user, "calm", calm)
        self.d.tracery("destroy", "--all")
        time.sleep(0.5)
        before = usage(pid)

        who = pwd.getpwnam(self.flooder)
        flood = subprocess.Popen([sys.executable, "-c", FLOOD, sock, str(FLOOD_SECONDS)], user=who.pw_uid,
                                 group=who.pw_gid, extra_groups=[], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        self.d.procs.append(flood)
        self.addCleanup(flood.kill)  # before its user is removed, should the test fail midway
        read_line(flood, "flooding", timeout=60)
        during, peak, paths, n = [], dict(before), [], 0
        while flood.poll() is None:
            for user in ("root", self.member):
                paths.append((user, self.cycle(user, f"s{n}", during)))
                n += 1
            now = usage(pid)
            peak = {k: max(peak[k], now[k]) for k in peak}
        out, err = flood.communicate(timeout=60)
        self.assertEqual(flood.returncode, 0, err)
        counts = json.loads(out.splitlines()[-1])

        # Every session traced its program, and view shows it.
        for user, path in paths:
            self.assertEqual(len(Trace(path).events), 50, path)
        view = self.d.tracery("view", f"s{n - 1}", **self.as_user(paths[-1][0]))
        self.assertEqual(view.stdout.count("emit:tick"), 25)

        times = [t for t, _, _ in during]
        print(f"\n{len(during)} commands of root and a group member under the flood: median "
              f"{statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
              f"(calm: median {statistics.median(t for t, _, _ in calm) * 1000:.0f} ms, max "
              f"{max(t for t, _, _ in calm) * 1000:.0f} ms)")
        print(f"flood: {json.dumps(counts, sort_keys=True)}")
        print(f"daemon before {before}, peak during the flood {peak}")
        self.assertGreaterEqual(len(paths), 4, "too few sessions ran during the flood to tell")
        slow = [(round(t, 3), user, cmd) for t, user, cmd in during if t >= BOUND_S]
        self.assertEqual(slow, [], f"commands over {BOUND_S} s under the flood")

        # The flood met the door: refused from the header, with reasons.
        self.assertEqual(counts.get("idle"), 3000)
        self.assertGreater(counts.get("denied-command: permission denied", 0), 10)
        self.assertGreater(counts.get("huge-command: a command message of 67108864 bytes is over the limit of "
                                      "1048576 bytes", 0), 10)
        self.assertGreater(counts.get("huge-hello: a program message of 67108864 bytes is over the limit of "
                                      "16777216 bytes", 0), 10)
        self.assertGreater(counts.get("version-1: protocol version 1, expected 4", 0), 10)
        self.assertGreater(counts.get("garbage: not a tracery control message (bad magic)", 0), 10)
        self.assertGreater(counts.get("denied-command: too many connections", 0), 10)
        self.assertIn("no whole message within 10000 ms", self.d.log())
        # No thread per connection, no descriptor per refused one.
        self.assertLess(peak["threads"] - before["threads"], 40)
        self.assertLess(peak["fds"] - before["fds"], 400)

        # Back where it was once the flood's connections are closed.
        self.d.tracery("destroy", "--all")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            after = usage(pid)
            if (after["threads"] == before["threads"] and after["fds"] == before["fds"]
                    and (after["rss_kb"] <= before["rss_kb"] + RSS_SLACK_KB or os.environ.get("TRACERY_SANITIZE"))):
                break
            time.sleep(0.25)
        print(f"daemon after {after}")
        self.assertEqual(after["threads"], before["threads"])
        self.assertEqual(after["fds"], before["fds"])
        if not os.environ.get("TRACERY_SANITIZE"):
            self.assertLessEqual(after["rss_kb"], before["rss_kb"] + RSS_SLACK_KB)
        self.assertEqual(self.d.daemon_pid(), pid)


if __name__ == "__main__":
    unittest.main()
