"""The LD_PRELOAD helpers (src/preload/) on programs that know nothing of Tracery, traced through a real
traceryd: xz compressing with two threads under the pthread helper (every lock requested before it is
acquired, locks and unlocks balanced per thread and per mutex, condition waits releasing and taking their
mutex back, `analyze locks` counting the acquisitions and threads of each mutex the events show), python3 under the libc helper (every free and realloc names a block allocated before it and
not freed since), tests/apps/alloc_signal_fork.c under the libc helper (allocations in a second thread, in a
signal handler and in a fork child, all recorded, with the caller in the ip context), `tracery view` showing
the xz and alloc-signal-fork traces as babeltrace2 does, byte for byte (addresses in hex), and nothing
recorded nor changed in the programs' output when no session enables the helpers' events."""
import collections
import errno
import json
import os
import random
import shutil
import subprocess
import unittest

from daemontest import DaemonTestCase
from tracetest import FlatTrace, program

CONTEXTS = ("vpid", "vtid", "procname", "ip")
# Allocation events and the fields that hold the address they return.
ALLOCATIONS = {"malloc": "ptr", "calloc": "ptr", "memalign": "ptr", "aligned_alloc": "ptr", "valloc": "ptr",
               "pvalloc": "ptr"}


def helper(name):
    return program("src", "preload", f"libtracery-preload-{name}.so")


def skip_under_sanitizers():
    # A sanitizer's runtime must be the first library of a process: a helper built with it cannot be preloaded
    # into a program built without it.
    if os.environ.get("TRACERY_SANITIZE"):
        raise unittest.SkipTest("the helpers are built with sanitizers: they cannot be preloaded into Debian's "
                                "programs")


def compressible_input(path, size):
    """size bytes of words in a random order (a fixed seed): text that compresses about 3 times."""
    rng = random.Random(33)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(5000)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + b" "
    with open(path, "wb") as f:
        f.write(out[:size])


def executable_mappings(lines):
    """(start, end, path) of the executable file mappings in /proc/PID/maps lines."""
    maps = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 6 and "x" in parts[1]:
            start, end = (int(v, 16) for v in parts[0].split("-"))
            maps.append((start, end, parts[5]))
    return maps


def mapping_of(maps, address):
    return next((path for start, end, path in maps if start <= address < end), None)


class LiveBlocks:
    """The blocks of one process that the trace shows allocated and not freed yet; each free and realloc
    must name one of them (or NULL)."""

    def __init__(self, test):
        self.test = test
        self.live = {}

    def allocated(self, ptr, event):
        if ptr:
            self.test.assertNotIn(ptr, self.live, f"{event}: the address is already allocated, since "
                                                  f"{self.live.get(ptr)}")
            self.live[ptr] = event

    def freed(self, ptr, event):
        if ptr:
            self.test.assertIn(ptr, self.live, f"{event}: not an allocated block")
            del self.live[ptr]

    def apply(self, e):
        name, f = e["name"].split(":")[1], e["fields"]
        if name in ALLOCATIONS:
            self.allocated(f[ALLOCATIONS[name]], e)
        elif name == "posix_memalign":
            if f["result"] == 0:
                self.allocated(f["out_ptr"], e)
        elif name == "free":
            self.freed(f["ptr"], e)
        elif name == "realloc":
            if f["ptr"] or f["size"] == 0:  # moved or resized, or realloc(p, 0): in_ptr is gone
                self.freed(f["in_ptr"], e)
                self.allocated(f["ptr"], e)
            else:  # failed: in_ptr stays
                self.test.assertTrue(not f["in_ptr"] or f["in_ptr"] in self.live, e)
        else:
            self.test.fail(f"unexpected event {e}")


class PreloadTest(DaemonTestCase):
    def setUp(self):
        skip_under_sanitizers()
        super().setUp()
        self.d.start_daemon()

    def traced(self, name, events, argv, helper_name, stdin=None):
        """Runs argv with the helper preloaded, in a session recording events with CONTEXTS: (stdout bytes,
        FlatTrace); the trace's path in self.trace_path."""
        path = self.trace_path = self.session(name, events=events, channel_args=["--subbuf-size", "1M", "--num-subbuf", "8"],
                            context=CONTEXTS)
        self.d.tracery("start", name)
        env = dict(self.d.env, LD_PRELOAD=helper(helper_name))
        proc = subprocess.run(argv, env=env, stdin=stdin, capture_output=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.d.tracery("stop", name)
        trace = FlatTrace(path)
        self.assertEqual((trace.discarded, trace.discarded_packets), (0, 0))
        return proc.stdout, trace

    def assert_view_is_babeltrace2(self):
        """`tracery view` shows the trace as babeltrace2 does, byte for byte: the addresses the helpers declare
        hexadecimal (CTF base 16, as LTTng-UST's helpers do) in upper-case hex, the ip context in decimal."""
        theirs = subprocess.run(["babeltrace2", self.trace_path], capture_output=True, check=True, timeout=120).stdout
        ours = subprocess.run([program("src", "cli", "tracery"), "view", self.trace_path], capture_output=True,
                              check=True, timeout=120).stdout
        self.assertEqual(ours, theirs)
        return theirs

    def test_xz_locks_balanced_under_the_pthread_helper(self):
        if shutil.which("xz") is None:
            self.skipTest("xz is not installed (scripts/install-deps.sh)")
        data = self.out("input")
        compressible_input(data, 3 << 20)
        xz = ["xz", "-T2", "-3", "--block-size=256KiB", "-c", data]
        plain = subprocess.run(xz, capture_output=True, timeout=120, check=True).stdout
        out, trace = self.traced("xz", ("lttng_ust_pthread:*",), xz, "pthread")
        self.assertEqual(out, plain, "xz wrote something else under the helper")

        events = [e for e in trace.events if e["fields"]["procname"] == "xz"]
        self.assertGreater(len(events), 100)
        self.assertEqual({e["fields"]["vpid"] for e in events}, {events[0]["fields"]["vpid"]})
        self.assertGreaterEqual(len({e["fields"]["vtid"] for e in events}), 3, "the main thread and 2 workers")
        names = {e["name"].split(":")[1] for e in events}
        self.assertLessEqual({"pthread_mutex_lock_req", "pthread_mutex_lock_acq", "pthread_mutex_unlock",
                              "pthread_cond_wait_begin", "pthread_cond_wait_end", "pthread_cond_signal"}, names)

        held = {}  # (vtid, mutex) -> times held
        waiting = {}  # vtid -> the mutex it requested and has not acquired yet
        acquisitions = 0
        per_mutex = collections.Counter()  # mutex -> acquisitions (lock and successful trylock)
        lockers = collections.defaultdict(set)  # mutex -> the threads that acquired it
        for e in events:
            name, f = e["name"].split(":")[1], e["fields"]
            tid = f["vtid"]
            key = (tid, f.get("mutex"))
            if name == "pthread_mutex_lock_req":
                self.assertNotIn(tid, waiting, e)
                waiting[tid] = f["mutex"]
                continue
            if name == "pthread_mutex_lock_acq":
                self.assertEqual(waiting.pop(tid, None), f["mutex"], f"{e}: acquired, not requested before")
                self.assertEqual(f["status"], 0, e)
                held[key] = held.get(key, 0) + 1
                acquisitions += 1
                per_mutex[f["mutex"]] += 1
                lockers[f["mutex"]].add(tid)
                continue
            self.assertNotIn(tid, waiting, f"{e} while the thread waits for a mutex")
            if name == "pthread_mutex_trylock" and f["status"] == 0:
                held[key] = held.get(key, 0) + 1
                per_mutex[f["mutex"]] += 1
                lockers[f["mutex"]].add(tid)
            elif name == "pthread_mutex_unlock":
                self.assertEqual(f["status"], 0, e)
                self.assertGreater(held.get(key, 0), 0, f"{e}: unlock of a mutex the thread does not hold")
                held[key] -= 1
            elif name == "pthread_cond_wait_begin":
                # libc releases the mutex for the wait, and takes it again before the wait ends.
                self.assertGreater(held.get(key, 0), 0, f"{e}: a wait on a mutex the thread does not hold")
                held[key] -= 1
            elif name == "pthread_cond_wait_end":
                self.assertIn(f["status"], (0, errno.ETIMEDOUT), e)
                held[key] = held.get(key, 0) + 1
        # xz exits without joining its workers: a thread may still wait, or hold a lock, when the process ends.
        # Only in its last critical section: after that acquisition, the thread unlocks nothing.
        last_unlock = {}
        for i, e in enumerate(events):
            if e["name"] == "lttng_ust_pthread:pthread_mutex_unlock":
                last_unlock[e["fields"]["vtid"]] = i
        for (tid, mutex), count in held.items():
            if count:
                self.assertEqual(count, 1, (tid, mutex))
                last_taken = max(i for i, e in enumerate(events) if e["fields"]["vtid"] == tid
                                 and e["fields"].get("mutex") == mutex and e["name"].endswith(("_acq", "_end")))
                self.assertGreater(last_taken, last_unlock.get(tid, -1), f"thread {tid} left mutex {mutex} held")
        # A thread still in `waiting` ends on its request: any later event of it failed above.
        self.assertGreater(acquisitions, 10)
        # Each lock event names its caller (liblzma or xz), not the helper.
        for e in events:
            self.assertNotEqual(e["fields"]["ip"], 0, e)
        # `analyze locks` on the trace: the acquisitions and threads of each mutex the events show.
        report = json.loads(self.d.tracery("analyze", "locks", "--json", self.trace_path).stdout)
        mutexes = {int(r["lock"], 16): r for r in report["per_lock"]
                   if r["pid"] == events[0]["fields"]["vpid"] and r["kind"] == "mutex"}
        self.assertEqual({m: r["acquisitions"] for m, r in mutexes.items() if r["acquisitions"]}, dict(per_mutex))
        self.assertEqual({m: r["tids"] for m, r in mutexes.items() if r["acquisitions"]},
                         {m: " ".join(str(t) for t in sorted(tids)) for m, tids in lockers.items()})
        self.assertEqual(sum(s["acquisitions"] for s in report["per_call_site"]), acquisitions + sum(
            1 for e in events if e["name"].endswith("pthread_mutex_trylock") and e["fields"]["status"] == 0))
        text = self.assert_view_is_babeltrace2()
        mutex = next(iter(per_mutex))
        self.assertIn(f"{{ mutex = 0x{mutex:X}, status = 0 }}".encode(), text)

    def check_blocks_and_callers(self, events, maps, helper_name):
        """Every event's block follows the rules of LiveBlocks, per process, and its ip is in an executable
        mapping of the program or a library other than the helper."""
        blocks = {}
        for e in events:
            blocks.setdefault(e["fields"]["vpid"], LiveBlocks(self)).apply(e)
            where = mapping_of(maps, e["fields"]["ip"])
            self.assertIsNotNone(where, f"{e}: the caller is in no executable mapping")
            self.assertNotIn(f"libtracery-preload-{helper_name}", where, e)
        return blocks

    def test_python_allocations_match_under_the_libc_helper(self):
        code = ("import json, sys, threading\n"
                "data = [list(range(i % 50)) for i in range(3000)]\n"
                "text = json.dumps(data)\n"
                "assert json.loads(text) == data\n"
                "t = threading.Thread(target=lambda: bytearray(1 << 20)); t.start(); t.join()\n"
                "print(len(text))\n"
                "sys.stdout.write(open('/proc/self/maps').read())\n")
        argv = ["/usr/bin/python3", "-c", code]
        plain = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
        out, trace = self.traced("py", ("lttng_ust_libc:*",), argv, "libc")
        lines = out.decode().splitlines()
        self.assertEqual(lines[0], plain.splitlines()[0])
        # All the threads of the process: libtracery's control thread too, whose blocks the program may free.
        pid = next(e["fields"]["vpid"] for e in trace.events if e["fields"]["procname"] == "python3")
        events = [e for e in trace.events if e["fields"]["vpid"] == pid]
        counts = {}
        for e in events:
            counts[e["name"]] = counts.get(e["name"], 0) + 1
        self.assertGreater(counts.get("lttng_ust_libc:malloc", 0), 1000, counts)
        self.assertGreater(counts.get("lttng_ust_libc:free", 0), 1000, counts)
        self.assertGreater(counts.get("lttng_ust_libc:realloc", 0), 10, counts)
        maps = executable_mappings(lines[1:])
        self.assertTrue(any("python3" in path for _, _, path in maps))
        self.check_blocks_and_callers(events, maps, "libc")
        # The 1 MiB bytearray of the second thread (with Python's object header): allocated and freed by it.
        big = [e for e in events if e["name"] in ("lttng_ust_libc:malloc", "lttng_ust_libc:calloc")
               and (1 << 20) <= e["fields"]["size"] < (1 << 20) + 4096]
        self.assertEqual(len(big), 1, big)
        self.assertNotEqual(big[0]["fields"]["vtid"], big[0]["fields"]["vpid"])
        freed = [e for e in events if e["name"] == "lttng_ust_libc:free" and e["fields"]["ptr"] == big[0]["fields"]["ptr"]]
        self.assertEqual([e["fields"]["vtid"] for e in freed], [big[0]["fields"]["vtid"]])

    def run_alloc_signal_fork(self, session, events):
        out, trace = self.traced(session, events, [program("tests", "alloc-signal-fork")], "libc")
        blocks = {}  # kind -> (pid, address)
        maps = []
        for line in out.decode().splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "map":
                maps.append(rest)
            else:
                pid, address = rest.split()
                blocks[kind] = (int(pid), int(address))
        self.assertEqual(set(blocks), {"main", "thread", "handler", "child", "child-handler"})
        return blocks, executable_mappings(maps), trace

    def test_threads_signal_handlers_and_fork_children_are_traced(self):
        blocks, maps, trace = self.run_alloc_signal_fork("asf", ("lttng_ust_libc:*",))
        parent, child = blocks["main"][0], blocks["child"][0]
        self.assertNotEqual(parent, child)
        events = [e for e in trace.events if e["fields"]["vpid"] in (parent, child)]
        self.check_blocks_and_callers(events, maps, "libc")
        program_path = os.path.realpath(program("tests", "alloc-signal-fork"))

        def allocation_of(kind, name, size):
            pid, address = blocks[kind]
            found = [e for e in events if e["name"] == "lttng_ust_libc:" + name and e["fields"]["vpid"] == pid
                     and e["fields"]["ptr"] == address and e["fields"]["size"] == size]
            self.assertEqual(len(found), 1, f"{kind}: {found}")
            # The caller is the program itself, not libc or the helper.
            self.assertEqual(mapping_of(maps, found[0]["fields"]["ip"]), program_path, found[0])
            # Its release: the first free or realloc of the address in that process after it.
            start = events.index(found[0])
            release = next((e for e in events[start + 1:] if e["fields"]["vpid"] == pid and (
                (e["name"] == "lttng_ust_libc:free" and e["fields"]["ptr"] == address)
                or (e["name"] == "lttng_ust_libc:realloc" and e["fields"]["in_ptr"] == address))), None)
            self.assertIsNotNone(release, f"{kind}: never freed")
            self.assertEqual(release["fields"]["vtid"], found[0]["fields"]["vtid"])
            return found[0]

        self.assertEqual(allocation_of("main", "malloc", 100)["fields"]["vtid"], parent)
        self.assertNotIn(allocation_of("thread", "calloc", 100)["fields"]["vtid"], (parent, child))
        self.assertEqual(allocation_of("handler", "malloc", 200)["fields"]["vtid"], parent)
        self.assertEqual(allocation_of("child", "malloc", 300)["fields"]["vtid"], child)
        self.assertEqual(allocation_of("child-handler", "malloc", 200)["fields"]["vtid"], child)
        text = self.assert_view_is_babeltrace2()
        self.assertIn(f"{{ size = 100, ptr = 0x{blocks['main'][1]:X} }}".encode(), text)

    def test_events_no_session_enables_are_not_recorded(self):
        # No session at all: the programs do what they do without the helpers.
        xz_input = self.out("input")
        compressible_input(xz_input, 1 << 20)
        xz = ["xz", "-T2", "-3", "--block-size=256KiB", "-c", xz_input]
        if shutil.which("xz"):
            plain = subprocess.run(xz, capture_output=True, timeout=120, check=True).stdout
            preloaded = subprocess.run(xz, capture_output=True, timeout=120, check=True,
                                       env=dict(self.d.env, LD_PRELOAD=helper("pthread"))).stdout
            self.assertEqual(preloaded, plain)
        proc = subprocess.run([program("tests", "alloc-signal-fork")], capture_output=True, text=True, timeout=60,
                              env=dict(self.d.env, LD_PRELOAD=helper("libc")))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "")
        # A session that enables malloc alone records malloc alone.
        blocks, _, trace = self.run_alloc_signal_fork("m", ("lttng_ust_libc:malloc",))
        self.assertEqual({e["name"] for e in trace.events}, {"lttng_ust_libc:malloc"})
        self.assertLessEqual({blocks[k][1] for k in ("main", "handler", "child")},
                             {e["fields"]["ptr"] for e in trace.events})


if __name__ == "__main__":
    unittest.main()
