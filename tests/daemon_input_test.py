#!/usr/bin/env python3
"""Control messages whose fields have the wrong JSON type: a
client of the daemon's socket, or a traced program, sends well-framed
messages whose bodies are valid JSON but not what the protocol says
(src/control/messages.hpp): a number where a string belongs, an object where
an array does. Each must cost the sender its request or its connection, with
a reason, and never the daemon: after each one, `tracery list` answers within
a second and the daemon's pid is the same."""
import json
import os
import socket
import struct
import time
import unittest

from daemontest import DaemonTestCase

MAGIC = 0x59435254  # "TRCY", src/control/wire.hpp
VERSION = 4  # kProtocolVersion
COMMAND, PROGRAM = 1, 2  # control::Kind


def frame(body, kind=COMMAND):
    data = json.dumps(body).encode()
    return struct.pack("<IHHI", MAGIC, VERSION, kind, len(data)) + data


def read_frames(sock):
    """The bodies of the frames the peer sends until it closes (or 3 s pass)."""
    data = b""
    deadline = time.time() + 3
    while time.time() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    bodies = []
    while len(data) >= 12:
        magic, _, _, length = struct.unpack("<IHHI", data[:12])
        if magic != MAGIC or len(data) < 12 + length:
            break
        bodies.append(json.loads(data[12:12 + length]))
        data = data[12 + length:]
    return bodies


class WrongTypes(DaemonTestCase):
    def setUp(self):
        super().setUp()
        # Under AddressSanitizer freed memory waits in a quarantine (256 MiB) before it is reused: without one,
        # the daemon's resident size says what it keeps (test_acks_of_requests_never_sent_are_not_kept).
        options = os.environ.get("ASAN_OPTIONS", "")
        self.d.env["ASAN_OPTIONS"] = (options + ":" if options else "") + "quarantine_size_mb=0"
        self.pid = self.d.start_daemon()
        self.path = os.path.join(self.d.rundir, "traceryd.sock")

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(self.path)
        return s

    def assert_daemon_serves(self, after):
        start = time.monotonic()
        proc = self.d.tracery("list", check=False)
        took = time.monotonic() - start
        self.assertEqual(proc.returncode, 0, f"after {after}: tracery list failed: {proc.stderr}\n{self.d.log()}")
        self.assertLess(took, 1.0, f"after {after}: tracery list took {took:.2f} s")
        self.assertEqual(self.d.daemon_pid(), self.pid)
        os.kill(self.pid, 0)  # still there

    def test_commands_with_fields_of_the_wrong_type_are_refused(self):
        bodies = [
            {"cmd": 7},
            {"cmd": None},
            {"cmd": "create", "session": 5},
            {"cmd": "enable-event", "session": {"a": 1}, "patterns": "x"},
            {"cmd": "destroy", "all": "yes"},
        ]
        for body in bodies:
            with self.connect() as s:
                s.sendall(frame(body))
                replies = read_frames(s)
            self.assert_daemon_serves(body)
            # a command gets its reply: refused, with a reason
            self.assertEqual(len(replies), 1, f"{body} -> {replies}")
            self.assertIs(replies[0].get("ok"), False, f"{body} -> {replies}")
            self.assertTrue(replies[0].get("error"), f"{body} -> {replies}")
        # The frame's kind says who speaks, not the body: this one is taken for the command it names, whose
        # fields are exactly its own.
        with self.connect() as s:
            s.sendall(frame({"role": ["app"], "type": "hello", "cmd": "list"}))
            self.assertEqual(read_frames(s), [{"ok": False, "error": "list: unknown field 'role'"}])
        with self.connect() as s:
            s.sendall(frame({"cmd": "list"}))
            self.assertEqual(read_frames(s), [{"ok": True, "sessions": []}])

    def test_a_program_sending_fields_of_the_wrong_type_is_dropped(self):
        hellos = [
            {"type": "hello", "procname": 3, "events": []},
            {"type": "hello", "procname": "p", "events": {"a": 1}},
            {"type": "hello", "procname": "p", "events": [5, "x", {"provider": 1}]},
        ]
        for hello in hellos:
            with self.connect() as s:
                s.sendall(frame(hello, PROGRAM))
                read_frames(s)
            self.assert_daemon_serves(hello)
        messages = [
            {"type": 3},
            {"type": "ack", "seq": "x", "session": [], "tracing": "no", "refused": 1},
            {"type": "ack", "seq": 1, "refused": [1, {"event": 2, "reason": None}]},
            {"type": "new_events", "req": "x", "events": 5},
            {"type": "new_events", "req": 1, "events": [{"provider": "p", "name": 2, "fields": "f"}]},
        ]
        for message in messages:
            with self.connect() as s:
                s.sendall(frame({"type": "hello", "procname": "p", "events": []}, PROGRAM))
                s.sendall(frame(message, PROGRAM))
                read_frames(s)
            self.assert_daemon_serves(message)
        self.assertIn("sent a malformed message and is disconnected", self.d.log())

    def test_a_connected_programs_bad_schema_does_not_break_listings(self):
        """A program stays connected with events whose schemas are valid JSON but describe no event: they are
        left out when they arrive (one log line each), and `tracery list -u` lists the rest."""
        good = {"provider": "p", "name": "good", "fields": [{"name": "x", "type": "u32"}]}
        bad = [{"provider": "p", "name": "e1", "fields": [1]},
               {"provider": "p", "name": "e2", "fields": [{"name": 5, "type": "u8"}]},
               {"provider": "p", "name": "e3", "fields": [{"name": "x", "type": "u8", "pad": [{}] * 1000}] * 17}]
        with self.connect() as s:
            s.sendall(frame({"type": "hello", "procname": "p", "events": bad + [good]}, PROGRAM))
            deadline = time.time() + 5
            listing = None
            while time.time() < deadline:
                listing = self.d.tracery("list", "-u", check=False)
                if "p:good" in listing.stdout:
                    break
                time.sleep(0.05)
            self.assertEqual(listing.returncode, 0, listing.stderr)
            self.assertIn("p:good", listing.stdout)
            self.assertNotIn("p:e", listing.stdout)
        self.assertEqual(self.d.log().count("an event it declared is not traced"), 3, self.d.log())
        self.assert_daemon_serves("bad schemas")

    def test_acks_of_requests_never_sent_are_not_kept(self):
        """A program acknowledges requests the daemon never sent it, each ack carrying a megabyte of refused
        filters: they are ignored, and the daemon's memory stays where it was (it kept the newest 64 such
        lists whole, parsed, per program)."""
        def rss_kib():
            with open(f"/proc/{self.pid}/status") as f:
                return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])

        refused = [{"event": "app:e", "reason": "r"}] * 30_000  # about 1 MB of JSON
        with self.connect() as s:
            s.settimeout(10)
            s.sendall(frame({"type": "hello", "procname": "p", "events": []}, PROGRAM))

            def acks(first, count):
                for seq in range(first, first + count):
                    s.sendall(frame({"type": "ack", "seq": 1000 + seq, "session": seq, "tracing": True,
                                     "refused": refused}, PROGRAM))
                # The daemon handles a program's messages in order: once it answers this one, it has taken
                # the acks.
                s.sendall(frame({"type": "new_events", "req": first, "events": []}, PROGRAM))
                data = b""
                while b'"ids"' not in data:
                    chunk = s.recv(65536)
                    self.assertTrue(chunk, "the daemon closed the connection")
                    data += chunk

            acks(0, 4)
            before = rss_kib()
            acks(4, 60)
            grown = rss_kib() - before
        self.assert_daemon_serves("acks of requests never sent")
        self.assertLess(grown, 64 * 1024, f"the daemon grew by {grown} KiB")


if __name__ == "__main__":
    unittest.main()
