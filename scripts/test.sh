#!/usr/bin/env bash
# The whole test suite: builds, runs every unit, integration and
# interoperability test with CTest, then the unit and concurrency stress tests
# of the ring buffer, clock, consumer and libtracery again under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
ctest --test-dir build --output-on-failure -j2
TRACERY_ONLY_LABEL=tsan scripts/build.sh build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACERY_SANITIZE=thread
ctest --test-dir build-tsan --output-on-failure -L tsan
