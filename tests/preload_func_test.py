"""The function entry/exit helpers (libtracery-preload-func.so, -func-fast.so)
and the dl helper (libtracery-preload-dl.so) on programs built here that link
no libtracery, traced through a real traceryd: entry and exit balanced per
thread, call counts per function (in the events and in `analyze calls`) equal
to uftrace's for the same build, call sites in their callers; the dlopen'ed
library's base address, size, build-id and debug link against readelf, and
one of its functions inside the range the trace gives; addresses shown in
hex, by babeltrace2 and `tracery view` alike."""
import collections
import json
import os
import shutil
import subprocess
import unittest
import zlib

import elftest
import instrumented_calls
from daemontest import DaemonTestCase
from tracetest import Trace, program

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
ROUNDS = 8  # instrumented-calls' argument: about 5,000 calls in three threads
EXPECTED_CALLS = instrumented_calls.calls(ROUNDS)


# A sanitizer build's helpers and libtracery need the sanitizer's runtime loaded first: in the program, built by
# the compiler of the build (clang and GCC have run-times of their own).
SANITIZE = os.environ.get("TRACERY_SANITIZE", "")
CC = os.environ.get("TRACERY_C_COMPILER", "cc")


def compile_c(out, *args):
    flags = [f"-fsanitize={SANITIZE}"] if SANITIZE else []
    proc = subprocess.run([CC, *flags, *args, "-o", out], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"cc {' '.join(args)} failed: {proc.stderr}")
    return out


def uftrace_calls(binary, tmp):
    """Calls per function of binary's own code, as uftrace record + report count them."""
    data = os.path.join(tmp, "uftrace.data")
    subprocess.run(["uftrace", "record", "--no-libcall", "-d", data, binary, str(ROUNDS)], check=True,
                   capture_output=True, timeout=120)
    out = subprocess.run(["uftrace", "report", "-d", data, "-f", "call", "-s", "call"], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    calls = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            calls[parts[1]] = int(parts[0])
    return calls


class Helpers(DaemonTestCase):
    def setUp(self):
        if SANITIZE:
            # the sanitizer's runtime must be a process's first library, before any LD_PRELOAD
            self.skipTest("the helpers are built with sanitizers: a preloaded one cannot come before the runtime")
        super().setUp()
        self.d.start_daemon()

    def traced_run(self, helper, events, argv):
        path = self.trace_path = self.session("s", events=events, context=("vpid", "vtid"))
        self.d.tracery("start")
        out = self.d.run(argv, extra_env={"LD_PRELOAD": program("src", "preload", helper)})
        self.d.tracery("stop")
        return out, Trace(path).events

    def instrumented_program(self):
        # built here as a position-independent executable: its functions are found through the state dump's
        # base address
        return compile_c(self.out("instrumented-calls"), "-O0", "-g", "-finstrument-functions", "-pthread",
                         os.path.join(APPS, "instrumented_calls.c"))

    def executable_base(self, events, binary):
        infos = [e["payload"] for e in events if e["name"] == "lttng_ust_statedump:bin_info"
                 and e["payload"]["path"] == os.path.realpath(binary)]
        self.assertEqual(len(infos), 1)
        return infos[0]["baddr"] - elftest.load_span(binary)[0]

    def test_function_entry_and_exit_with_call_sites(self):
        binary = self.instrumented_program()
        out, events = self.traced_run("libtracery-preload-func.so",
                                      ("lttng_ust_cyg_profile:*", "lttng_ust_statedump:*"), [binary, str(ROUNDS)])
        # the sums it prints, as without the helper
        self.assertEqual(out, self.d.run([binary, str(ROUNDS)]))
        base = self.executable_base(events, binary)
        funcs = elftest.functions(binary)
        stacks = collections.defaultdict(list)
        calls = collections.Counter()
        callers = collections.defaultdict(set)
        for e in events:
            if not e["name"].startswith("lttng_ust_cyg_profile:"):
                continue
            name = elftest.function_at(funcs, e["payload"]["addr"] - base)
            self.assertIsNotNone(name, hex(e["payload"]["addr"]))
            stack = stacks[e["context"]["vtid"]]
            if e["name"] == "lttng_ust_cyg_profile:func_entry":
                stack.append((e["payload"]["addr"], e["payload"]["call_site"]))
                calls[name] += 1
                callers[name].add(elftest.function_at(funcs, e["payload"]["call_site"] - base))
            else:
                self.assertEqual(stack.pop(), (e["payload"]["addr"], e["payload"]["call_site"]))
        self.assertEqual(len(stacks), 3)
        self.assertEqual([s for s in stacks.values() if s], [])
        self.assertEqual(dict(calls), EXPECTED_CALLS)
        # main and the threads' worker are called from libc; the others from their callers in the program.
        self.assertEqual(dict(callers), {"main": {None}, "worker": {None}, "outer": {"worker", "main"},
                                         "inner": {"outer"}, "fib": {"worker", "outer", "main", "fib"},
                                         "leaf": {"inner", "fib"}})
        # `analyze calls --symbols` on the trace: the same calls per function, named through the state dump
        report = json.loads(self.d.tracery("analyze", "calls", "--json", "--symbols", self.trace_path).stdout)
        self.assertEqual({r["function"]: r["calls"] for r in report["per_function"]}, EXPECTED_CALLS)
        self.assertEqual(report["notes"], [])
        if shutil.which("uftrace") is None:
            self.skipTest("uftrace is not installed")
        if SANITIZE:
            self.skipTest("uftrace's comparison runs on builds without sanitizers")
        self.assertEqual({f: c for f, c in uftrace_calls(binary, self.d.tmp).items() if f in EXPECTED_CALLS},
                         dict(calls))

    def test_fast_variant(self):
        binary = self.instrumented_program()
        _, events = self.traced_run("libtracery-preload-func-fast.so",
                                    ("lttng_ust_cyg_profile_fast:*", "lttng_ust_statedump:*"),
                                    [binary, str(ROUNDS)])
        base = self.executable_base(events, binary)
        funcs = elftest.functions(binary)
        depth = collections.Counter()
        calls = collections.Counter()
        for e in events:
            if e["name"] == "lttng_ust_cyg_profile_fast:func_entry":
                self.assertEqual(set(e["payload"]), {"addr"})
                calls[elftest.function_at(funcs, e["payload"]["addr"] - base)] += 1
                depth[e["context"]["vtid"]] += 1
            elif e["name"] == "lttng_ust_cyg_profile_fast:func_exit":
                self.assertEqual(e["payload"], {})
                depth[e["context"]["vtid"]] -= 1
                self.assertGreaterEqual(depth[e["context"]["vtid"]], 0)
        self.assertEqual(len(depth), 3)
        self.assertEqual(set(depth.values()), {0})
        self.assertEqual(dict(calls), EXPECTED_CALLS)

    def dl_library(self):
        return compile_c(self.out("libdltest.so"), "-shared", "-fPIC", "-g", "-Wl,--build-id",
                         os.path.join(APPS, "dl_library.c"))

    def dl_host(self):
        return compile_c(self.out("dl-host"), "-O1", os.path.join(APPS, "dl_host.c"), "-ldl")

    def test_dlopen_and_dlclose(self):
        library = self.dl_library()
        # A separate debug file and the link to it, as distributions ship them.
        debug_file = library + ".debug"
        subprocess.run(["objcopy", "--only-keep-debug", library, debug_file], check=True, timeout=60)
        subprocess.run(["objcopy", "--strip-debug", f"--add-gnu-debuglink={debug_file}", library], check=True,
                       timeout=60)
        host = self.dl_host()
        out, events = self.traced_run("libtracery-preload-dl.so", ("lttng_ust_dl:*",), [host, library])
        lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
        self.assertEqual(lines["result"], "13")
        function = int(lines["function"], 16)
        names = [e["name"] for e in events]
        self.assertEqual(names, ["lttng_ust_dl:dlopen", "lttng_ust_dl:build_id", "lttng_ust_dl:debug_link",
                                 "lttng_ust_dl:dlclose"])
        opened, build_id, link, closed = (e["payload"] for e in events)
        self.assertEqual(opened["path"], os.path.realpath(library))
        self.assertEqual(opened["flags"], 2)  # RTLD_NOW | RTLD_LOCAL
        self.assertEqual((opened["has_build_id"], opened["has_debug_link"]), (1, 1))
        self.assertEqual(opened["memsz"], elftest.load_span(library)[1])
        self.assertTrue(opened["baddr"] <= function < opened["baddr"] + opened["memsz"])
        funcs = elftest.functions(debug_file)
        self.assertEqual(elftest.function_at(funcs, function - opened["baddr"] + elftest.load_span(library)[0]),
                         "dl_library_function")
        self.assertEqual((build_id["baddr"], build_id["build_id"]), (opened["baddr"], elftest.build_id(library)))
        with open(debug_file, "rb") as f:
            crc = zlib.crc32(f.read())
        self.assertEqual(link, {"baddr": opened["baddr"], "crc": crc, "filename": os.path.basename(debug_file)})
        self.assertEqual(closed, {"baddr": opened["baddr"]})
        # addresses, flags and the build-id shown in hex, as LTTng's helper declares them; tracery view's text
        # is babeltrace2's, byte for byte
        theirs = subprocess.run(["babeltrace2", self.trace_path], capture_output=True, check=True, timeout=60).stdout
        ours = subprocess.run([program("src", "cli", "tracery"), "view", self.trace_path], capture_output=True,
                              check=True, timeout=60).stdout
        self.assertEqual(ours, theirs)
        baddr = f"baddr = 0x{opened['baddr']:X}".encode()
        self.assertEqual(theirs.count(baddr), 4, theirs)
        self.assertIn(b", flags = 0x2, ", theirs)
        self.assertIn(f"build_id = [ [0] = 0x{build_id['build_id'][0]:X}, ".encode(), theirs)

    def test_dlmopen_into_a_new_namespace(self):
        library = self.dl_library()
        out, events = self.traced_run("libtracery-preload-dl.so", ("lttng_ust_dl:*",),
                                      [self.dl_host(), library, "dlmopen"])
        function = int(dict(line.split(" ", 1) for line in out.splitlines() if " " in line)["function"], 16)
        self.assertEqual([e["name"] for e in events],
                         ["lttng_ust_dl:dlmopen", "lttng_ust_dl:build_id", "lttng_ust_dl:dlclose"])
        opened = events[0]["payload"]
        self.assertGreater(opened["nsid"], 0)  # not the program's namespace (LM_ID_BASE, 0)
        self.assertEqual(opened["path"], os.path.realpath(library))
        self.assertEqual((opened["has_build_id"], opened["has_debug_link"]), (1, 0))
        self.assertTrue(opened["baddr"] <= function < opened["baddr"] + opened["memsz"])
        self.assertEqual(events[1]["payload"]["build_id"], elftest.build_id(library))
        self.assertEqual(events[2]["payload"], {"baddr": opened["baddr"]})


if __name__ == "__main__":
    unittest.main()
