#!/usr/bin/env bash
# Configures and builds Tracery into build/ (or $1 with extra CMake arguments after it).
# Release (-O3) unless an argument says otherwise: the build the tests run on, so that GCC 12's warnings that
# only -O3 inlining brings out (as errors here) stop the same build, with no second one for them.
# Warnings are errors (-DTRACERY_WERROR=ON; an argument -DTRACERY_WERROR=OFF, coming later, wins).
# With TRACERY_ONLY_LABEL=L, builds only the test binaries of CTest label L (a test's name is its target's name).
# With TRACERY_TARGETS='T1 T2 ...', builds only those targets (scripts/demo.sh: the programs it runs).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRACERY_WERROR=ON "$@" >/dev/null
if [ -n "${TRACERY_TARGETS:-}" ]; then
  read -ra targets <<<"$TRACERY_TARGETS"
  ninja -C "$dir" "${targets[@]}"
elif [ -n "${TRACERY_ONLY_LABEL:-}" ]; then
  mapfile -t targets < <(ctest --test-dir "$dir" -N -L "$TRACERY_ONLY_LABEL" | sed -n 's/^ *Test *#[0-9]*: //p')
  if [ "${#targets[@]}" -eq 0 ]; then
    echo "build.sh: no test has the label '$TRACERY_ONLY_LABEL'" >&2
    exit 1
  fi
  ninja -C "$dir" "${targets[@]}"
else
  ninja -C "$dir"
fi
