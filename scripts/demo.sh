#!/usr/bin/env bash
# End-to-end demonstration: installs dependencies, builds, traces the sample
# programs examples/hello.c and examples/hello.cpp and shows their traces as
# babeltrace2 prints them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
out=$(mktemp -d /tmp/tracery-demo.XXXXXX)
echo
echo "== TRACERY_OUTPUT=$out/c build/examples/hello-c tracer"
TRACERY_OUTPUT=$out/c TRACERY_CONTEXT=vtid,procname build/examples/hello-c tracer
echo "== TRACERY_OUTPUT=$out/cxx build/examples/hello-cxx"
TRACERY_OUTPUT=$out/cxx build/examples/hello-cxx
echo
echo "== babeltrace2 $out/c"
babeltrace2 "$out/c"
echo
echo "== babeltrace2 $out/cxx"
babeltrace2 "$out/cxx"
echo
echo "Traces are in $out (CTF 1.8: metadata + one stream file per CPU)."
