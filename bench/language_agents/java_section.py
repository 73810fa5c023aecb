"""bench/language-agents' Java section: what a java.util.logging record costs through Tracery's handler
(org.tracery.jul.TraceryLogHandler) and through LTTng-UST's (liblttng-ust-agent-java's LttngLogHandler), and
what a typed event (org.tracery.TraceryEvent) costs, with no session and recording, beside JUL's own level
check (Logger.isLoggable). bench/language-agents lists it in SECTIONS; its docstring describes the section.
"""
import os
import re
import shutil
import subprocess

from peers import Fail, bench_env, read_trace, run

LTTNG_JARS = ["/usr/share/java/lttng-ust-agent-common.jar", "/usr/share/java/lttng-ust-agent-jul.jar"]
# Both tracers record into the same geometry in overwrite mode: the events lap the channel, so what is measured
# is the record itself; the checking round's events fit in it.
CHANNEL = ["--overwrite", "--subbuf-size", "2M", "--num-subbuf", "8"]
# Iterations per operation timed and warming up in the uncounted checking round, whose traces are read back,
# and warming up in the others (enough for the JIT to compile each loop).
CHECK_RECORDS = 5000
WARM_UP = 200_000
NO_AGENT = "no agent"


class JavaSection:
    """Tracery's Java agent against liblttng-ust-agent-java's JUL handler."""

    name = "java"
    title = "Java: typed events and java.util.logging records"
    unit_note = "ns of the thread's CPU time per operation"
    operations = ["typed_emit", "is_loggable", "jul_logp_record", "jul_record"]
    operation_titles = {"typed_emit": "typed event, 4 fields (`if (ev.enabled()) ev.emit(...)`)",
                        "is_loggable": "`logger.isLoggable(INFO)`",
                        "jul_logp_record": "`logger.logp()` record (source given)",
                        "jul_record": "`logger.info()` record (source found by JUL's stack walk)"}

    def required(self, build):
        return [(os.path.join(build, "src", "agents", "java", "tracery.jar"), "tracery-jar"),
                (os.path.join(build, "src", "agents", "java", "libtracery-java.so"), "tracery-java"),
                (os.path.join(build, "bench", "java-workload.jar"), "java-workload"),
                (os.path.join(build, "src", "daemon", "traceryd"), "traceryd"),
                (os.path.join(build, "src", "cli", "tracery"), "tracery-cli")]

    @staticmethod
    def lttng_installed():
        return shutil.which("lttng") is not None and all(os.path.exists(j) for j in LTTNG_JARS)

    def prepare(self, bench):
        self.java = shutil.which("java")
        if self.java is None:
            raise Fail("java: command not found (scripts/install-deps.sh installs default-jdk-headless)")
        self.classpath = [os.path.join(bench.build, "src", "agents", "java", "tracery.jar"),
                          os.path.join(bench.build, "bench", "java-workload.jar")]

    def configurations(self, with_lttng):
        rows = [NO_AGENT, "Tracery, no session", "Tracery, recording"]
        return rows + (["LTTng, no session", "LTTng, recording"] if with_lttng else [])

    def workload(self, bench, agent, env, check, recording=False):
        """({operation: ns}, events emitted) of one JavaWorkload run. -Xbatch: the JIT compiles each hot loop
        before it goes on, so every run measures compiled code however busy the machine is."""
        records, warm_up = (CHECK_RECORDS, CHECK_RECORDS) if check else (bench.args.count, WARM_UP)
        classpath = self.classpath + (LTTNG_JARS if agent == "lttng" else [])
        argv = [self.java, "-Xbatch", "-cp", ":".join(classpath), "JavaWorkload", agent, str(records), str(warm_up)]
        out = run(argv + (["recording"] if recording else []), what=f"JavaWorkload {agent}", env=env).stdout
        ops = {m.group(1): float(m.group(2)) for m in re.finditer(r"^op (\S+) ns_per_op (\S+)$", out, re.M)}
        emitted = re.search(r"^emitted (\d+)$", out, re.M)
        if not ops or not emitted:
            raise Fail(f"JavaWorkload printed no `op NAME ns_per_op X` or `emitted N` line:\n{out}")
        return ops, int(emitted.group(1))

    def measure(self, bench, configuration, check):
        """({operation: ns}, events lost or None) of one configuration."""
        if configuration == NO_AGENT:
            return self.workload(bench, "none", bench_env(), check)[0], None
        if configuration == "Tracery, no session":
            return self.workload(bench, "tracery", bench.traceryd.env, check)[0], None
        if configuration == "Tracery, recording":
            return self.tracery_recording(bench, check)
        env = dict(bench_env(), **{k: v for k, v in bench.lttng.env.items() if k == "LTTNG_HOME"})
        if configuration == "LTTng, no session":
            return self.workload(bench, "lttng", env, check)[0], None
        return self.lttng_recording(bench, env, check), None

    def tracery_recording(self, bench, check):
        """A session recording java:bench.jul and jbench:request; the checking round counts every event."""
        tracery, name, path = bench.traceryd, bench.traceryd.new_name(), bench.trace_dir()
        tracery("create", name, "--output", path)
        tracery.sessions.add(name)
        try:
            tracery("enable-channel", "-u", "ch", "-s", name, *CHANNEL)
            for pattern in ("java:bench.jul", "jbench:request"):
                tracery("enable-event", "-u", pattern, "-s", name, "-c", "ch")
            tracery("start", name)
            ops, emitted = self.workload(bench, "tracery", tracery.env, check, recording=True)
            out = tracery("stop", name).stdout
        finally:
            tracery("destroy", name)
            tracery.sessions.discard(name)
        lost = sum(int(w) for w in re.findall(r": (\d+) events? lost", out))
        if check:
            recorded = read_trace(path)["recorded"]
            if recorded + lost != emitted:
                raise Fail(f"Tracery, recording: {recorded} events in {path} and {lost} lost, {emitted} emitted")
        shutil.rmtree(path, ignore_errors=True)
        return ops, lost

    def lttng_recording(self, bench, env, check):
        """A session recording `enable-event --jul bench.jul` into lttng_jul_channel, the channel LTTng's agents
        record into, made first with the same geometry; the checking round looks for the records."""
        lttng, name, path = bench.lttng, bench.lttng.new_name(), bench.trace_dir()
        lttng("create", name, "--output", path)
        lttng.sessions.add(name)
        try:
            lttng("enable-channel", "-u", "-s", name, *CHANNEL, "lttng_jul_channel")
            lttng("enable-event", "--jul", "-s", name, "-c", "lttng_jul_channel", "bench.jul")
            lttng("start", name)
            ops, emitted = self.workload(bench, "lttng", env, check)
            lttng("stop", name)
        finally:
            subprocess.run(["lttng", "destroy", name], env=lttng.env, capture_output=True)
            lttng.sessions.discard(name)
        if check:
            # The agent registers while the program starts: the first records may come before it has.
            counts = read_trace(path)
            if not 0 < counts["recorded"] <= emitted:
                raise Fail(f"LTTng, recording: {counts['recorded']} events in {path}, {emitted} emitted")
        shutil.rmtree(path, ignore_errors=True)
        return ops

    def targets(self, cost):
        none, ours = cost[NO_AGENT], cost["Tracery, recording"]
        lines = []
        if "LTTng, recording" in cost:
            theirs = cost["LTTng, recording"]
            ratio = theirs["jul_record"] / ours["typed_emit"]
            lines.append(f"- LTTng JUL record / Tracery typed event: {ratio:.1f}x (target: at least 5x: "
                         f"{'met' if ratio >= 5 else 'missed'})")
            for op, what in (("jul_logp_record", "`logger.logp()`, source given"),
                             ("jul_record", "`logger.info()`, source found by JUL's stack walk")):
                ratio = theirs[op] / ours[op]
                line = (f"- LTTng / Tracery per JUL record ({what}): {ratio:.2f}x (target: at least 2x: "
                        f"{'met' if ratio >= 2 else 'missed'})")
                if ours[op] > none[op]:
                    line += (f"; over JUL itself (no agent's record, {none[op]:.0f} ns): LTTng "
                             f"{theirs[op] - none[op]:.0f} ns, Tracery {ours[op] - none[op]:.0f} ns: "
                             f"{(theirs[op] - none[op]) / (ours[op] - none[op]):.2f}x")
                lines.append(line)
        disabled, yardstick = cost["Tracery, no session"]["typed_emit"], none["is_loggable"]
        lines.append(f"- typed event disabled: {disabled:.2f} ns, `logger.isLoggable`: {yardstick:.2f} ns "
                     f"(target: no more: {'met' if disabled <= yardstick else 'missed'})")
        return lines
