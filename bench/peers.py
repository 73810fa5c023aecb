"""The pieces the side-by-side benchmarks share (bench/compare-lttng,
bench/compare-relayd): running commands with clear failures, progress lines,
installing LTTng, building the programs, driving lttng and a private traceryd,
running tracery-bench or lttng-bench, reading a trace back with babeltrace2,
and the machine's description. Imported, not run.
"""
import os
import platform
import re
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LTTNG_PACKAGES = ["lttng-tools", "liblttng-ust-dev", "babeltrace2"]


class Fail(Exception):
    pass


START = time.monotonic()


def log(msg):
    print(f"{os.path.basename(sys.argv[0])}: [{time.monotonic() - START:5.0f} s] {msg}", file=sys.stderr, flush=True)


def run(cmd, what=None, env=None, cwd=None):
    """Runs cmd, returns its CompletedProcess; fails with its stderr if it fails."""
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise Fail(f"{what or cmd[0]}: command not found: {cmd[0]}")
    if p.returncode != 0:
        out = (p.stderr.strip() or p.stdout.strip())[-2000:]
        raise Fail(f"{what or ' '.join(cmd)} failed (exit status {p.returncode}):\n{out}")
    return p


# ---------------------------------------------------------------- setup


def dpkg_installed(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return p.returncode == 0 and "install ok installed" in p.stdout


def install_dependencies(packages=LTTNG_PACKAGES):
    deps = os.path.join(REPO, "scripts", "install-deps.sh")
    if os.path.exists(deps):
        run(["bash", deps], what="scripts/install-deps.sh")
    missing = [p for p in packages if not dpkg_installed(p)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise Fail(f"missing packages: {' '.join(missing)}; run as root (or: sudo apt-get install {' '.join(missing)})")
    log(f"installing {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-qq"], what="apt-get update", env=env)
    run(["apt-get", "install", "-y", "-qq", *missing], what="apt-get install", env=env)


# The programs build() makes: name -> (ninja target, path in the build directory).
PROGRAMS = {
    "tracery-bench": ("tracery-bench", "bench/tracery-bench"),
    "floor-bench": ("floor-bench", "bench/floor-bench"),
    "lttng-bench": ("lttng-bench", "bench/lttng-bench"),
    "traceryd": ("traceryd", "src/daemon/traceryd"),
    "tracery": ("tracery-cli", "src/cli/tracery"),
    "tracery-relayd": ("tracery-relayd", "src/relay/tracery-relayd"),
    "lifecycle-plain": ("lifecycle-plain", "bench/lifecycle-plain"),
    "lifecycle-tracery": ("lifecycle-tracery", "bench/lifecycle-tracery"),
    "lifecycle-lttng": ("lifecycle-lttng", "bench/lifecycle-lttng"),
}


def build(build_dir, names=("tracery-bench", "lttng-bench", "traceryd", "tracery")):
    """Builds the programs names (keys of PROGRAMS) in build_dir; returns name -> path."""
    log(f"building {', '.join(names)} in {build_dir}")
    # A tree configured otherwise (the test suite's Release tree) is not reconfigured: that would rebuild all of it.
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if os.path.exists(cache):
        with open(cache) as f:
            kind = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", f.read(), re.M)
        if kind and kind.group(1) != "RelWithDebInfo":
            raise Fail(f"{build_dir} is a {kind.group(1)} build tree; the benchmarks build RelWithDebInfo: "
                       "give --build a directory of their own (the default)")
    run(["cmake", "-S", REPO, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
         "-DTRACERY_WERROR=ON"],
        what="cmake configure")
    run(["ninja", "-C", build_dir, *(PROGRAMS[n][0] for n in names)], what="ninja")
    paths = {}
    for name in names:
        path = os.path.join(build_dir, PROGRAMS[name][1])
        if not os.access(path, os.X_OK):
            hint = " (is liblttng-ust-dev installed? cmake found lttng-ust?)" if "lttng" in name else ""
            raise Fail(f"{path} was not built{hint}")
        paths[name] = path
    return paths


def terminate(pid, what, running):
    """SIGTERM to pid, then SIGKILL if running() still holds after 15 s."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and running():
        time.sleep(0.1)
    if running():
        log(f"{what} (pid {pid}) ignored SIGTERM for 15 s: sending SIGKILL")
        os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- lttng control


class Lttng:
    """The lttng client, the sessions this script made, the sessiond it started."""

    def __init__(self, tmp):
        self.started_pid = None
        self.sessions = set()
        self.serial = 0
        self.env = dict(os.environ)
        if os.geteuid() == 0:
            # root's client talks to the global sessiond whatever LTTNG_HOME is; a
            # private LTTNG_HOME keeps `lttng create` off root's ~/.lttngrc.
            home = os.path.join(tmp, "lttng-home")
            os.makedirs(home, exist_ok=True)
            self.env["LTTNG_HOME"] = home

    def __call__(self, *args):
        return run(["lttng", *args], what="lttng " + " ".join(args), env=self.env)

    def available(self):
        return subprocess.run(["lttng", "list"], env=self.env, capture_output=True).returncode == 0

    def ensure_sessiond(self):
        if self.available():
            log("using the lttng-sessiond already running")
            return
        mine = subprocess.run(["pgrep", "-u", str(os.geteuid()), "-x", "lttng-sessiond"],
                              capture_output=True, text=True).stdout.split()
        if mine:
            raise Fail(f"lttng-sessiond runs (pid {', '.join(mine)}) but `lttng list` gets no answer from it: "
                       f"stop it or fix it, then run again")
        log("starting lttng-sessiond --daemonize --no-kernel")
        run(["lttng-sessiond", "--daemonize", "--no-kernel"], what="lttng-sessiond --daemonize")
        rundir = "/var/run/lttng" if os.geteuid() == 0 else os.path.join(os.path.expanduser("~"), ".lttng")
        pidfile = os.path.join(rundir, "lttng-sessiond.pid")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.started_pid is None and os.path.exists(pidfile):
                try:
                    self.started_pid = int(open(pidfile).read().strip())
                except ValueError:
                    pass
            if self.started_pid is not None and self.available():
                return
            time.sleep(0.1)
        raise Fail(f"lttng-sessiond did not come up within 10 s (pid file {pidfile})")

    def stop_sessiond(self):
        pid, self.started_pid = self.started_pid, None
        if pid is None:
            return
        log(f"stopping the lttng-sessiond this script started (pid {pid})")
        terminate(pid, "lttng-sessiond", lambda: os.path.exists(f"/proc/{pid}"))

    def new_name(self):
        self.serial += 1
        return f"tracery-cmp-{os.getpid()}-{self.serial}"

    def destroy_all(self):
        for name in sorted(self.sessions):
            subprocess.run(["lttng", "destroy", name], env=self.env, capture_output=True)
        self.sessions.clear()


# ---------------------------------------------------------------- tracery control


class Traceryd:
    """A private traceryd: its run directory, HOME and XDG_RUNTIME_DIR under the script's
    temporary directory, so it never meets another daemon and `tracery create` never
    touches the real ~/.tracery/current. The tracery command and the programs traced
    through it get the same environment (`private`)."""

    def __init__(self, tmp, daemon, cli):
        self.daemon, self.cli = daemon, cli
        base = os.path.join(tmp, "traceryd")
        self.rundir = os.path.join(base, "run")
        home = os.path.join(base, "home")
        os.makedirs(home)
        self.private = {"TRACERY_RUNDIR": self.rundir, "HOME": home,
                        "XDG_RUNTIME_DIR": os.path.join(base, "xdg")}
        self.env = dict(bench_env(), **self.private)
        self.started_pid = None
        self.sessions = set()
        self.serial = 0

    def log_tail(self, lines=20):
        try:
            with open(os.path.join(self.rundir, "traceryd.log")) as f:
                return "".join(f.readlines()[-lines:]).rstrip()
        except OSError:
            return ""

    def __call__(self, *args):
        try:
            return run([self.cli, *args], what="tracery " + " ".join(args), env=self.env)
        except Fail as e:
            tail = self.log_tail()
            raise Fail(f"{e}\n--- end of {self.rundir}/traceryd.log ---\n{tail}" if tail else str(e))

    def pid_file_pid(self):
        try:
            with open(os.path.join(self.rundir, "traceryd.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def start_daemon(self):
        log(f"starting a private traceryd --daemonize (TRACERY_RUNDIR={self.rundir})")
        run([self.daemon, "--daemonize"], what="traceryd --daemonize", env=self.env)
        # --daemonize returns once the daemon serves; its pid file is written by then.
        self.started_pid = self.pid_file_pid()
        if self.started_pid is None:
            raise Fail(f"traceryd --daemonize succeeded but wrote no pid in {self.rundir}/traceryd.pid")
        self("list")

    @staticmethod
    def alive(pid):
        """pid runs and is not a zombie (a daemonized process is reaped by whoever adopted it)."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False

    def stop_daemon(self):
        # A signal can come between `traceryd --daemonize` and reading its pid: the pid
        # file of the private run directory names it then.
        pid, self.started_pid = self.started_pid or self.pid_file_pid(), None
        if pid is None or not self.alive(pid):
            return
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "traceryd":
                    return
        except OSError:
            return
        log(f"stopping the private traceryd (pid {pid})")
        terminate(pid, "traceryd", lambda: self.alive(pid))

    def new_name(self):
        self.serial += 1
        return f"tracery-cmp-{os.getpid()}-{self.serial}"

    def destroy_all(self):
        if self.sessions and (self.started_pid or self.pid_file_pid()):
            try:
                subprocess.run([self.cli, "destroy", "--all"], env=self.env, capture_output=True, timeout=60)
            except subprocess.TimeoutExpired:
                pass
        self.sessions.clear()


# ---------------------------------------------------------------- runs


def bench_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("TRACERY_", "LTTNG_UST_"))}


def run_bench(path, events, threads, kind, extra_env=None):
    env = bench_env()
    env.update(extra_env or {})
    p = run([path, str(events), str(threads), kind], what=os.path.basename(path), env=env)
    lines = p.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("TOTAL "):
        raise Fail(f"{os.path.basename(path)}: no TOTAL line in its output:\n{p.stdout}")
    words = lines[-1].split()[1:]
    return {k: float(v) for k, v in zip(words[0::2], words[1::2])}


def stream_bytes(trace_dir):
    """Total size of the CTF stream files under trace_dir (no metadata, no LTTng index)."""
    total = 0
    for root, dirs, files in os.walk(trace_dir):
        dirs[:] = [d for d in dirs if d != "index"]
        for f in files:
            if f != "metadata" and not f.endswith(".idx"):
                total += os.path.getsize(os.path.join(root, f))
    return total


def read_trace(trace_dir, count_only=False):
    """Reads a trace back with babeltrace2: events recorded, events and packets it reports lost, bytes.
    count_only: skip the (slow) text-sink pass that sums the discarded-events reports."""
    size = stream_bytes(trace_dir)
    if size == 0:
        return {"recorded": 0, "discarded": 0, "lost_packets": 0, "bytes": 0, "backwards": 0}
    out = run(["babeltrace2", trace_dir, "-c", "sink.utils.counter", "--params", "step=+0"],
              what=f"babeltrace2 {trace_dir}").stdout
    counts = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+) (.*?) messages?$", line.strip())
        if m:
            counts[m.group(2)] = int(m.group(1))
    recorded = counts.get("Event", 0)
    discarded = backwards = 0
    if counts.get("Discarded event", 0) and not count_only:
        # The counter counts discarded-events messages, not events: the text sink
        # prints each one's count on stderr ("Tracer discarded N events between ...").
        p = subprocess.run(["babeltrace2", "--clock-cycles", "--names=none", trace_dir],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise Fail(f"babeltrace2 {trace_dir} failed: {p.stderr.strip()[-2000:]}")
        reports = [int(n) for n in re.findall(r"Tracer discarded (\d+) events?", p.stderr)]
        # babeltrace2 reports the difference of the packets' running events_discarded
        # counters as an unsigned 64-bit number; a counter that goes backwards shows up
        # as a report near 2^64. Summed modulo 2^64 the reports still telescope to
        # (last counter - first counter) per stream, the true total.
        discarded = sum(reports) % 2**64
        backwards = sum(1 for n in reports if n >= 2**63)
    return {"recorded": recorded, "discarded": discarded, "backwards": backwards,
            "lost_packets": counts.get("Discarded packet", 0), "bytes": size}


def machine_facts():
    """(CPU model, clocksource, GiB of RAM) of this machine."""
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            clocksource = f.read().strip()
    except OSError:
        clocksource = "?"
    return cpu, clocksource, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def first_line(cmd):
    """The first line cmd prints, or '?'."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else "?"


def machine_lines(versions=()):
    """The report's machine description, as markdown list items; versions: the peers' version strings."""
    cpu, clocksource, mem_gib = machine_facts()
    commit = first_line(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    versions = ", ".join(versions)
    return [f"- CPU: {cpu}, {os.cpu_count()} cores online ({len(os.sched_getaffinity(0))} usable here), "
            f"{mem_gib:.1f} GiB RAM",
            f"- kernel: {platform.system()} {platform.release()}, clocksource: {clocksource}",
            f"- load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
            f"- Tracery {commit}{' (with uncommitted changes)' if dirty else ''}" + (f", {versions}" if versions else "")]


def on_signal(signum, _frame):
    raise Fail(f"interrupted by signal {signum}")


def main_guard(main):
    """Runs main() as a benchmark script's entry point: SIGTERM and SIGHUP end it through its
    cleanups, a Fail is printed as an error (exit 1), Ctrl-C exits 130."""
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    prog = os.path.basename(sys.argv[0])
    try:
        main()
    except Fail as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)
