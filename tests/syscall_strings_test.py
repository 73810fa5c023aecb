"""System-call arguments as lttng-modules records them, through traceryd: `cat /etc/hostname` traced with
`--syscall openat,open,read,close,execve,connect` gives `dfd = -100` (a signed int, although tracefs says an unsigned 8-byte
field), `filename = "/etc/hostname"` and the execve path, read from the process's memory by the BPF program
(src/kernel/bpf/), the same text in `tracery view` and babeltrace2; a NULL path (open(NULL) and openat(NULL)
through syscall()) is an empty string with its `unfetched` bit set, not the pointer; lttng-iolog names the file
read. Needs root, tracefs and BPF (skipped with a message otherwise)."""
import os
import re
import shutil
import subprocess
import unittest

from daemontest import DaemonTestCase
from daemon_kernel_test import KernelMixin
from tracetest import assert_same_text_but_unfetched

# The shell waits for a line, then execs cat, which reads /etc/hostname, then Python opens NULL paths.
# Then it connects to closed ports of 127.0.0.1 and ::1.
SCRIPT = ("read line; /bin/cat /etc/hostname; exec /usr/bin/python3 -c "
          "'import ctypes, socket; libc = ctypes.CDLL(None); libc.syscall(2, None, 0, 0); "
          "libc.syscall(257, -100, None, 0, 0)\n"
          "for family, address in ((socket.AF_INET, (\"127.0.0.1\", 9)), (socket.AF_INET6, (\"::1\", 9))):\n"
          "    s = socket.socket(family)\n"
          "    s.connect_ex(address)\n"
          "    s.close()'")


class SyscallStringsTest(KernelMixin, DaemonTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()

    def test_paths_signedness_and_faults(self):
        self.d.start_daemon()
        path = self.out("s")
        t = self.d.tracery
        t("create", "s", "--output", path)
        t("enable-event", "-k", "--syscall", "openat,open,read,close,execve,connect", "-s", "s")
        t("enable-event", "-k", "sched_switch,sched_process_fork,sched_process_exec", "-s", "s")
        # The script and a CPU-bound process share one CPU, never idle (KernelMixin.busy_cpu): otherwise cat may
        # run unseen by lttng-iolog.
        cpu, _ = self.busy_cpu()
        p = subprocess.Popen(["/bin/sh", "-c", SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        os.sched_setaffinity(p.pid, {cpu})  # cat and python3 too
        t("track", "-k", "--pid", str(p.pid), "-s", "s")
        t("start", "s")
        if "recorded as pointers" in self.d.log():
            self.skipTest("BPF unavailable here: " + self.d.log())
        out, _ = p.communicate("go\n", timeout=60)
        self.assertEqual(p.returncode, 0)
        with open("/etc/hostname") as f:
            self.assertEqual(out, f.read())
        stop = t("stop", "s").stdout
        self.assertIn("channel0 (kernel): 0 events lost", stop)

        bt = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=300)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stderr, "")
        view = t("view", "s")
        assert_same_text_but_unfetched(self, bt.stdout, view.stdout)
        lines = view.stdout.splitlines()

        def fields(name):
            return [line.split(name + ": ", 1)[1].split("}, ", 1)[1] for line in lines if f" {name}: " in line]

        opens = fields("syscall_entry_openat")
        hostname = [f for f in opens if '"/etc/hostname"' in f]
        self.assertEqual(len(hostname), 1, "\n".join(opens))
        self.assertRegex(hostname[0], r'^\{ dfd = -100, filename = "/etc/hostname", flags = \d+, mode = 0, '
                                      r'unfetched = 0 \}$')
        execs = fields("syscall_entry_execve")
        self.assertTrue(any(re.match(r'\{ filename = "/bin/cat", argv = \d+, envp = \d+, unfetched = 0 \}$', e)
                            for e in execs), execs)
        self.assertTrue(any(e.startswith('{ filename = "/usr/bin/python3",') for e in execs), execs)
        # read's entry has fd and count (buf is an out argument: lttng-modules records it at the exit).
        self.assertTrue(all(re.match(r"\{ fd = \d+, count = \d+ \}$", r) for r in fields("syscall_entry_read")))
        # The NULL paths: empty, their bit set, never the pointer's value.
        self.assertIn('{ filename = "", flags = 0, mode = 0, unfetched = 1 }', fields("syscall_entry_open"))
        self.assertIn('{ dfd = -100, filename = "", flags = 0, mode = 0, unfetched = 1 }', opens)
        # connect's address as lttng-modules' override records it.
        connects = fields("syscall_entry_connect")
        self.assertEqual(len(connects), 2, connects)
        self.assertRegex(connects[0], r"^\{ fd = \d+, uservaddr = 0x[0-9A-F]+, addrlen = 0x10, family = 2, dport = 9, "
                                      r"_v4addr_length = 4, v4addr = \[ \[0\] = 127, \[1\] = 0, \[2\] = 0, \[3\] = 1 \], "
                                      r"_v6addr_length = 0, v6addr = \[ \], unfetched = 0 \}$")
        self.assertRegex(connects[1], r"^\{ fd = \d+, uservaddr = 0x[0-9A-F]+, addrlen = 0x1C, family = 10, dport = 9, "
                                      r"_v4addr_length = 0, v4addr = \[ \], _v6addr_length = 8, v6addr = \[ \[0\] = 0, "
                                      r"\[1\] = 0, \[2\] = 0, \[3\] = 0, \[4\] = 0, \[5\] = 0, \[6\] = 0, \[7\] = 1 \], "
                                      r"unfetched = 0 \}$")

        # lttng-analyses' I/O log names the file cat read.
        if shutil.which("lttng-iolog"):
            io = subprocess.run(["lttng-iolog", os.path.join(path, "kernel")], capture_output=True, text=True,
                                timeout=300)
            self.assertEqual(io.returncode, 0, io.stdout + io.stderr)
            # The process is named "cat" or "sh": lttng-analyses names it from the last sched_switch into it,
            # which may come before its exec.
            self.assertRegex(io.stdout, r"read .* (cat|sh) .* /etc/hostname \(fd=\d+\)")
        t("destroy", "s")


if __name__ == "__main__":
    unittest.main()
