"""relay_live_test: a real tracery-relayd on loopback serving live sessions to
real babeltrace2 (its src.ctf.lttng-live, `babeltrace2 -i lttng-live
net://...`) while relay-send --live (tests/apps/relay_send.cpp) sends traces
made by tracery-bench in daemonless mode, paced, with beacons every period.

Checks, against babeltrace2's reading of the original traces: every event
printed, in order, with its values, while the sender is still sending; a
viewer attached late prints exactly the events sent after it attached; an
idle stream (beacons only) does not hold back the busy one; a trace added
mid-session (another program's) and the first trace's stream closed
mid-session are both read through, as is a trace whose only stream closes
and which gets a new one later; babeltrace2 exits 0 once the session ends. Then hostile viewers (wrong sizes, unknown commands, out of order,
unknown sessions, a stream not given, bytes beyond the index) are each
closed with a log line, and the relay serves on; a second viewer of a
session attaches too. The plain port lists only the sessions their senders
marked public. A sender
closed because it reads none of its SYNC replies leaves every packet it had
written in the live index its viewer reads."""
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import threading
import time
import unittest

from relay_test import METADATA, PACKET, STREAM, SYNC, SYNC_REPLY, TRACE, frame, hello, string
from relaytest import RelaydTestCase, ties_sorted
from tracetest import program, run_traced

PERIOD_MS = 200
TRACE_PATH = "ust/uid/1000/64-bit"
CONNECT, LIST, ATTACH, NEXT_INDEX, GET_PACKET, GET_METADATA, NEW_STREAMS, CREATE, DETACH = range(1, 10)


def without_deltas(text):
    """babeltrace2's lines without the (+delta) field (the first line's depends on where reading starts)."""
    return [re.sub(r" \(\+[^)]*\)", "", l) for l in text.splitlines()]


def by_stream(lines):
    """The lines of each stream (one per CPU in these traces), in order."""
    out = {}
    for l in lines:
        out.setdefault(re.search(r"cpu_id = (\d+)", l).group(1), []).append(l)
    return out


class Viewer:
    """A raw lttng-live client speaking the protocol by hand (big-endian, packed)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.port = self.s.getsockname()[1]

    def send(self, cmd, payload=b"", size=None):
        self.s.sendall(struct.pack(">QII", len(payload) if size is None else size, cmd, 0) + payload)

    def recv(self, n):
        data = b""
        while len(data) < n:
            chunk = self.s.recv(n - len(data))
            if not chunk:
                raise EOFError(f"closed after {len(data)} of {n} bytes")
            data += chunk
        return data

    def connect(self):
        self.send(CONNECT, struct.pack(">QIII", 0, 2, 4, 1))
        return struct.unpack(">QIII", self.recv(20))

    def sessions(self):
        self.send(LIST)
        (count,) = struct.unpack(">I", self.recv(4))
        out = []
        for _ in range(count):
            sid, timer, clients, streams = struct.unpack(">QIII", self.recv(20))
            host = self.recv(64).split(b"\0")[0].decode()
            name = self.recv(255).split(b"\0")[0].decode()
            out.append((sid, timer, clients, streams, host, name))
        return out

    def create(self):
        self.send(CREATE)
        return struct.unpack(">I", self.recv(4))[0]

    def attach(self, sid, seek=1):
        self.send(ATTACH, struct.pack(">QQI", sid, 0, seek))
        status, count = struct.unpack(">II", self.recv(8))
        streams = []
        for _ in range(count):
            vid, trace, meta = struct.unpack(">QQI", self.recv(20))
            path = self.recv(4096).split(b"\0")[0].decode()
            name = self.recv(255).split(b"\0")[0].decode()
            streams.append((vid, trace, meta, path, name))
        return status, streams

    def next_index(self, vid):
        self.send(NEXT_INDEX, struct.pack(">Q", vid))
        return struct.unpack(">7QII", self.recv(64))

    def closed(self):
        """True once the relay has closed the connection (after any reply)."""
        while True:
            r, _, _ = select.select([self.s], [], [], 10)
            if not r:
                return False
            try:
                if not self.s.recv(65536):
                    return True
            except ConnectionResetError:
                return True

    def close(self):
        self.s.close()


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelayLiveTest(RelaydTestCase):
    prefix = "tracery-relay-live-test-"

    @classmethod
    def make_traces(cls):
        small = {"TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "128"}
        cls.trace = os.path.join(cls.tmp, "first")
        run_traced([program("bench", "tracery-bench"), "20000", "2", "ev"], cls.trace, small)
        cls.second = os.path.join(cls.tmp, "second")  # another program, run later
        run_traced([program("bench", "tracery-bench"), "5000", "1", "ev"], cls.second, small)
        cls.original = without_deltas(cls.babeltrace2(cls.trace))
        cls.both = without_deltas(cls.babeltrace2(cls.trace, cls.second))
        cls.second_only = without_deltas(cls.babeltrace2(cls.second))
        # One stream for sure (one thread on one CPU): --split cuts its stream in two in time.
        cls.single = os.path.join(cls.tmp, "single")
        run_traced(["taskset", "-c", "0", program("bench", "tracery-bench"), "20000", "1", "ev"], cls.single, small)
        cls.single_out = without_deltas(cls.babeltrace2(cls.single))
        # One stream per CPU the program ran on (one or two here).
        cls.files = sorted(f for f in os.listdir(cls.trace) if f != "metadata")

    @staticmethod
    def babeltrace2(*paths):
        p = subprocess.run(["babeltrace2", *paths], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def start_sender(self, session, *extra, trace=None, public=True):
        """relay-send --live --wait-go (of self.trace, or trace), the session marked public unless told: its packets
        wait for a line on its stdin (go())."""
        p = subprocess.Popen([program("tests", "relay-send"), "127.0.0.1", str(self.port), trace or self.trace,
                              "testhost", session, "--live", str(PERIOD_MS), "--wait-go",
                              *(["--public-live"] if public else []), *extra], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        relative = p.stdout.readline().strip()
        self.assertTrue(relative, p.stderr.read() if p.poll() is not None else "no session path")
        return p, os.path.join(self.output, relative)

    def session_id(self, viewer, name):
        """The id of the live session named, as the viewer lists it; fails with the listing and the relay's log."""
        listed = viewer.sessions()
        mine = [s[0] for s in listed if s[5] == name]
        self.assertEqual(len(mine), 1, f"session {name!r} in {listed!r}; relay log:\n" + "\n".join(self.log_lines()))
        return mine[0]

    def indexed(self, copy):
        """Packets the relay has written so far in the copy (all its streams)."""
        d = os.path.join(copy, TRACE_PATH, "index")
        return sum((os.path.getsize(os.path.join(d, f)) - 16) // 72 for f in os.listdir(d)) if os.path.isdir(d) else 0

    @staticmethod
    def go(sender):
        sender.stdin.write("go\n")
        sender.stdin.close()

    def watch(self, session, sender, go_at=None, kill_at=None):
        """Runs babeltrace2 on the live session until it exits; returns (its exit code, its stdout lines,
        its stderr, how many lines it printed before the sender exited). The sender goes once babeltrace2
        has attached, or, with go_at, when go_at() is true (then babeltrace2 starts); with kill_at, it is
        killed (SIGKILL) once kill_at() is true. Sets self.delays: (from the go to the first line printed,
        from the sender's end to the last line printed), in seconds."""
        went = time.monotonic()
        if go_at:
            self.go(sender)
            deadline = time.time() + 30
            while not go_at() and time.time() < deadline:
                time.sleep(0.02)
        bt = subprocess.Popen(["babeltrace2", "-i", "lttng-live",
                               f"net://localhost:{self.live_port}/host/testhost/{session}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines, stamps, err = [], [], []

        def read():
            for line in iter(bt.stdout.readline, ""):
                stamps.append(time.monotonic())
                lines.append(line)

        reader = threading.Thread(target=read)
        err_reader = threading.Thread(target=lambda: err.append(bt.stderr.read()))
        reader.start()
        err_reader.start()
        if not go_at:
            self.wait_log(f"attached to testhost/{session} (session ")
            went = time.monotonic()
            self.go(sender)
        if kill_at:
            deadline = time.time() + 30
            while not kill_at() and time.time() < deadline:
                time.sleep(0.01)
            sender.kill()
            sender.wait()
        else:
            self.assertEqual(sender.wait(timeout=120), 0, sender.stderr.read())
        ended = time.monotonic()
        before_end = len(lines)
        try:
            code = bt.wait(timeout=60)
        finally:
            bt.kill()
            reader.join()
            err_reader.join()
            bt.stdout.close()
            bt.stderr.close()
            sender.stdout.close()
            sender.stderr.close()
        self.delays = (stamps[0] - went, stamps[-1] - ended) if stamps else (None, None)
        return code, without_deltas("".join(lines)), "".join(err), before_end

    def assertNoErrors(self, stderr):
        self.assertFalse([l for l in stderr.splitlines() if " E " in l or "ERROR" in l], stderr)

    def test_events_printed_while_sending(self):
        sender, _ = self.start_sender("whole", "--interval", "15")
        code, out, err, before_end = self.watch("whole", sender)
        self.assertEqual(code, 0, err)
        self.assertNoErrors(err)
        self.assertGreater(len(out), 10000)
        self.assertEqual(ties_sorted(out), ties_sorted(self.original))
        # Printed as it came: most lines before the sender was done (it sends for about 2.5 s), the
        # first and the last within two live periods of their packets (50-100 ms here, quiet).
        self.assertGreater(before_end, len(out) // 2)
        self.assertLess(self.delays[0], 2 * PERIOD_MS / 1000)
        self.assertLess(self.delays[1], 2 * PERIOD_MS / 1000)
        self.wait_log("/whole-", "ended with BYE")

    def test_idle_stream_does_not_stall_the_busy_one(self):
        sender, copy = self.start_sender("idle", "--interval", "15", "--idle-stream")
        code, out, err, before_end = self.watch("idle", sender)
        self.assertEqual(code, 0, err)
        self.assertNoErrors(err)
        self.assertEqual(ties_sorted(out), ties_sorted(self.original))
        # The idle stream has beacons only: without them (INACTIVE) nothing would print before it closes.
        self.assertGreater(before_end, len(out) // 2)
        self.assertEqual(os.path.getsize(os.path.join(copy, TRACE_PATH, "idle_0")), 0)

    def test_late_attach_sees_new_events(self):
        sender, copy = self.start_sender("late", "--interval", "15")
        code, out, err, before_end = self.watch("late", sender, go_at=lambda: self.indexed(copy) >= 40)
        self.assertEqual(code, 0, err)
        self.assertNoErrors(err)
        # Attached after 40 packets were written: the events of each stream's packets sent from then on, to its last.
        self.assertGreater(len(out), 1000)
        self.assertLess(len(out), len(self.original) - 1000)
        original = by_stream(self.original)
        for cpu, lines in by_stream(out).items():
            self.assertEqual(lines, original[cpu][-len(lines):], cpu)

    def test_sender_killed_mid_session(self):
        # What was written whole is read, then every stream hangs up and babeltrace2 ends.
        sender, copy = self.start_sender("killed", "--interval", "15")
        code, out, err, _ = self.watch("killed", sender, kill_at=lambda: self.indexed(copy) >= 50)
        self.assertEqual(code, 0, err)
        self.assertNoErrors(err)
        self.wait_log("/killed-", "closed without BYE")
        self.assertGreater(len(out), 1000)
        self.assertLess(len(out), len(self.original))
        original = by_stream(self.original)
        for cpu, lines in by_stream(out).items():
            self.assertEqual(lines, original[cpu][:len(lines)], cpu)
        # Every packet the relay indexed, and only those: the events of the copy on disk (events of one time on
        # two CPUs in either order: live and the whole trace may meet them differently).
        self.assertEqual(ties_sorted(out), ties_sorted(without_deltas(self.babeltrace2(copy))))

    def test_streams_added_and_closed_mid_session(self):
        # The second trace (another program) is declared half way through and sends after the first
        # trace's stream has closed.
        sender, copy = self.start_sender("twotraces", "--interval", "10",
                                         "--idle-stream", "--second-trace", self.second, "ust/pid/second")
        code, out, err, before_end = self.watch("twotraces", sender)
        self.assertEqual(code, 0, err)
        self.assertNoErrors(err)
        self.assertEqual(out, self.both)
        self.assertGreater(len(self.second_only), 1000)
        self.assertEqual(out[-len(self.second_only):], self.second_only)  # the second program ran after
        self.assertTrue(os.path.exists(os.path.join(copy, "ust/pid/second/metadata")))

    def test_trace_emptied_then_given_a_new_stream(self):
        # Per-process buffers in one trace: its only stream closes (the program exits) and, three
        # periods later, another appears (a program starts; its events come after the first's). babeltrace2 drops a trace whose streams
        # all hung up: the relay gives the trace's metadata stream again with the new stream (without,
        # babeltrace2 2.0.4 spins after the first half, never printing the rest).
        sender, copy = self.start_sender("split", "--interval", "10", "--split", trace=self.single)
        code, out, err, _ = self.watch("split", sender)
        self.assertEqual(code, 0, err)
        self.assertNoErrors(err)
        self.assertGreater(len(out), 10000)
        self.assertEqual(out, self.single_out)
        files = [f for f in os.listdir(self.single) if f != "metadata"]
        self.assertEqual(len(files), 1)
        self.assertEqual(sorted(os.listdir(os.path.join(copy, TRACE_PATH))),
                         sorted(files + [files[0] + ".2", "index", "metadata"]))

    def test_viewer_that_does_not_read_holds_nobody(self):
        # A viewer asks for the same packet thousands of times and reads none of it: the relay answers
        # as far as that viewer's socket takes, then waits on it alone.
        # 30 packets: the source trace has about 160 in 4 KiB packets, 65 seen under load (its program outran
        # its consumer and lost events).
        stalled, copy = self.start_sender("stalled", "--interval", "1", "--stall-after", "30")
        self.go(stalled)
        deadline = time.time() + 20
        while self.indexed(copy) < 30 and time.time() < deadline:
            time.sleep(0.02)
        self.assertIsNone(stalled.poll(), "the sender ended before its stall: the source trace has too few packets")
        v = Viewer(self.live_port)
        try:
            v.connect()
            v.create()
            sid = self.session_id(v, "stalled")
            status, given = v.attach(sid, seek=1)
            self.assertEqual(status, 1)
            data = [g for g in given if g[2] == 0][0][0]
            first = v.next_index(data)
            self.assertEqual(first[7], 1)
            ask = struct.pack(">QII", 20, GET_PACKET, 0) + struct.pack(">QQI", data, first[0], first[1] // 8)
            blob = ask * 500000  # 18 MB of requests for 2 GB of replies
            v.s.setblocking(False)
            sent = 0
            try:
                while sent < len(blob):
                    sent += v.s.send(blob[sent:sent + 65536])
            except BlockingIOError:
                pass
            self.assertLess(sent, len(blob))  # the relay stopped reading it
            # Everyone else is served meanwhile: a whole live session, read to its end.
            sender, _ = self.start_sender("beside-a-stuck-viewer", "--interval", "5")
            code, out, err, _ = self.watch("beside-a-stuck-viewer", sender)
            self.assertEqual(code, 0, err)
            self.assertEqual(ties_sorted(out), ties_sorted(self.original))
            # Its replies are waiting for it, whole: status OK, the size asked, then the packet.
            v.s.setblocking(True)
            head = v.recv(12)
            self.assertEqual(struct.unpack(">III", head), (1, first[1] // 8, 0))
            with open(os.path.join(copy, TRACE_PATH, self.files[0]), "rb") as f:
                self.assertEqual(v.recv(first[1] // 8), f.read(first[1] // 8))
        finally:
            v.close()
            stalled.kill()
            stalled.wait()
            for f in (stalled.stdin, stalled.stdout, stalled.stderr):
                if not f.closed:
                    f.close()

    def test_list_attach_and_index_by_hand(self):
        sender, _ = self.start_sender("byhand", "--interval", "10")
        v = Viewer(self.live_port)
        try:
            self.assertEqual(v.connect()[1:], (2, 4, 1))
            # Listed at HELLO; its stream once written.
            deadline = time.time() + 10
            while True:
                mine = [s for s in v.sessions() if s[5] == "byhand"]
                if (mine and mine[0][3] == len(self.files)) or time.time() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(len(mine), 1)
            sid, timer, clients, streams, host, _ = mine[0]
            self.assertEqual((timer, clients, streams, host), (PERIOD_MS * 1000, 0, len(self.files), "testhost"))
            # babeltrace2's own listing says the same.
            listing = subprocess.run(["babeltrace2", "-i", "lttng-live", f"net://localhost:{self.live_port}"],
                                     capture_output=True, text=True, timeout=60)
            self.assertEqual(listing.returncode, 0, listing.stderr)
            self.assertIn(f"net://localhost:{self.live_port}/host/testhost/byhand (timer = {PERIOD_MS * 1000}, "
                          f"{len(self.files)} stream(s), 0 client(s) connected)", listing.stdout.splitlines())
            self.assertEqual(v.create(), 1)
            status, given = v.attach(sid)
            self.assertEqual(status, 1)
            self.assertEqual([(g[2], g[3], g[4]) for g in given],
                             [(1, TRACE_PATH, "metadata")] + [(0, TRACE_PATH, f) for f in self.files])
            # No packet yet, a beacon: INACTIVE (5), at the time of the first packet, stream class 0.
            index = v.next_index(given[1][0])
            self.assertEqual(index[7], 5)
            self.assertEqual(index[6], 0)
            self.assertGreater(index[4], 0)
            self.assertEqual(index[8] & 1, 1)  # NEW_METADATA: none read yet
            # A second viewer attaches too (each has its own position): the same streams, both counted.
            w = Viewer(self.live_port)
            try:
                w.connect()
                w.create()
                self.assertEqual(w.attach(sid), (1, given))
                self.wait_log(f":{w.port}: attached to testhost/byhand (session {sid})", "2 of 16 viewers")
                self.assertEqual([s[2] for s in w.sessions() if s[5] == "byhand"], [2])
                self.assertEqual(w.next_index(given[1][0])[7], 5)
            finally:
                w.close()
        finally:
            v.close()
            sender.kill()
            sender.wait()
            for f in (sender.stdin, sender.stdout, sender.stderr):
                f.close()

    def test_plain_port_serves_only_public_sessions(self):
        shown, _ = self.start_sender("shown", "--interval", "10")
        hidden, _ = self.start_sender("hidden", "--interval", "10", public=False)
        senders = (shown, hidden)
        try:
            # Both HELLOs are answered (start_sender read the reply): both sessions are in the relay's registry.
            v = Viewer(self.live_port)
            try:
                v.connect()
                names = [s[5] for s in v.sessions()]
            finally:
                v.close()
            self.assertIn("shown", names)
            self.assertNotIn("hidden", names)
            listing = subprocess.run(["babeltrace2", "-i", "lttng-live", f"net://localhost:{self.live_port}"],
                                     capture_output=True, text=True, timeout=60)
            self.assertEqual(listing.returncode, 0, listing.stderr)
            self.assertIn(f"net://localhost:{self.live_port}/host/testhost/shown ", listing.stdout)
            self.assertNotIn("hidden", listing.stdout)
            # Named in a URL, it is not there: babeltrace2 told to fail on a missing session fails.
            bt = subprocess.run(["babeltrace2", "--component=source.ctf.lttng-live", "--params",
                                 f'inputs=["net://localhost:{self.live_port}/host/testhost/hidden"],'
                                 'session-not-found-action="fail"'], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(bt.returncode, 0)
            self.assertEqual(bt.stdout, "")
            self.assertIn("hidden", bt.stderr)
        finally:
            for s in senders:
                s.kill()
                s.wait()
                for f in (s.stdin, s.stdout, s.stderr):
                    f.close()

    def test_sender_closed_on_a_sync_reply_loses_no_index_entry(self):
        # A sender that sends PACKET+SYNC pairs and reads none of the replies: the relay's SYNC_REPLY sends
        # fill its socket, one fails, and the connection is closed. Every packet written (the ones the writer
        # thread handed back with that SYNC as well) must reach the live index an attached viewer reads;
        # before, the rest of that batch was lost from it.
        chunk = 20000
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect(("127.0.0.1", self.port))

        def reply():
            head = s.recv(12, socket.MSG_WAITALL)
            kind, size = struct.unpack("<IHHI", head)[2:]
            return kind, s.recv(size, socket.MSG_WAITALL) if size else b""

        s.sendall(hello("testhost", "unread-syncs", live_period_ns=10**9, flags=1))
        kind, body = reply()
        self.assertEqual(body[0], 0, body)  # accepted
        s.sendall(frame(TRACE, struct.pack("<I", 1) + string("t"))
                  + frame(METADATA, struct.pack("<I", 1) + b"/* CTF 1.8 */\n")
                  + frame(STREAM, struct.pack("<II", 0, 1) + string("c0")) + frame(SYNC, struct.pack("<Q", 0)))
        self.assertEqual(reply()[0], SYNC_REPLY)
        copy = os.path.join(self.output, body[3:].decode())
        v = Viewer(self.live_port)
        try:
            v.connect()
            v.create()
            status, given = v.attach(self.session_id(v, "unread-syncs"), seek=1)
            self.assertEqual(status, 1)
            data = [g for g in given if g[2] == 0][0][0]
            # Until a reply does not fit (some 150,000 pairs with Linux's default socket buffers): the relay
            # closes the connection, which fails a send here.
            for at in range(0, 50 * chunk, chunk):
                pairs = b"".join(frame(PACKET, struct.pack("<I8Q", 0, 64, 64, i, i, 0, 0, 0, 0) + bytes(8))
                                 + frame(SYNC, struct.pack("<Q", i + 1)) for i in range(at, at + chunk))
                try:
                    s.sendall(pairs)
                except OSError:
                    break
            self.wait_log("unread-syncs", "could not send the SYNC reply")
            seen = 0
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                status = v.next_index(data)[7]
                if status == 1:  # OK
                    seen += 1
                elif status == 3:  # HUP: the session is over and every entry given
                    break
                else:
                    time.sleep(0.01)
            self.assertEqual(status, 3)
            self.assertEqual(seen, os.path.getsize(os.path.join(copy, "t", "c0")) // 8)
        finally:
            v.close()
            s.close()

    def test_hostile_viewers_are_closed_alone(self):
        sender, _ = self.start_sender("target", "--interval", "10")
        try:
            probe = Viewer(self.live_port)
            probe.connect()
            sid = self.session_id(probe, "target")
            probe.close()

            def fresh():
                v = Viewer(self.live_port)
                v.connect()
                v.create()
                return v

            cases = [
                ("short connect", lambda v: v.send(CONNECT, struct.pack(">QIII", 0, 2, 4, 1)[:19]),
                 "CONNECT with a payload of 19 bytes, not 20", False),
                ("huge size", lambda v: v.send(LIST, b"", size=1 << 62), "LIST_SESSIONS with a payload of", False),
                ("unknown command", lambda v: v.send(42), "unknown command 42", False),
                ("http", lambda v: v.s.sendall(b"GET / HTTP/1.0\r\n\r\n"), "unknown command", False),
                ("before connect", lambda v: v.send(LIST), "LIST_SESSIONS before CONNECT", False),
                ("old major", lambda v: v.send(CONNECT, struct.pack(">QIII", 0, 1, 0, 1)),
                 "CONNECT of protocol 1.0", False),
                ("unknown session", lambda v: v.send(ATTACH, struct.pack(">QQI", 987654321, 0, 2)),
                 "ATTACH_SESSION of unknown session 987654321", True),
                ("no viewer session", lambda v: v.send(ATTACH, struct.pack(">QQI", sid, 0, 2)),
                 "ATTACH_SESSION before CREATE_SESSION", True),
                ("stream not given", lambda v: v.send(NEXT_INDEX, struct.pack(">Q", 123456789)),
                 "GET_NEXT_INDEX of stream 123456789, which this viewer was not given", True),
                ("metadata not given", lambda v: v.send(GET_METADATA, struct.pack(">Q", 5)),
                 "GET_METADATA of stream 5, which this viewer was not given", True),
                ("zero-byte packet", lambda v: v.send(GET_PACKET, struct.pack(">QQI", 1, 0, 0)),
                 "GET_PACKET of 0 bytes", True),
            ]
            for name, act, logged, connect_first in cases:
                with self.subTest(name):
                    v = Viewer(self.live_port)
                    if connect_first:
                        v.connect()
                        if name != "no viewer session":
                            v.create()
                    act(v)
                    self.assertTrue(v.closed(), "the relay did not close the viewer")
                    v.close()
                    self.wait_log(f"viewer 127.0.0.1:{v.port}: ", logged)
            # Beyond the index: the session has no packet yet, so any byte is beyond it. Its data streams may not
            # have reached the relay yet on a loaded machine: attach again (a fresh viewer) until one is given.
            deadline = time.monotonic() + 30
            while True:
                v = fresh()
                status, given = v.attach(sid, seek=1)
                streams = [g[0] for g in given if g[2] == 0] if status == 1 else []
                if streams or time.monotonic() > deadline:
                    break
                v.close()
                time.sleep(0.1)
            self.assertEqual(status, 1)
            self.assertTrue(streams, f"no data stream given in {given!r}")
            data = streams[0]
            v.send(GET_PACKET, struct.pack(">QQI", data, 1 << 40, 4096))
            self.assertTrue(v.closed())
            self.wait_log(f"viewer 127.0.0.1:{v.port}: ", f"GET_PACKET of 4096 bytes at {1 << 40} of stream {data}: "
                          "not inside a packet of its index")
        finally:
            sender.kill()
            sender.wait()
            for f in (sender.stdin, sender.stdout, sender.stderr):
                f.close()
        # The relay serves on: a whole live session read after all that.
        sender, _ = self.start_sender("after-hostile", "--interval", "5")
        code, out, err, _ = self.watch("after-hostile", sender)
        self.assertEqual(code, 0, err)
        self.assertEqual(ties_sorted(out), ties_sorted(self.original))


if __name__ == "__main__":
    unittest.main()
