"""relay_auth_test: who may send sessions to tracery-relayd (docs/relay-protocol.md, *Authentication*). Real relays
on loopback with --auth-keys (and one with --tls-cert too), keys and certificates made with the `openssl` command,
senders: relay-send (tests/apps/relay_send.cpp, through control::relay::RelayConnection), a second implementation of
the exchange here in Python (hmac, from the documented bytes) for the hostile cases, and traceryd (`tracery create
--relay-key --relay-ca`). Checks: an unauthenticated sender, a wrong secret and an unknown key are refused before
anything is made, with a log line naming the peer; a right key writes its session; a TLS session's files are
byte-identical to the same trace sent in clear; replayed, swapped and malformed exchange messages are refused;
spoofed creation times and host names make no more directories than the per-sender limit; the relay refuses to
start beyond loopback without keys, and a keys file others may read."""
import glob
import hashlib
import hmac
import os
import secrets
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import unittest

from daemontest import DaemonTestCase
from relaytest import Relay
from tracetest import Trace, program, run_traced

MAGIC = 0x594C5254
HELLO, HELLO_REPLY, AUTH_REQUEST, AUTH_CHALLENGE, AUTH_RESPONSE, AUTH_RESULT = 1, 2, 13, 14, 15, 16
SENDER_SERVICE = 1
REFUSED_UNAUTHENTICATED = "this relay takes authenticated senders only"


def frame(kind, body):
    return struct.pack("<IHHI", MAGIC, 1, kind, len(body)) + body


def string(b):
    return struct.pack("<H", len(b)) + b


def hello(host, session, creation_ns):
    return frame(HELLO, struct.pack("<HHQQ", 1, 0, creation_ns, 0) + string(host.encode()) + string(session.encode()))


def proof(secret, from_server, name, client_nonce, server_nonce, binding=b""):
    """auth.hpp's proof, written again from docs/relay-protocol.md."""
    msg = (b"tracery-auth-v1\0" + bytes([SENDER_SERVICE, ord("S" if from_server else "C"), len(name)]) + name
           + client_nonce + server_nonce + bytes([len(binding)]) + binding)
    return hmac.new(secret, msg, hashlib.sha256).digest()


class Conn:
    """A raw sender connection: frames out, the relay's frames in."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def read_frame(self):
        """(type, body), or None once the relay closed the connection."""
        while True:
            if len(self.buf) >= 12:
                magic, _, kind, length = struct.unpack_from("<IHHI", self.buf)
                assert magic == MAGIC
                if len(self.buf) >= 12 + length:
                    body = self.buf[12:12 + length]
                    self.buf = self.buf[12 + length:]
                    return kind, body
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                return None
            self.buf += data

    def closed(self):
        """Whether the relay closed the connection (which is closed here either way)."""
        gone = self.read_frame() is None
        self.close()
        return gone

    def request(self, name, client_nonce):
        self.send(frame(AUTH_REQUEST, bytes([1]) + string(name) + client_nonce))
        kind, body = self.read_frame()
        assert kind == AUTH_CHALLENGE, kind
        return body

    def authenticate(self, name, secret):
        """The whole exchange, the relay's proof checked: True if accepted."""
        cn = secrets.token_bytes(32)
        sn = self.request(name, cn)
        self.send(frame(AUTH_RESPONSE, proof(secret, False, name, cn, sn)))
        kind, body = self.read_frame()
        assert kind == AUTH_RESULT, kind
        if body[0] != 0:
            return False
        assert body[1:33] == proof(secret, True, name, cn, sn), "the relay's proof is wrong"
        return True

    def hello(self, host, session, creation_ns):
        """HELLO: (accepted, text of the reply)."""
        self.send(hello(host, session, creation_ns))
        kind, body = self.read_frame()
        assert kind == HELLO_REPLY, kind
        (n,) = struct.unpack_from("<H", body, 1)
        return body[0] == 0, body[3:3 + n].decode()

    def close(self):
        self.sock.close()


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def write_private(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


@unittest.skipIf(shutil.which("openssl") is None or shutil.which("babeltrace2") is None,
                 "needs the openssl command and babeltrace2")
class RelayAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tracery-relay-auth-test-")
        t = lambda name: os.path.join(cls.tmp, name)  # noqa: E731
        cls.trace = t("original")
        run_traced([program("bench", "tracery-bench"), "5000", "1", "ev"], cls.trace,
                   {"TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "64"})
        # A CA, the relay's certificate for relay.test and 127.0.0.1, and another CA.
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                t("ca.key"), "-out", t("ca.pem"), "-subj", "/CN=Test CA", "-days", "1")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", t("relay.key"),
                "-out", t("relay.csr"), "-subj", "/CN=relay")
        with open(t("ext"), "w") as f:
            f.write("subjectAltName=DNS:relay.test,IP:127.0.0.1\n")
        openssl("x509", "-req", "-in", t("relay.csr"), "-CA", t("ca.pem"), "-CAkey", t("ca.key"), "-CAcreateserial",
                "-out", t("relay.pem"), "-days", "1", "-extfile", t("ext"))
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                t("other.key"), "-out", t("other-ca.pem"), "-subj", "/CN=Other CA", "-days", "1")
        cls.secret_hex = secrets.token_hex(32)
        cls.flooder_hex = secrets.token_hex(32)
        cls.keys = write_private(t("keys"), f"# the relay's senders\nsender-1 {cls.secret_hex}\n"
                                            f"flooder {cls.flooder_hex}\n")
        cls.key = write_private(t("sender-1.key"), f"sender-1 {cls.secret_hex}\n")
        cls.wrong = write_private(t("wrong.key"), f"sender-1 {secrets.token_hex(32)}\n")
        cls.unknown = write_private(t("unknown.key"), f"nobody {cls.secret_hex}\n")
        cls.plain = Relay(cls.tmp, name="plain", args=["--auth-keys", cls.keys, "--max-dirs-per-sender", "6"])
        cls.tls = Relay(cls.tmp, name="tls", args=["--auth-keys", cls.keys, "--tls-cert", t("relay.pem"),
                                                    "--tls-key", t("relay.key")])

    @classmethod
    def tearDownClass(cls):
        cls.plain.stop()
        cls.tls.stop()
        if not os.environ.get("TRACERY_KEEP_TRACE"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def tearDown(self):
        for relay in (self.plain, self.tls):
            self.assertIsNone(relay.proc.poll(), "tracery-relayd stopped")
            self.assertFalse([l for l in relay.text().splitlines() if "runtime error" in l or "Sanitizer" in l])

    def send(self, relay, session, *args, host="127.0.0.1"):
        return subprocess.run([program("tests", "relay-send"), host, str(relay.port), self.trace, "testhost",
                               session, *args], capture_output=True, text=True, timeout=60)

    def refused(self, relay, session, args, stderr, log, host="127.0.0.1"):
        p = self.send(relay, session, *args, host=host)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(stderr, p.stderr)
        relay.wait_log("127.0.0.1:", log)
        self.assertEqual(relay.sessions(session), [])

    def test_unauthenticated_sender_is_refused(self):
        self.refused(self.plain, "nokey", [], REFUSED_UNAUTHENTICATED,
                     "refused: HELLO without authentication (this relay has --auth-keys)")

    def test_wrong_secret_and_unknown_key_are_refused_alike(self):
        self.refused(self.plain, "wrong", ["--key", self.wrong],
                     "the server refused the key sender-1 (unknown to it, or its secret differs from ours): "
                     "authentication refused", "authentication refused: a wrong proof for the key sender-1")
        self.refused(self.plain, "unknown", ["--key", self.unknown],
                     "the server refused the key nobody (unknown to it, or its secret differs from ours): "
                     "authentication refused", "authentication refused: unknown key nobody")

    def test_right_key_writes_its_session(self):
        p = self.send(self.plain, "right", "--key", self.key)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.plain.wait_log("authenticated as key sender-1")
        self.plain.wait_log("/right-", "ended with BYE")
        (copy,) = self.plain.sessions("right")
        a = subprocess.run(["babeltrace2", self.trace], capture_output=True, text=True, timeout=120)
        b = subprocess.run(["babeltrace2", copy], capture_output=True, text=True, timeout=120)
        self.assertEqual(b.returncode, 0, b.stderr)
        self.assertGreater(a.stdout.count("bench:ev"), 1000)
        self.assertEqual(b.stdout, a.stdout)

    def files_of(self, directory):
        out = {}
        for path in glob.glob(os.path.join(directory, "**"), recursive=True):
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    out[os.path.relpath(path, directory)] = f.read()
        return out

    def test_tls_session_is_byte_identical_to_the_clear_one(self):
        for relay, session, args in ((self.plain, "clear", []), (self.tls, "private", ["--ca", self.tmp + "/ca.pem"])):
            p = self.send(relay, session, "--key", self.key, *args)
            self.assertEqual(p.returncode, 0, p.stderr)
            relay.wait_log(f"/{session}-", "ended with BYE")
        self.tls.wait_log("authenticated as key sender-1 over TLSv1.")
        clear, private = self.files_of(self.plain.sessions("clear")[0]), self.files_of(self.tls.sessions("private")[0])
        # The metadata, the stream file and its index.
        self.assertEqual(len(clear), 3, sorted(clear))
        self.assertGreater(len(clear["ust/uid/1000/64-bit/metadata"]), 1000)
        self.assertGreater(sum(len(b) for b in clear.values()), 50_000)
        self.assertEqual(sorted(private), sorted(clear))
        for name in clear:
            self.assertEqual(private[name], clear[name], name)

    def test_tls_refusals(self):
        ca = self.tmp + "/ca.pem"
        self.refused(self.tls, "clear-to-tls", ["--key", self.key],
                     "the relay refused the connection: this relay takes TLS connections only",
                     "refused: a sender in clear where TLS is required (--tls-cert)")
        self.refused(self.tls, "other-ca", ["--key", self.key, "--ca", self.tmp + "/other-ca.pem"],
                     "TLS handshake: the relay's certificate: unable to get local issuer certificate",
                     "TLS handshake: ")
        # The certificate names relay.test and 127.0.0.1, not localhost.
        self.refused(self.tls, "localhost", ["--key", self.key, "--ca", ca],
                     "TLS handshake: the relay's certificate: hostname mismatch", "TLS handshake: ", host="localhost")
        self.refused(self.tls, "tls-nokey", ["--ca", ca], REFUSED_UNAUTHENTICATED,
                     "refused: HELLO without authentication")
        p = self.send(self.plain, "tls-to-clear", "--key", self.key, "--ca", ca)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("TLS handshake: the peer closed the connection (a relay without --tls-cert closes TLS "
                      "connections)", p.stderr)
        self.plain.wait_log("malformed frame: bad magic")

    def test_replayed_swapped_and_malformed_messages_are_refused(self):
        secret, name = bytes.fromhex(self.secret_hex), b"sender-1"
        # The relay's proof checks out against this second implementation, and HELLO follows.
        c = Conn(self.plain.port)
        self.assertTrue(c.authenticate(name, secret))
        accepted, path = c.hello("h", "proved", time.time_ns())
        self.assertTrue(accepted, path)
        self.assertRegex(path, r"^h/proved-\d{8}-\d{6}$")
        # Authentication frames after HELLO end the connection.
        c.send(frame(AUTH_REQUEST, bytes([1]) + string(name) + bytes(32)))
        self.assertTrue(c.closed())
        self.plain.wait_log("(h/proved-", "AUTH_REQUEST after HELLO")
        # A proof recorded on one connection, replayed on another: a fresh challenge there.
        first = Conn(self.plain.port)
        cn = secrets.token_bytes(32)
        sn = first.request(name, cn)
        recorded = frame(AUTH_RESPONSE, proof(secret, False, name, cn, sn))
        replay = Conn(self.plain.port)
        self.assertNotEqual(replay.request(name, cn), sn)
        replay.send(recorded)
        kind, body = replay.read_frame()
        self.assertEqual((kind, body[0], body[1:33]), (AUTH_RESULT, 1, bytes(32)))
        self.assertTrue(replay.closed())
        self.plain.wait_log("authentication refused: a wrong proof for the key sender-1")
        # The relay's own proof sent back as the sender's (the direction is in the proof).
        first.send(frame(AUTH_RESPONSE, proof(secret, True, name, cn, sn)))
        kind, body = first.read_frame()
        self.assertEqual((kind, body[0]), (AUTH_RESULT, 1))
        self.assertTrue(first.closed())
        for data, log in ((frame(AUTH_RESPONSE, bytes(32)), "AUTH_RESPONSE out of turn"),
                          (frame(AUTH_REQUEST, bytes([1]) + string(b"../x") + bytes(32)),
                           "malformed frame: AUTH_REQUEST: the key name is not a valid key name"),
                          (frame(AUTH_REQUEST, bytes([2]) + string(name) + bytes(32)),
                           "malformed frame: AUTH_REQUEST: unknown method 2"),
                          (frame(AUTH_CHALLENGE, bytes(32)), "AUTH_CHALLENGE")):
            with self.subTest(log=log):
                c = Conn(self.plain.port)
                c.send(data)
                self.assertTrue(c.closed())
                self.plain.wait_log("127.0.0.1:", log)
        # HELLO in the middle of the exchange.
        c = Conn(self.plain.port)
        c.request(name, secrets.token_bytes(32))
        self.addCleanup(c.close)
        self.assertEqual(c.hello("h", "mid", time.time_ns()), (False, "authentication refused"))
        self.assertTrue(c.closed())
        self.assertEqual(self.plain.sessions("mid"), [])

    def test_spoofed_creation_times_make_no_more_directories_than_the_limit(self):
        secret = bytes.fromhex(self.flooder_hex)
        accepted, refusals = 0, set()
        for i in range(40):
            c = Conn(self.plain.port)
            self.assertTrue(c.authenticate(b"flooder", secret))
            ok, text = c.hello(f"host{i}", "flood", 1_000_000_000 * (1_700_000_000 + 86_400 * i))
            accepted += ok
            if not ok:
                refusals.add(text)
            c.close()
        self.assertEqual(accepted, 6)
        self.assertEqual(len(self.plain.sessions("flood")), 6)
        self.assertEqual(refusals, {"refused: key flooder made 6 session directories within 3600 s, the most a "
                                    "sender may (--max-dirs-per-sender)"})


class RelayLimitsTest(unittest.TestCase):
    """A relay on loopback without keys: senders counted by their address."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-relay-limits-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def start(self, *args):
        relay = Relay(self.tmp, args=list(args))
        self.addCleanup(relay.stop)
        return relay

    def test_5000_spoofed_hellos_make_at_most_the_limit(self):
        relay = self.start("--max-dirs-per-sender", "5", "--max-sessions-per-sender", "2")
        # Two open at once: a third is refused until one closes.
        a, b, c = Conn(relay.port), Conn(relay.port), Conn(relay.port)
        self.addCleanup(c.close)
        self.assertTrue(a.hello("h1", "open", time.time_ns())[0])
        self.assertTrue(b.hello("h2", "open", time.time_ns())[0])
        self.assertEqual(c.hello("h3", "open", time.time_ns()),
                         (False, "refused: address 127.0.0.1 already has 2 sessions open, the most a sender may "
                                 "(--max-sessions-per-sender)"))
        a.close()
        relay.wait_log("/open-", "closed without BYE")
        d = Conn(relay.port)
        self.assertTrue(d.hello("h4", "open", time.time_ns())[0])
        b.close()
        d.close()
        relay.wait_log("h4/open-", "closed without BYE")
        accepted = 0
        start = time.time()
        for i in range(5000):
            s = Conn(relay.port)
            accepted += s.hello(f"spoof{i % 100}", "spoof", 1_000_000_000 * (1_600_000_000 + 3600 * i))[0]
            s.close()
        self.assertEqual(accepted, 2, f"in {time.time() - start:.1f} s")
        made = glob.glob(os.path.join(relay.output, "*", "*"))
        self.assertEqual(len(made), 5, made)

    def test_relay_refuses_to_start_open_to_all(self):
        relayd = program("src", "relay", "tracery-relayd")
        base = [relayd, "--port", "0", "--live-port", "0", "--output", self.tmp]
        p = subprocess.run([*base, "--listen", "0.0.0.0"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("tracery-relayd: --listen 0.0.0.0 reaches beyond loopback, and without --auth-keys anyone who "
                      "reaches it could send sessions: give --auth-keys FILE", p.stderr)
        self.assertIn("or --allow-unauthenticated to take any sender on purpose", p.stderr)
        keys = write_private(os.path.join(self.tmp, "keys"), f"k {secrets.token_hex(32)}\n", 0o644)
        p = subprocess.run([*base, "--auth-keys", keys], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"tracery-relayd: --auth-keys {keys}: mode 0644 lets group or others reach it, "
                                   f"and it holds secrets; fix it with: chmod 600 {keys}\n")
        p = subprocess.run([*base, "--tls-cert", keys], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--tls-cert requires --tls-key", p.stderr)
        # Told explicitly, it starts.
        proc = subprocess.Popen([*base, "--listen", "0.0.0.0", "--allow-unauthenticated"], stderr=subprocess.PIPE,
                                text=True)
        try:
            line = proc.stderr.readline()
            self.assertIn("listening on 0.0.0.0:", line)
            # The plain lttng-live port stays on loopback (--live-listen); no keys, no authenticated viewer port.
            self.assertIn("live viewers on 127.0.0.1:", proc.stderr.readline())
            self.assertIn("no authenticated viewer port", proc.stderr.readline())
            self.assertIn("senders: in clear, no keys, unauthenticated ones taken", proc.stderr.readline())
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stderr.close()


@unittest.skipIf(shutil.which("openssl") is None or shutil.which("babeltrace2") is None,
                 "needs the openssl command and babeltrace2")
class DaemonRelayAuthTest(DaemonTestCase):
    """traceryd as the sender: tracery create --relay-key --relay-ca."""

    def test_create_with_key_and_tls(self):
        tmp = self.d.tmp
        t = lambda name: os.path.join(tmp, name)  # noqa: E731
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                t("relay.key"), "-out", t("relay.pem"), "-subj", "/CN=relay", "-days", "1", "-addext",
                "subjectAltName=IP:127.0.0.1")
        secret = secrets.token_hex(32)
        keys = write_private(t("keys"), f"host-a {secret}\n")
        relay = Relay(tmp, args=["--auth-keys", keys, "--tls-cert", t("relay.pem"), "--tls-key", t("relay.key")])
        self.addCleanup(relay.stop)
        url = f"net://127.0.0.1:{relay.port}"
        self.d.start_daemon()
        # The command checks the files first, with the user's rights.
        for args, expected in (
                (["--relay-key", keys], "--relay-key and --relay-ca are for a session sent to a relay"),
                (["--set-url", url, "--relay-key", write_private(t("open.key"), f"host-a {secret}\n", 0o640)],
                 "--relay-key " + t("open.key") + ": mode 0640 lets group or others reach it"),
                (["--set-url", url, "--relay-ca", keys], "--relay-ca " + keys + ": no PEM certificate"),
                (["--set-url", url, "--relay-ca", t("relay.pem")], "this relay takes authenticated senders only"),
                (["--set-url", url, "--relay-key", keys], "this relay takes TLS connections only")):
            with self.subTest(args=args):
                r = self.d.tracery("create", "bad", *args, check=False)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(expected, r.stderr)
        self.assertNotIn("bad", self.d.tracery("list").stdout)
        self.d.tracery("create", "safe", "--set-url", url, "--relay-key", keys, "--relay-ca", t("relay.pem"))
        relay.wait_log("authenticated as key host-a over TLSv1.")
        self.d.tracery("enable-event", "-u", "emit:*", "-s", "safe")
        self.d.tracery("start", "safe")
        out = self.d.run([program("tests", "daemon-emitter"), "count", "3000"])
        self.assertIn("done 3000", out)
        self.d.tracery("stop", "safe")
        self.d.tracery("destroy", "safe")
        relay.wait_log("/safe-", "ended with BYE")
        (copy,) = relay.sessions("safe")
        trace = Trace(copy)
        self.assertEqual(len(trace.events) + trace.discarded, 6000)
        self.assertEqual(trace.discarded, 0)


if __name__ == "__main__":
    unittest.main()
