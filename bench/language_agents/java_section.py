"""bench/language-agents' Java section: what a java.util.logging record costs through Tracery's handler
(org.tracery.jul.TraceryLogHandler) and through LTTng-UST's (liblttng-ust-agent-java's LttngLogHandler), and
what a typed event (org.tracery.TraceryEvent) costs, with no session and recording, beside the cost of JUL's
own level check (Logger.isLoggable).

Each row is one JVM running java-workload.jar (JavaWorkload.java, which says what each operation is): per
operation a warm-up, then RECORDS iterations timed in CPU time of the thread: JUL records with the caller
inferred (`logger.info`) and given (`logger.logp`), typed events (Tracery's rows) and isLoggable checks. Rows:
  no agent              a handler that does nothing: what JUL itself costs per record (its LogRecord)
  Tracery, no session   the private traceryd runs, no session: the records' events are disabled
  Tracery, recording    a session (per-user buffers, 8 sub-buffers of 2 MiB per CPU, discard mode) records
                        java:bench.jul and jbench:request
  LTTng, no session     lttng-sessiond runs, no session (the agent registered with it)
  LTTng, recording      a session records `enable-event --jul bench.jul` (the same channel geometry)
Losses are counted (Tracery: `tracery stop`; LTTng: babeltrace2's discarded-events reports) and shown; the
first (checking) round reads each recording row's trace back and checks its event count.

The section object follows the script's interface: name, title, required(build), prepare(bench),
rows(with_lttng), measure(bench, row, check), targets(cost) where cost is {row: {operation: ns}}. From `bench`
it uses build, tmp, trace_dir(), traceryd (a started peers.Traceryd) and lttng (peers.Lttng with its sessiond
running, or None).
"""
import os
import re
import shutil
import subprocess

from peers import Fail, read_trace, run

LTTNG_JARS = ["/usr/share/java/lttng-ust-agent-common.jar", "/usr/share/java/lttng-ust-agent-jul.jar"]
CHANNEL = ["--subbuf-size", "2M", "--num-subbuf", "8"]
NO_AGENT = "no agent"


def java():
    return shutil.which("java")


class JavaSection:
    name = "java"
    title = "Java: a java.util.logging record and a typed event"
    needs_traceryd = True
    lttng_helpers = LTTNG_JARS

    def __init__(self, records=200_000):
        self.records = records
        self.lost = {}

    def required(self, build):
        return [(os.path.join(build, "src", "agents", "java", "tracery.jar"), "tracery-jar"),
                (os.path.join(build, "src", "agents", "java", "libtracery-java.so"), "tracery-java"),
                (os.path.join(build, "bench", "java-workload.jar"), "java-workload"),
                (os.path.join(build, "src", "daemon", "traceryd"), "traceryd"),
                (os.path.join(build, "src", "cli", "tracery"), "tracery-cli")]

    def prepare(self, bench):
        if java() is None:
            raise Fail("java: command not found (apt-get install default-jdk-headless)")
        self.classpath = [os.path.join(bench.build, "src", "agents", "java", "tracery.jar"),
                          os.path.join(bench.build, "bench", "java-workload.jar")]

    def rows(self, with_lttng):
        rows = [NO_AGENT, "Tracery, no session", "Tracery, recording"]
        if with_lttng and all(os.path.exists(j) for j in LTTNG_JARS):
            rows += ["LTTng, no session", "LTTng, recording"]
        self.lost = {row: 0 for row in rows}
        return rows

    def workload(self, agent, env, recording=False):
        """{operation: ns per operation} of one JavaWorkload run."""
        classpath = self.classpath + (LTTNG_JARS if agent == "lttng" else [])
        argv = [java(), "-cp", ":".join(classpath), "JavaWorkload", agent, str(self.records)]
        p = run(argv + (["recording"] if recording else []), what=f"JavaWorkload {agent}", env=env)
        ops = {m.group(1): float(m.group(2)) for m in re.finditer(r"^op (.+) ns_per_op (\S+)$", p.stdout, re.M)}
        emitted = re.search(r"^emitted (\d+)$", p.stdout, re.M)
        if not ops or not emitted:
            raise Fail(f"JavaWorkload printed no op or emitted lines:\n{p.stdout}")
        self.emitted = int(emitted.group(1))
        return ops

    def measure(self, bench, row, check=False):
        if row == NO_AGENT:
            return self.workload("none", dict(os.environ))
        if row == "Tracery, no session":
            return self.workload("tracery", bench.traceryd.env)
        if row == "Tracery, recording":
            return self.tracery_recording(bench, check)
        env = dict(os.environ)
        env.update({k: v for k, v in bench.lttng.env.items() if k == "LTTNG_HOME"})
        if row == "LTTng, no session":
            return self.workload("lttng", env)
        return self.lttng_recording(bench, env, check)

    def tracery_recording(self, bench, check):
        tracery, name, path = bench.traceryd, bench.traceryd.new_name(), bench.trace_dir()
        tracery("create", name, "--output", path)
        tracery.sessions.add(name)
        try:
            tracery("enable-channel", "-u", "ch", "-s", name, *CHANNEL)
            for pattern in ("java:bench.jul", "jbench:request"):
                tracery("enable-event", "-u", pattern, "-s", name, "-c", "ch")
            tracery("start", name)
            ops = self.workload("tracery", tracery.env, recording=True)
            out = tracery("stop", name).stdout
        finally:
            tracery("destroy", name)
            tracery.sessions.discard(name)
        lost = sum(int(w) for w in re.findall(r": (\d+) events? lost", out))
        self.lost["Tracery, recording"] += lost
        if check:
            counts = read_trace(path)
            expected = self.emitted
            if counts["recorded"] + lost != expected:
                raise Fail(f"Tracery, recording: {counts['recorded']} events in {path} and {lost} lost, "
                           f"{expected} emitted")
        shutil.rmtree(path, ignore_errors=True)
        return ops

    def lttng_recording(self, bench, env, check):
        lttng, name, path = bench.lttng, bench.lttng.new_name(), bench.trace_dir()
        lttng("create", name, "--output", path)
        lttng.sessions.add(name)
        try:
            lttng("enable-channel", "-u", "-s", name, *CHANNEL, "lttng_jul_channel")
            lttng("enable-event", "--jul", "-s", name, "-c", "lttng_jul_channel", "bench.jul")
            lttng("start", name)
            ops = self.workload("lttng", env)
            lttng("stop", name)
        finally:
            subprocess.run(["lttng", "destroy", name], env=lttng.env, capture_output=True)
            lttng.sessions.discard(name)
        counts = read_trace(path)
        self.lost["LTTng, recording"] += counts["discarded"]
        # The agent registers while the program starts: the records before it has are not recorded.
        if check and not self.emitted - self.records <= counts["recorded"] + counts["discarded"] <= self.emitted:
            raise Fail(f"LTTng, recording: {counts['recorded']} events in {path} and {counts['discarded']} "
                       f"discarded, of the {self.emitted} emitted")
        shutil.rmtree(path, ignore_errors=True)
        return ops

    def targets(self, cost):
        """The report's lines under the table: LTTng's cost per record over Tracery's (caller inferred, and
        given), over what JUL itself costs, the typed event's, the disabled costs against isLoggable, losses."""
        none, ours = cost[NO_AGENT], cost["Tracery, recording"]
        lines = []
        if "LTTng, recording" in cost:
            theirs = cost["LTTng, recording"]
            for op, how in (("JUL record", "logger.info, caller found by JUL's stack walk"),
                            ("JUL logp record", "logger.logp, source given")):
                ratio = theirs[op] / ours[op]
                alone = ""
                if ours[op] > none[op]:
                    alone = (f"; the handlers alone (over JUL itself, {none[op]:.0f} ns): "
                             f"{(theirs[op] - none[op]) / (ours[op] - none[op]):.2f}x")
                lines.append(f"- {op} ({how}), recording: LTTng {theirs[op]:.0f} ns, Tracery {ours[op]:.0f} ns: "
                             f"LTTng / Tracery = {ratio:.2f}x (target: at least 2x: "
                             f"{'met' if ratio >= 2 else 'missed'}){alone}")
            ratio = theirs["JUL record"] / ours["typed event"]
            lines.append(f"- a typed event, recording: {ours['typed event']:.0f} ns, {ratio:.1f}x cheaper than "
                         f"LTTng's JUL record (target: at least 5x: {'met' if ratio >= 5 else 'missed'})")
        off = cost["Tracery, no session"]
        lines.append(f"- no session: a typed event (enabled() false) {off['typed event']:.2f} ns, "
                     f"Logger.isLoggable {off['isLoggable']:.2f} ns (target: at most isLoggable: "
                     f"{'met' if off['typed event'] <= off['isLoggable'] else 'missed'}); a JUL record "
                     f"{off['JUL record'] - none['JUL record']:+.0f} ns over JUL itself"
                     + (f" (LTTng's: {cost['LTTng, no session']['JUL record'] - none['JUL record']:+.0f} ns)"
                        if "LTTng, no session" in cost else ""))
        lines.append("- events lost (all runs): " + ", ".join(f"{row} {n}" for row, n in self.lost.items()
                                                               if "recording" in row))
        return lines
