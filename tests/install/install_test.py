"""The installed package, from outside the source tree: installs this build
into a fresh prefix with `cmake --install`, checks what is there, runs the
installed traceryd and tracery, builds the two consumer projects beside this
file against the prefix (find_package/ through find_package(Tracery),
pkg_config/ through pkg-config alone), runs them traced without a daemon and
checks their events with babeltrace2.

CTest sets the environment (tests/CMakeLists.txt): TRACERY_BUILD_DIR and the
build's install layout, generator, compilers and sanitizers.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = os.environ
BUILD_DIR = ENV["TRACERY_BUILD_DIR"]
VERSION = ENV["TRACERY_VERSION"]
CMAKE = ENV.get("TRACERY_CMAKE_COMMAND", "cmake")
# GNUInstallDirs' directories, relative to the prefix (lib, or lib/<multiarch>
# on Debian when the build's prefix is /usr).
LIBDIR = ENV["TRACERY_INSTALL_LIBDIR"]
BINDIR = ENV["TRACERY_INSTALL_BINDIR"]
INCLUDEDIR = ENV["TRACERY_INSTALL_INCLUDEDIR"]
LIBEXECDIR = ENV["TRACERY_INSTALL_LIBEXECDIR"]
DATADIR = ENV["TRACERY_INSTALL_DATADIR"]
MANDIR = ENV["TRACERY_INSTALL_MANDIR"]
BENCHMARKS = ENV.get("TRACERY_BENCHMARKS", "ON") == "ON"
# The LD_PRELOAD helpers installed beside libtracery (src/preload/README.md).
PRELOAD_HELPERS = ("libc", "pthread", "func", "func-fast", "dl")
SANITIZE = ENV.get("TRACERY_SANITIZE", "")
# clang links the C++ part of the sanitizers' run-time, which libtracery's checks call, into C++ programs only: a C
# program asks for it.
C_SANITIZE_LDFLAGS = f"-fsanitize={SANITIZE}" + (
    " -fsanitize-link-c++-runtime -lstdc++" if "clang" in os.path.basename(ENV.get("TRACERY_C_COMPILER", "")) else "")
# The Python package's directory relative to the prefix, where it is built (src/agents/python/).
PYTHON_DIR = ENV.get("TRACERY_PYTHON_INSTALL_DIR", "")
PYTHON_PACKAGE = ("__init__.py", "logging_handler.py", "ctl.py", "_ctl_location.py")
# The JDK's java where the Java agent is built (src/agents/java/): its jar goes to DATADIR/java, its JNI library
# beside libtracery.
JAVA = ENV.get("TRACERY_JAVA", "")
JAR = os.path.join(ENV.get("TRACERY_INSTALL_DATADIR", "share"), "java", "tracery.jar")


def run(argv, env=None, cwd=None, timeout=300):
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def clean_env():
    """The environment without Tracery's variables (the test may run under a session's)."""
    return {k: v for k, v in ENV.items() if not k.startswith("TRACERY_") and k != "LD_LIBRARY_PATH"}


# babeltrace2's text form of an event: [time] (delta) host provider:name: { cpu_id = N }, { payload }
EVENT_LINE = re.compile(r"^\[[^\]]+\] \([^)]+\) \S+ (?P<name>\w+:\w+): \{ cpu_id = \d+ \}, \{ (?P<payload>.*) \}$")


class InstalledPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tracery-install-test-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        try:
            run([CMAKE, "--install", BUILD_DIR, "--prefix", cls.prefix])
        except BaseException:
            shutil.rmtree(cls.tmp)
            raise
        cls.libdir = os.path.join(cls.prefix, LIBDIR)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def installed_files(self):
        found = set()
        for root, _, files in os.walk(self.prefix):
            for f in files:
                found.add(os.path.relpath(os.path.join(root, f), self.prefix))
        return found

    def traced(self, program, trace_name):
        """Runs program with TRACERY_OUTPUT=<new dir> against the installed
        libtracery; returns babeltrace2's events as sorted (name, payload) pairs."""
        trace_dir = os.path.join(self.tmp, trace_name)
        env = clean_env()
        env["TRACERY_OUTPUT"] = trace_dir
        env["LD_LIBRARY_PATH"] = self.libdir
        ldd = run(["ldd", program], env=env).stdout
        self.assertRegex(ldd, r"libtracery\.so\.0 => " + re.escape(os.path.join(self.libdir, "libtracery.so.0")),
                         "the program must run with the installed libtracery")
        run([program], env=env)
        bt = run(["babeltrace2", trace_dir])
        self.assertEqual(bt.stderr, "", "babeltrace2 warned")
        events = []
        for line in bt.stdout.splitlines():
            m = EVENT_LINE.match(line)
            self.assertIsNotNone(m, f"unexpected babeltrace2 line: {line}")
            events.append((m["name"], m["payload"]))
        return sorted(events)

    def test_installs_the_headers_library_package_files_and_programs_only(self):
        expected = {os.path.join(INCLUDEDIR, "tracery", f) for f in (
            "README.md", "tracepoint.h", "tracepoint.hpp", "ctl.h",
            "runtime_event.h", "internal/event_desc.h",
            "internal/entry.h", "internal/probe.h", "internal/emitter.h")}
        expected |= {os.path.join(LIBDIR, f) for f in (
            f"libtracery.so.{VERSION}", "libtracery.so.0", "libtracery.so", "pkgconfig/tracery.pc",
            f"libtracery-ctl.so.{VERSION}", "libtracery-ctl.so.0", "libtracery-ctl.so", "pkgconfig/tracery-ctl.pc",
            "cmake/Tracery/TraceryConfig.cmake", "cmake/Tracery/TraceryConfigVersion.cmake",
            "cmake/Tracery/TraceryTargets.cmake")}
        expected |= {os.path.join(LIBDIR, f"libtracery-preload-{h}.so") for h in PRELOAD_HELPERS}
        expected |= {os.path.join(BINDIR, p) for p in ("traceryd", "tracery-relayd", "tracery", "tracery-clock-report")}
        if BENCHMARKS:
            expected |= {os.path.join(LIBEXECDIR, "tracery", p) for p in (
                "tracery-bench", "clock_bench", "filter_bench", "enable_check_bench", "ringbuf_benchmark")}
        # The man pages (packaging/gen_docs.py: one per verb), the completion and the systemd units.
        generated = os.path.join(BUILD_DIR, "packaging", "generated", "man")
        expected |= {os.path.join(MANDIR, os.path.relpath(os.path.join(root, f), generated))
                     for root, _, files in os.walk(generated) for f in files}
        self.assertIn(os.path.join(MANDIR, "man1", "tracery-create.1.gz"), expected)  # gzipped, as Debian wants
        expected |= {os.path.join(DATADIR, "bash-completion", "completions", "tracery"),
                     os.path.join(DATADIR, "zsh", "vendor-completions", "_tracery"),
                     "lib/systemd/system/traceryd.service", "lib/systemd/system/traceryd.socket"}
        found = self.installed_files()
        if PYTHON_DIR:
            expected |= {os.path.join(PYTHON_DIR, "tracery", f) for f in PYTHON_PACKAGE}
            expected |= {f for f in found if re.fullmatch(re.escape(PYTHON_DIR) + r"/tracery/_tracery\..*\.so", f)}
            self.assertTrue(any(f.endswith(".so") and "/tracery/_tracery." in f for f in expected), "no extension")
        if JAVA:
            expected |= {JAR, os.path.join(LIBDIR, "libtracery-java.so")}
        # Per-configuration part of the exported targets, and lttng-bench where liblttng-ust is installed.
        optional = {f for f in found if re.fullmatch(re.escape(LIBDIR) + r"/cmake/Tracery/TraceryTargets-\w+\.cmake", f)}
        optional.add(os.path.join(LIBEXECDIR, "tracery", "lttng-bench"))
        self.assertEqual(expected - found, set(), "missing")
        self.assertEqual(found - expected - optional, set(), "installed but not expected")
        lib = os.path.join(self.libdir, "libtracery.so")
        self.assertEqual(os.readlink(lib), "libtracery.so.0")
        self.assertEqual(os.readlink(lib + ".0"), f"libtracery.so.{VERSION}")
        ctl = os.path.join(self.libdir, "libtracery-ctl.so")
        self.assertEqual(os.readlink(ctl), "libtracery-ctl.so.0")
        self.assertEqual(os.readlink(ctl + ".0"), f"libtracery-ctl.so.{VERSION}")

    def test_preload_helpers_use_the_installed_libtracery(self):
        for h in PRELOAD_HELPERS:
            helper = os.path.join(self.libdir, f"libtracery-preload-{h}.so")
            ldd = run(["ldd", helper], env=clean_env()).stdout
            self.assertRegex(ldd, r"libtracery\.so\.0 => " + re.escape(os.path.join(self.libdir, "libtracery.so.0")),
                             helper)

    def test_python_package_records_with_the_installed_libtracery(self):
        if not PYTHON_DIR:
            self.skipTest("the Python package is not built")
        if SANITIZE:
            self.skipTest("the package is built with sanitizers: Debian's python3 cannot load it")
        trace_dir = os.path.join(self.tmp, "python")
        env = dict(clean_env(), TRACERY_OUTPUT=trace_dir, TRACERY_EVENTS="installed:*,python:*",
                   PYTHONPATH=os.path.join(self.prefix, PYTHON_DIR))
        code = ("import logging, tracery\n"
                "print(tracery.__file__)\n"
                "tracery.Event('installed:ev', n=int).emit(n=42)\n"
                "logging.getLogger().addHandler(tracery.LoggingHandler())\n"
                "logging.getLogger('app').warning('from the prefix')\n")
        out = run(["/usr/bin/python3", "-c", code], env=env, cwd=self.tmp).stdout
        self.assertEqual(out.strip(), os.path.join(self.prefix, PYTHON_DIR, "tracery", "__init__.py"))
        bt = run(["babeltrace2", trace_dir])
        self.assertEqual(bt.stderr, "", "babeltrace2 warned")
        self.assertIn("installed:ev: { cpu_id = ", bt.stdout)
        self.assertIn("{ n = 42 }", bt.stdout)
        self.assertIn('python:app: { cpu_id = ', bt.stdout)
        self.assertIn('msg = "from the prefix"', bt.stdout)
        extension = next(f for f in self.installed_files() if "/tracery/_tracery." in f)
        ldd = run(["ldd", os.path.join(self.prefix, extension)], env=clean_env()).stdout
        loaded = re.search(r"libtracery\.so\.0 => (\S+)", ldd)
        self.assertIsNotNone(loaded, ldd)
        self.assertEqual(os.path.realpath(loaded[1]), os.path.realpath(os.path.join(self.libdir, "libtracery.so.0")))

    def test_java_agent_records_with_the_installed_libtracery(self):
        if not JAVA:
            self.skipTest("the Java agent is not built (no JDK)")
        if SANITIZE:
            self.skipTest("a sanitizer build: the JVM cannot load a JNI library built with a sanitizer")
        source = os.path.join(self.tmp, "Installed.java")
        with open(source, "w") as f:
            f.write("import java.util.logging.Logger;\n"
                    "import org.tracery.Field;\n"
                    "import org.tracery.TraceryEvent;\n"
                    "import org.tracery.jul.TraceryLogHandler;\n"
                    "public class Installed {\n"
                    "  public static void main(String[] args) {\n"
                    "    TraceryEvent.define(\"installed:java\", Field.int64(\"n\")).emit(42L);\n"
                    "    Logger logger = Logger.getLogger(\"app\");\n"
                    "    logger.addHandler(new TraceryLogHandler());\n"
                    "    logger.warning(\"from the prefix\");\n"
                    "  }\n"
                    "}\n")
        trace_dir = os.path.join(self.tmp, "java")
        env = dict(clean_env(), TRACERY_OUTPUT=trace_dir, TRACERY_EVENTS="installed:*,java:*")
        # The jar alone on the class path: it finds the installed JNI library by itself.
        run([JAVA, "-cp", os.path.join(self.prefix, JAR), source], env=env, cwd=self.tmp)
        bt = run(["babeltrace2", trace_dir])
        self.assertEqual(bt.stderr, "", "babeltrace2 warned")
        self.assertIn("installed:java: { cpu_id = ", bt.stdout)
        self.assertIn("{ n = 42 }", bt.stdout)
        self.assertIn("java:app: { cpu_id = ", bt.stdout)
        self.assertIn('msg = "from the prefix"', bt.stdout)
        ldd = run(["ldd", os.path.join(self.libdir, "libtracery-java.so")], env=clean_env()).stdout
        loaded = re.search(r"libtracery\.so\.0 => (\S+)", ldd)
        self.assertIsNotNone(loaded, ldd)
        self.assertEqual(os.path.realpath(loaded[1]), os.path.realpath(os.path.join(self.libdir, "libtracery.so.0")))

    def test_installed_files_do_not_point_into_the_build_tree(self):
        build = os.path.realpath(BUILD_DIR)
        for rel in sorted(self.installed_files()):
            path = os.path.join(self.prefix, rel)
            with open(path, "rb") as f:
                is_elf = f.read(4) == b"\x7fELF"
            if is_elf:
                dyn = run(["readelf", "-d", path]).stdout
                self.assertNotIn(build, dyn, f"{rel}: RPATH/RUNPATH into the build tree")
            elif rel.endswith((".cmake", ".pc")):
                with open(path) as f:
                    self.assertNotIn(build, f.read(), rel)

    def test_installed_programs_run(self):
        env = clean_env()
        version = run([os.path.join(self.prefix, BINDIR, "tracery"), "version"], env=env).stdout
        self.assertRegex(version, rf"^tracery {re.escape(VERSION)} \(control protocol \d+, relay protocol \d+\)\n$")
        helptext = run([os.path.join(self.prefix, BINDIR, "traceryd"), "--help"], env=env).stdout
        self.assertIn("session daemon", helptext)
        self.assertIn("Usage:", helptext)

    def test_pc_file_has_the_install_prefix(self):
        env = clean_env()
        env["PKG_CONFIG_PATH"] = os.path.join(self.libdir, "pkgconfig")
        self.assertEqual(run(["pkg-config", "--modversion", "tracery"], env=env).stdout.strip(), VERSION)
        cflags = run(["pkg-config", "--cflags", "tracery"], env=env).stdout.split()
        libs = run(["pkg-config", "--libs", "tracery"], env=env).stdout.split()
        self.assertEqual(cflags, ["-I" + os.path.join(self.prefix, INCLUDEDIR)])
        self.assertEqual(libs, ["-L" + self.libdir, "-ltracery"])
        self.assertEqual(run(["pkg-config", "--modversion", "tracery-ctl"], env=env).stdout.strip(), VERSION)
        self.assertEqual(run(["pkg-config", "--cflags", "tracery-ctl"], env=env).stdout.split(), cflags)
        self.assertEqual(run(["pkg-config", "--libs", "tracery-ctl"], env=env).stdout.split(),
                         ["-L" + self.libdir, "-ltracery-ctl"])

    def test_find_package_consumer(self):
        build = os.path.join(self.tmp, "find_package-build")
        flags = f"-fsanitize={SANITIZE}" if SANITIZE else ""
        configure = [CMAKE, "-S", os.path.join(HERE, "find_package"), "-B", build,
                     f"-DCMAKE_PREFIX_PATH={self.prefix}", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                     f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}", f"-DCMAKE_EXE_LINKER_FLAGS={flags}"]
        if ENV.get("TRACERY_CMAKE_GENERATOR"):
            configure.append("-G" + ENV["TRACERY_CMAKE_GENERATOR"])
        for lang in ("C", "CXX"):
            if ENV.get(f"TRACERY_{lang}_COMPILER"):
                configure.append(f"-DCMAKE_{lang}_COMPILER={ENV[f'TRACERY_{lang}_COMPILER']}")
        run(configure, env=clean_env())
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            self.assertIn(f"Tracery_DIR:PATH={os.path.join(self.libdir, 'cmake', 'Tracery')}\n", f.read())
        run([CMAKE, "--build", build], env=clean_env())
        events = self.traced(os.path.join(build, "app"), "find_package-trace")
        self.assertEqual(events, sorted([
            # C++ events (tracepoint.hpp), app.cpp
            ("fp_cxx:query", 'id = 40, table = "users", op = ( "read" : container = 0 ), '
                             "dims = [ [0] = 1, [1] = 640 ], _keys_length = 1, keys = [ [0] = 7 ]"),
            ("fp_cxx:query", 'id = 41, table = "orders", op = ( "write" : container = 1 ), '
                             "dims = [ [0] = 2, [1] = 640 ], _keys_length = 3, keys = [ [0] = 7, [1] = -8, [2] = 9 ]"),
            # C events (tracepoint.h), c_events.c
            ("fp_c:tick", "count = 0, ratio = 0, last = 0, _history_length = 1, history = [ [0] = 0 ]"),
            ("fp_c:tick", "count = 1000, ratio = 0.25, last = 0, _history_length = 2, history = [ [0] = 0, [1] = -1 ]"),
            ("fp_c:tick", "count = 2000, ratio = 0.5, last = 0, _history_length = 3, "
                          "history = [ [0] = 0, [1] = -1, [2] = -4 ]"),
            ("fp_c:tick", "count = 3000, ratio = 0.75, last = 1, _history_length = 4, "
                          "history = [ [0] = 0, [1] = -1, [2] = -4, [3] = -9 ]"),
        ]))

    def test_pkg_config_consumer(self):
        build = os.path.join(self.tmp, "pkg_config-build")
        os.mkdir(build)
        env = clean_env()
        env["PKG_CONFIG_PATH"] = os.path.join(self.libdir, "pkgconfig")
        make = ["make", "-f", os.path.join(HERE, "pkg_config", "Makefile")]
        if ENV.get("TRACERY_C_COMPILER"):
            make.append(f"CC={ENV['TRACERY_C_COMPILER']}")
        if SANITIZE:
            make += [f"CFLAGS=-O2 -g -fsanitize={SANITIZE}", f"LDFLAGS={C_SANITIZE_LDFLAGS}"]
        run(make, env=env, cwd=build)
        events = self.traced(os.path.join(build, "app"), "pkg_config-trace")
        self.assertEqual(events, [
            ("pkgconfig_app:sample", 'index = 0, offset = 0, label = "first", level = ( "low" : container = 0 ), '
                                     "bytes = [ [0] = 0, [1] = 10, [2] = 20 ]"),
            ("pkgconfig_app:sample", 'index = 1, offset = -100, label = "second", level = ( "low" : container = 0 ), '
                                     "bytes = [ [0] = 1, [1] = 11, [2] = 21 ]"),
            ("pkgconfig_app:sample", 'index = 2, offset = -200, label = "third", level = ( "high" : container = 1 ), '
                                     "bytes = [ [0] = 2, [1] = 12, [2] = 22 ]"),
        ])


if __name__ == "__main__":
    unittest.main()
