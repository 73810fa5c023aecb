"""ctl_client.py: ctl_client.c's twin in Python, over tracery.ctl (the package on PYTHONPATH); the same
arguments, the same lines printed, so that ctl_test.py checks both alike.

    ctl_client.py trace ROOT NAME BUF_SIZE BUF_NR PROGRAM [ARGS...]
    ctl_client.py call CALL NAME
"""
import subprocess
import sys

from tracery import ctl

STATE_CODES = {"created": 1, "started": 2, "stopping": 3, "stopped": 4}


def trace(root, name, buf_size, buf_nr, *program):
    try:
        step = "setup"
        ctl.setup(root, name, int(buf_size), int(buf_nr))
        step = "start"
        ctl.start(name)
        step = "get_state"
        print("state", STATE_CODES[ctl.state(name)], flush=True)
        subprocess.run(program, check=True)
        step = "stop"
        ctl.stop(name)
        step = "get_state"
        print("state", STATE_CODES[ctl.state(name)])
        step = "get_dropped"
        print("dropped", ctl.dropped(name))
        step = "cleanup"
        ctl.cleanup(name)
    except ctl.Error as e:
        print(f"{step} failed: {e.code} {e}")
        return 1
    return 0


def call(what, name):
    calls = {"setup-null-root": lambda: ctl.setup(None, name), "setup": lambda: ctl.setup(".", name),
             "start": lambda: ctl.start(name), "stop": lambda: ctl.stop(name), "state": lambda: ctl.state(name),
             "cleanup": lambda: ctl.cleanup(name)}
    try:
        calls[what]()
        print(what, 0, "")
    except ctl.Error as e:
        print(what, e.code, e)
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 8 and sys.argv[1] == "trace":
        sys.exit(trace(*sys.argv[2:]))
    if len(sys.argv) == 4 and sys.argv[1] == "call":
        sys.exit(call(*sys.argv[2:]))
    sys.exit("usage: ctl_client.py trace ROOT NAME BUF_SIZE BUF_NR PROGRAM [ARGS...] | call CALL NAME")
