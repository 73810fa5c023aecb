"""`tracery view --symbols` against `babeltrace2 --debug-info`, byte for byte,
on a trace LTTng-UST records of a test program built with -g (and a stripped
copy of it whose debug file sits under a temporary DIR/.build-id/) run under
LTTng's pthread helper: the helper records its caller's address as the `ip`
context, the state dump lists the loaded objects with their build-ids. The
caller is named with its file and line; the stripped copy's function is
named only with --debug-info-dir DIR; an address in no object shows empty
strings, as babeltrace2 shows it. Then the same names in stats, the exports
and SQL. Skips when lttng-tools, babeltrace2 or gcc is missing."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from tracetest import program

PROGRAM = r"""
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int counter;

__attribute__((noinline)) void symbols_caller(int i)
{
	pthread_mutex_lock(&lock);
	counter += i;
	pthread_mutex_unlock(&lock);
	counter -= 1;
}

int main(void)
{
	for (int i = 0; i < 3; i++)
		symbols_caller(i);
	printf("%d\n", counter);
	return 0;
}
"""

# A library a program built with -finstrument-functions loads, calls and unloads twice (the dl helper tells
# each load and unload, the function helper each entry and exit of the program's functions).
LIBRARY = r"""
#include <pthread.h>
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
__attribute__((noinline)) void symbols_lib_work(void)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
}
"""

DL_PROGRAM = r"""
#include <dlfcn.h>
#include <stdio.h>
__attribute__((noinline)) static int symbols_leaf(int x) { return x * 2; }
int main(int argc, char **argv)
{
	for (int k = 0; k < 2; k++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		((void (*)(void))dlsym(h, "symbols_lib_work"))();
		dlclose(h);
	}
	return symbols_leaf(argc) == 0;
}
"""

HELPERS = "/usr/lib/x86_64-linux-gnu/liblttng-ust-"
PTHREAD_HELPER = HELPERS + "pthread-wrapper.so.1"
DL_HELPERS = " ".join(HELPERS + h for h in ("pthread-wrapper.so.1", "dl.so.1", "cyg-profile.so.1"))

# Our own members, which babeltrace2 does not add: the function entry and exit events' addresses named.
OUR_MEMBERS = re.compile(rb', (addr|call_site)_debug_info = \{ bin = "[^"]*", func = "[^"]*", src = "[^"]*" \}')


def run(argv, **kw):
    p = subprocess.run(argv, capture_output=True, timeout=300, **kw)
    if p.returncode != 0:
        raise AssertionError(f"{argv} exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    return p


def tracery(*args):
    return run([program("src", "cli", "tracery"), *args])


@unittest.skipUnless(shutil.which("babeltrace2") and shutil.which("lttng") and shutil.which("lttng-sessiond")
                     and shutil.which("gcc") and all(os.path.exists(h) for h in DL_HELPERS.split()),
                     "needs babeltrace2, lttng-tools, gcc and liblttng-ust's pthread helper "
                     "(apt-get install babeltrace2 lttng-tools liblttng-ust-dev gcc)")
class SymbolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tracery-symbols-")
        tmp = cls.tmp
        src = os.path.join(tmp, "symbols_prog.c")
        with open(src, "w") as f:
            f.write(PROGRAM)
        cls.source_lines = PROGRAM.splitlines()
        cls.prog = os.path.join(tmp, "symbols_prog")
        run(["gcc", "-g", "-O0", "-Wl,--build-id", "-o", cls.prog, src, "-lpthread"])
        # The stripped copy, its DWARF in DIR/.build-id/xx/rest.debug.
        cls.stripped = os.path.join(tmp, "symbols_stripped")
        cls.debug_dir = os.path.join(tmp, "debug")
        run(["objcopy", "--strip-all", cls.prog, cls.stripped])
        build_id = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", cls.prog]).stdout.decode()).group(1)
        os.makedirs(os.path.join(cls.debug_dir, ".build-id", build_id[:2]))
        run(["objcopy", "--only-keep-debug", cls.prog,
             os.path.join(cls.debug_dir, ".build-id", build_id[:2], build_id[2:] + ".debug")])
        with open(os.path.join(tmp, "symbols_lib.c"), "w") as f:
            f.write(LIBRARY)
        with open(os.path.join(tmp, "symbols_dl.c"), "w") as f:
            f.write(DL_PROGRAM)
        cls.library = os.path.join(tmp, "libsymbols.so")
        run(["gcc", "-g", "-O0", "-fPIC", "-shared", "-o", cls.library, os.path.join(tmp, "symbols_lib.c"),
             "-lpthread"])
        cls.dl_prog = os.path.join(tmp, "symbols_dl")
        run(["gcc", "-g", "-O0", "-finstrument-functions", "-o", cls.dl_prog, os.path.join(tmp, "symbols_dl.c"),
             "-ldl"])
        # The trace: LTTng's session daemon of this test, both programs under the pthread helper, the third
        # under the pthread, dl and function helpers.
        env = dict(os.environ, LTTNG_HOME=tmp)
        cls.sessiond = subprocess.run(["lttng-sessiond", "--daemonize"], env=env, timeout=60, capture_output=True)
        cls.trace = os.path.join(tmp, "trace")
        lttng = lambda *a: run(["lttng", *a], env=env)
        try:
            lttng("create", f"symbols-{os.getpid()}", f"--output={cls.trace}")
            lttng("enable-event", "-u", "-a")
            lttng("add-context", "-u", "-t", "vpid", "-t", "vtid", "-t", "ip")
            lttng("start")
            for p in (cls.prog, cls.stripped):
                run([p], env=dict(env, LD_PRELOAD=PTHREAD_HELPER))
            run([cls.dl_prog, cls.library], env=dict(env, LD_PRELOAD=DL_HELPERS))
            lttng("stop")
            lttng("destroy")
        finally:  # the session daemon this test started, if it did (as root: the global one)
            for pidfile in (os.path.join(tmp, ".lttng", "lttng-sessiond.pid"), "/var/run/lttng/lttng-sessiond.pid"):
                if cls.sessiond.returncode == 0 and os.path.exists(pidfile):
                    subprocess.run(["kill", open(pidfile).read().strip()], timeout=30)
                    break

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def lines_of(self, out, prog, event):
        """The lines of an event of a program's process (its procname is the file's first 15 bytes)."""
        pids = set(re.findall(rb"statedump:procname: .*?vpid = (\d+).*?procname = \"" +
                              re.escape(os.path.basename(prog)[:15].encode()) + b'"', out))
        self.assertEqual(len(pids), 1, out[:2000])
        pid = pids.pop()
        return [l for l in out.splitlines() if b" " + event + b":" in l and b"vpid = " + pid + b"," in l]

    def test_view_equals_babeltrace2_and_names_the_caller_and_its_line(self):
        ours = tracery("view", "--symbols", self.trace)
        theirs = run(["babeltrace2", "--debug-info", self.trace])
        # the same bytes but our members of the function entry and exit events
        self.assertEqual(OUR_MEMBERS.sub(b"", ours.stdout), theirs.stdout)
        for l in ours.stdout.splitlines():
            self.assertEqual(bool(OUR_MEMBERS.search(l)), b"lttng_ust_cyg_profile:func_" in l, l)
        unlocks = [l for l in self.lines_of(ours.stdout, self.prog, b"lttng_ust_pthread:pthread_mutex_unlock")
                   if b'bin = "symbols_prog+' in l]
        self.assertEqual(len(unlocks), 3)  # (the others: LTTng-UST's own, in liblttng-ust)
        # the caller, its line: the statement after the call
        first = next(i for i, l in enumerate(self.source_lines) if "symbols_caller(int i)" in l) + 1
        m = re.search(rb'debug_info = \{ bin = "symbols_prog\+0x[0-9a-f]+", func = "symbols_caller\+0x[0-9a-f]+", '
                      rb'src = "symbols_prog\.c:(\d+)" \}', unlocks[0])
        self.assertIsNotNone(m, unlocks[0])
        self.assertIn("counter -= 1", self.source_lines[int(m.group(1)) - 1])
        self.assertGreater(int(m.group(1)), first)
        # an address in no object: the state dump's start, before any object is known
        start = [l for l in ours.stdout.splitlines() if b"lttng_ust_statedump:start:" in l]
        self.assertTrue(start)
        for l in start:
            self.assertIn(b'debug_info = { bin = "", func = "", src = "" }', l)

    def test_stripped_copy_is_named_through_its_build_id_debug_file(self):
        ours = tracery("view", "--symbols", "--debug-info-dir", self.debug_dir, self.trace)
        theirs = run(["babeltrace2", "--debug-info", "--debug-info-dir", self.debug_dir, self.trace])
        self.assertEqual(OUR_MEMBERS.sub(b"", ours.stdout), theirs.stdout)
        unlocks = [l for l in self.lines_of(ours.stdout, self.stripped, b"lttng_ust_pthread:pthread_mutex_unlock")
                   if b'bin = "symbols_stripped+' in l]
        self.assertEqual(len(unlocks), 3)
        for l in unlocks:
            self.assertRegex(l, rb'bin = "symbols_stripped\+0x[0-9a-f]+", func = "symbols_caller\+0x[0-9a-f]+", '
                                rb'src = "symbols_prog\.c:\d+"')
        # without the debug directory: the binary and offset only, as babeltrace2
        plain = tracery("view", "--symbols", self.trace).stdout
        unlocks = [l for l in self.lines_of(plain, self.stripped, b"lttng_ust_pthread:pthread_mutex_unlock")
                   if b'bin = "symbols_stripped+' in l]
        self.assertEqual(len(unlocks), 3)
        for l in unlocks:
            self.assertRegex(l, rb'debug_info = \{ bin = "symbols_stripped\+0x[0-9a-f]+", func = "", src = "" \}')

    def test_loaded_library_and_function_entries_are_named(self):
        out = tracery("view", "--symbols", self.trace).stdout
        # the library, loaded twice at run time: its caller of the mutex named both times
        calls = [l for l in self.lines_of(out, self.dl_prog, b"lttng_ust_pthread:pthread_mutex_lock_req")
                 if b'bin = "libsymbols.so+' in l]
        self.assertEqual(len(calls), 2)
        for l in calls:
            self.assertRegex(l, rb'func = "symbols_lib_work\+0x[0-9a-f]+"')
        # the function helper's entries: the function and its caller
        entries = [l for l in self.lines_of(out, self.dl_prog, b"lttng_ust_cyg_profile:func_entry")
                   if b'addr_debug_info = { bin = "symbols_dl+' in l]
        self.assertEqual(len(entries), 2)  # main, symbols_leaf
        leaf = [l for l in entries if b'func = "symbols_leaf+0"' in l]
        self.assertEqual(len(leaf), 1)
        self.assertRegex(leaf[0], rb'call_site_debug_info = \{ bin = "symbols_dl\+0x[0-9a-f]+", func = "main\+0x[0-9a-f]+"')

    def caller_events(self, out):
        """The events whose ip is in symbols_caller of the -g program, from view's lines."""
        return [l for l in out.splitlines()
                if re.search(rb'debug_info = \{ bin = "symbols_prog\+0x[0-9a-f]+", func = "symbols_caller\+', l)]

    def test_stats_exports_and_sql_name_the_same_functions(self):
        view = tracery("view", "--symbols", self.trace).stdout
        callers = self.caller_events(view)
        self.assertEqual(len(callers), 9)  # lock_req, lock_acq, unlock: 3 times
        stats = json.loads(tracery("stats", "--symbols", "--json", self.trace).stdout)
        per_function = {r["function"]: r["count"] for r in stats["per_function"]}
        self.assertEqual(per_function.get("symbols_caller in symbols_prog"), len(callers))
        self.assertEqual(per_function.get("symbols_stripped (no function name)"), len(callers))
        # Chrome JSON: an argument per event, as view names it
        out = os.path.join(self.tmp, "out.json")
        tracery("export", "--symbols", "--format", "chrome-json", "--force", self.trace, out)
        with open(out) as f:
            doc = json.load(f)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        # one entry per event, but a lock acquisition is two (the end of its
        # wait and the begin of its hold on the lock's row, at one time)
        named = [d for (_, d) in {(e["ts"], e["args"]["debug_info"])
                                  for e in events if "debug_info" in e.get("args", {})}]
        in_caller = [d for d in named if d.startswith("symbols_caller+0x") and " in symbols_prog+0x" in d]
        self.assertEqual(len(in_caller), len(callers))
        for d in in_caller:
            self.assertRegex(d, r"^symbols_caller\+0x[0-9a-f]+( \(symbols_prog\.c:\d+\))? in symbols_prog\+0x[0-9a-f]+$")
        texts = {m.group(1).decode() for l in callers for m in [re.search(rb'func = "([^"]+)"', l)]}
        self.assertEqual({d.split(" ")[0] for d in in_caller}, texts)
        # SQL: the table symbols, one row per address of a process
        rows = json.loads(tracery("query", "--symbols", "--json", self.trace,
                                  "SELECT bin, func, src, function, line, offset FROM symbols "
                                  "WHERE function = 'symbols_caller' ORDER BY bin").stdout)
        self.assertEqual({r["func"] for r in rows if r["bin"].startswith("symbols_prog+")}, texts)
        for r in rows:
            self.assertEqual(r["bin"], f"symbols_prog+{r['offset']:#x}")
            if r["src"] is not None:
                self.assertEqual(r["src"], f"symbols_prog.c:{r['line']}")

    def test_missing_file_shows_nothing_and_is_said(self):
        hidden = self.stripped + ".away"
        os.rename(self.stripped, hidden)
        try:
            ours = tracery("view", "--symbols", self.trace)
            theirs = run(["babeltrace2", "--debug-info", self.trace])
            # its build-id is known: nothing shown for it, as babeltrace2 shows nothing
            self.assertEqual(OUR_MEMBERS.sub(b"", ours.stdout), theirs.stdout)
            lines = self.lines_of(ours.stdout, self.stripped, b"lttng_ust_pthread:pthread_mutex_unlock")
            self.assertEqual(sum(b'bin = "symbols_stripped+' in l for l in lines), 0)
            self.assertIn(f"tracery: symbols: {self.stripped}: No such file or directory".encode(), ours.stderr)
            # its debug file found by build-id stands in for it (babeltrace2 shows nothing)
            named = tracery("view", "--symbols", "--debug-info-dir", self.debug_dir, self.trace).stdout
            lines = [l for l in self.lines_of(named, self.stripped, b"lttng_ust_pthread:pthread_mutex_unlock")
                     if b'bin = "symbols_stripped+' in l]
            self.assertEqual(len(lines), 3)
            for l in lines:
                self.assertRegex(l, rb'func = "symbols_caller\+0x[0-9a-f]+", src = "symbols_prog\.c:\d+"')
        finally:
            os.rename(hidden, self.stripped)

    def test_options_misused_are_refused(self):
        p = subprocess.run([program("src", "cli", "tracery"), "view", "--debug-info-dir", self.debug_dir,
                            self.trace], capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"--debug-info-dir goes with --symbols", p.stderr)
        # a database is named when exported: query --symbols on one says so
        db = os.path.join(self.tmp, "symbols.sqlite")
        tracery("export", "--symbols", "--format", "sqlite", "--force", self.trace, db)
        p = subprocess.run([program("src", "cli", "tracery"), "query", "--symbols", db, "SELECT 1"],
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"export --format sqlite --symbols", p.stderr)
        rows = json.loads(tracery("query", "--json", db, "SELECT count(*) AS n FROM symbols WHERE func IS NOT NULL").stdout)
        self.assertGreater(rows[0]["n"], 0)


if __name__ == "__main__":
    unittest.main()
