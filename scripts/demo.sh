#!/usr/bin/env bash
# End-to-end demonstration: installs what building needs (the tests' oracles
# and peers are scripts/test.sh's), builds the programs it runs, traces the
# sample programs examples/hello.c and examples/hello.cpp with the tracery
# command, as lttng would (its first `create` starts a session daemon,
# traceryd, in a private run directory so no real daemon is touched), and
# prints the trace with `tracery view`, as babeltrace2 prints it; then
# records hello-c again through a filter; as root, records it with its system
# calls and context switches in one kernel + user trace (traceryd mounts
# tracefs if it is not; the script says why when the kernel part cannot run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build
TRACERY_TARGETS="traceryd tracery-cli hello-c hello-cxx" scripts/build.sh build
out=$(mktemp -d /tmp/tracery-demo.XXXXXX)
export TRACERY_RUNDIR=$out/run
tracery() {
  local shown="\$ tracery" arg
  for arg in "$@"; do [[ $arg == *' '* ]] && shown+=" '$arg'" || shown+=" $arg"; done
  echo "$shown"
  build/src/cli/tracery "$@"
}
# Runs hello-c in the current session, then stops it, prints the trace and destroys the session.
trace_hello_c() {
  echo "\$ build/examples/hello-c tracer"
  build/examples/hello-c tracer
  tracery stop
  tracery view
  tracery destroy
}
stop_daemon() { kill "$(cat "$TRACERY_RUNDIR/traceryd.pid" 2>/dev/null)" 2>/dev/null || true; }
trap stop_daemon EXIT

tracery create demo --output "$out/trace"
tracery enable-event -u 'hello:*,shop:*'
tracery add-context -u -t vtid -t procname
tracery start
echo "\$ build/examples/hello-c tracer && build/examples/hello-cxx"
build/examples/hello-c tracer
build/examples/hello-cxx
tracery stop
tracery view
tracery destroy
echo
echo "# A filter: only the steps it accepts are recorded (docs/filters.md)."
tracery create filtered --output "$out/filtered"
tracery enable-event -u hello:step --filter 'value >= 0 && ratio < 0.8'
tracery start
trace_hello_c
traces="$out/trace and $out/filtered"
# The kernel part needs root and tracefs. traceryd mounts tracefs when it is
# not mounted (a fresh Debian 12 boots without it): asking it for the
# kernel's tracepoints does that, or says why kernel tracing is impossible.
kernel_skipped=
if [ "$(id -u)" != 0 ]; then
  kernel_skipped="kernel tracing needs root (run this script with sudo to see it)"
elif ! kernel_skipped=$(build/src/cli/tracery list -k 2>&1 >/dev/null); then
  kernel_skipped=${kernel_skipped#tracery: }
else
  kernel_skipped=
fi
if [ -n "$kernel_skipped" ]; then
  echo
  echo "# The combined kernel + user trace is not shown: $kernel_skipped"
else
  echo
  echo "# Kernel and user space in one trace (root, tracefs): hello-c's events among its write system calls"
  echo "# and context switches, on one clock; only this script and what it runs ($$ and its descendants)."
  tracery create combined --output "$out/combined"
  tracery enable-event -u 'hello:*'
  tracery enable-event -k --syscall write
  tracery enable-event -k sched_switch
  tracery track -k --pid $$
  tracery start
  trace_hello_c
  traces="$out/trace, $out/filtered and $out/combined (its ust/ and kernel/ traces)"
fi
echo
echo "The traces are in $traces (CTF 1.8: metadata + one stream file per channel, user and CPU)."
