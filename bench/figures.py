#!/usr/bin/env python3
"""Prints the tracery-bench figures of docs/performance.md: median ns per event
over several runs for each configuration, and bytes per event on disk.

Usage: bench/figures.py [--build build] [--runs 5] [--events 10000000]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile


def run_bench(bench, events, threads, kind, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACERY_")}
    env.update(env_extra)
    out = subprocess.run([bench, str(events), str(threads), kind], env=env, check=True,
                         capture_output=True, text=True).stdout
    total = out.strip().splitlines()[-1].split()
    fields = dict(zip(total[0::2], total[1::2]))
    return float(fields["ns_per_event_mean"]), float(fields["events_per_s"])


def trace_stats(trace_dir):
    """(events recorded, events discarded, bytes of stream files)."""
    size = sum(os.path.getsize(os.path.join(trace_dir, f)) for f in os.listdir(trace_dir) if f != "metadata")
    proc = subprocess.run(["babeltrace2", trace_dir], capture_output=True, text=True, check=True)
    recorded = proc.stdout.count("\n")
    discarded = 0
    for line in proc.stderr.splitlines():
        if "discarded" in line and "events" in line:
            words = line.split()
            for i, w in enumerate(words):
                if w == "discarded" and i + 1 < len(words) and words[i + 1].isdigit():
                    discarded += int(words[i + 1])
    return recorded, discarded, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--events", type=int, default=10_000_000)
    args = ap.parse_args()
    bench = os.path.join(args.build, "bench", "tracery-bench")
    tmp = tempfile.mkdtemp(prefix="tracery-figures-")
    try:
        configs = [
            ("empty loop (none)", 1, "none", None),
            ("disabled (no TRACERY_OUTPUT)", 1, "ev", None),
            ("enabled, discard, 1 thread", 1, "ev", {}),
            ("enabled, discard, 2 threads", 2, "ev", {}),
            ("enabled, overwrite, 1 thread", 1, "ev", {"TRACERY_MODE": "overwrite"}),
            ("string event, discard, 1 thread", 1, "str", {}),
        ]
        print("| configuration | median ns/event | median events/s | runs |")
        print("| --- | ---: | ---: | ---: |")
        for label, threads, kind, env in configs:
            per, rate = [], []
            for r in range(args.runs):
                env_run = {}
                if env is not None:
                    env_run = dict(env, TRACERY_OUTPUT=os.path.join(tmp, f"t{len(per)}-{r}-{kind}-{threads}"))
                ns, eps = run_bench(bench, args.events, threads, kind, env_run)
                per.append(ns)
                rate.append(eps)
                if env is not None:
                    shutil.rmtree(env_run["TRACERY_OUTPUT"], ignore_errors=True)
            print(f"| {label} | {statistics.median(per):.2f} | {statistics.median(rate):,.0f} | {args.runs} |")
        print()
        print("| event | bytes per recorded event on disk (stream files, packet headers included) |")
        print("| --- | ---: |")
        for kind in ("ev", "str"):
            d = os.path.join(tmp, f"size-{kind}")
            env = {"TRACERY_OUTPUT": d, "TRACERY_SUBBUF_SIZE": "1M", "TRACERY_NUM_SUBBUF": "8"}
            run_bench(bench, 1_000_000, 1, kind, env)
            recorded, _, size = trace_stats(d)
            print(f"| bench:{kind} | {size / max(recorded, 1):.2f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
