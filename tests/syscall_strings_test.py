"""System-call arguments as lttng-modules records them, through traceryd: `cat /etc/hostname` traced with
`--syscall openat,open,read,close,execve,connect` gives `dfd = -100` (a signed int, although tracefs says an unsigned 8-byte
field), `filename = "/etc/hostname"` and the execve path, read from the process's memory by the BPF program
(src/kernel/bpf/), the same text in `tracery view` and babeltrace2; a NULL path (open(NULL) and openat(NULL)
through syscall()) is an empty string with its `unfetched` bit set, not the pointer; lttng-iolog names the file
read. With `--capture-buffers`, a write's and a writev's bytes at the entry and a read's at the exit (`buf_data`),
a faulting buffer recorded as a fault; pipe2's fds at the exit as the program got them. Needs root, tracefs and
BPF (skipped with a message otherwise)."""
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

# Buffers: writes a known string to stdout (and writev's two parts), reads a file's first bytes, writes from a bad
# pointer (EFAULT), makes a pipe and prints its fds.
BUFFERS = ("read line; exec /usr/bin/python3 -c '"
           "import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True)\n"
           "os.write(1, b\"tracery writes this\\n\")\n"
           "os.writev(1, [b\"first iovec\\n\", b\"second\\n\"])\n"
           "fd = os.open(sys.argv[1], os.O_RDONLY); os.read(fd, 10); os.close(fd)\n"
           "null = os.open(\"/dev/null\", os.O_WRONLY); libc.syscall(1, null, ctypes.c_void_p(8), 5)\n"
           "r, w = os.pipe2(0); print(\"pipe\", r, w, flush=True)' \"$0\"")


def byte_list(text):
    """The bytes of a printed sequence of uint8: '[ [0] = 116, [1] = 114 ]'."""
    return bytes(int(v) for v in re.findall(r"\[\d+\] = (\d+)", text))


def cat_placed_at_its_read(lines, cat):
    """Whether sched_switch alone, as lttng-analyses reads it, has thread CAT running on its CPU when it opens
    /etc/hostname and when it next enters read on that CPU (the lines of `tracery view`)."""
    running, placed, cpu = {}, [], None
    for line in lines:
        on = re.search(r"\{ cpu_id = (\d+) \}", line)
        if not on:
            continue
        if " sched_switch: " in line:
            running[on.group(1)] = int(re.search(r"next_tid = (\d+)", line).group(1))
        elif cpu is None and " syscall_entry_openat: " in line and '"/etc/hostname"' in line:
            cpu = on.group(1)
            placed.append(running.get(cpu) == cat)
        elif on.group(1) == cpu and " syscall_entry_read: " in line:
            placed.append(running.get(cpu) == cat)
            break
    return len(placed) == 2 and all(placed)


class SyscallStringsTest(KernelMixin, DaemonTestCase):
    def setUp(self):
        self.check_kernel_prerequisites()
        super().setUp()

    def run_tracked(self, session, script, cpu=None):
        """Runs `sh -c SCRIPT...` (which waits for a line on its stdin) tracked by `session` (on `cpu`, with its
        children, if given), starts the session, lets the script go, and returns what it printed; skips the test
        when the daemon could not load its BPF program."""
        p = subprocess.Popen(["/bin/sh", "-c", *script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        if cpu is not None:
            os.sched_setaffinity(p.pid, {cpu})
        self.d.tracery("track", "-k", "--pid", str(p.pid), "-s", session)
        self.d.tracery("start", session)
        if "recorded as pointers" in self.d.log():
            self.skipTest("BPF unavailable here: " + self.d.log())
        out, _ = p.communicate("go\n", timeout=60)
        self.assertEqual(p.returncode, 0)
        return out

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
        out = self.run_tracked("s", [SCRIPT], cpu)
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
            # which may come before its exec. It knows who runs on a CPU from sched_switch alone: where the
            # kernel recorded no switch into cat's thread (a VM's kernel may not, see busy_cpu), it cannot
            # place cat's read, and that is the kernel's doing, not the trace's.
            if not re.search(r"read .* (cat|sh) .* /etc/hostname \(fd=\d+\)", io.stdout):
                (cat,) = {int(m) for m in re.findall(r'sched_process_exec: \{[^}]*\}, \{ filename = "/bin/cat", '
                                                     r"tid = (\d+)", view.stdout)}
                self.assertFalse(cat_placed_at_its_read(lines, cat), f"lttng-iolog did not name cat's read:\n{io.stdout}")
                print(f"lttng-iolog's check skipped: the kernel recorded no switch into cat ({cat}) before its read")
        t("destroy", "s")

    def test_buffers_and_exit_arguments(self):
        self.d.start_daemon()
        path = self.out("b")
        data = self.out("data")
        with open(data, "wb") as f:
            f.write(b"0123456789 and more than ten bytes")
        t = self.d.tracery
        t("create", "b", "--output", path)
        refused = t("enable-event", "-k", "--syscall", "read", "--capture-buffers=4097", "-s", "b", check=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("--capture-buffers: give 1 to 4096 bytes", refused.stderr)
        t("enable-event", "-k", "--syscall", "read,write,writev,pipe2", "--capture-buffers=16", "-s", "b")
        out = self.run_tracked("b", [BUFFERS, data])
        stop = t("stop", "b").stdout
        self.assertIn("channel0 (kernel): 0 events lost", stop)
        changed = t("enable-event", "-k", "--syscall", "pread64", "--capture-buffers=32", "-s", "b", check=False)
        self.assertIn("its buffer capture was set then (16 bytes)", changed.stderr)
        bt = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=300)
        self.assertEqual(bt.returncode, 0, bt.stderr)
        self.assertEqual(bt.stderr, "")
        view = t("view", "b")
        self.assertEqual(bt.stdout, view.stdout)  # byte-identical
        lines = view.stdout.splitlines()

        def fields(name):
            return [line.split(name + ": ", 1)[1].split("}, ", 1)[1] for line in lines if f" {name}: " in line]

        # write's entry: lttng-modules' fields, then the buffer's first bytes (at most 16).
        writes = fields("syscall_entry_write")
        stdout_writes = [w for w in writes if w.startswith("{ fd = 1,")]  # the string, then print's pieces
        self.assertRegex(stdout_writes[0], r"^\{ fd = 1, buf = \d+, count = 20, _buf_data_length = 16, "
                                           r"buf_data = \[ .* \], unfetched = 0 \}$")
        self.assertEqual(byte_list(stdout_writes[0]), b"tracery writes this\n"[:16])
        # writev: its first iovec.
        writevs = fields("syscall_entry_writev")
        self.assertEqual(len(writevs), 1, writevs)
        self.assertEqual(byte_list(writevs[0]), b"first iovec\n", writevs)
        # The faulting buffer: a fault, no bytes.
        self.assertTrue(any(re.match(r"\{ fd = \d+, buf = 8, count = 5, _buf_data_length = 0, buf_data = \[ \], "
                                     r"unfetched = 1 \}$", w) for w in writes), writes)
        # read's exit: ret, buf (the entry's pointer), what was read: the file's first 10 bytes.
        reads = [r for r in fields("syscall_exit_read") if r.startswith("{ ret = 10,")]
        self.assertEqual(len(reads), 1, fields("syscall_exit_read"))
        self.assertRegex(reads[0], r"^\{ ret = 10, buf = [1-9]\d*, _buf_data_length = 10, buf_data = \[ .* \], "
                                   r"unfetched = 0 \}$")
        self.assertEqual(byte_list(reads[0]), b"0123456789")
        # pipe2's exit: the fds the program printed.
        pipe_line = [line for line in out.splitlines() if line.startswith("pipe ")]
        self.assertEqual(len(pipe_line), 1, out)
        r, w = pipe_line[0].split()[1:]
        self.assertIn(f"{{ ret = 0, fildes = [ [0] = {r}, [1] = {w} ], unfetched = 0 }}", fields("syscall_exit_pipe2"))
        t("destroy", "b")


if __name__ == "__main__":
    unittest.main()
