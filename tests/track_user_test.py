"""`tracery track -u` and `untrack -u` (--vpid, --vuid, --vgid, --all) against
a real traceryd: a session narrowed to one user's programs or to one program
records no other's events, and its trace's env names the program tracked; tracking changed while a session traces applies at
once to programs already registered; the rules show in `tracery status`; bad
requests get one line naming the fix. Another user's programs need root (a
system daemon and a user made with useradd); the rest runs as anyone."""
import collections
import os
import subprocess
import unittest

from daemontest import DaemonTestCase, UsersTestCase, go, read_line
from tracetest import Trace, program

EMITTER = program("tests", "daemon-emitter")


def by_vpid(path):
    """{vpid: number of events} of a trace whose events carry the vpid context."""
    return dict(collections.Counter(e["context"]["vpid"] for e in Trace(path).events))


class TrackOneUser(UsersTestCase):
    def test_only_the_tracked_users_programs_are_recorded(self):
        self.d.start_daemon("--group", self.group)
        user, home, uid = self.add_user("t")
        path = self.session("s", context=("vpid",))
        # By name: the command resolves it.
        r = self.d.tracery("track", "-u", "--vuid=root", "-s", "s")
        self.assertEqual(r.stdout.splitlines(), [
            "Tracking of session 's' changed",
            "  tracked process attributes (user space):",
            "    Virtual process IDs:  all",
            "    Virtual user IDs:     0",
            "    Virtual group IDs:    all",
        ])
        self.d.tracery("start", "s")

        def run_as(who, n):
            argv = [EMITTER, "count", str(n)]
            if who:
                argv = ["runuser", "-p", "-u", who, "--", *argv]
            p = self.d.spawn(argv, stdin=subprocess.DEVNULL, extra_env={"HOME": home} if who else None)
            pid = int(read_line(p, "ready")[0])
            self.assertEqual(p.wait(timeout=60), 0, p.stderr.read())
            return pid

        mine = run_as(None, 10)
        theirs = run_as(user, 7)
        # Tracking the user too while tracing: its next program is recorded.
        self.d.tracery("track", "-u", f"--vuid={uid}", "-s", "s")
        self.assertIn(f"    Virtual user IDs:     0, {uid}\n", self.d.tracery("status", "s").stdout)
        theirs_later = run_as(user, 5)
        self.d.tracery("stop", "s")
        self.assertEqual(by_vpid(path), {mine: 20, theirs_later: 10})
        self.assertNotEqual(theirs, theirs_later)


    def test_a_program_in_namespaces_of_its_own_is_tracked_by_its_own_ids(self):
        """As LTTng takes them: the vpid and vuid a program has in its own pid and user namespaces (unshare
        makes it pid 1 and root there), not those the daemon sees."""
        self.d.start_daemon("--group", self.group)
        user, home, uid = self.add_user("n")
        own_namespaces = ["runuser", "-p", "-u", user, "--", "unshare", "--user", "--map-root-user", "--pid",
                          "--fork"]
        if subprocess.run([*own_namespaces, "true"], capture_output=True).returncode != 0:
            self.skipTest("unshare cannot make user and pid namespaces here")
        path = self.session("s", context=("vpid",))
        self.d.tracery("track", "-u", "--vpid=1", "--vuid=0")
        self.d.tracery("start")
        for argv in ([*own_namespaces, EMITTER, "count", "6"], ["runuser", "-p", "-u", user, "--", EMITTER, "count",
                                                                 "6"]):
            p = self.d.spawn(argv, stdin=subprocess.DEVNULL, extra_env={"HOME": home})
            pid = int(read_line(p, "ready")[0])
            self.assertEqual(p.wait(timeout=60), 0)
        self.assertNotEqual(pid, 1)  # the second one
        self.d.tracery("stop")
        self.assertEqual(by_vpid(path), {1: 12})
        self.assertNotEqual(uid, 0)


class TrackPrograms(DaemonTestCase):
    def test_one_of_two_programs_by_vpid(self):
        """Per-user and per-process buffers alike: only the tracked program's events, all of them."""
        self.d.start_daemon()
        for buffers in ("--buffers-uid", "--buffers-pid"):
            with self.subTest(buffers=buffers):
                name = buffers[2:]
                a, pid_a = self.d.spawn_registered([EMITTER, "count", "50", "wait"])
                b, pid_b = self.d.spawn_registered([EMITTER, "count", "50", "wait"])
                path = self.session(name, context=("vpid",), channel_args=[buffers])
                self.d.tracery("track", "-u", "--vpid", str(pid_a), "-s", name)
                self.d.tracery("start", name)
                status = self.d.tracery("status", name).stdout
                self.assertIn(f"    Virtual process IDs:  {pid_a}\n", status)
                self.assertIn(f"programs tracing into it: {pid_a}\n", status)
                for p in (a, b):
                    go(p)
                    self.assertEqual(p.wait(timeout=60), 0)
                self.d.tracery("stop", name)
                self.assertEqual(by_vpid(path), {pid_a: 100})
                # the trace's env names the tracked program; babeltrace2 reads it without a word on stderr; the
                # HTML timeline is told
                metadata = [os.path.join(d, "metadata") for d, _, files in os.walk(path) if "metadata" in files]
                self.assertTrue(metadata)
                for m in metadata:
                    with open(m) as f:
                        self.assertIn(f'\ttracery_tracked_vpid = "{pid_a}";\n', f.read())
                r = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=60)
                self.assertEqual((r.returncode, r.stderr), (0, ""))
                page = os.path.join(self.d.tmp, name + ".html")
                self.d.tracery("export", "--format", "html", path, page)
                with open(page) as f:
                    self.assertIn(f'"tracked":[{pid_a}]', f.read())

    def test_tracking_changed_while_tracing(self):
        """A program's events appear only while it is tracked: untrack --all first (no program), then track
        its vpid, untrack it, and track --all again, a round of events between each."""
        self.d.start_daemon()
        path = self.session("s", context=("vpid",))
        r = self.d.tracery("untrack", "-u", "--all", "--vpid")
        self.assertIn("    Virtual process IDs:  none\n", r.stdout)
        self.d.tracery("start")
        p, pid = self.d.spawn_registered([EMITTER, "rounds", "25"])
        other, other_pid = self.d.spawn_registered([EMITTER, "rounds", "25"])
        self.assertIn("programs tracing into it: none\n", self.d.tracery("status").stdout)

        def round_of_both(expected):
            for q in (p, other):
                go(q)
                self.assertEqual(read_line(q, "round"), [str(expected)])

        round_of_both(1)  # no program tracked
        self.d.tracery("track", "-u", f"--vpid={pid}")
        self.assertIn(f"programs tracing into it: {pid}\n", self.d.tracery("status").stdout)
        round_of_both(2)
        r = self.d.tracery("untrack", "-u", f"--vpid={pid}")
        self.assertIn("    Virtual process IDs:  none\n", r.stdout)
        self.assertIn("programs tracing into it: none\n", self.d.tracery("status").stdout)
        round_of_both(3)
        self.d.tracery("track", "-u", "--all", "--vpid")
        round_of_both(4)
        for q in (p, other):
            q.stdin.close()
            self.assertEqual(q.wait(timeout=60), 0)
        self.d.tracery("stop")
        rounds = collections.Counter((e["context"]["vpid"], e["payload"]["i"]) for e in Trace(path).events)
        self.assertEqual(dict(rounds), {(pid, 2): 25, (pid, 4): 25, (other_pid, 4): 25})

    def test_a_program_registering_later_is_included_or_not(self):
        self.d.start_daemon()
        path = self.session("s", context=("vpid",))
        self.d.tracery("track", "-u", f"--vuid={os.getuid()}", f"--vgid={os.getgid()}")
        self.d.tracery("start")
        a = self.d.run([EMITTER, "count", "4"])
        self.d.tracery("untrack", "-u", f"--vgid={os.getgid()}")
        self.d.run([EMITTER, "count", "4"])  # its vgid is no longer included
        self.d.tracery("stop")
        first = int(a.split()[1])  # "ready PID"
        self.assertEqual(by_vpid(path), {first: 8})

    def test_bad_requests_say_what_to_do(self):
        self.d.start_daemon()
        self.session("s")

        def refused(*args):
            r = self.d.tracery(*args, check=False)
            self.assertEqual(r.returncode, 1, r.stdout)
            return r.stderr.strip()

        self.assertEqual(refused("track", "--pid", "1"),
                         "tracery: --pid is the kernel domain's (-k): user space programs are tracked by --vpid, "
                         "--vuid and --vgid")
        self.assertEqual(refused("track", "-u"),
                         "tracery: nothing to track: give --vpid, --vuid or --vgid with ids (or bare, with --all)")
        self.assertEqual(refused("track", "-u", "--vpid"),
                         "tracery: no value given for --vpid: give --vpid=ID[,ID...], or --all --vpid")
        self.assertEqual(refused("track", "-u", "--all", "--vpid=3"),
                         "tracery: --all goes with bare attributes (--all --vpid), not with values")
        self.assertEqual(refused("track", "-u", "--vpid=12x"),
                         "tracery: bad --vpid '12x': give process ids, comma-separated (e.g. --vpid=1234,5678)")
        self.assertEqual(refused("track", "-u", "--vuid=no-such-user-here"),
                         "tracery: bad --vuid 'no-such-user-here': no user of that name; give ids or names")
        self.assertEqual(refused("track", "-u", "--vpid=0"),
                         "tracery: bad --vpid '0': give process ids, comma-separated (e.g. --vpid=1234,5678)")
        self.assertEqual(refused("track", "-u", "--vpid=2147483648"),
                         "tracery: bad vpid 2147483648: give a process id between 1 and 2147483647")
        self.assertEqual(refused("untrack", "-u", "--vpid=5"),
                         "tracery: vpid 5 is not tracked (every vpid is: untrack --all first, or track only the "
                         "ones to keep)")
        self.assertEqual(refused("track", "-u", "--vpid=5", "--follow-children"),
                         "tracery: --follow-children and --no-follow-children go with -k --pid")
        # Nothing changed by the refusals.
        status = self.d.tracery("status").stdout
        for title in ("Virtual process IDs", "Virtual user IDs", "Virtual group IDs"):
            self.assertIn(f"    {title + ':':21} all\n", status)
        self.d.tracery("track", "-u", "--vpid=5,6", "--vpid", "7")
        self.assertEqual(refused("untrack", "-u", "--vpid=6,8"), "tracery: vpid 8 is not tracked: see `tracery status`")
        self.assertIn("    Virtual process IDs:  5, 6, 7\n", self.d.tracery("status").stdout)
        help_text = self.d.tracery("track", "--help").stdout
        self.assertIn("--vpid ID[,ID...]", help_text)
        self.assertIn("-u,--userspace", help_text)


if __name__ == "__main__":
    unittest.main()
