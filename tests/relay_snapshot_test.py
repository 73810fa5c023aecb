"""relay_snapshot_test: `tracery snapshot record net://HOST[:PORT]` and `snapshot add-output net://...` under
traceryd, to a real tracery-relayd on loopback: the snapshot sent through the relay protocol lands on the relay's
side as HOSTNAME/SESSION-DATE/NAME-N-DATE, read by babeltrace2 with the same events as a local snapshot of the same
buffers; an output's snapshots numbered on; a relay that does not answer fails the record, the buffers kept for
the next one; the URL's errors; LTTng's form, `create --snapshot --set-url net://...`, with a key to a relay that
requires one (`--relay-key`), and the same relay refusing a snapshot without a key."""
import os
import re
import secrets
import shutil
import socket
import unittest

from daemontest import DaemonTestCase, read_line
from relaytest import Relay, RelayBesideDaemon
from tracetest import Trace, program


def payloads(trace):
    return [(e["name"], tuple(sorted(e["payload"].items()))) for e in trace.events]


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelaySnapshotTest(RelayBesideDaemon, DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.d.start_daemon()

    def recorded_on_relay(self, out):
        """The relay's directory of a snapshot, from `snapshot record`'s line (where it is under the relay's
        output)."""
        m = re.search(rf"recorded in (\S+) on the relay at 127\.0\.0\.1:{self.relay.port}$", out.strip())
        self.assertTrue(m, out)
        self.assertFalse(m.group(1).startswith("/"), out)
        return os.path.join(self.relay.output, m.group(1))

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
        sent = self.recorded_on_relay(out)
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
        first = self.recorded_on_relay(self.d.tracery("snapshot", "record", "-s", "out").stdout)
        second = self.recorded_on_relay(self.d.tracery("snapshot", "record", "-s", "out", "--max-size", "64k").stdout)
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
        sent = self.recorded_on_relay(self.d.tracery("snapshot", "record", "-s", "gone", self.url).stdout)
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
    def test_create_snapshot_set_url_with_a_key(self):
        keys = os.path.join(self.d.tmp, "keys")
        with open(keys, "w") as f:
            f.write(f"host-a {secrets.token_hex(32)}\n")
        os.chmod(keys, 0o600)
        relay = Relay(self.d.tmp, name="keyed", args=["--auth-keys", keys])
        self.addCleanup(relay.stop)
        url = f"net://127.0.0.1:{relay.port}"
        self.d.start_daemon()
        out = self.d.tracery("create", "k", "--snapshot", "--set-url", url, "--relay-key", keys).stdout
        self.assertIn(f"in snapshot mode; traces go to the relay at {url} by `snapshot record`", out)
        self.assertIn(f"[1] snapshot-1: {url}", self.d.tracery("snapshot", "list-output", "-s", "k").stdout)
        self.d.tracery("enable-channel", "-u", "chan", "-s", "k", "--subbuf-size", "16k", "--num-subbuf", "4")
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", "k", "-c", "chan")
        self.d.tracery("start", "k")
        emitter = self.d.spawn(["taskset", "-c", "0", program("tests", "daemon-emitter"), "hold", "20000"])
        self.assertEqual(read_line(emitter, "done"), ["20000"])
        self.d.tracery("stop", "k")
        out = self.d.tracery("snapshot", "record", "-s", "k").stdout
        m = re.search(rf"recorded in (\S+) on the relay at 127\.0\.0\.1:{relay.port}$", out.strip())
        self.assertTrue(m, out)
        relay.wait_log("authenticated as key host-a")
        values = [e["payload"]["i"] for e in Trace(os.path.join(relay.output, m.group(1))).events]
        self.assertGreater(len(values), 100)
        self.assertEqual(values, list(range(20000 - len(values), 20000)), "the newest events, contiguous")
        # A session without the key: the relay refuses its snapshot, which says so.
        self.d.tracery("create", "nokey", "--snapshot", "--output", self.out("nokey"))
        self.d.tracery("enable-event", "-u", "emit:tick", "-s", "nokey")
        self.d.tracery("start", "nokey")
        r = self.d.tracery("snapshot", "record", "-s", "nokey", url, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("this relay takes authenticated senders only", r.stderr)


if __name__ == "__main__":
    unittest.main()
