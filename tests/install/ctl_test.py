"""The control library from outside the source tree: installs this build into a fresh prefix with `cmake
--install`, builds ctl_client/ctl_client.c there with pkg-config and libtracery-ctl alone, and runs it and its
Python twin (ctl_client/ctl_client.py, over the installed tracery.ctl) against a private traceryd: a session set
up, started, an instrumented child run (daemon-emitter), stopped, its dropped count read, cleaned up, and the
trace read with babeltrace2's bt2 (events plus discarded against what the child emitted and the dropped count);
and the errors (no daemon, a session that does not exist, a NULL argument) as codes with the messages the
`tracery` command prints for the same mistakes.

CTest sets the environment as for install_test.py (tests/CMakeLists.txt).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from daemontest import DaemonEnv  # noqa: E402
from tracetest import Trace, program  # noqa: E402

ENV = os.environ
BUILD_DIR = ENV["TRACERY_BUILD_DIR"]
CMAKE = ENV.get("TRACERY_CMAKE_COMMAND", "cmake")
LIBDIR = ENV["TRACERY_INSTALL_LIBDIR"]
PYTHON_DIR = ENV.get("TRACERY_PYTHON_INSTALL_DIR", "")
SANITIZE = ENV.get("TRACERY_SANITIZE", "")
C_SANITIZE_LDFLAGS = f"-fsanitize={SANITIZE}" + (
    " -fsanitize-link-c++-runtime -lstdc++" if "clang" in os.path.basename(ENV.get("TRACERY_C_COMPILER", "")) else "")
EMITTER = program("tests", "daemon-emitter")
# enum tracery_ctl_state, enum tracery_ctl_error
STARTED, STOPPED = 2, 4
INVALID, NO_DAEMON, REFUSED = -1, -2, -4
NO_DAEMON_MESSAGE = "no session daemon: `tracery create` starts one, or start one with `traceryd --daemonize`"
NO_DAEMON_NO_AUTOSTART_MESSAGE = ("no session daemon: start one with `traceryd --daemonize` (TRACERY_NO_AUTOSTART "
                                  "keeps `tracery create` from starting one)")


def run(argv, env=None, cwd=None):
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


class ControlLibrary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("babeltrace2") is None:
            raise unittest.SkipTest("babeltrace2 is not installed")
        cls.tmp = tempfile.mkdtemp(prefix="tracery-ctl-test-")
        try:
            prefix = cls.prefix = os.path.join(cls.tmp, "prefix")
            run([CMAKE, "--install", BUILD_DIR, "--prefix", prefix])
            cls.libdir = os.path.join(prefix, LIBDIR)
            cls.python_dir = os.path.join(prefix, PYTHON_DIR) if PYTHON_DIR else ""
            build = os.path.join(cls.tmp, "client")
            os.mkdir(build)
            make = ["make", "-f", os.path.join(HERE, "ctl_client", "Makefile")]
            if ENV.get("TRACERY_C_COMPILER"):
                make.append(f"CC={ENV['TRACERY_C_COMPILER']}")
            if SANITIZE:
                make += [f"CFLAGS=-O2 -g -fsanitize={SANITIZE}", f"LDFLAGS={C_SANITIZE_LDFLAGS}"]
            env = {k: v for k, v in ENV.items() if not k.startswith("TRACERY_")}
            env["PKG_CONFIG_PATH"] = os.path.join(cls.libdir, "pkgconfig")
            run(make, env=env, cwd=build)
            cls.c_client = os.path.join(build, "ctl-client")
        except BaseException:
            shutil.rmtree(cls.tmp)
            raise

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.d = DaemonEnv()
        self.addCleanup(self.d.cleanup)

    def clients(self):
        """(what, argv prefix, extra environment) of each client: C, and Python where it can run."""
        yield "C", [self.c_client], {"LD_LIBRARY_PATH": self.libdir}
        if self.python_dir and not SANITIZE:
            yield "Python", [sys.executable, os.path.join(HERE, "ctl_client", "ctl_client.py")], {
                "PYTHONPATH": self.python_dir}

    def client(self, argv, extra_env):
        env = dict(self.d.env, **extra_env)
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)

    def test_links_only_the_control_library(self):
        ldd = run(["ldd", self.c_client], env=dict(ENV, LD_LIBRARY_PATH=self.libdir)).stdout
        self.assertRegex(ldd, r"libtracery-ctl\.so\.0 => " + re.escape(os.path.join(self.libdir, "libtracery-ctl.so.0")))
        if not SANITIZE:
            self.assertNotIn("libstdc++", ldd)
            self.assertNotIn("libtracery.so", ldd)

    def trace(self, name, buf_size, buf_nr, count, only=None, runner=()):
        """Each client's (or those named in ONLY) session NAME-client around `daemon-emitter count COUNT` (run by
        RUNNER, a command prefix, if given): (what, printed, trace)."""
        self.d.start_daemon()
        root = os.path.join(self.d.tmp, "traces")
        for what, argv, extra_env in self.clients():
            if only is not None and what not in only:
                continue
            session = f"{name}-{what}"
            proc = self.client([*argv, "trace", root, session, str(buf_size), str(buf_nr), *runner, EMITTER,
                                "count", str(count)], extra_env)
            self.assertEqual(proc.returncode, 0, f"{what}: {proc.stdout}{proc.stderr}\n{self.d.log()}")
            printed = [line.split() for line in proc.stdout.splitlines() if not line.startswith(("ready", "done"))]
            self.assertEqual([p[0] for p in printed], ["state", "state", "dropped"], proc.stdout)
            self.assertEqual(int(printed[0][1]), STARTED, what)
            self.assertEqual(int(printed[1][1]), STOPPED, what)
            # cleanup destroyed it
            self.assertNotIn(session, self.d.tracery("list").stdout)
            yield what, int(printed[2][1]), Trace(os.path.join(root, session))

    def test_a_session_traces_a_child_and_nothing_is_dropped(self):
        count = 500
        for what, dropped, trace in self.trace("whole", 0, 0, count):
            self.assertEqual(dropped, 0, what)
            self.assertEqual(trace.discarded, 0, what)
            names = [e["name"] for e in trace.events]
            self.assertEqual(names.count("emit:tick"), count, what)
            self.assertEqual(names.count("emit:other"), count, what)
            self.assertEqual(len(names), 2 * count, what)

    def test_the_dropped_count_is_what_the_trace_misses(self):
        # Two sub-buffers of a page each per CPU for hundreds of thousands of events: the emitter outruns the
        # consumer unless the consumer, woken on the emitter's CPU, preempts it each time a sub-buffer fills
        # (which a loaded machine's scheduler does). As root the emitter runs at a real-time priority, which the
        # consumer cannot preempt; otherwise each client gets attempts of growing length until one drops. Every
        # attempt's accounting must hold.
        chrt = shutil.which("chrt")
        runner = (chrt, "--fifo", "1") if os.geteuid() == 0 and chrt else ()
        waiting = {what for what, _, _ in self.clients()}
        for attempt, count in enumerate((200_000, 400_000, 800_000)):
            for what, dropped, trace in self.trace(f"small{attempt}", 4096, 2, count, only=set(waiting),
                                                   runner=runner):
                self.assertEqual(len(trace.events) + trace.discarded, 2 * count, what)
                self.assertEqual(trace.discarded, dropped, what)
                if dropped > 0:
                    waiting.discard(what)
            if not waiting:
                break
        self.assertEqual(waiting, set(), "no attempt dropped an event")

    def call(self, argv, extra_env, what, name):
        proc = self.client([*argv, "call", what, name], extra_env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        call, code, message = proc.stdout.rstrip("\n").split(" ", 2)
        self.assertEqual(call, what)
        return int(code), message

    def test_errors_come_back_as_codes_with_the_commands_messages(self):
        no_daemon = self.d.tracery("start", "nope", check=False)
        self.assertNotEqual(no_daemon.returncode, 0)
        self.assertEqual(no_daemon.stderr, f"tracery: {NO_DAEMON_MESSAGE}\n")
        for what, argv, extra_env in self.clients():
            self.assertEqual(self.call(argv, extra_env, "start", "nope"), (NO_DAEMON, NO_DAEMON_MESSAGE), what)
        self.d.start_daemon()
        for verb, call in (("start", "start"), ("stop", "stop"), ("destroy", "cleanup"), ("status", "state")):
            command = self.d.tracery(verb, "nope", check=False)
            self.assertNotEqual(command.returncode, 0)
            for what, argv, extra_env in self.clients():
                code, message = self.call(argv, extra_env, call, "nope")
                self.assertEqual(code, REFUSED, what)
                self.assertIn("nope", message, what)
                # The command prints the same message, after its name.
                self.assertEqual(command.stderr.strip(), f"tracery: {message}", f"{what} {call}")
        for what, argv, extra_env in self.clients():
            self.assertEqual(self.call(argv, extra_env, "setup-null-root", "s"), (INVALID, "root_dir is NULL"), what)

    def test_setup_starts_a_daemon_when_none_answers(self):
        for what, argv, extra_env in self.clients():
            d = DaemonEnv()
            self.addCleanup(d.cleanup)
            env = dict(d.env, **extra_env)
            told = subprocess.run([*argv, "call", "setup", "s"], env=dict(env, TRACERY_NO_AUTOSTART="1"),
                                  cwd=d.tmp, capture_output=True, text=True, timeout=60)
            self.assertEqual((told.stdout, told.stderr),
                             (f"setup {NO_DAEMON} {NO_DAEMON_NO_AUTOSTART_MESSAGE}\n", ""), what)
            self.assertEqual(d.daemon_pid(), 0, what)
            proc = subprocess.run([*argv, "call", "setup", "s"], env=env, cwd=d.tmp, capture_output=True, text=True,
                                  timeout=60)
            self.assertEqual(proc.stdout, "setup 0 \n", f"{what}: {proc.stderr}")
            # The command's line, from the library: the daemon is the user's own, its log in the run directory.
            self.assertRegex(proc.stderr, r"^tracery: no session daemon answered: started one \(traceryd, "
                             r"(the system daemon|your own); its log: " + re.escape(d.rundir) + r"/traceryd.log\)\n$",
                             what)
            pid = d.daemon_pid()
            self.assertGreater(pid, 0, what)
            self.assertEqual(os.readlink(f"/proc/{pid}/exe"), os.path.join(self.prefix, "bin", "traceryd"), what)
            self.assertEqual(d.tracery("status", "s").returncode, 0, what)
            # A daemon answers now: a second setup starts none and says nothing.
            again = subprocess.run([*argv, "call", "setup", "t"], env=env, cwd=d.tmp, capture_output=True, text=True,
                                   timeout=60)
            self.assertEqual((again.stdout, again.stderr, d.daemon_pid()), ("setup 0 \n", "", pid), what)

    def test_python_control_does_not_load_the_tracing_library(self):
        out = self.python(
            "import json, sys\n"
            "from tracery import ctl\n"
            "def loaded():\n"
            "    with open('/proc/self/maps') as f:\n"
            "        return sorted({l.split()[-1].rsplit('/', 1)[-1].split('.so')[0] for l in f if 'libtracery' in l})\n"
            "print('ctl', json.dumps([loaded(), 'tracery._tracery' in sys.modules]))\n"
            "import tracery\n"
            "tracery.Event('ctl:lazy', n=int)\n"
            "print('agent', json.dumps([loaded(), 'tracery._tracery' in sys.modules]))\n")
        self.assertEqual(out["ctl"], [["libtracery-ctl"], False])
        self.assertEqual(out["agent"], [["libtracery", "libtracery-ctl"], True])

    def python(self, code, *args):
        """Runs CODE with the installed tracery package against the daemon: what it printed, one JSON value a
        line, by the line's first word."""
        if not self.python_dir or SANITIZE:
            self.skipTest("the installed Python package is missing or built with sanitizers")
        env = dict(self.d.env, PYTHONPATH=self.python_dir)
        proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, f"{proc.stdout}{proc.stderr}\n{self.d.log()}")
        return {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in proc.stdout.splitlines()}

    def test_python_sessions_channels_events_and_status(self):
        self.d.start_daemon()
        out = self.python(
            "import json, sys\n"
            "from tracery import ctl\n"
            "ctl.create_session('full', sys.argv[1])\n"
            "ctl.enable_channel('full', 'big', subbuf_size=65536, num_subbuf=8, overwrite=True)\n"
            "ctl.enable_events('full', ['emit:*'], channel='big', filter='i > 1', exclusions=['emit:other'])\n"
            "ctl.add_context('full', ['vpid', 'procname'], channel='big')\n"
            "print('sessions', json.dumps([(s['name'], s['state']) for s in ctl.list_sessions()]))\n"
            "print('status', json.dumps(ctl.status('full')))\n"
            "try:\n"
            "    ctl.enable_channel('full', 'tiny', subbuf_size=1000)\n"
            "except ctl.Error as e:\n"
            "    print('refused', json.dumps([type(e).__name__, e.code, str(e)]))\n"
            "ctl.destroy_session('full')\n"
            "print('after', json.dumps(ctl.list_sessions()))\n",
            os.path.join(self.d.tmp, "full"))
        self.assertEqual(out["sessions"], [["full", "created"]])
        status = out["status"]
        self.assertEqual((status["name"], status["state"], status["output"]),
                         ("full", "created", os.path.join(self.d.tmp, "full")))
        big = next(c for c in status["channels"] if c["name"] == "big")
        self.assertEqual((big["subbuf_size"], big["num_subbuf"], big["mode"]), (65536, 8, "overwrite"))
        self.assertEqual(sorted(big["context"]), ["procname", "vpid"])
        self.assertEqual(len(big["enabled"]), 1)
        self.assertTrue(big["enabled"][0].startswith("emit:*"), big["enabled"])
        self.assertIn("i > 1", big["enabled"][0])
        kind, code, message = out["refused"]
        self.assertEqual((kind, code), ("Refused", REFUSED), message)
        self.assertIn("1000", message)
        self.assertEqual(out["after"], [])

    def test_python_snapshot_outputs_saved_sessions_probes_and_relay_files(self):
        self.d.start_daemon()
        key = os.path.join(self.d.tmp, "relay.key")
        with open(key, "w") as f:
            f.write("laptop 00112233445566778899aabbccddeeff\n")
        os.chmod(key, 0o644)
        out = self.python(
            "import json, os, sys\n"
            "from tracery import ctl\n"
            "tmp = sys.argv[1]\n"
            "os.chdir(tmp)\n"
            "def refused(f, *args, **kwargs):\n"
            "    try:\n"
            "        f(*args, **kwargs)\n"
            "    except ctl.Error as e:\n"
            "        return [type(e).__name__, str(e)]\n"
            "ctl.create_session('snap', os.path.join(tmp, 'snap'), snapshot=True)\n"
            "print('added', json.dumps(ctl.snapshot_add_output('snap', 'shots', name='disk', max_size=1 << 20)))\n"
            "print('listed', json.dumps(ctl.snapshot_list_outputs('snap')))\n"
            "ctl.enable_events('snap', ['emit:*'])\n"
            "ctl.start('snap')\n"
            "print('record', json.dumps(ctl.snapshot_record('snap')))\n"
            "ctl.stop('snap')\n"
            "text = ctl.save_session('snap')\n"
            "print('saved', json.dumps(json.loads(text)['name']))\n"
            "print('deleted', json.dumps(ctl.snapshot_del_output('snap', 1)))\n"
            "print('loaded', json.dumps(ctl.load_session(text, origin='saved.json', name='again')))\n"
            "print('again', json.dumps(ctl.snapshot_list_outputs('again')))\n"
            "print('sessions', json.dumps(sorted((s['name'], s['snapshot']) for s in ctl.list_sessions())))\n"
            "print('twice', json.dumps(refused(ctl.load_session, text, origin='saved.json', name='again')))\n"
            "ctl.create_session('probed', os.path.join(tmp, 'probed'))\n"
            "print('probe', json.dumps(refused(ctl.enable_userspace_probe, 'probed', 'p', 'elf:missing/prog:main')))\n"
            "url = 'net://127.0.0.1:1'\n"
            "print('open_key', json.dumps(refused(ctl.create_session, 'r', url=url, relay_key_file=sys.argv[2])))\n"
            "os.chmod(sys.argv[2], 0o600)\n"
            "print('no_relay', json.dumps(refused(ctl.create_session, 'r', url=url, relay_key_file=sys.argv[2])))\n",
            self.d.tmp, key)
        shots = os.path.join(self.d.tmp, "shots")
        self.assertEqual(out["added"], [{"name": "disk", "path": shots, "max_size": 1 << 20}])
        self.assertEqual(out["listed"], out["added"])
        self.assertTrue(out["record"].startswith(shots + "/"), out["record"])  # the output, not the session's dir
        self.assertEqual(out["saved"], "snap")
        self.assertEqual(out["deleted"], [])
        self.assertEqual((out["loaded"]["session"], out["loaded"]["started"]), ("again", False))
        self.assertEqual(out["again"], out["added"])  # saved with its output, loaded with it
        self.assertEqual(out["sessions"], [["again", True], ["snap", True]])  # (before 'probed')
        self.assertEqual(out["twice"][0], "Refused")
        self.assertIn("again", out["twice"][1])
        # the probe's path made absolute against the caller's directory, as the command makes it
        self.assertIn(os.path.join(self.d.tmp, "missing/prog"), out["probe"][1])
        self.assertEqual(out["open_key"][0], "InvalidArgument")
        self.assertTrue(out["open_key"][1].startswith("attr->relay_key_file " + key), out["open_key"])
        # the key read and sent: the daemon then fails to reach the relay
        self.assertNotEqual(out["no_relay"][0], "InvalidArgument", out["no_relay"])
        self.assertIn("127.0.0.1:1", out["no_relay"][1])

    def test_python_trigger_notifications(self):
        self.d.start_daemon()
        out = self.python(
            "import json, select, subprocess, sys\n"
            "from tracery import ctl\n"
            "name = ctl.add_trigger([ctl.Action('notify')], name='third-tick', pattern='emit:tick',\n"
            "                       filter='i == 2', captures=['i'])\n"
            "print('added', json.dumps(name))\n"
            "print('listed', json.dumps([(t['name'], t['condition']['pattern']) for t in ctl.list_triggers()]))\n"
            "with ctl.Watch([name]) as w:\n"
            "    print('before', json.dumps(w.next()))\n"
            "    subprocess.run([sys.argv[1], 'count', '5'], check=True, stdout=subprocess.DEVNULL)\n"
            "    ready, _, _ = select.select([w], [], [], 30)\n"
            "    n = w.next()\n"
            "    print('notified', json.dumps([n['trigger'], n['event'], n['captures'], n['dropped']]))\n"
            "ctl.remove_trigger(name)\n"
            "print('left', json.dumps(ctl.list_triggers()))\n",
            EMITTER)
        self.assertEqual(out["added"], "third-tick")
        self.assertEqual(out["listed"], [["third-tick", "emit:tick"]])
        self.assertIsNone(out["before"])
        self.assertEqual(out["notified"], ["third-tick", "emit:tick", {"i": 2}, 0])
        self.assertEqual(out["left"], [])


if __name__ == "__main__":
    unittest.main()
