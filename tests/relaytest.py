"""Helper shared by the relay tests: a real tracery-relayd started on a port of
its own (or a given one), its log read for the port it listens on."""
import subprocess
import time

from tracetest import program


def start_relayd(output, log_path, port=0):
    """Starts tracery-relayd --port PORT --output OUTPUT (port 0: one the system picks), its stderr to
    log_path; returns (its process, the port it listens on, the open log file)."""
    log = open(log_path, "w+")
    proc = subprocess.Popen([program("src", "relay", "tracery-relayd"), "--port", str(port), "--output", output],
                            stderr=log)
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(log_path) as f:
            for line in f:
                if "listening on 127.0.0.1:" in line:
                    return proc, int(line.split("127.0.0.1:")[1].split(",")[0]), log
        time.sleep(0.05)
    proc.kill()
    with open(log_path) as f:
        raise AssertionError(f"tracery-relayd did not start: {f.read()}")
