#!/usr/bin/python3
"""tracefs's global settings and the instances beside them, around a whole test run.

    tracefs_globals.py save FILE      before the first test (ctest fixture setup)
    tracefs_globals.py compare FILE   after the last (ctest fixture cleanup): exits 1 naming every global file
                                      that changed and every instance left or removed

No test may write a global tracefs file (each kernel session works in its own instance) or leave an instance
behind (a stale instance of a dead daemon, there before the tests, may go: the tests' daemons remove such
instances at start). The tests compare the globals around themselves too (daemon_kernel_test.py, kernel/tracefs_testing.hpp);
this catches what falls between them. Needs root and tracefs: exits 77 (skipped) without them. As root, save mounts
tracefs where it is not mounted yet, as the first kernel test's daemon would (on a machine just booted, the tests
mount it; the comparison must cover that run too)."""
import json
import os
import subprocess
import sys

# The global files a kernel session must never write: kernel/tracefs_testing.hpp's global_settings() too.
GLOBAL_SETTINGS = ("trace_clock", "buffer_size_kb", "tracing_on", "set_event", "set_event_pid",
                   "set_event_notrace_pid", "current_tracer", "options/event-fork", "tracing_cpumask")
SKIPPED = 77


def tracefs_root():
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        if os.path.isdir(os.path.join(root, "instances")):
            return root
    return None


def mount_tracefs():
    """Mounts tracefs at /sys/kernel/tracing as traceryd does when it is not mounted; the root or None."""
    with open("/proc/filesystems") as f:
        if not any(line.split()[-1] == "tracefs" for line in f if line.strip()):
            return None
    if subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"]).returncode != 0:
        return None
    return tracefs_root()


def global_settings(root):
    out = {}
    for name in GLOBAL_SETTINGS:
        with open(os.path.join(root, name)) as f:
            out[name] = f.read()
    return out


def stale(name):
    """A tracery-PID-... instance whose owner is gone: any session daemon starting removes it."""
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != "tracery" or not parts[1].isdigit():
        return False
    return not os.path.exists(f"/proc/{parts[1]}")


def state(root):
    instances = sorted(os.listdir(os.path.join(root, "instances")))
    return {"settings": global_settings(root), "instances": instances,
            "stale": [n for n in instances if stale(n)]}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("save", "compare"):
        sys.exit(__doc__)
    root = tracefs_root()
    if root is None and os.geteuid() == 0 and sys.argv[1] == "save":
        root = mount_tracefs()
    if os.geteuid() != 0 or root is None:
        print("tracefs_globals: needs root and a mounted tracefs; skipped")
        sys.exit(SKIPPED)
    now = state(root)
    if sys.argv[1] == "save":
        with open(sys.argv[2], "w") as f:
            json.dump(now, f)
        print(f"tracefs_globals: {len(now['settings'])} global files and {len(now['instances'])} instances of "
              f"{root} saved in {sys.argv[2]}")
        return
    try:
        with open(sys.argv[2]) as f:
            before = json.load(f)
    except FileNotFoundError:
        sys.exit(f"tracefs_globals: {sys.argv[2]} is missing: the setup (save) did not run")
    problems = [f"{root}/{name} changed: {before['settings'][name]!r} -> {now['settings'][name]!r}"
                for name in GLOBAL_SETTINGS if before["settings"].get(name) != now["settings"][name]]
    problems += [f"instance {root}/instances/{n} left behind" for n in now["instances"]
                 if n not in before["instances"]]
    problems += [f"instance {root}/instances/{n} removed" for n in before["instances"]
                 if n not in now["instances"] and n not in before.get("stale", [])]
    for p in problems:
        print(f"tracefs_globals: {p}")
    if problems:
        sys.exit(1)
    print(f"tracefs_globals: the {len(GLOBAL_SETTINGS)} global files and the instances of {root} are as before "
          "the tests")


if __name__ == "__main__":
    main()
