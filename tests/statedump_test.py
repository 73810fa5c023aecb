"""libtracery's state dump of loaded objects (lttng_ust_statedump, LTTng-UST's
events and fields): recorded through a real traceryd when a program registers
with an active session and when a session starts tracing a running program,
on a thread of the library's, and in daemonless mode at start; each object's
address, path, build-id and debug link checked against the loader's view and
readelf."""
import os
import unittest

import elftest
from daemontest import DaemonTestCase, go, read_line
from tracetest import Trace, TraceDirTestCase, program, run_traced


def statedump_of(test, events, pid):
    """The state dump events of process pid in events, checked for their frame (start first, end last, one
    procname) and returned as {path: (bin_info payload, build_id payload or None, debug_link payload or None)}."""
    dump = [e for e in events if e["name"].startswith("lttng_ust_statedump:") and e["context"].get("vpid", pid) == pid]
    names = [e["name"] for e in dump]
    test.assertEqual(names[0], "lttng_ust_statedump:start", names)
    test.assertEqual(names[-1], "lttng_ust_statedump:end", names)
    test.assertEqual(names.count("lttng_ust_statedump:start"), 1, names)
    test.assertEqual(names.count("lttng_ust_statedump:procname"), 1, names)
    objects, by_baddr = {}, {}
    for e in dump:
        p = e["payload"]
        if e["name"] == "lttng_ust_statedump:bin_info":
            test.assertNotIn(p["path"], objects)
            objects[p["path"]] = [p, None, None]
            by_baddr[p["baddr"]] = objects[p["path"]]
        elif e["name"] == "lttng_ust_statedump:build_id":
            by_baddr[p["baddr"]][1] = p
        elif e["name"] == "lttng_ust_statedump:debug_link":
            by_baddr[p["baddr"]][2] = p
    for path, (info, bid, link) in objects.items():
        test.assertEqual(info["has_build_id"], int(bid is not None), path)
        test.assertEqual(info["has_debug_link"], int(link is not None), path)
    return dump, objects


def libc_path():
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libc.so"):
                return os.path.realpath(path)
    raise AssertionError("no libc in this process's mappings")


class StateDumpChecks:
    def check_object(self, objects, path, pic):
        path = os.path.realpath(path)
        self.assertIn(path, objects, sorted(objects))
        info, bid, link = objects[path]
        self.assertEqual(info["is_pic"], int(pic))
        self.assertEqual(info["memsz"], elftest.load_span(path)[1])
        self.assertIsNotNone(bid, path)
        self.assertEqual(bid["build_id"], elftest.build_id(path))
        expected_link = elftest.debug_link(path)
        if expected_link is None:
            self.assertIsNone(link)
        else:
            self.assertEqual(link["filename"], expected_link)
        return info

    def check_dump(self, events, pid, exe):
        dump, objects = statedump_of(self, events, pid)
        self.check_object(objects, exe, pic=True)
        self.check_object(objects, libc_path(), pic=True)
        self.check_object(objects, program("src", "ust", "libtracery.so.0"), pic=True)
        procname = next(e for e in dump if e["name"] == "lttng_ust_statedump:procname")["payload"]["procname"]
        self.assertEqual(bytes(procname).rstrip(b"\0").decode(), os.path.basename(exe)[:15])
        return dump


class UnderTheDaemon(DaemonTestCase, StateDumpChecks):
    def test_program_registering_with_an_active_session(self):
        self.d.start_daemon()
        path = self.session("s", events=("lttng_ust_statedump:*", "hello:*"), context=("vpid", "vtid"))
        self.d.tracery("start")
        hello = program("examples", "hello-c")
        proc = self.d.spawn([hello, "daemon"], stdin=None)
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.d.tracery("stop")
        events = Trace(path).events
        dump = self.check_dump(events, proc.pid, hello)
        # On the library's control thread, never the program's.
        self.assertEqual({e["context"]["vtid"] for e in dump} & {proc.pid}, set())
        self.assertEqual(len({e["context"]["vtid"] for e in dump}), 1)
        self.assertEqual([e["name"] for e in events].count("hello:step"), 8)

    def test_session_started_while_the_program_runs(self):
        self.d.start_daemon()
        emitter, pid = self.d.spawn_registered([program("tests", "daemon-emitter"), "rounds", "3"])
        path = self.session("s", events=("lttng_ust_statedump:*",), context=("vpid", "vtid"))
        self.d.tracery("start")
        go(emitter)
        read_line(emitter, "round")
        emitter.stdin.close()
        emitter.wait(timeout=60)
        self.d.tracery("stop")
        self.check_dump(Trace(path).events, pid, program("tests", "daemon-emitter"))

    def test_nothing_recorded_when_its_events_are_not_enabled(self):
        self.d.start_daemon()
        path = self.session("s", events=("*",))
        self.d.tracery("start")
        self.d.run([program("examples", "hello-c"), "daemon"])
        self.d.tracery("stop")
        self.assertEqual({e["name"] for e in Trace(path).events}, {"hello:greeting", "hello:step"})


class Daemonless(TraceDirTestCase, StateDumpChecks):
    def test_recorded_at_start(self):
        hello = program("examples", "hello-c")
        run_traced([hello], self.trace_dir,
                   {"TRACERY_CONTEXT": "vpid,vtid", "TRACERY_EVENTS": "hello:*,lttng_ust_statedump:*"})
        events = Trace(self.trace_dir).events
        pids = {e["context"]["vpid"] for e in events}
        self.assertEqual(len(pids), 1)
        dump = self.check_dump(events, pids.pop(), hello)
        self.assertNotIn(events[0]["context"]["vpid"], {e["context"]["vtid"] for e in dump})

    def test_forked_child_has_its_own(self):
        forker = program("tests", "forker")
        run_traced([forker, "1000"], self.trace_dir,
                   {"TRACERY_CONTEXT": "vpid,vtid", "TRACERY_EVENTS": "fork:*,lttng_ust_statedump:*"})
        events = Trace(self.trace_dir).events
        pids = {e["context"]["vpid"] for e in events if e["name"] == "fork:tick"}
        self.assertEqual(len(pids), 2)
        for pid in pids:
            self.check_dump(events, pid, forker)

    def test_every_event_means_the_programs(self):
        # `*` selects the program's events, not the state dump (named only by its provider).
        run_traced([program("examples", "hello-c")], self.trace_dir, {"TRACERY_EVENTS": "*"})
        self.assertEqual({e["name"] for e in Trace(self.trace_dir).events}, {"hello:greeting", "hello:step"})


if __name__ == "__main__":
    unittest.main()
