"""`tracery view` against babeltrace2, byte for byte (stdout and the
discarded-items warnings on stderr), on every kind of trace the tests make:
a daemonless trace of every field type, one with discarded events, several
traces in one directory, a daemon session and a snapshot, merged user and
kernel traces (root with tracefs), a trace recorded by LTTng-UST (with lttng
installed), and traces forged by hand (tests/ctf_forge.py: big-endian,
bit fields, variants, nested arrays, packet-format metadata, discarded
packets, simultaneous events in several streams). Then the options
(--names, --fields, --begin/--end), a pipe that closes, and damaged traces,
whose errors name the file and the offset."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import uuid

from ctf_forge import BitWriter, metadata_packets
from daemontest import DaemonEnv
from tracetest import assert_same_text_but_unfetched, program, run_traced

HAVE_BT2 = shutil.which("babeltrace2") is not None


def view(path, *args, check=True):
    p = subprocess.run([program("src", "cli", "tracery"), "view", path, *args], capture_output=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"tracery view {path} exited {p.returncode}: {p.stderr.decode()}")
    return p


def bt2(path):
    p = subprocess.run(["babeltrace2", path], capture_output=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"babeltrace2 {path} exited {p.returncode}: {p.stderr.decode()}")
    return p


FORGED_METADATA = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 64; align = 8; signed = false; } := unsigned long;
typealias integer { size = 5; align = 1; signed = false; } := uint5_t;
trace {
	major = 1; minor = 8;
	uuid = "UUID";
	byte_order = ORDER;
	packet.header := struct {
		uint32_t magic;
		uint8_t uuid[16];
		uint32_t stream_id;
		uint64_t stream_instance_id;
	} align(8);
};
env { hostname = "forge"; domain = "ust"; tracer_name = "forge"; answer = 42; };
clock { name = "mono"; freq = 1000000; offset_s = 1700000000; offset = 1500000; absolute = true; };
typealias integer { size = 64; align = 8; signed = false; map = clock.mono.value; } := uint64_clock_t;
typealias integer { size = 27; align = 1; signed = false; map = clock.mono.value; } := uint27_clock_t;
struct packet_context {
	uint64_clock_t timestamp_begin;
	uint64_clock_t timestamp_end;
	uint64_t content_size;
	uint64_t packet_size;
	uint64_t packet_seq_num;
	unsigned long events_discarded;
	integer { size = 32; align = 8; signed = false; base = x; } cpu_id;
} align(8);
struct event_header {
	enum : uint5_t { compact = 0 ... 30, extended = 31 } id;
	variant <id> {
		struct { uint27_clock_t timestamp; } compact;
		struct { uint32_t id; uint64_clock_t timestamp; } extended;
	} v;
} align(8);
event {
	name = "forge:all";
	id = 1;
	stream_id = 0;
	loglevel = 13;
	fields := struct {
		integer { size = 3; align = 1; signed = false; } _small;
		integer { size = 13; align = 1; signed = true; } _bits;
		integer { size = 16; align = 8; signed = false; base = 16; } _hex;
		integer { size = 8; align = 8; signed = true; base = 8; } _oct;
		integer { size = 4; align = 1; signed = false; base = 2; } _bin;
		enum : uint8_t { A = 0, B = 1 ... 5, "C" = 6 } _e;
		variant <_e> {
			string A;
			floating_point { exp_dig = 8; mant_dig = 24; align = 32; } B;
			struct { uint8_t k; } C;
		} _v;
		enum : integer { size = 16; align = 8; signed = true; } { X = -3 ... 10, Y = 5 ... 15, Z } _flags;
		struct { uint16_t x; string s; } _st[2];
		uint8_t _n;
		string _strs[_n];
		integer { size = 8; align = 8; signed = false; encoding = UTF8; } _txt[8];
		floating_point { exp_dig = 11; mant_dig = 53; align = 64; } _d;
		integer { size = 64; align = 8; signed = true; } _neg;
		uint8_t _m[2][3];
	};
};
event {
	name = "forge:empty";
	id = 2;
	stream_id = 0;
	fields := struct { };
};
stream {
	id = 0;
	event.header := struct event_header;
	packet.context := struct packet_context;
	event.context := struct { integer { size = 32; align = 8; signed = true; } _vtid; };
};
"""


def forge_trace(path, big_endian, packetized=False):
    """Two streams (instance ids 1 and 0) of events at the same times, a
    gap in packet_seq_num and events_discarded growing."""
    os.makedirs(path)
    tu = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
    text = FORGED_METADATA.replace("UUID", str(tu)).replace("ORDER", "be" if big_endian else "le")
    with open(os.path.join(path, "metadata"), "wb") as f:
        f.write(metadata_packets(text, tu) if packetized else text.encode())

    def event(w, eid, ts, vtid, k):
        w.int(31, 5, 8)
        w.int(eid, 32, 8)
        w.int(ts, 64, 8)
        w.int(vtid, 32, 8)
        if eid == 2:
            return
        w.align(64)  # a struct is aligned as its most aligned member (the double)
        w.int(k % 8, 3, 1)
        w.int(-1000 - k, 13, 1)
        w.int(0xBEEF, 16)
        w.int(-5, 8)
        w.int(0b1010, 4, 1)
        tag = [0, 3, 6][k % 3]
        w.int(tag, 8)
        if tag == 0:
            w.string("q?'\"\\ tab\tnl\n\x01\x7f é")
        elif tag == 3:
            w.float(-1.25e-3, 32, 32)
        else:
            w.int(200, 8)
        w.int([7, 12, 20, -3][k % 4], 16)
        for i in range(2):
            w.int(i + k, 16)
            w.string(f"s{i}")
        w.int(k % 3, 8)
        for i in range(k % 3):
            w.string("x" * i)
        w.raw(b"abc\0def" + b"\0")
        w.float([3.14159, 1e300, -0.0, 2.5][k % 4], 64, 64)
        w.int(-(1 << 63) if k == 0 else -k, 64)
        for i in range(6):
            w.int(i * k, 8)

    for instance in (1, 0):
        data = b""
        packets = [(0, 100, 0), (1, 120, 2), (3, 150, 5)]  # (seq, base time, discarded so far)
        for n, (seq, base, disc) in enumerate(packets):
            times = [base + i * 3 for i in range(4)]
            body = BitWriter(big_endian)
            # the header and context first, with placeholder sizes patched below
            def prefix(w, content_bits, packet_bits):
                w.int(0xC1FC1FC1, 32)
                w.raw(tu.bytes)
                w.int(0, 32)
                w.int(instance, 64)
                w.int(times[0] * 1000, 64)
                w.int(times[-1] * 1000 + 7, 64)
                w.int(content_bits, 64)
                w.int(packet_bits, 64)
                w.int(seq, 64)
                w.int(disc, 64)
                w.int(instance + 0xA0, 32)
            prefix(body, 0, 0)
            for i, t in enumerate(times):
                event(body, 2 if i == 3 else 1, t * 1000, 100 + instance, n * 4 + i)
            content = body.nbits()
            packet = (content + 7) // 8 * 8 + 64  # padding after the content
            final = BitWriter(big_endian)
            prefix(final, content, packet)
            final.bits += body.bits[final.nbits():]
            final.bits += [0] * (packet - content)
            data += final.to_bytes()
        with open(os.path.join(path, f"stream_{instance}"), "wb") as f:
            f.write(data)


@unittest.skipUnless(HAVE_BT2, "babeltrace2 is not installed")
class ViewTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-view-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def same(self, path, expect_warnings=False):
        """tracery view prints what babeltrace2 prints, on both streams."""
        ours, theirs = view(path), bt2(path)
        self.assertGreater(len(theirs.stdout), 0)
        self.assertEqual(ours.stdout, theirs.stdout, f"stdout differs on {path}")
        ours_err = b"".join(l for l in ours.stderr.splitlines(True) if not l.startswith(b"tracery: warning:"))
        self.assertEqual(ours_err, theirs.stderr, f"stderr differs on {path}")
        self.assertEqual(b"WARNING: Tracer discarded" in theirs.stderr, expect_warnings)
        return ours.stdout.decode()

    def test_all_field_types(self):
        out = os.path.join(self.tmp, "all")
        run_traced([program("tests", "all-types")], out)
        text = self.same(out)
        self.assertIn('s = "h\u00e9llo w\u00f6rld \u2713"', text)
        self.assertIn('c = ( "many" : container = 2 )', text)
        self.assertIn("bytes = [ [0] = 0x0, [1] = 0xFF", text)
        self.assertIn("{ addr = 0x7F3A5C000B70, flags = 0xFFFFFFFE, byte = 0x0 }", text)

    def test_discarded_events(self):
        out = os.path.join(self.tmp, "disc")
        run_traced([program("bench", "tracery-bench"), "200000", "2", "ev"], out,
                   {"TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "2"})
        self.same(out, expect_warnings=True)

    def test_several_traces_in_one_directory(self):
        for sub in ("a", os.path.join("b", "c")):
            run_traced([program("tests", "all-types")], os.path.join(self.tmp, "multi", sub))
        text = self.same(os.path.join(self.tmp, "multi"))
        self.assertEqual(text.count("rt:ints:"), 6)

    def test_forged_little_endian(self):
        path = os.path.join(self.tmp, "le")
        forge_trace(path, big_endian=False)
        text = self.same(path, expect_warnings=True)
        self.assertIn("_strs_", text.replace("strs =", "_strs_"))
        self.assertIn('txt = "abc"', text)
        self.assertIn('flags = ( "X", "Y" : container = 7 )', text)
        self.assertIn("flags = ( <unknown> : container = 20 )", text)

    def test_forged_big_endian_packetized_metadata(self):
        path = os.path.join(self.tmp, "be")
        forge_trace(path, big_endian=True, packetized=True)
        text = self.same(path, expect_warnings=True)
        self.assertIn("hex = 0xBEEF", text)
        self.assertIn("bin = 0b1010", text)

    def test_options(self):
        path = os.path.join(self.tmp, "opt")
        forge_trace(path, big_endian=False)
        def lines(*args):  # without the deltas, which depend on the events shown
            return [re.sub(r"\(\+[0-9.?]+\) ", "", l) for l in view(path, *args).stdout.decode().splitlines()]
        full = lines()
        only = lines("--names", "*:empty")
        self.assertEqual(only, [l for l in full if "forge:empty:" in l])
        self.assertEqual(len(only), 6)
        fields = lines("--fields", "vtid,hex")
        self.assertEqual(len(fields), len(full))
        # a list option before the trace takes one argument, never the trace after it
        before = subprocess.run([program("src", "cli", "tracery"), "view", "--names", "*:empty", "--fields", "vtid,hex",
                                 path], capture_output=True, timeout=300)
        self.assertEqual(before.returncode, 0, before.stderr)
        self.assertEqual(len(before.stdout.decode().splitlines()), 6)
        self.assertTrue(fields[0].endswith("forge:all: { vtid = 100 }, { hex = 0xBEEF }"), fields[0])
        # the first packet's events are at 100..109 ms after the clock's offset (1700000001.5 s)
        begin = str((1700000001 * 1000000000) + 500000000 + 103000000)
        end = str((1700000001 * 1000000000) + 500000000 + 106000000)
        ranged = lines("--begin", begin, "--end", end)
        self.assertEqual(len(ranged), 4)  # times 103 and 106 in both streams
        self.assertEqual(ranged, [l for l in full if ".603000000]" in l or ".606000000]" in l])

    def test_filter(self):
        """--filter against babeltrace2's lines filtered here, field by field."""
        path = os.path.join(self.tmp, "filter")
        forge_trace(path, big_endian=False)
        undelta = lambda text: [re.sub(r"\(\+[0-9.?]+\) ", "", l) for l in text.splitlines()]
        theirs = undelta(bt2(path).stdout.decode())

        def num(line, name):
            m = re.search(r"\b" + name + r" = (?:\( [^)]* : container = )?(-?[0-9.e+]+|0x[0-9A-F]+)", line)
            return None if m is None else (int(m.group(1), 0) if not re.search(r"[.e]", m.group(1))
                                           else float(m.group(1)))

        cases = [
            ("small == 2", lambda l: num(l, "small") == 2),
            ("$ctx.vtid == 101 && bits < -1005", lambda l: num(l, "vtid") == 101 and (num(l, "bits") or 0) < -1005),
            ('txt == "ab*" && $ctx.cpu_id == 0xA0', lambda l: 'txt = "abc"' in l and "cpu_id = 0xA0 }" in l),
            ("d > 3 || neg == -5", lambda l: "forge:all" in l and (num(l, "d") > 3 or num(l, "neg") == -5)),
            ("flags == 7 && !(e == 0)", lambda l: num(l, "flags") == 7 and num(l, "e") != 0),
            ("bits % 7 == 0 && hex / (small - small) == 1", lambda l: False),  # division by zero: rejected
            ("$ctx.cpu_id == 0xA1 && n * 2 + 1 < 4 && 1", lambda l: "cpu_id = 0xA1 }" in l and
             num(l, "n") is not None and num(l, "n") < 2),
        ]
        for expr, keep in cases:
            with self.subTest(expr=expr):
                ours = undelta(view(path, "--filter", expr).stdout.decode())
                expected = [l for l in theirs if keep(l)]
                self.assertEqual(ours, expected)
                self.assertEqual(len(ours) == 0, "(small - small)" in expr)
        # the other options still apply
        self.assertEqual(undelta(view(path, "--filter", "small >= 0", "--names", "*:all").stdout.decode()),
                         [l for l in theirs if "forge:all" in l])

        def refused(expr, message, caret_under):
            p = view(path, "--filter", expr, check=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            err = p.stderr.decode()
            self.assertIn(message, err)
            lines = err.splitlines()
            self.assertEqual(lines[-2], "  " + expr)
            at = len(expr) if caret_under is None else expr.index(caret_under)
            self.assertEqual(lines[-1], "  " + " " * at + "^")
            self.assertEqual(p.stdout, b"")

        refused("small == ", "tracery: bad filter: ", None)  # the caret at the end
        refused("smal == 3 && bits < 0", "unknown field 'smal'; did you mean 'small'?", "smal")
        refused("bits < 0 || $ctx.vpid == 1", "no event of the trace has the context field 'vpid'", "$ctx")
        refused("txt > 1", "'>' needs numbers, not a string", ">")
        refused('small == "a"', "'==' compares a string with a number", "==")
        refused("strs[1] == 3", "'strs' has elements that are not numbers", "strs")
        refused("st", "'st' is an array; compare one element", "st")

    def test_pipe_that_closes(self):
        out = os.path.join(self.tmp, "pipe")
        run_traced([program("bench", "tracery-bench"), "200000", "1", "ev"], out)
        p = subprocess.run(f"'{program('src', 'cli', 'tracery')}' view '{out}' | head -n 1", shell=True,
                           capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stderr, b"")
        self.assertEqual(len(p.stdout.splitlines()), 1)

    def test_damaged_traces_name_file_and_offset(self):
        src = os.path.join(self.tmp, "good")
        forge_trace(src, big_endian=False)
        size = os.path.getsize(os.path.join(src, "stream_0"))

        def damaged(name, change):
            path = os.path.join(self.tmp, name)
            shutil.copytree(src, path)
            change(path)
            p = view(path, check=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            return p.stderr.decode()

        def cut(path):
            os.truncate(os.path.join(path, "stream_0"), size - 100)
        err = damaged("cut", cut)
        self.assertRegex(err, r"stream_0: at offset \d+: the packet there declares \d+ bytes but only \d+ remain")

        def bad_magic(path):
            with open(os.path.join(path, "stream_1"), "r+b") as f:
                f.write(b"XXXX")
        err = damaged("magic", bad_magic)
        self.assertIn("stream_1: at offset 0: bad packet magic 0x58585858", err)

        def bad_metadata(path):
            with open(os.path.join(path, "metadata"), "a") as f:
                f.write("\nevent { name = oops\n")
        err = damaged("syntax", bad_metadata)
        self.assertRegex(err, r"/metadata: metadata line \d+ \(offset \d+\): expected ';', found the end of the metadata")

        def bad_event_id(path):
            with open(os.path.join(path, "stream_0"), "r+b") as f:
                f.seek(84 + 1)  # the first event's 32-bit id, after the 5-bit tag's byte
                f.write(b"\x09\x00\x00\x00")
        err = damaged("event", bad_event_id)
        self.assertIn("stream_0: at offset 84: event id 9 is not in the metadata", err)  # the event's start


@unittest.skipUnless(HAVE_BT2, "babeltrace2 is not installed")
class DaemonViewTest(unittest.TestCase):
    def setUp(self):
        self.d = DaemonEnv(prefix="tracery-view-daemon-")
        self.addCleanup(self.d.cleanup)
        self.d.start_daemon()

    def run_emitter(self, n):
        p = self.d.spawn([program("tests", "daemon-emitter"), str(n)])
        p.wait(timeout=120)

    def test_session_and_snapshot(self):
        t = self.d.tracery
        path = os.path.join(self.d.tmp, "s")
        t("create", "s", "--output", path)
        t("enable-event", "-u", "-a", "-s", "s")
        t("add-context", "-u", "-s", "s", "-t", "vpid", "-t", "procname")
        t("start", "s")
        p = self.d.spawn([program("tests", "all-types")])
        p.wait(timeout=60)
        t("stop", "s")
        self.assertEqual(view(path).stdout, bt2(path).stdout)
        self.assertIn(b"procname = ", view(path).stdout)
        undelta = lambda text: [re.sub(r"\(\+[0-9.?]+\) ", "", l) for l in text.decode().splitlines()]
        filtered = undelta(view(path, "--filter", '$ctx.procname == "all-*" && $ctx.vpid > 0').stdout)
        self.assertEqual(filtered, [l for l in undelta(bt2(path).stdout) if 'procname = "all-types"' in l])
        self.assertGreater(len(filtered), 0)

        snap = os.path.join(self.d.tmp, "snap")
        t("create", "snap", "--snapshot", "--output", snap)
        t("enable-event", "-u", "-a", "-s", "snap")
        t("start", "snap")
        p = self.d.spawn([program("tests", "all-types")])
        p.wait(timeout=60)
        t("snapshot", "record", "-s", "snap")
        ours = view(snap)
        self.assertEqual(ours.stdout, bt2(snap).stdout)
        self.assertIn(b"rt:color", ours.stdout)
        # the session still runs: said first
        by_name = subprocess.run([self.d.cli, "view", "snap"], env=self.d.env, capture_output=True, timeout=60)
        self.assertEqual(by_name.stdout, ours.stdout)
        self.assertIn(b"session 'snap' is still running", by_name.stderr)

    def test_merged_user_and_kernel(self):
        if os.geteuid() != 0 or not os.path.isdir("/sys/kernel/tracing/events"):
            self.skipTest("kernel tracing needs root and tracefs; skipped")
        t = self.d.tracery
        path = os.path.join(self.d.tmp, "k")
        t("create", "k", "--output", path)
        t("enable-event", "-u", "-a", "-s", "k")
        t("enable-event", "-k", "sched_switch,sched_wakeup", "-s", "k")
        t("enable-event", "-k", "--syscall", "getpid,openat", "-s", "k")
        t("start", "k")
        p = self.d.spawn([program("tests", "all-types")])
        p.wait(timeout=60)
        t("stop", "k")
        ours = view(path).stdout
        assert_same_text_but_unfetched(self, bt2(path).stdout, ours)
        self.assertIn(b"sched_switch: { cpu_id = ", ours)
        self.assertIn(b"rt:ints:", ours)


@unittest.skipUnless(HAVE_BT2, "babeltrace2 is not installed")
class LttngViewTest(unittest.TestCase):
    def test_lttng_ust_trace(self):
        if shutil.which("lttng") is None or shutil.which("lttng-sessiond") is None:
            self.skipTest("lttng-tools is not installed (apt-get install lttng-tools liblttng-ust-dev)")
        bench = program("bench", "lttng-bench")
        tmp = tempfile.mkdtemp(prefix="tracery-view-lttng-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env = dict(os.environ, LTTNG_HOME=tmp)
        started = subprocess.run(["lttng-sessiond", "--daemonize"], env=env, timeout=60, capture_output=True)
        if started.returncode != 0 and subprocess.run(["lttng", "list"], env=env, timeout=60,
                                                      capture_output=True).returncode != 0:
            self.fail(f"lttng-sessiond does not start: {started.stderr.decode()}")

        def stop_sessiond():  # the one this test started, if any
            for pidfile in (os.path.join(tmp, ".lttng", "lttng-sessiond.pid"), "/var/run/lttng/lttng-sessiond.pid"):
                if started.returncode == 0 and os.path.exists(pidfile):
                    subprocess.run(["kill", open(pidfile).read().strip()], timeout=30)
                    break
        self.addCleanup(stop_sessiond)
        out = os.path.join(tmp, "trace")
        lttng = lambda *a: subprocess.run(["lttng", *a], env=env, check=True, timeout=60, capture_output=True)
        lttng("create", "v", f"--output={out}")
        lttng("enable-event", "-u", "-a")
        lttng("add-context", "-u", "-t", "vpid", "-t", "procname", "-t", "vtid", "-t", "ip", "-t", "pthread_id",
              "-t", "vuid", "-t", "vgid", "-t", "pid_ns", "-t", "net_ns", "-t", "perf:thread:page-fault")
        lttng("start")
        for kind in ("ev", "str"):
            subprocess.run([bench, "2000", "2", kind], env=env, check=True, timeout=120, capture_output=True)
        lttng("stop")
        lttng("destroy")
        ours = view(out).stdout
        self.assertEqual(ours, bt2(out).stdout)
        self.assertGreaterEqual(ours.count(b"bench:ev:"), 1)
        self.assertIn(b", perf_thread_page_fault = ", ours)

        # Per-process buffers: a trace per process, whose name babeltrace2
        # prints with the program's name and pid after the host's.
        per_pid = os.path.join(tmp, "per-pid")
        lttng("create", "p", f"--output={per_pid}")
        lttng("enable-channel", "-u", "--buffers-pid", "c")
        lttng("enable-event", "-u", "-a", "-c", "c")
        lttng("add-context", "-u", "-c", "c", "-t", "vpid", "-t", "vtid", "-t", "procname")
        lttng("start")
        pids = [subprocess.Popen([bench, "300", "1", kind], env=env, stdout=subprocess.DEVNULL) for kind in ("ev", "str")]
        for p in pids:
            self.assertEqual(p.wait(timeout=120), 0)
        lttng("stop")
        lttng("destroy")
        ours = view(per_pid).stdout
        self.assertEqual(ours, bt2(per_pid).stdout)
        for p in pids:
            self.assertIn(f":lttng-bench:({p.pid}) bench:".encode(), ours)


if __name__ == "__main__":
    unittest.main()
