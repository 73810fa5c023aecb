#!/usr/bin/env python3
"""Rotation through the relay: a session sent to a real tracery-relayd (`create --set-url net://...`) rotated
by `tracery rotate`, then `enable-rotation --size` and `--timer`, while a program emits. The relay archives each
chunk as a local rotation does (SESSION-DIR/archives/BEGIN-END-ID/ust, LTTng's naming, IDs from 0 without a
gap); each archive is a trace babeltrace2 reads alone without a word on stderr; all of them together, read by
`tracery view` on the relay's session directory, hold exactly the events emitted, none lost and none twice.
With --local-copy the local archives and the relay's hold the same events chunk by chunk. The chunks of a
program that emits nothing while they are written (its buffers idle) are archived all the same. A live session does
not rotate, and `clear` is refused for a session sent to a relay, each saying why. --tracefile-size/-count of a
session sent to the relay: the relay keeps each stream a ring of files, within its bound, read by babeltrace2
without a warning, the newest events there. With kernel events (root and tracefs, skipped otherwise), the user
and kernel traces rotate together on the relay, each close() marking a round in the chunk of its round; a rotation
whose kernel part fails (the local copy's disk full as the kernel trace moves) leaves the session in its chunk and
in its one directory of the relay, and the next rotation archives that chunk whole."""
import collections
import ctypes
import os
import re
import shutil
import subprocess
import unittest

from daemontest import DaemonTestCase
from kerneltest import KernelMixin
from relaytest import RelayBesideDaemon
from rotation_test import TICK, Chunks, KernelChunks
from tracetest import FlatTrace, program


class SentChunks:
    """A session of emit:tick sent to the test's relay, and its end: the relay's one directory of it."""

    def sent_session(self, name, *create_args, kernel=False, all_syscalls=False):
        self.d.tracery("create", name, "--set-url", self.url, *create_args)
        self.d.tracery("enable-channel", "-u", "chan", "-s", name, "--subbuf-size", "16k", "--num-subbuf", "8")
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", name, "-c", "chan")
        if kernel:
            self.track_closes(name, all_syscalls)
        self.d.tracery("start", name)

    def end(self, name, stopped=False):
        if not stopped:
            self.d.tracery("stop", name)
        self.d.tracery("destroy", name)  # archives the last chunk, then BYE
        self.relay.wait_log(f"/{name}-", "ended with BYE")
        dirs = self.relay.sessions(name)
        self.assertEqual(len(dirs), 1, "one connection, one directory of the relay")
        self.assertNotIn("lost the relay", self.d.log())
        return dirs[0]


class ThreadsHeld:
    """Within the block, the threads of process `pid` named `comm` held still (ptrace: seized, then stopped), as
    threads the scheduler never runs; they go on at its end (or when this process ends)."""
    LIBC = ctypes.CDLL(None, use_errno=True)
    SEIZE, INTERRUPT, DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000

    def __init__(self, pid, comm):
        self.tids = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == comm:
                    self.tids.append(int(tid))
        if not self.tids:
            raise AssertionError(f"no thread {comm} in process {pid}")

    def ptrace(self, request, tid):
        if self.LIBC.ptrace(ctypes.c_long(request), ctypes.c_long(tid), None, None) != 0:
            raise OSError(ctypes.get_errno(), f"ptrace {request:#x} of thread {tid}")

    def __enter__(self):
        if os.geteuid() != 0:
            raise unittest.SkipTest("holding a thread of the daemon still needs root (ptrace)")
        for tid in self.tids:
            self.ptrace(self.SEIZE, tid)
            self.ptrace(self.INTERRUPT, tid)
            os.waitpid(tid, self.WALL)
        return self

    def __exit__(self, *exc):
        for tid in self.tids:
            self.ptrace(self.DETACH, tid)


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelayRotation(SentChunks, Chunks, RelayBesideDaemon, DaemonTestCase):

    def test_rotations_through_the_relay_lose_and_repeat_nothing(self):
        per_round, rounds = 2000, 14
        self.d.start_daemon()
        self.sent_session("rr")
        emitter = self.start_emitter(per_round)
        self.emit_rounds(emitter, 1, 2)
        out = self.d.tracery("rotate", "rr").stdout
        self.assertRegex(out, r"readable at \S+/rr-\d{8}-\d{6}/archives/\d{8}T\d{6}[+-]\d{4}-\d{8}T\d{6}[+-]\d{4}-0 "
                              rf"on the relay at 127\.0\.0\.1:{self.relay.port}")
        # By size: a round is some 50 KiB of packets, so 64 KiB chunks end every round or two.
        self.d.tracery("enable-rotation", "-s", "rr", "--size=64k")
        self.emit_rounds(emitter, 3, 8, pause=0.15)
        self.d.tracery("disable-rotation", "-s", "rr", "--size")
        self.d.tracery("enable-rotation", "-s", "rr", "--timer=300ms")
        self.emit_rounds(emitter, 9, rounds, pause=0.1)
        status = self.d.tracery("status", "rr").stdout
        self.assertRegex(status, r"rotation: every 300 ms; \d+ chunks archived; current chunk: chunk \d+ of the "
                                 r"relay's copy\n *last archived chunk: \S+/archives/\S+ on the relay at ")
        self.d.tracery("disable-rotation", "-s", "rr")
        archived = int(re.search(r"(\d+) chunks archived", self.d.tracery("status", "rr").stdout).group(1))
        self.assertGreaterEqual(archived, 4)
        self.finish(emitter)
        copy = self.end("rr")
        self.assertEqual(sorted(os.listdir(copy)), ["archives"], "every chunk is archived, nothing else is left")
        chunks = self.archives(copy)
        self.assertEqual(len(chunks), archived + 1, "the chunks rotated, and the last one archived at destroy")
        together = collections.Counter()
        for chunk in chunks:
            self.assertEqual(sorted(os.listdir(chunk)), ["ust"], chunk)
            together.update(self.check_alone(chunk))
        expected = collections.Counter({r: per_round for r in range(1, rounds + 1)})
        self.assertEqual(together, expected, "babeltrace2, chunk by chunk")
        self.assertEqual(self.viewed(copy), expected, "tracery view of the relay's session directory")

    def test_local_copy_and_relay_archive_the_same_chunks(self):
        self.d.start_daemon()
        path = self.out("both")
        self.sent_session("both", "--local-copy", "--output", path)
        emitter = self.start_emitter(300)
        self.emit_rounds(emitter, 1, 2)
        self.d.tracery("rotate", "both")
        self.emit_rounds(emitter, 3, 3)
        self.d.tracery("rotate", "both")
        self.emit_rounds(emitter, 4, 5)
        self.finish(emitter)
        copy = self.end("both")
        local = [collections.Counter(self.check_alone(c)) for c in self.archives(path)]
        sent = [collections.Counter(self.check_alone(c)) for c in self.archives(copy)]
        self.assertEqual(local, [{1: 300, 2: 300}, {3: 300}, {4: 300, 5: 300}])
        self.assertEqual(sent, local)
        self.assertEqual([os.path.basename(c) for c in self.archives(copy)],
                         [os.path.basename(c) for c in self.archives(path)], "the same names")

    def test_chunks_of_an_idle_program_are_archived(self):
        self.d.start_daemon()
        self.sent_session("idle")
        emitter = self.start_emitter(50)
        self.emit_rounds(emitter, 1, 1)  # then idle: its buffers hold a sub-buffer begun, not full
        archived = []
        for _ in range(2):  # the second chunk without an event
            out = self.d.tracery("rotate", "idle").stdout
            archive = os.path.join(self.relay.output, re.search(r"readable at (\S+) on the relay at ", out).group(1))
            self.wait_for("the relay's archive", lambda: os.path.isdir(archive))
            archived.append(archive)
        self.emit_rounds(emitter, 2, 2)
        self.finish(emitter)
        chunks = self.archives(self.end("idle"))
        self.assertEqual(chunks[:2], archived)
        self.assertEqual([collections.Counter(self.check_alone(c)) for c in chunks], [{1: 50}, {}, {2: 50}])

    def test_a_buffer_that_moves_late_has_its_chunk_archived_then(self):
        self.d.start_daemon()
        self.sent_session("late")
        emitter = self.start_emitter(50)
        self.emit_rounds(emitter, 1, 1)
        with ThreadsHeld(self.d.daemon_pid(), "tracery-consume"):
            # The rotation waits 10 s for the buffer's consumer to move, then replies.
            out = self.d.tracery("rotate", "late").stdout
            self.assertIn("some buffers did not move to the new chunk within 10 s; the relay archives the chunk "
                          "once they do", self.d.log())
            archive = os.path.join(self.relay.output, re.search(r"readable at (\S+) on the relay at ", out).group(1))
            self.assertFalse(os.path.exists(archive), "archived while a stream of the chunk is written")
        self.wait_for("the relay's archive", lambda: os.path.isdir(archive))
        self.assertIn("session late: its buffers moved: the relay archives", self.d.log())
        self.emit_rounds(emitter, 2, 2)
        self.finish(emitter)
        chunks = self.archives(self.end("late"))
        self.assertEqual(chunks[0], archive)
        self.assertEqual([collections.Counter(self.check_alone(c)) for c in chunks], [{1: 50}, {2: 50}])

    def test_refusals(self):
        self.d.start_daemon()
        self.d.tracery("create", "lv", "--live", f"--set-url={self.url}")
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", "lv")
        self.d.tracery("start", "lv")
        for verb in (["rotate", "lv"], ["enable-rotation", "-s", "lv", "--timer=1s"]):
            r = self.d.tracery(*verb, check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("session 'lv' is live", r.stderr)
        self.d.tracery("destroy", "lv")
        self.sent_session("cl")
        r = self.d.tracery("clear", "cl", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has no local trace (it is only sent to a relay)", r.stderr)
        self.d.tracery("destroy", "cl")


    def test_tracefile_ring_on_the_relay_stays_under_its_bound(self):
        size, count, header, events = 16 * 1024, 3, 84, 100_000
        self.d.start_daemon()
        self.d.tracery("create", "tf", "--set-url", self.url)
        # Blocking: nothing is lost, so the events kept are exactly the newest files' ones.
        self.d.tracery("enable-channel", "-u", "chan", "-s", "tf", "--subbuf-size", "4k", "--num-subbuf", "4",
                       "--tracefile-size", "16k", "--tracefile-count", str(count), "--blocking-timeout=inf")
        self.d.tracery("enable-event", "-u", "blocking:*", "-s", "tf", "-c", "chan")
        self.d.tracery("start", "tf")
        self.d.run([program("tests", "blocking-emitter"), "threads", "1", str(events)])
        copy = self.end("tf")
        ust = os.path.join(copy, "ust")
        streams = collections.defaultdict(list)
        for name in os.listdir(ust):
            m = re.fullmatch(r"(chan_uid\d+_\d+)_(\d+)", name)
            if m:
                streams[m.group(1)].append((int(m.group(2)), os.path.getsize(os.path.join(ust, name))))
                self.assertTrue(os.path.isfile(os.path.join(ust, "index", name + ".idx")), name)
            else:
                self.assertIn(name, ("metadata", "index"))
        self.assertTrue(streams)
        for stream, files in streams.items():
            self.assertLessEqual(len(files), count, stream)
            self.assertLessEqual(sum(s for _, s in files), count * (size + header), stream)
            numbers = sorted(n for n, _ in files)
            self.assertEqual(numbers, list(range(numbers[0], numbers[0] + len(numbers))), stream)
        self.assertGreater(max(n for files in streams.values() for n, _ in files), count, "files were deleted")
        self.assertEqual(sorted(os.listdir(os.path.join(ust, "index"))),
                         sorted(f"{s}_{n}.idx" for s, files in streams.items() for n, _ in files))
        bt = subprocess.run(["babeltrace2", ust], capture_output=True, text=True, timeout=120)
        self.assertEqual((bt.returncode, bt.stderr), (0, ""))
        seen = [e["fields"]["i"] for e in FlatTrace(ust).named("blocking:seq")]
        self.assertEqual(len(seen), len(set(seen)))
        self.assertLess(len(seen), events)
        self.assertIn(events - 1, seen, "the last event")


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelayKernelRotation(SentChunks, KernelChunks, KernelMixin, RelayBesideDaemon, DaemonTestCase):
    """A session with kernel events sent to the relay rotates its user and kernel traces together there; when
    the kernel part of a rotation fails (the local copy's disk full as the kernel trace moves), the session goes
    on in its chunk and in its directory of the relay, and the next rotation archives that chunk whole."""

    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()

    def chunk_contents(self, copy):
        """Per archive of the relay's copy, read alone with its user and kernel traces: its emit:tick rounds and
        their counts, and its close() marks."""
        texts = [self.read_alone(c, ("ust", "kernel")) for c in self.archives(copy)]
        return ([collections.Counter(int(m.group(1)) for m in TICK.finditer(t)) for t in texts],
                [sorted(self.marks(t)) for t in texts])

    def test_user_and_kernel_traces_rotate_together_on_the_relay(self):
        per_round = 300
        self.d.start_daemon()
        self.sent_session("kr", kernel=True)
        emitter = self.start_emitter(per_round)
        self.emit_marked_rounds(emitter, 1, 2)
        self.assertRegex(self.d.tracery("rotate", "kr").stdout, r"archives/\S+-0 on the relay at ")
        self.emit_marked_rounds(emitter, 3, 3)
        self.assertRegex(self.d.tracery("rotate", "kr").stdout, r"archives/\S+-1 on the relay at ")
        self.emit_marked_rounds(emitter, 4, 5)
        self.finish(emitter)
        copy = self.end("kr")
        self.assertEqual(sorted(os.listdir(copy)), ["archives"])
        ticks, marks = self.chunk_contents(copy)
        self.assertEqual(ticks, [{1: per_round, 2: per_round}, {3: per_round}, {4: per_round, 5: per_round}])
        self.assertEqual(marks, [[1, 2], [3], [4, 5]], "each close() in the chunk of its round")

    def test_a_failed_kernel_rotation_leaves_the_session_in_its_chunk(self):
        disk = self.out("disk")
        os.makedirs(disk)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", disk],
                          capture_output=True).returncode != 0:
            self.skipTest("needs to mount a tmpfs for the local copy")
        self.addCleanup(subprocess.run, ["umount", "-l", disk], capture_output=True)
        path = os.path.join(disk, "kf")
        per_round = 300
        self.d.start_daemon()
        # The failing `tracery rotate`, made ready now: a child of this test, which the session does not trace
        # (track_closes), so that its system calls (many under AddressSanitizer) do not fill the room left below.
        rotate = self.d.spawn(["bash", "-c", 'read -r go && exec "$0" "$@"', self.d.cli, "rotate", "kf"])
        # Every system call: the kernel trace's metadata (a class for each) is much larger than the user trace's.
        self.sent_session("kf", "--local-copy", "--output", path, kernel=True, all_syscalls=True)
        emitter = self.start_emitter(per_round)
        self.emit_marked_rounds(emitter, 1, 2)
        # The local disk filled so that the user trace's next chunk (its directory and metadata) fits and the
        # kernel trace's does not: the rotation fails as the kernel trace moves, after the user trace has.
        page = os.statvfs(disk).f_frsize
        user = os.path.getsize(os.path.join(path, "ust", "metadata"))
        kernel = os.path.getsize(os.path.join(path, "kernel", "metadata"))
        # Half the kernel metadata's size to spare for its streams' writes meanwhile.
        room = (user // page + 1) * page + kernel // 2
        self.assertGreater(kernel, 16 * user, "the kernel trace's metadata is the larger by far")
        filler = os.path.join(disk, "filler")
        with open(filler, "wb") as f:
            st = os.statvfs(disk)
            os.posix_fallocate(f.fileno(), 0, st.f_bavail * st.f_frsize - room)
        _, failed = rotate.communicate("go\n", timeout=120)
        os.unlink(filler)
        self.assertNotEqual(rotate.returncode, 0)
        self.assertIn("cannot begin a new trace chunk", failed)
        self.assertIn("kernel: ", failed, "the user trace moved, the kernel trace did not")
        self.emit_marked_rounds(emitter, 3, 3)
        self.assertIn(os.path.join(path, "archives", ""), self.d.tracery("rotate", "kf").stdout)
        self.emit_marked_rounds(emitter, 4, 4)
        self.finish(emitter)
        # The local copy may have lost kernel events its full disk refused, and then says so; the relay's has them.
        stop = self.d.tracery("stop", "kf", check=False)
        if stop.returncode != 0:
            self.assertIn("disk full (No space left on device) writing " + os.path.join(path, "kernel"), stop.stderr)
        copy = self.end("kf", stopped=True)
        self.assertEqual(sorted(os.listdir(copy)), ["archives"], "nothing of the chunk that failed is left")
        ticks, marks = self.chunk_contents(copy)
        self.assertEqual(ticks, [{1: per_round, 2: per_round, 3: per_round}, {4: per_round}])
        self.assertEqual(marks, [[1, 2, 3], [4]])


if __name__ == "__main__":
    unittest.main()
