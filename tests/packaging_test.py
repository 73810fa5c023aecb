#!/usr/bin/env python3
"""What Tracery installs beside its programs, checked as a user meets it: a
man page for every verb (each option of the verb's --help in it), traceryd(8)
and tracery-relayd(8), read by man; the bash completion completing a verb, an
option, and a session name that the daemon knows; the Debian packages of
`cpack -G DEB`, with the man pages (gzipped), completion, systemd units and
Python package where Debian expects them, no benchmark in bin/, each with
its copyright file and changelog, file times of its changelog's date, no
error from lintian, their dependencies resolved as apt resolves them, and,
as root, installed with `dpkg -i` and used, then purged (DebianPackages says
when and why)."""
import email.utils
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from daemontest import DaemonTestCase, go
from tracetest import BUILD_DIR, program

GENERATED = os.path.join(BUILD_DIR, "packaging", "generated")
MAN = os.path.join(GENERATED, "man")
COMPLETION = os.path.join(GENERATED, "completion", "tracery")


def definition(program):
    return json.loads(subprocess.run([program, "--dump-cli-json"], capture_output=True, text=True, check=True,
                                     timeout=60).stdout)


def verb_paths(cli, words=()):
    for verb in cli["verbs"]:
        path = (*words, verb["name"])
        yield path
        yield from verb_paths(verb, path)


def help_options(text):
    """The options --help lists: -x and --long-name at the start of its lines."""
    options = set()
    for line in text.splitlines():
        m = re.match(r"^\s+((?:-\w|--[\w-]+)(?:,(?:-\w|--[\w-]+))*)", line)
        if m:
            options |= set(m.group(1).split(","))
    return options


def man_text(page, manpath):
    proc = subprocess.run(["man", "-P", "cat", page], env=dict(os.environ, MANPATH=manpath, MANWIDTH="200"),
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise AssertionError(f"man {page}: {proc.stderr}")
    return proc.stdout


class ManPages(unittest.TestCase):
    def test_every_verb_has_a_page_with_every_option_of_its_help(self):
        if shutil.which("man") is None:
            self.skipTest("man is not installed")
        cli = os.path.join(BUILD_DIR, "src", "cli", "tracery")
        paths = list(verb_paths(definition(cli)))
        self.assertIn(("snapshot", "record"), paths)
        self.assertIn(("create",), paths)
        for words in paths:
            help_text = subprocess.run([cli, *words, "--help"], capture_output=True, text=True, check=True).stdout
            page = man_text("tracery-" + "-".join(words), MAN)
            for option in help_options(help_text):
                self.assertRegex(page, r"(^|[\s,\[])" + re.escape(option) + r"\b", f"{' '.join(words)}: {option}")
            first_line = help_text.splitlines()[0]
            self.assertIn(first_line.split(".")[0][:60], " ".join(page.split()), words)
        top = man_text("tracery", MAN)
        for words in paths:
            if len(words) == 1:
                self.assertIn(f"tracery-{words[0]}(1)", top)
        self.assertIn("TRACERY_NO_AUTOSTART", top)
        for daemon_program, page in [(os.path.join(BUILD_DIR, "src", "daemon", "traceryd"), "traceryd"),
                                     (os.path.join(BUILD_DIR, "src", "relay", "tracery-relayd"), "tracery-relayd")]:
            help_text = subprocess.run([daemon_program, "--help"], capture_output=True, text=True, check=True).stdout
            text = man_text(page, MAN)
            for option in help_options(help_text):
                self.assertIn(option, text, page)
        library = man_text("tracery.3", MAN)
        self.assertIn("TRACERY_OUTPUT", library)  # the environment, from the README's table
        self.assertIn("TRACERY_EMIT", library)


class Completion(DaemonTestCase):
    def complete(self, *words):
        """COMPREPLY for the command line `words`, the last one being completed."""
        script = ('source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tracery_complete; '
                  'printf "%s\\n" "${COMPREPLY[@]}"')
        env = dict(self.d.env, PATH=os.path.join(BUILD_DIR, "src", "cli") + ":" + os.environ["PATH"])
        proc = subprocess.run(["bash", "-c", script, COMPLETION, *words], env=env, cwd=self.here, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(proc.stderr, "")
        return sorted(filter(None, proc.stdout.split("\n")))

    def test_verbs_options_sessions_events_channels(self):
        self.here = self.out("here")
        os.makedirs(os.path.join(self.here, "bench"))
        self.assertEqual(self.complete("tracery", "cre"), ["create"])
        self.assertEqual(self.complete("tracery", "snapshot", "rec"), ["record"])
        self.assertEqual(self.complete("tracery", "create", "--out"), ["--output"])
        self.assertIn("--session", self.complete("tracery", "enable-event", "--"))
        self.d.start_daemon()
        self.assertEqual(self.complete("tracery", "start", ""), [])
        for name in ("alpha", "alps", "beta"):
            self.d.tracery("create", name, "--output", self.out(name))
        self.d.tracery("enable-channel", "-u", "mychan", "-s", "alpha")
        self.assertEqual(self.complete("tracery", "start", "al"), ["alpha", "alps"])
        self.assertEqual(self.complete("tracery", "status", "-s", "b"), ["beta"])
        self.assertEqual(self.complete("tracery", "enable-event", "-s", "alpha", "-c", "my"), ["mychan"])
        # the events of running programs (list -u)
        emitter, _ = self.d.spawn_registered([program("tests", "daemon-emitter"), "count", "1", "wait"])
        self.assertEqual(self.complete("tracery", "enable-event", "-u", "emit:"), ["emit:other", "emit:tick"])
        go(emitter)
        emitter.communicate(timeout=60)
        self.assertEqual(self.complete("tracery", "view", "be"), ["beta"])  # not the directory bench/ here
        self.assertEqual(self.complete("tracery", "view", "./be"), ["./bench"])  # a path, written as one


    def test_zsh_runs_the_same_completion(self):
        if shutil.which("zsh") is None:
            self.skipTest("zsh is not installed")
        # As zsh's _bash_complete calls it (compgen -F); zsh filters the candidates by the word itself.
        script = ('autoload -U +X bashcompinit && bashcompinit; compdef() { :; }; source "$1"; '
                  'COMP_WORDS=(tracery create --out); COMP_CWORD=2; compgen -F _tracery_complete -- --out')
        proc = subprocess.run(["zsh", "-c", script, "zsh", COMPLETION], capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.stderr, "")
        self.assertIn("--output", proc.stdout.split())
        self.assertNotIn("--format", proc.stdout.split())  # export's, not create's
        with open(os.path.join(GENERATED, "completion", "_tracery")) as f:
            zsh_file = f.read()
        self.assertTrue(zsh_file.startswith("#compdef tracery\n"))
        self.assertIn("_bash_complete -F _tracery_complete", zsh_file)


# Every package cpack makes, and the paths the tests below look for in them.
PACKAGES = ("tracery", "libtracery0", "libtracery-dev", "libtracery-ctl0", "tracery-preload", "python3-tracery")
# Their install components (cmake/tracery_package.cmake): cpack makes only these (not tracery-java, which no test
# here reads).
COMPONENTS = ("tracery", "lib", "dev", "ctl", "preload", "python_deb")
PYTHON_DEB_DIR = "/usr/lib/python3/dist-packages/tracery"
# Debian's archive section of each.
SECTIONS = {"tracery": "utils", "libtracery0": "libs", "libtracery-dev": "libdevel", "libtracery-ctl0": "libs",
            "tracery-preload": "utils", "python3-tracery": "python", "tracery-java": "java"}


def run(*command, timeout=120, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)


# How long dpkg waits for another process (apt, unattended-upgrades) to release its lock.
DPKG_LOCK_WAIT = 300


def dpkg(*args):
    """`dpkg ARGS`; while another process holds dpkg's lock (dpkg then fails
    at once, changing nothing), says so and tries again, for up to
    DPKG_LOCK_WAIT seconds."""
    deadline = time.monotonic() + DPKG_LOCK_WAIT
    said = False
    while True:
        proc = run("dpkg", *args)
        held = re.search(r"dpkg (?:frontend|database) lock (?:was|is) locked by another process with pid (\d+)",
                         proc.stderr)
        if proc.returncode == 0 or not held or time.monotonic() > deadline:
            return proc
        if not said:
            try:
                with open(f"/proc/{held.group(1)}/cmdline", "rb") as f:
                    holder = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                holder = "gone already"
            print(f"packaging_test: dpkg {args[0]} waits, up to {DPKG_LOCK_WAIT} s, for dpkg's lock, which process "
                  f"{held.group(1)} holds ({holder})", file=sys.stderr, flush=True)
            said = True
        time.sleep(1)


def changelog_time(text):
    """The time (seconds) of a Debian changelog's newest entry."""
    return int(email.utils.parsedate_to_datetime(re.search(r"^ -- .+?>  (.+)$", text, re.M).group(1)).timestamp())


def dpkg_status(name):
    """dpkg's status of package NAME ("" when dpkg does not know it)."""
    proc = run("dpkg-query", "-W", "-f=${db:Status-Abbrev}", name)
    return proc.stdout.strip() if proc.returncode == 0 else ""


class DebianPackages(unittest.TestCase):
    """The packages of one `cpack -G DEB` run, shared by the tests below.

    test_installed_by_dpkg installs them for real, as root: `dpkg -i` checks
    every Depends field against this system, runs the triggers the packages
    declare (ldconfig), and the programs, man pages, completion, units, Python
    package and pkg-config files are then used where Debian keeps them. It
    runs only when that leaves the machine as it was: none of the packages and
    none of their files there before, every dependency already installed (else
    `dpkg -i` would leave them unconfigured, and `apt-get` would pull others
    in, which removing ours would not remove); `dpkg --purge` then removes
    them, and the test checks that every file and directory of the packages
    is as before (no byte-code: Python runs with -B). Otherwise, and always,
    the dependencies are resolved as apt would against this system
    (`apt-get install --simulate ./PACKAGE.deb`, which changes nothing), and
    the packages' contents and fields are read with dpkg-deb. A chroot or
    `dpkg --root` into an empty directory would prove less: its dpkg knows
    none of the system's packages, so no Depends field is checked."""

    @classmethod
    def setUpClass(cls):
        if shutil.which("dpkg-deb") is None or shutil.which("dpkg-shlibdeps") is None:
            raise unittest.SkipTest("dpkg-dev is not installed")
        if os.environ.get("TRACERY_SANITIZE"):
            raise unittest.SkipTest("packages are made of a release tree, not of a sanitizer one")
        cls.tmp = tempfile.mkdtemp(prefix="tracery-deb-")
        proc = run("cpack", "-G", "DEB", "-D",
                   "CPACK_COMPONENTS_ALL=" + ";".join(COMPONENTS), "--config",
                   os.path.join(BUILD_DIR, "CPackConfig.cmake"), "-B", cls.tmp, timeout=900)
        if proc.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError("cpack: " + proc.stdout + proc.stderr)
        cls.debs = {f.split("_")[0]: os.path.join(cls.tmp, f) for f in os.listdir(cls.tmp) if f.endswith(".deb")}
        cls.root = os.path.join(cls.tmp, "root")  # every package unpacked, as dpkg-deb -x does
        for deb in cls.debs.values():
            subprocess.run(["dpkg-deb", "-x", deb, cls.root], check=True, timeout=120)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def contents(self, name):
        """The files (and links) of package NAME."""
        return self.paths(name)[0]

    def paths(self, name):
        """The files (and links) and the directories of package NAME."""
        out = run("dpkg-deb", "-c", self.debs[name], check=True).stdout
        files, dirs = set(), set()
        for line in out.splitlines():
            path = line.split()[5].lstrip(".").rstrip("/")
            if path:
                (dirs if line.startswith("d") else files).add(path)
        return files, dirs

    def field(self, name, key):
        return run("dpkg-deb", "-f", self.debs[name], key, check=True).stdout.strip()

    def test_contents_and_fields(self):
        for name in PACKAGES:
            self.assertIn(name, self.debs)
        tool = self.contents("tracery")
        for path in ("/usr/bin/tracery", "/usr/bin/traceryd", "/usr/bin/tracery-relayd",
                     "/usr/share/man/man1/tracery.1.gz", "/usr/share/man/man1/tracery-create.1.gz",
                     "/usr/share/man/man1/tracery-snapshot-record.1.gz", "/usr/share/man/man8/traceryd.8.gz",
                     "/usr/share/man/man8/tracery-relayd.8.gz",
                     "/usr/share/bash-completion/completions/tracery", "/usr/share/zsh/vendor-completions/_tracery",
                     "/usr/lib/systemd/system/traceryd.service", "/usr/lib/systemd/system/traceryd.socket"):
            self.assertIn(path, tool)
        with open(os.path.join(self.root, "usr/lib/systemd/system/traceryd.service")) as f:
            self.assertIn("ExecStart=/usr/bin/traceryd ", f.read())
        dev = self.contents("libtracery-dev")
        self.assertIn("/usr/include/tracery/tracepoint.h", dev)
        self.assertIn("/usr/share/man/man3/tracery.3.gz", dev)
        self.assertIn("/usr/share/man/man3/tracery-ctl.3.gz", dev)
        # Every man page compressed (Debian's policy), none left plain.
        everything = set().union(*(self.contents(n) for n in self.debs))
        pages = [p for p in everything if p.startswith("/usr/share/man/")]
        self.assertGreater(len(pages), 40)
        for page in pages:
            self.assertTrue(page.endswith(".gz"), page)
            with open(os.path.join(self.root, page.lstrip("/")), "rb") as f:
                self.assertEqual(f.read(2), b"\x1f\x8b", page)
        self.assertTrue(any(p.endswith("/libtracery.so.0") for p in self.contents("libtracery0")))
        self.assertTrue(any(p.endswith("/libtracery-ctl.so.0") for p in self.contents("libtracery-ctl0")))
        self.assertIn("/usr/include/tracery/ctl.h", dev)
        self.assertTrue(any(p.endswith("/pkgconfig/tracery-ctl.pc") for p in dev))
        self.assertTrue(any(p.endswith("/libtracery-preload-libc.so") for p in self.contents("tracery-preload")))
        # The Python package where Debian's python3 imports from, whatever this tree's prefix.
        python = self.contents("python3-tracery")
        for module in ("__init__.py", "ctl.py", "_ctl_location.py"):
            self.assertIn(f"{PYTHON_DEB_DIR}/{module}", python)
        self.assertTrue(any(re.fullmatch(re.escape(PYTHON_DEB_DIR) + r"/_tracery\.cpython-.*\.so", p) for p in python))
        self.assertEqual([p for p in everything if "bench" in p], [])  # no benchmark is packaged
        self.assertIn("libc6", self.field("tracery", "Depends"))  # dpkg-shlibdeps read the programs
        self.assertIn("libssl3", self.field("tracery", "Depends"))
        self.assertIn("libcurl", self.field("tracery", "Depends"))  # loaded with dlopen, named by CMake
        self.assertIn("libtracery0", self.field("tracery-preload", "Depends"))
        self.assertIn("libtracery0 (= ", self.field("libtracery-dev", "Depends"))
        self.assertIn("libtracery-ctl0 (= ", self.field("libtracery-dev", "Depends"))
        python_depends = self.field("python3-tracery", "Depends")
        # the python3 release the extension module was built for (apt's simulation below checks this one's)
        self.assertRegex(python_depends, r"python3 \(>= 3\.\d+~\), python3 \(<< 3\.\d+\)")
        self.assertIn("libtracery-ctl0 (= ", python_depends)  # tracery.ctl loads it
        # Unpacked into a root as dpkg would: man finds the verb's page there.
        if shutil.which("man"):
            self.assertIn("tracery create", man_text("tracery-create", os.path.join(self.root, "usr/share/man")))

    def test_control_fields(self):
        synopses = set()
        for name in self.debs:
            self.assertRegex(self.field(name, "Maintainer"), r"^\w[^<>]* <[^@\s<>]+@[\w-]+(\.[\w-]+)+>$", name)
            self.assertEqual(self.field(name, "Section"), SECTIONS[name], name)
            self.assertEqual(self.field(name, "Priority"), "optional", name)
            # A synopsis of its own, then an extended description in lines of at most 80 columns.
            synopsis, *extended = self.field(name, "Description").split("\n")
            self.assertLess(len(synopsis), 80, name)
            self.assertNotIn(synopsis, synopses)
            synopses.add(synopsis)
            self.assertGreater(len(extended), 2, name)
            for line in extended:
                self.assertRegex(line, r"^ \S", name)
                self.assertLessEqual(len(line), 80, name)
            self.assertTrue(extended[0].startswith(" Tracery records the events"), extended[0])

    def test_copyright_changelog_and_file_times(self):
        for name, deb in self.debs.items():
            doc = f"/usr/share/doc/{name}"
            self.assertIn(f"{doc}/copyright", self.contents(name))
            with open(os.path.join(self.root, doc.lstrip("/"), "copyright"), encoding="utf-8") as f:
                copyright_text = f.read()
            self.assertTrue(copyright_text.startswith(
                "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"), name)
            # Tracery's own paragraph, and the libraries compiled in with the text of their licences.
            self.assertIn("Files: *\nCopyright: the Tracery authors\n", copyright_text)
            for licence in ("BSD-3-clause", "Expat", "Zlib"):
                self.assertRegex(copyright_text, rf"\nLicense: {licence}\n .*\S", name)
            # Native packages: the Debian changelog is changelog.gz, compressed as `gzip -9n` does (no name, no
            # time), its newest entry this package's version.
            with open(os.path.join(self.root, doc.lstrip("/"), "changelog.gz"), "rb") as f:
                raw = f.read()
            self.assertEqual(raw[3] & 0x08, 0, f"{name}: a file name in changelog.gz")
            self.assertEqual(raw[4:8], b"\0\0\0\0", f"{name}: a time in changelog.gz")
            changelog = gzip.decompress(raw).decode()
            self.assertTrue(changelog.startswith(f"tracery ({self.field(name, 'Version')}) "), changelog[:80])
            # Every file's time is the changelog's (or SOURCE_DATE_EPOCH's, when set): the same sources make the
            # same packages.
            when = int(os.environ.get("SOURCE_DATE_EPOCH") or changelog_time(changelog))
            listing = run("dpkg-deb", "-c", deb, check=True, env=dict(os.environ, TZ="UTC")).stdout
            stamps = {" ".join(line.split()[3:5]) for line in listing.splitlines()}
            self.assertEqual(stamps, {time.strftime("%Y-%m-%d %H:%M", time.gmtime(when))}, name)

    def test_lintian_finds_no_error(self):
        if shutil.which("lintian") is None:
            self.skipTest("lintian is not installed")
        # Any tag overridden is in an overrides file the package installs, with the reason beside it.
        proc = subprocess.run(["lintian", "--fail-on", "error", *sorted(self.debs.values())], capture_output=True,
                              text=True, timeout=900)
        errors = [line for line in proc.stdout.splitlines() if line.startswith("E: ")]
        self.assertEqual(errors, [], proc.stdout)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def simulate_install(self):
        """apt-get's simulation of installing the packages: the packages it would install besides them."""
        if DebianPackages.simulated is None:
            DebianPackages.simulated = self.run_simulation()
        return DebianPackages.simulated

    simulated = None

    def run_simulation(self):
        proc = run("apt-get", "install", "--simulate", "-o", "Debug::NoLocking=1",
                   *(os.path.abspath(self.debs[n]) for n in PACKAGES))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        installed = set(re.findall(r"^Inst (\S+)", proc.stdout, re.M))
        for name in PACKAGES:
            self.assertIn(name, installed, proc.stdout)
        return installed - set(PACKAGES)

    def test_dependencies_resolve_as_apt_resolves_them(self):
        if shutil.which("apt-get") is None:
            self.skipTest("apt-get is not installed")
        self.simulate_install()

    def test_installed_by_dpkg(self):
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            self.skipTest("installing packages takes root and apt-get (the contents are checked without)")
        present = [n for n in PACKAGES if dpkg_status(n)]
        if present:
            self.skipTest(f"already known to dpkg here: {', '.join(present)}; not replaced by a test")
        others = self.simulate_install()
        if others:
            self.skipTest(f"installing the packages would pull in {', '.join(sorted(others))}, "
                          "which a purge would leave")
        files, dirs = set(), set()
        for name in PACKAGES:
            f, d = self.paths(name)
            files |= f
            dirs |= d
        there = sorted(p for p in files if os.path.lexists(p))
        if there:
            self.skipTest(f"files of the packages are on this machine already: {there[:3]}")
        dirs_before = {d for d in dirs if os.path.isdir(d)}
        self.addCleanup(self.purge, files, dirs, dirs_before)
        proc = dpkg("-i", *(self.debs[n] for n in PACKAGES))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for name in PACKAGES:
            self.assertEqual(dpkg_status(name), "ii", name)
        env = {k: v for k, v in os.environ.items() if k not in ("MANPATH", "PYTHONPATH", "PKG_CONFIG_PATH",
                                                                  "LD_LIBRARY_PATH")}
        env.update(PATH="/usr/bin:/bin", PYTHONDONTWRITEBYTECODE="1")
        version = run("/usr/bin/tracery", "--version", env=env)
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertIn(self.field("tracery", "Version"), version.stdout)
        if shutil.which("man"):
            self.assertEqual(run("man", "-w", "tracery-create", env=env).stdout.strip(),
                             "/usr/share/man/man1/tracery-create.1.gz")
        completion = ('source /usr/share/bash-completion/completions/tracery; COMP_WORDS=(tracery snapshot rec); '
                      'COMP_CWORD=2; _tracery_complete; printf "%s\\n" "${COMPREPLY[@]}"')
        self.assertEqual(run("bash", "-c", completion, env=env).stdout.split(), ["record"])
        if shutil.which("systemd-analyze"):
            verify = run("systemd-analyze", "verify", "/usr/lib/systemd/system/traceryd.socket",
                         "/usr/lib/systemd/system/traceryd.service", env=env)
            self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        # Debian's python3 imports the package, whose tracery.ctl loads the installed libtracery-ctl.
        rundir = os.path.join(self.tmp, "no-daemon")
        os.makedirs(rundir, exist_ok=True)
        script = ("import tracery, tracery.ctl\nprint(tracery.__file__)\ntry:\n    tracery.ctl.list_sessions()\n"
                  "except tracery.ctl.NoDaemon as e:\n    print('NoDaemon', e)\n")
        python = run("/usr/bin/python3", "-B", "-c", script, cwd=rundir,
                     env=dict(env, TRACERY_RUNDIR=rundir, TRACERY_NO_AUTOSTART="1"))
        self.assertEqual(python.returncode, 0, python.stderr)
        self.assertEqual(python.stdout.splitlines()[0], f"{PYTHON_DEB_DIR}/__init__.py")
        self.assertTrue(python.stdout.splitlines()[1].startswith("NoDaemon "), python.stdout)
        if shutil.which("pkg-config"):
            self.assertIn("-ltracery-ctl", run("pkg-config", "--libs", "tracery-ctl", env=env).stdout)
        self.assertIn("libtracery-ctl.so.0 ", run("/sbin/ldconfig", "-p").stdout)  # libtracery-ctl0's trigger ran

    def purge(self, files, dirs, dirs_before):
        proc = dpkg("--purge", *PACKAGES)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for name in PACKAGES:
            self.assertEqual(dpkg_status(name), "", name)
        self.assertEqual(sorted(p for p in files if os.path.lexists(p)), [])  # no file left
        self.assertEqual({d for d in dirs if os.path.isdir(d)}, dirs_before)  # no directory made or taken
        self.assertNotIn("libtracery-ctl.so.0 ", run("/sbin/ldconfig", "-p").stdout)


if __name__ == "__main__":
    unittest.main()
