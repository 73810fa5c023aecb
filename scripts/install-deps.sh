#!/usr/bin/env bash
# Installs what Tracery needs to build, test and benchmark on Debian 12 (as root).
# Each package and why it is there is listed in README.md ("Dependencies").
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev clang-format pyflakes3
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libasmjit-dev
  babeltrace2 python3-bt2 python3-lttnganalyses python3-babeltrace
  libtraceevent-dev libtracefs-dev
  libelf-dev libdw-dev zlib1g-dev systemtap-sdt-dev
  libbpf-dev bpftool
  protobuf-compiler libprotobuf-dev
  libsqlite3-dev sqlite3
  xz-utils
  libssl-dev openssl
  chromium
  lttng-tools liblttng-ust-dev uftrace
  python3-dev python3-lttngust
  default-jdk-headless liblttng-ust-agent-java liblog4j2-java
)
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
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
