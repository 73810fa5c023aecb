#!/usr/bin/env bash
# Installs what Tracery needs on Debian 12 (as root). Each package and why it
# is there is listed in README.md ("Dependencies").
#   scripts/install-deps.sh          everything: building, the tests with their oracles and peers, benchmarks
#                                    (scripts/test.sh runs this)
#   scripts/install-deps.sh --build  what configuring and building the tree needs, nothing the tests only run
#                                    (scripts/demo.sh runs this: a fresh machine's demo stays light)
set -euo pipefail
build_packages=(
  build-essential cmake ninja-build pkg-config clang
  libcli11-dev nlohmann-json3-dev libasmjit-dev
  libelf-dev libdw-dev zlib1g-dev libbpf-dev
  protobuf-compiler libprotobuf-dev libsqlite3-dev libssl-dev libcurl4-openssl-dev
  # configuring with the tests and benchmarks (the default) finds these small libraries
  libgtest-dev libgmock-dev libbenchmark-dev libtraceevent-dev libtracefs-dev
)
# The checks, the oracles and peers of the tests and benchmarks, and the optional agents' toolchains.
test_packages=(
  libclang-rt-14-dev clang-format pyflakes3
  babeltrace2 python3-bt2 python3-lttnganalyses python3-babeltrace python3-barectf
  systemtap-sdt-dev bpftool
  sqlite3 xz-utils openssl clickhouse-server clickhouse-client
  chromium
  lttng-tools liblttng-ust-dev uftrace
  python3-dev python3-lttngust
  default-jdk-headless liblttng-ust-agent-java liblog4j2-java
  dpkg-dev fakeroot lintian zsh
)
case "${1:-}" in
  --build) packages=("${build_packages[@]}") apt_options=(--no-install-recommends) ;;
  "") packages=("${build_packages[@]}" "${test_packages[@]}") apt_options=() ;;
  *) echo "install-deps: unknown argument '$1': give --build or nothing" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing packages: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_options[@]}" "${missing[@]}" >/dev/null
fi
