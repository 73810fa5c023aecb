#!/usr/bin/env python3
"""traceryd under systemd, without systemd: the units
(packaging/systemd/) pass `systemd-analyze verify`, and the daemon run as
systemd runs it takes the listening socket it is given (LISTEN_PID,
LISTEN_FDS=1, descriptor 3), answers a client that connected before it
started, tells the notify socket READY=1 (then STOPPING=1), logs to the
journal's stream with "<N>" priorities, and leaves systemd's socket in
place when it stops."""
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from daemontest import DaemonTestCase, end_process
from tracetest import BUILD_DIR


class Units(unittest.TestCase):
    def test_units_verify(self):
        if shutil.which("systemd-analyze") is None:
            self.skipTest("systemd-analyze is not installed")
        units = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "packaging", "systemd")
        tmp = tempfile.mkdtemp(prefix="tracery-units-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        traceryd = os.path.join(BUILD_DIR, "src", "daemon", "traceryd")
        with open(os.path.join(units, "traceryd.service.in")) as f:
            service = f.read()
        exec_start = [line for line in service.splitlines() if line.startswith("ExecStart=")]
        self.assertEqual(exec_start, ["ExecStart=@TRACERY_BINDIR@/traceryd --log-level info"])
        # The unit as installed, with the built daemon for the installed one (packaging_test checks the path
        # the packages' unit names).
        with open(os.path.join(tmp, "traceryd.service"), "w") as f:
            f.write(service.replace("@TRACERY_BINDIR@/traceryd", traceryd))
        shutil.copy(os.path.join(units, "traceryd.socket"), tmp)
        # The man pages the units cite are the generated ones.
        env = dict(os.environ, MANPATH=os.path.join(BUILD_DIR, "packaging", "generated", "man"))
        proc = subprocess.run(["systemd-analyze", "verify", "traceryd.service", "traceryd.socket"], cwd=tmp,
                              env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual((proc.returncode, proc.stderr), (0, ""))
        self.assertIn("Type=notify", service)
        with open(os.path.join(tmp, "traceryd.socket")) as f:
            self.assertIn("ListenStream=/run/tracery/traceryd.sock", f.read())


class SocketActivation(DaemonTestCase):
    def test_passed_socket_readiness_and_journal(self):
        os.makedirs(self.d.rundir, mode=0o700)
        path = os.path.join(self.d.rundir, "traceryd.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(16)
        self.addCleanup(listener.close)
        notify_path = self.out("notify")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(60)
        self.addCleanup(notify.close)

        # A client that connects before the daemon runs waits for its reply.
        client = self.d.spawn([self.d.cli, "list"], stdin=subprocess.DEVNULL)
        time.sleep(0.3)
        self.assertIsNone(client.poll(), client.stderr.read() if client.poll() is not None else "")

        log_path = self.out("journal")
        log = open(log_path, "w")
        self.addCleanup(log.close)
        st = os.fstat(log.fileno())
        env = dict(self.d.env, NOTIFY_SOCKET=notify_path, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}",
                   LISTEN_FDS="1")
        daemon = subprocess.Popen(
            ["sh", "-c", 'export LISTEN_PID=$$; exec "$0" --log-level info', self.d.traceryd], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            preexec_fn=lambda: os.dup2(listener.fileno(), 3), pass_fds=(3,))
        self.addCleanup(lambda: daemon.poll() is None and (daemon.kill(), daemon.wait()))
        message = notify.recv(4096).decode()
        self.assertEqual(message, f"READY=1\nMAINPID={daemon.pid}")

        out, err = client.communicate(timeout=60)
        self.assertEqual((client.returncode, out, err),
                         (0, "No sessions: create one with `tracery create NAME`.\n", ""))
        self.d.tracery("create", "s", "--output", self.out("s"))  # and the next ones
        self.assertIn("1) s [created]", self.d.tracery("list").stdout)

        end_process(daemon.pid)
        daemon.wait(timeout=30)
        self.assertEqual(notify.recv(4096).decode(), "STOPPING=1")
        self.assertTrue(os.path.exists(path), "systemd's socket was removed")  # it stays for the next start
        with open(log_path) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines and all(line.startswith(("<6>info: ", "<4>warn: ", "<3>error: ")) for line in lines),
                        lines)
        self.assertIn(f"<6>info: serving {path} (pid {daemon.pid}, ", lines[0] if lines else "")
        self.assertTrue(any(", socket from systemd)" in line for line in lines), lines)

    def test_a_wrong_socket_is_refused(self):
        # Two descriptors, or one that is not a listening UNIX stream socket: the unit is wrong, and it says so.
        datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(datagram.close)
        for fds, expect in [("2", "systemd passed LISTEN_FDS=2 descriptors"),
                            ("1", "the descriptor systemd passed is not a listening UNIX stream socket")]:
            proc = subprocess.run(
                ["sh", "-c", 'export LISTEN_PID=$$; exec "$0"', self.d.traceryd], env=dict(self.d.env, LISTEN_FDS=fds),
                capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.dup2(datagram.fileno(), 3),
                pass_fds=(3,))
            self.assertEqual(proc.returncode, 1)
            self.assertIn(expect, proc.stderr)


if __name__ == "__main__":
    unittest.main()
