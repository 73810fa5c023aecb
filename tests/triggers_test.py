"""Triggers against a real traceryd (add-trigger, list-triggers, remove-trigger,
watch): the flight recorder, a snapshot session snapshotted when a request
slower than 500 ms happens, holds that request and the ones before it and
nothing after; `tracery watch` prints the notification with the captured
fields; a once-after:3 trigger fires once, on the third match; a program
flooding notifications is held to its rate, every one it matched either
notified or counted as dropped; bad triggers get one line naming the fix."""
import glob
import os
import time
import unittest

from daemontest import DaemonTestCase, UsersTestCase, go, read_line
from tracetest import Trace, program

APP = program("tests", "request-app")


class Triggers(DaemonTestCase):
    def add_trigger(self, *args):
        return self.d.tracery("add-trigger", *args).stdout

    def trigger_status(self, name):
        """The lines list-triggers prints of one trigger."""
        lines, mine = [], False
        for line in self.d.tracery("list-triggers").stdout.splitlines():
            if line.startswith("- name: "):
                mine = line == f"- name: {name}"
            if mine:
                lines.append(line)
        return lines

    def test_flight_recorder_snapshot_on_a_slow_request(self):
        self.d.start_daemon()
        path = self.session("flight", "--snapshot", events=("app:request",))
        self.d.tracery("start", "flight")
        self.assertEqual(
            self.add_trigger("--condition=event-rule-matches", "--type=user", "--name=app:request",
                             "--filter", "ms > 500", "--capture=ms", "--capture=path", "--capture=nothing",
                             "--action=notify", "--action=snapshot-session", "flight", "--id=slow"),
            "Trigger 'slow' added\n")
        # lttng's way of naming a trigger: --name before --condition.
        self.add_trigger("--name=third", "--condition=event-rule-matches", "--type=user", "--name=app:*",
                         "--capture=id", "--action=notify", "--rate-policy=once-after:3")
        watcher = self.watch()
        # The session and the triggers outlive the programs: the app comes after them.
        app = self.d.spawn([APP, "10,20,30,900", "40,50,700"])
        pid = int(read_line(app, "ready")[0])
        go(app)
        self.assertEqual(read_line(app, "burst"), ["1"])
        self.wait_for("the snapshot", lambda: "      requests: 1, executed: 1, failed: 0" in self.trigger_status("slow"))
        snaps = glob.glob(os.path.join(path, "snapshot-*"))
        self.assertEqual(len(snaps), 1, snaps)
        ids = [e["payload"]["id"] for e in Trace(snaps[0]).events if e["name"] == "app:request"]
        self.assertEqual(ids, [0, 1, 2, 3], "the slow request and those before it, nothing after")
        go(app)
        self.assertEqual(read_line(app, "burst"), ["2"])
        self.wait_for("every match", lambda: "  fired: 7, notifications dropped: 0" in self.trigger_status("third"))
        self.wait_for("the second slow one", lambda: "  fired: 2, notifications dropped: 0" in self.trigger_status("slow"))
        self.wait_for("the second snapshot", lambda: len(glob.glob(os.path.join(path, "snapshot-*"))) == 2)
        got = self.notifications(watcher)
        for n in got:
            self.assertEqual((n["pid"], n["event"], n["dropped"]), (pid, "app:request", 0), n)
            self.assertRegex(n["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")
            self.assertLess(abs(n["time_ns"] / 1e9 - time.time()), 60)
        self.assertEqual([(n["trigger"], n["captures"]) for n in got], [
            ("third", {"id": 2}),
            ("slow", {"ms": 900, "path": "/r3", "nothing": None}),
            ("slow", {"ms": 700, "path": "/r6", "nothing": None}),
        ])
        self.assertEqual(self.trigger_status("third"), [
            "- name: third",
            f"  owner uid: {os.getuid()}",
            "  condition: event-rule-matches",
            "    rule: app:* (type: user)",
            "    captures:",
            "      - id",
            "  actions:",
            "    notify, rate policy: once after 3 occurrences",
            "      requests: 7, executed: 1, failed: 0",
            "  fired: 7, notifications dropped: 0",
        ])
        # Removed: its rule leaves the program too.
        self.assertEqual(self.d.tracery("remove-trigger", "slow").stdout, "Trigger 'slow' removed\n")
        self.d.tracery("remove-trigger", "third")
        self.assertEqual(self.d.tracery("list-triggers").stdout, "No triggers\n")
        app.stdin.close()
        self.assertEqual(app.wait(timeout=30), 0)

    def test_actions_start_and_stop_a_session(self):
        self.d.start_daemon()
        path = self.session("late", events=("app:request",))
        self.add_trigger("--condition=event-rule-matches", "--name=app:request", "--filter", "ms > 500",
                         "--action=start-session", "late", "--rate-policy=once-after:1", "--id=begin")
        self.add_trigger("--condition=event-rule-matches", "--name=app:request", "--filter", "ms > 800",
                         "--action=stop-session", "late", "--id=end")
        app = self.d.spawn([APP, "10,600", "20,30,900", "40"])
        read_line(app, "ready")
        go(app)
        # The request that starts the session is not in it: it happened before.
        self.wait_for("the start", lambda: "      requests: 1, executed: 1, failed: 0" in self.trigger_status("begin"))
        go(app)
        self.wait_for("the stop", lambda: "      requests: 1, executed: 1, failed: 0" in self.trigger_status("end"))
        go(app)
        self.assertEqual(read_line(app, "burst"), ["1"])
        self.assertEqual(read_line(app, "burst"), ["2"])
        self.assertEqual(read_line(app, "burst"), ["3"])
        app.stdin.close()
        self.assertEqual(app.wait(timeout=30), 0)
        self.assertEqual([e["payload"]["id"] for e in Trace(path).events], [2, 3, 4])
        # The 900 ms request matched both: `begin` (once-after:1) did not start it again.
        self.assertIn("      requests: 2, executed: 1, failed: 0", self.trigger_status("begin"))
        # A session gone: the action fails, said with the reason; the trigger stays.
        self.d.tracery("destroy", "late")
        app = self.d.spawn([APP, "900"])
        read_line(app, "ready")
        go(app)
        self.wait_for("the failure", lambda: "      requests: 2, executed: 1, failed: 1, last error: no session named "
                      "'late'" in "\n".join(self.trigger_status("end")))
        app.stdin.close()
        self.assertEqual(app.wait(timeout=30), 0)

    def test_a_slow_request_rotates_the_session(self):
        """rotate-session: the chunk archived when the slow request fires holds it and those before it."""
        self.d.start_daemon()
        path = self.session("rec", events=("app:request",))
        self.d.tracery("start", "rec")
        self.add_trigger("--condition=event-rule-matches", "--name=app:request", "--filter", "ms > 500",
                         "--action=rotate-session", "rec", "--id=cut")
        app = self.d.spawn([APP, "10,20,900", "30"])
        read_line(app, "ready")
        go(app)
        self.assertEqual(read_line(app, "burst"), ["1"])
        self.wait_for("the rotation", lambda: glob.glob(os.path.join(path, "archives", "*")))
        self.assertIn("      requests: 1, executed: 1, failed: 0", self.trigger_status("cut"))
        go(app)
        self.assertEqual(read_line(app, "burst"), ["2"])
        app.stdin.close()
        self.assertEqual(app.wait(timeout=30), 0)
        self.d.tracery("destroy", "rec")
        chunks = sorted(glob.glob(os.path.join(path, "archives", "*")), key=lambda d: int(d.rsplit("-", 1)[1]))
        self.assertEqual(len(chunks), 2, chunks)
        self.assertEqual([e["payload"]["id"] for e in Trace(chunks[0]).events], [0, 1, 2])
        self.assertEqual([e["payload"]["id"] for e in Trace(chunks[1]).events], [3])

    def test_a_flood_is_held_to_its_rate_and_every_match_counted(self):
        n = 20000
        self.d.start_daemon()
        self.add_trigger("--condition=event-rule-matches", "--type=user", "--name=app:request", "--capture=id",
                         "--action=notify", "--id=all")
        app = self.d.spawn([APP, "flood", str(n)])
        read_line(app, "ready")
        # Registered with its rules before it emits.
        self.wait_for("the program", lambda: "app:request" in self.d.tracery("list", "-u").stdout)
        go(app)
        self.assertEqual(read_line(app, "burst"), ["1"])

        def counts():
            status = self.trigger_status("all")[-1]
            fired, dropped = (int(x) for x in status.replace(",", "").split()[1::3])
            return (fired, dropped) if fired + dropped == n else None

        fired, dropped = self.wait_for("every match accounted", counts)
        self.assertGreater(fired, 0)
        self.assertLessEqual(fired, 3000, "at most some 1000 a second")
        self.assertGreater(dropped, 0)
        app.stdin.close()
        self.assertEqual(app.wait(timeout=30), 0)

    def test_bad_triggers_are_refused_with_the_fix(self):
        self.d.start_daemon()
        cases = [
            (["--action=notify"], "--action comes after the --condition it acts on"),
            (["--condition=event-rule-matches", "--name=a:b"], "no --action: give at least one"),
            (["--condition=event-rule-matches", "--name=a:b", "--action=notify", "--rate-policy=every:0"],
             "bad rate policy 'every:0': the count must be an integer of at least 1"),
            (["--condition=event-rule-matches", "--name=a:b", "--action=snapshot-session"],
             "the snapshot-session action needs the session's name"),
            (["--condition=event-rule-matches", "--name=a:b", "--action=rotate-session"],
             "the rotate-session action needs the session's name"),
            (["--condition=event-rule-matches", "--name=a:b", "--filter", "ms >", "--action=notify"],
             "bad filter"),
            (["--condition=event-rule-matches", "--name=a:b", "--capture=$ctx.vpid", "--action=notify"],
             "cannot capture '$ctx.vpid': give the name of a payload field"),
            (["--condition=event-rule-matches", "--action=notify"], "the event rule names no event"),
            (["--condition=event-rule-matches", "--name=a:b", "--action=dance"], "unknown action 'dance'"),
            (["--condition=often", "--action=notify"], "unknown condition 'often'"),
        ]
        for args, expect in cases:
            r = self.d.tracery("add-trigger", *args, check=False)
            self.assertEqual(r.returncode, 1, (args, r.stdout))
            self.assertIn(expect, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1 if expect != "bad filter" else 3, r.stderr)
        self.add_trigger("--condition=event-rule-matches", "--name=a:b", "--action=notify", "--id=t")
        r = self.d.tracery("add-trigger", "--condition=event-rule-matches", "--name=a:b", "--action=notify",
                           "--id=t", check=False)
        self.assertIn("you already have a trigger named 't'", r.stderr)
        r = self.d.tracery("remove-trigger", "nope", check=False)
        self.assertEqual(r.stderr, "tracery: no trigger named 'nope': see `tracery list-triggers`\n")
        r = self.d.tracery("watch", "nope", check=False)
        self.assertEqual(r.stderr, "tracery: no trigger named 'nope': see `tracery list-triggers`\n")
        # Named by the daemon when not named.
        self.assertEqual(self.add_trigger("--condition=event-rule-matches", "--name=a:*", "--action=notify"),
                         "Trigger 'trigger0' added\n")


class TriggersOfUsers(UsersTestCase):
    def test_a_users_triggers_are_its_own(self):
        self.d.start_daemon("--group", self.group)
        alice, alice_home, alice_uid = self.add_user("a", in_group=True)
        bob, bob_home, _ = self.add_user("b", in_group=True)

        def as_user(user, home, *args, check=True):
            env = dict(self.d.env, HOME=home)
            return self.d.tracery(*args, user=user, env=env, check=check)

        as_user(alice, alice_home, "add-trigger", "--condition=event-rule-matches", "--name=app:request",
                "--capture=id", "--action=notify", "--id=mine")
        # Bob neither sees it nor acts on it, and may have his own of that name.
        self.assertEqual(as_user(bob, bob_home, "list-triggers").stdout, "No triggers\n")
        r = as_user(bob, bob_home, "remove-trigger", "mine", check=False)
        self.assertEqual(r.stderr, "tracery: no trigger named 'mine': see `tracery list-triggers`\n")
        as_user(bob, bob_home, "add-trigger", "--condition=event-rule-matches", "--name=app:request",
                "--action=notify", "--id=mine")
        # Root sees both, with their owners.
        owners = [line for line in self.d.tracery("list-triggers").stdout.splitlines() if "owner uid" in line]
        self.assertEqual(len(owners), 2)

        def run_as(user, home, ms):
            p = self.d.spawn(["runuser", "-p", "-u", user, "--", APP, ms], extra_env={"HOME": home})
            read_line(p, "ready")
            go(p)
            self.assertEqual(read_line(p, "burst"), ["1"])
            p.stdin.close()
            self.assertEqual(p.wait(timeout=30), 0)

        run_as(bob, bob_home, "1,2,3")
        run_as(alice, alice_home, "4")

        def fired(user, home):
            status = as_user(user, home, "list-triggers").stdout
            return [line for line in status.splitlines() if line.startswith("  fired:")]

        # Each user's trigger saw only that user's program.
        self.wait_for("alice's", lambda: fired(alice, alice_home) == ["  fired: 1, notifications dropped: 0"])
        self.wait_for("bob's", lambda: fired(bob, bob_home) == ["  fired: 3, notifications dropped: 0"])
        self.assertIn(f"  owner uid: {alice_uid}\n", as_user(alice, alice_home, "list-triggers").stdout)

    def wait_for(self, what, check, timeout=20):
        return Triggers.wait_for(self, what, check, timeout)


if __name__ == "__main__":
    unittest.main()
