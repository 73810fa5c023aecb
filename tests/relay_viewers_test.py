"""relay_viewers_test: who may read which live session of a real tracery-relayd, and through what. The relay has
keys (alice, bob) and a certificate, so senders and viewers of its authenticated viewer port use TLS; relay-send
(tests/apps/relay_send.cpp) sends a trace made by tracery-bench (daemonless) as alice.

Checks: `tracery view --live` over TLS with alice's key prints, byte for byte, what the same command prints of the
same session on the plain lttng-live port (the session marked public), both reading at once, and what `tracery view`
prints of the source trace. As another user (`nobody`, root only): an unmarked session of alice is listed neither
on the plain port (babeltrace2's listing, tracery view --live) nor to bob's key on the authenticated port, a viewer
without a key or with a wrong secret is refused there, and none of them prints an event; alice's key lists it."""
import os
import secrets
import shutil
import subprocess
import tempfile
import unittest

from relaytest import RelaydTestCase, start_relayd
from tracetest import program, run_traced
from view_live_test import PERIOD_MS, SMALL, Run

AS_NOBODY = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]


def tracery(*args, user=(), timeout=60):
    return subprocess.run([*user, program("src", "cli", "tracery"), *args], capture_output=True, text=True,
                          timeout=timeout)


@unittest.skipIf(shutil.which("openssl") is None or shutil.which("babeltrace2") is None,
                 "needs the openssl command (a test certificate) and babeltrace2")
class RelayViewersTest(RelaydTestCase):
    prefix = "tracery-relay-viewers-test-"

    @classmethod
    def write_key(cls, name, line, owner=None):
        path = os.path.join(cls.tmp, name)
        with open(path, "w") as f:
            f.write(line + "\n")
        os.chmod(path, 0o600)
        if owner is not None:
            os.chown(path, owner, owner)
        return path

    @classmethod
    def make_traces(cls):
        os.chmod(cls.tmp, 0o755)  # another user's viewer reads its key and the CA here
        cls.trace = os.path.join(cls.tmp, "trace")
        run_traced([program("bench", "tracery-bench"), "10000", "2", "ev"], cls.trace, SMALL)
        cls.cert, key = os.path.join(cls.tmp, "cert.pem"), os.path.join(cls.tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", cls.cert, "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
        alice, bob = secrets.token_hex(32), secrets.token_hex(32)
        cls.keys = cls.write_key("relay.keys", f"alice {alice}\nbob {bob}")
        cls.alice = cls.write_key("alice.key", f"alice {alice}")
        nobody = 65534
        cls.bob_nobody = cls.write_key("bob-nobody.key", f"bob {bob}", nobody if os.geteuid() == 0 else None)
        cls.wrong_nobody = cls.write_key("wrong-nobody.key", f"alice {secrets.token_hex(32)}",
                                         nobody if os.geteuid() == 0 else None)
        cls.relay_args = ["--auth-keys", cls.keys, "--tls-cert", cls.cert, "--tls-key", key]

    @classmethod
    def setUpClass(cls):
        # RelaydTestCase's relay, with keys and TLS.
        cls.tmp = tempfile.mkdtemp(prefix=cls.prefix)
        cls.make_traces()
        cls.output = os.path.join(cls.tmp, "relay")
        cls.log_path = os.path.join(cls.tmp, "relayd.log")
        cls.relayd, cls.port, cls.live_port, cls.log = start_relayd(cls.output, cls.log_path, args=cls.relay_args)
        with open(cls.log_path) as f:
            text = f.read()
        lines = [l for l in text.splitlines() if "authenticated viewers on 127.0.0.1:" in l]
        assert lines, text
        cls.viewer_port = int(lines[0].split("127.0.0.1:")[1].split(" ")[0])

    def start_sender(self, session, *extra):
        """relay-send --live --wait-go as alice, over TLS: its packets wait for go()."""
        p = subprocess.Popen([program("tests", "relay-send"), "localhost", str(self.port), self.trace, "testhost",
                              session, "--live", str(PERIOD_MS), "--wait-go", "--key", self.alice, "--ca",
                              self.cert, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        line = p.stdout.readline().strip()
        self.assertTrue(line, "relay-send gave no session path")
        self.addCleanup(self.close_sender, p)
        return p

    @staticmethod
    def close_sender(p):
        if p.poll() is None:
            p.kill()
        p.wait()
        for f in (p.stdin, p.stdout, p.stderr):
            if not f.closed:
                f.close()

    def authenticated_url(self, session):
        return f"net://localhost:{self.viewer_port}/host/testhost/{session}"

    def test_tls_viewer_prints_what_the_plain_one_does(self):
        sender = self.start_sender("both-ports", "--interval", "5", "--public-live")
        plain = Run([program("src", "cli", "tracery"), "view", "--live",
                     f"net://localhost:{self.live_port}/host/testhost/both-ports"])
        secure = Run([program("src", "cli", "tracery"), "view", "--live", self.authenticated_url("both-ports"),
                      "--relay-key", self.alice, "--relay-ca", self.cert])
        self.wait_log("authenticated viewer 127.0.0.1:", "authenticated as key alice over TLS")
        self.wait_log("authenticated viewer 127.0.0.1:", "attached to testhost/both-ports (session ")
        self.wait_log("attached to testhost/both-ports (session ", "2 of 16 viewers")
        sender.stdin.write("go\n")
        sender.stdin.close()
        self.assertEqual(sender.wait(timeout=120), 0, sender.stderr.read())
        code, out, err = plain.wait()
        self.assertEqual(code, 0, err)
        tls_code, tls_out, tls_err = secure.wait()
        self.assertEqual(tls_code, 0, tls_err)
        self.assertGreater(len(out.splitlines()), 5000)
        self.assertEqual(tls_out, out)
        self.assertEqual((tls_err, err), ("", ""))
        disk = tracery("view", self.trace, timeout=300)
        self.assertEqual(out, disk.stdout)

    @unittest.skipIf(os.geteuid() != 0, "runs a viewer as nobody: root only")
    def test_another_user_lists_and_reads_nothing(self):
        self.start_sender("private", "--interval", "5")  # not public, sent as alice
        absent = self.authenticated_url("absent")

        # The plain port: not listed (babeltrace2's listing, tracery view --live's error), not readable.
        listing = subprocess.run([*AS_NOBODY, "babeltrace2", "-i", "lttng-live", f"net://localhost:{self.live_port}"],
                                 capture_output=True, text=True, timeout=60)
        self.assertEqual(listing.returncode, 0, listing.stderr)
        self.assertNotIn("private", listing.stdout)
        p = tracery("view", "--live", f"net://localhost:{self.live_port}/host/testhost/private", user=AS_NOBODY)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertNotIn("  testhost/private (", p.stderr)
        self.assertIn("no live session testhost/private on the relay", p.stderr)

        # The authenticated port: no key (lttng-live in clear), a wrong secret: refused, nothing printed.
        p = tracery("view", "--live", self.authenticated_url("private"), user=AS_NOBODY)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("went away", p.stderr)
        self.wait_log("authenticated viewer 127.0.0.1:", "TLS handshake: ")
        p = tracery("view", "--live", self.authenticated_url("private"), "--relay-key", self.wrong_nobody,
                    "--relay-ca", self.cert, user=AS_NOBODY)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertIn("did not authenticate the key alice", p.stderr)
        self.assertIn("authentication refused", p.stderr)
        self.wait_log("authenticated viewer 127.0.0.1:", "authentication refused: a wrong proof for the key alice")

        # Bob's key (another identity): nothing of alice's is listed, nor attachable by name.
        for url in (absent, self.authenticated_url("private")):
            p = tracery("view", "--live", url, "--relay-key", self.bob_nobody, "--relay-ca", self.cert,
                        user=AS_NOBODY)
            self.assertEqual((p.returncode, p.stdout), (1, ""))
            self.assertIn("; it has no live session now", p.stderr)
        self.wait_log("authenticated as key bob over TLS")

        # Alice's key lists it.
        p = tracery("view", "--live", absent, "--relay-key", self.alice, "--relay-ca", self.cert)
        self.assertEqual(p.returncode, 1)
        self.assertIn("it has:\n  testhost/private (", p.stderr)


if __name__ == "__main__":
    unittest.main()
