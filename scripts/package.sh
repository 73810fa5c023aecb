#!/usr/bin/env bash
# Builds Tracery's Debian packages (cmake/tracery_package.cmake) into $1 (default: packages/):
# a tree configured for them in build-deb/ (the prefix /usr, so that the libraries' directory is
# Debian's multiarch one; no tests or benchmarks), then `cpack -G DEB`.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-packages}")
cmake -S . -B build-deb -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DTRACERY_TESTS=OFF -DTRACERY_BENCHMARKS=OFF >/dev/null
ninja -C build-deb
(cd build-deb && cpack -G DEB -B "$out")
ls "$out"/*.deb
