#!/usr/bin/env bash
# The whole test suite: builds, runs every unit, integration and
# interoperability test with CTest, then the unit and concurrency stress tests
# of the ring buffer, clock, consumer and libtracery again under ThreadSanitizer.
# The ThreadSanitizer tree builds while the first tests run, on the CPU time
# they leave idle (SCHED_IDLE: a test that wakes up preempts it at once; not
# in a session of its own, which autogroup scheduling would give an equal share).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
tsan_log=$(mktemp)
set -m # its own process group (killed whole at exit), in this session's scheduling group
TRACERY_ONLY_LABEL=tsan chrt --idle 0 scripts/build.sh build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRACERY_SANITIZE=thread >"$tsan_log" 2>&1 &
tsan_build=$!
set +m
trap 'kill -- -$tsan_build 2>/dev/null || true; rm -f "$tsan_log"' EXIT
ctest --test-dir build --output-on-failure -j2
if ! wait $tsan_build; then
  cat "$tsan_log" >&2
  echo "test.sh: the ThreadSanitizer build failed" >&2
  exit 1
fi
ctest --test-dir build-tsan --output-on-failure -L tsan
