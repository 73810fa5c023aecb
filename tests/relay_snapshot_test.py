"""relay_snapshot_test: `tracery snapshot record net://HOST[:PORT]` and `snapshot add-output net://...` under
traceryd, to a real tracery-relayd on loopback: the snapshot sent through the relay protocol lands on the relay's
side as HOSTNAME/SESSION-DATE/NAME-N-DATE, read by babeltrace2 with the same events as a local snapshot of the same
buffers; an output's snapshots numbered on; a relay that does not answer fails the record, the buffers kept for
the next one; the URL's errors; LTTng's form, `create --snapshot --set-url net://...`, with a key to a relay that
requires one (`--relay-key`), and the same relay refusing a snapshot without a key; the session's key carried by an
output added later (`snapshot add-output`); as root with tracefs, a snapshot session with a kernel domain sending
its kernel part beside its user part, as ust/ and kernel/ of the relay's snapshot directory."""
import os
import re
import secrets
import shutil
import socket
import subprocess
import unittest

from daemontest import DaemonTestCase, go, read_line
from kerneltest import GETPIDS, KernelMixin
from relaytest import Relay, RelayBesideDaemon
from tracetest import Trace, program


def payloads(trace):
    return [(e["name"], tuple(sorted(e["payload"].items()))) for e in trace.events]


def recorded_on(relay, out):
    """The relay's directory of a snapshot, from `snapshot record`'s line."""
    m = re.search(rf"recorded in (\S+) on the relay at 127\.0\.0\.1:{relay.port}$", out.strip())
    if not m or m.group(1).startswith("/"):
        raise AssertionError(out)
    return os.path.join(relay.output, m.group(1))


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelaySnapshotTest(RelayBesideDaemon, DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.d.start_daemon()

    def snapshot_session(self, name, n):
        """A snapshot session of small buffers that `n` events from one CPU overran; stopped, so that every
        snapshot of it copies the same data."""
        path = self.session(name, "--snapshot", events=("emit:tick",),
                            channel_args=["--subbuf-size", "16k", "--num-subbuf", "4"])
        self.d.tracery("start", name)
        emitter = self.d.spawn(["taskset", "-c", "0", program("tests", "daemon-emitter"), "hold", str(n)])
        self.assertEqual(read_line(emitter, "done"), [str(n)])
        self.d.tracery("stop", name)
        return path

    def test_record_to_relay_holds_what_a_local_snapshot_holds(self):
        n = 200_000
        path = self.snapshot_session("snap", n)
        local = re.search(r"recorded in (\S+)", self.d.tracery("snapshot", "record", "-s", "snap").stdout).group(1)
        self.assertTrue(local.startswith(path + "/snapshot-1-"), local)
        out = self.d.tracery("snapshot", "record", "-s", "snap", self.url).stdout
        sent = recorded_on(self.relay, out)
        # HOSTNAME/SESSION-DATE/NAME-N-DATE under the relay's output, the snapshot numbered on.
        self.assertRegex(os.path.relpath(sent, self.relay.output),
                         r"^[^/]+/snap-\d{8}-\d{6}(-\d+)?/snapshot-2-\d{8}-\d{6}$")
        self.assertEqual(self.relay.sessions("snap"), [os.path.dirname(sent)])
        self.assertIn("index", os.listdir(sent))
        a, b = Trace(local), Trace(sent)
        values = [e["payload"]["i"] for e in b.events]
        self.assertGreater(len(values), 100)
        self.assertEqual(values, list(range(n - len(values), n)), "the newest events, contiguous")
        self.assertEqual(payloads(a), payloads(b))
        self.assertEqual((a.discarded, a.discarded_packets), (b.discarded, b.discarded_packets))
        self.relay.wait_log("/snap-", "ended with BYE")

    def test_output_on_relay_takes_each_snapshot(self):
        n = 50_000
        self.snapshot_session("out", n)
        listed = self.d.tracery("snapshot", "add-output", "-s", "out", "-n", "flight", self.url).stdout
        self.assertIn(f"[1] flight: {self.url} (max size: none)", listed)
        first = recorded_on(self.relay, self.d.tracery("snapshot", "record", "-s", "out").stdout)
        second = recorded_on(self.relay, self.d.tracery("snapshot", "record", "-s", "out", "--max-size", "64k").stdout)
        self.assertRegex(os.path.basename(first), r"^flight-1-\d{8}-\d{6}$")
        self.assertRegex(os.path.basename(second), r"^flight-2-\d{8}-\d{6}$")
        # One relay session a snapshot (a connection each).
        self.assertEqual(sorted(self.relay.sessions("out")), sorted({os.path.dirname(first), os.path.dirname(second)}))
        whole, newest = Trace(first), Trace(second)
        self.assertEqual([e["payload"]["i"] for e in whole.events][-1], n - 1)
        # --max-size: a suffix of the whole, smaller.
        self.assertLess(len(newest.events), len(whole.events))
        self.assertEqual(payloads(newest), payloads(whole)[-len(newest.events):])

    def test_relay_not_answering_fails_and_keeps_the_buffers(self):
        path = self.snapshot_session("gone", 20_000)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = s.getsockname()[1]
        r = self.d.tracery("snapshot", "record", "-s", "gone", f"net://127.0.0.1:{closed}", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"cannot reach the relay at 127.0.0.1:{closed}", r.stderr)
        self.assertIn("start tracery-relayd there", r.stderr)
        # The buffers are intact: a snapshot to the relay now holds the newest events.
        sent = recorded_on(self.relay, self.d.tracery("snapshot", "record", "-s", "gone", self.url).stdout)
        self.assertEqual(Trace(sent).events[-1]["payload"]["i"], 19_999)
        self.assertEqual([f for f in os.listdir(path) if f.startswith("snapshot")], [])

    def test_bad_relay_urls_are_refused(self):
        self.snapshot_session("bad", 1000)
        for url, why in (("net://127.0.0.1:0", "bad snapshot URL 'net://127.0.0.1:0': the port '0' is not"),
                         ("net://bad host", "bad snapshot URL 'net://bad host': the host holds"),
                         ("tcp://127.0.0.1", "or sent to a relay (net://HOST[:PORT])")):
            for verb in (["record"], ["add-output"]):
                r = self.d.tracery("snapshot", *verb, "-s", "bad", url, check=False)
                self.assertNotEqual(r.returncode, 0, (verb, url))
                self.assertIn(why, r.stderr, (verb, url))
        self.assertIn("has no snapshot output", self.d.tracery("snapshot", "list-output", "-s", "bad").stdout)


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class KeyedRelaySnapshotTest(RelayBesideDaemon, DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.keys = os.path.join(self.d.tmp, "keys")
        with open(self.keys, "w") as f:
            f.write(f"host-a {secrets.token_hex(32)}\n")
        os.chmod(self.keys, 0o600)
        self.keyed = Relay(self.d.tmp, name="keyed", args=["--auth-keys", self.keys])
        self.addCleanup(self.keyed.stop)
        self.keyed_url = f"net://127.0.0.1:{self.keyed.port}"
        self.d.start_daemon()

    def fill(self, name, n):
        """Session NAME's channel of small buffers filled with n events from one CPU, then stopped."""
        self.d.tracery("enable-channel", "-u", "chan", "-s", name, "--subbuf-size", "16k", "--num-subbuf", "4")
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", name, "-c", "chan")
        self.d.tracery("start", name)
        emitter = self.d.spawn(["taskset", "-c", "0", program("tests", "daemon-emitter"), "hold", str(n)])
        self.assertEqual(read_line(emitter, "done"), [str(n)])
        self.d.tracery("stop", name)

    def assert_newest(self, sent, n):
        values = [e["payload"]["i"] for e in Trace(sent).events]
        self.assertGreater(len(values), 100)
        self.assertEqual(values, list(range(n - len(values), n)), "the newest events, contiguous")

    def test_create_snapshot_set_url_with_a_key(self):
        url = self.keyed_url
        out = self.d.tracery("create", "k", "--snapshot", "--set-url", url, "--relay-key", self.keys).stdout
        self.assertIn(f"in snapshot mode; traces go to the relay at {url} by `snapshot record`", out)
        self.assertIn(f"[1] snapshot-1: {url}", self.d.tracery("snapshot", "list-output", "-s", "k").stdout)
        self.fill("k", 20000)
        sent = recorded_on(self.keyed, self.d.tracery("snapshot", "record", "-s", "k").stdout)
        self.keyed.wait_log("authenticated as key host-a")
        self.assert_newest(sent, 20000)
        # A session without the key: the relay refuses its snapshot, which says so.
        self.d.tracery("create", "nokey", "--snapshot", "--output", self.out("nokey"))
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", "nokey")
        self.d.tracery("start", "nokey")
        r = self.d.tracery("snapshot", "record", "-s", "nokey", url, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("this relay takes authenticated senders only", r.stderr)

    def test_an_added_output_carries_the_session_key(self):
        """A snapshot session with a local output and the relay's key (`create --snapshot --relay-key`): an
        output added later on the relay that requires the key takes its snapshots, authenticated; the key is
        for snapshot sessions and those sent to a relay only."""
        self.d.tracery("create", "added", "--snapshot", "--output", self.out("added"), "--relay-key", self.keys)
        self.fill("added", 30000)
        self.d.tracery("snapshot", "add-output", "-s", "added", "-n", "keyed", self.keyed_url)
        first = recorded_on(self.keyed, self.d.tracery("snapshot", "record", "-s", "added").stdout)
        self.assertRegex(os.path.basename(first), r"^keyed-1-\d{8}-\d{6}$")
        self.assert_newest(first, 30000)
        self.assertEqual(len([l for l in self.keyed.text().splitlines() if "authenticated as key host-a" in l]), 1)
        # Replaced by another output on the same relay: the key goes with it too.
        self.d.tracery("snapshot", "del-output", "-s", "added", "keyed")
        self.d.tracery("snapshot", "add-output", "-s", "added", "-n", "again", self.keyed_url)
        second = recorded_on(self.keyed, self.d.tracery("snapshot", "record", "-s", "added").stdout)
        self.assertRegex(os.path.basename(second), r"^again-2-\d{8}-\d{6}$")
        self.assertEqual(payloads(Trace(first)), payloads(Trace(second)))
        self.assertEqual(len([l for l in self.keyed.text().splitlines() if "authenticated as key host-a" in l]), 2)
        r = self.d.tracery("create", "plain", "--output", self.out("plain"), "--relay-key", self.keys, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("give --set-url net://HOST[:PORT] or --snapshot too", r.stderr)


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class KernelRelaySnapshotTest(KernelMixin, RelayBesideDaemon, DaemonTestCase):
    """Needs root and tracefs (skipped otherwise)."""

    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()
        self.d.start_daemon()

    def test_kernel_and_user_parts_sent_to_the_relay(self):
        """A snapshot session with user and kernel events, its output on the relay: each snapshot lands there as
        NAME-N-DATE/ust and NAME-N-DATE/kernel, read by babeltrace2 as one timeline without a warning: the
        workload's user events each followed by its getpid system call. A local snapshot of the same buffers
        after it has the same user part; its kernel part, read out of the kernel's buffer by the relay's, has
        none of the calls (reading tracefs consumes them), its state dump as the relay's."""
        t = self.d.tracery
        path = self.out("ks")
        t("create", "ks", "--snapshot", "--output", path)
        t("enable-event", "-u", "kw:*", "-s", "ks")
        t("enable-event", "-k", "--syscall", "getpid", "-s", "ks")
        p, pid = self.d.spawn_registered([program("tests", "kernel-workload"), str(GETPIDS), "0"])
        t("track", "-k", "--pid", str(pid), "-s", "ks")
        t("start", "ks")
        go(p)
        read_line(p, "done")
        p.wait(timeout=30)
        t("stop", "ks")
        t("snapshot", "add-output", "-s", "ks", "-n", "both", self.url)
        sent = recorded_on(self.relay, t("snapshot", "record", "-s", "ks").stdout)
        self.assertRegex(os.path.relpath(sent, self.relay.output),
                         r"^[^/]+/ks-\d{8}-\d{6}(-\d+)?/both-1-\d{8}-\d{6}$")
        self.assertEqual(sorted(os.listdir(sent)), ["kernel", "ust"])
        for part in ("kernel", "ust"):
            self.assertIn("index", os.listdir(os.path.join(sent, part)), part)
        self.relay.wait_log("/ks-", "ended with BYE")
        bt = subprocess.run(["babeltrace2", sent], capture_output=True, text=True, timeout=300)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stderr, "")
        self.assertEqual(bt.stdout.count("kw:before_getpid:"), GETPIDS)
        dumped = self.dump(sent)
        self.assertEqual([m for m in dumped if "discarded" in m], [])
        events = [m for m in dumped if "e" in m]
        loop = [m["e"] for m in events if m["e"] in ("kw:before_getpid", "syscall_entry_getpid")]
        first = loop.index("kw:before_getpid")
        self.assertEqual(loop[first:first + 2 * GETPIDS], ["kw:before_getpid", "syscall_entry_getpid"] * GETPIDS)
        self.assertEqual({m["d"] for m in events if m["e"].startswith("syscall_")}, {"kernel"})
        self.assertEqual(sum(1 for m in events if m["e"] == "lttng_statedump_start"), 1)

        local = re.search(r"recorded in (\S+)", t("snapshot", "record", "-s", "ks", path).stdout).group(1)
        self.assertRegex(os.path.basename(local), r"^both-2-\d{8}-\d{6}$")
        self.assertEqual(payloads(Trace(os.path.join(local, "ust"))), payloads(Trace(os.path.join(sent, "ust"))))
        local_events = [m["e"] for m in self.dump(local) if "e" in m]
        self.assertNotIn("syscall_entry_getpid", local_events)
        self.assertEqual(local_events.count("lttng_statedump_start"), 1)
        self.assertEqual(local_events.count("kw:before_getpid"), GETPIDS)
        t("destroy", "ks")


if __name__ == "__main__":
    unittest.main()
