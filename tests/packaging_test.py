#!/usr/bin/env python3
"""What Tracery installs beside its programs, checked as a user meets it: a
man page for every verb (each option of the verb's --help in it), traceryd(8)
and tracery-relayd(8), read by man; the bash completion completing a verb, an
option, and a session name that the daemon knows; the Debian packages of
`cpack -G DEB`, with the man pages, completion and systemd units where Debian
expects them, no benchmark in bin/, and the man page found by man in a root
the packages are unpacked into."""
import json
import os
import re
import shutil
import subprocess
import tempfile
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


class DebianPackages(unittest.TestCase):
    def test_packages(self):
        if shutil.which("dpkg-deb") is None or shutil.which("dpkg-shlibdeps") is None:
            self.skipTest("dpkg-dev is not installed")
        if os.environ.get("TRACERY_SANITIZE"):
            self.skipTest("packages are made of a release tree, not of a sanitizer one")
        tmp = tempfile.mkdtemp(prefix="tracery-deb-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        proc = subprocess.run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"),
                               "-B", tmp], capture_output=True, text=True, timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        debs = {f.split("_")[0]: os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".deb")}
        for name in ("tracery", "libtracery0", "libtracery-dev", "libtracery-ctl0", "tracery-preload"):
            self.assertIn(name, debs)

        def contents(name):
            out = subprocess.run(["dpkg-deb", "-c", debs[name]], capture_output=True, text=True, check=True).stdout
            return {line.split()[5].lstrip(".") for line in out.splitlines() if not line.startswith("d")}

        def field(name, key):
            return subprocess.run(["dpkg-deb", "-f", debs[name], key], capture_output=True, text=True,
                                  check=True).stdout.strip()
        tool = contents("tracery")
        for path in ("/usr/bin/tracery", "/usr/bin/traceryd", "/usr/bin/tracery-relayd",
                     "/usr/share/man/man1/tracery.1", "/usr/share/man/man1/tracery-create.1",
                     "/usr/share/man/man1/tracery-snapshot-record.1", "/usr/share/man/man8/traceryd.8",
                     "/usr/share/man/man8/tracery-relayd.8",
                     "/usr/share/bash-completion/completions/tracery", "/usr/share/zsh/vendor-completions/_tracery",
                     "/usr/lib/systemd/system/traceryd.service", "/usr/lib/systemd/system/traceryd.socket"):
            self.assertIn(path, tool)
        self.assertIn("ExecStart=/usr/bin/traceryd ", self.extract(debs["tracery"], tmp,
                                                                    "usr/lib/systemd/system/traceryd.service"))
        dev = contents("libtracery-dev")
        self.assertIn("/usr/include/tracery/tracepoint.h", dev)
        self.assertIn("/usr/share/man/man3/tracery.3", dev)
        self.assertTrue(any(p.endswith("/libtracery.so.0") for p in contents("libtracery0")))
        self.assertTrue(any(p.endswith("/libtracery-ctl.so.0") for p in contents("libtracery-ctl0")))
        self.assertIn("/usr/include/tracery/ctl.h", dev)
        self.assertTrue(any(p.endswith("/pkgconfig/tracery-ctl.pc") for p in dev))
        self.assertIn("libtracery-ctl0 (= ", field("libtracery-dev", "Depends"))
        self.assertTrue(any(p.endswith("/libtracery-preload-libc.so") for p in contents("tracery-preload")))
        everything = set().union(*(contents(n) for n in debs))
        self.assertEqual([p for p in everything if "bench" in p], [])  # no benchmark is packaged
        self.assertIn("libc6", field("tracery", "Depends"))  # dpkg-shlibdeps read the programs
        self.assertIn("libssl3", field("tracery", "Depends"))
        self.assertIn("libtracery0", field("tracery-preload", "Depends"))
        self.assertIn("libtracery0 (= ", field("libtracery-dev", "Depends"))
        # Unpacked into a root as dpkg would: man finds the verb's page there.
        root = os.path.join(tmp, "root")
        for deb in debs.values():
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        if shutil.which("man"):
            self.assertIn("tracery create", man_text("tracery-create", os.path.join(root, "usr/share/man")))

    @staticmethod
    def extract(deb, tmp, member):
        target = os.path.join(tmp, "one")
        subprocess.run(["dpkg-deb", "-x", deb, target], check=True)
        with open(os.path.join(target, member)) as f:
            return f.read()


if __name__ == "__main__":
    unittest.main()
