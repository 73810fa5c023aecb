#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for
# SECONDS (default 60), as many at once as there are cores: the filter parser+compiler, the bytecode verifier
# (with both engines on what it accepts), the control socket's framing and
# bodies, every control message's decoder, the relay protocol's frames and its authentication exchange, the serial line's frames, the requests of live viewers and the replies `view --live` decodes, session files, the event schemas programs send, the stream-file walk of the
# trace reader, the reader's TSDL metadata parser and packet decoding, the kernel's tracefs format files and ring-buffer pages,
# filter expressions translated for the kernel, the SDT note operands and
# the --args and --userspace-probe texts of dynamic probes.
# Corpora grow in build-fuzz/corpus/; a failing input is saved in the
# current directory. `scripts/fuzz.sh --build-only` builds the targets and
# runs none (CI builds them beside the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTRACERY_FUZZ=ON -DTRACERY_WERROR=ON >/dev/null
# target -> the directory of build-fuzz/src/ it is built in
declare -A dirs=([fuzz_compile]=filter [fuzz_verify]=filter [fuzz_wire]=control [fuzz_messages]=control [fuzz_relay_frames]=control [fuzz_relay_auth]=control [fuzz_serial_frames]=control [fuzz_schema]=event
  [fuzz_stream_check]=ctf [fuzz_tsdl]=ctf [fuzz_packet]=ctf [fuzz_format]=kernel [fuzz_page]=kernel [fuzz_kernel_filter]=filter
  [fuzz_sdt_args]=kernel [fuzz_probe_args]=kernel [fuzz_live_requests]=relay [fuzz_live_replies]=control [fuzz_session_file]=control)
targets=(fuzz_compile fuzz_verify fuzz_wire fuzz_messages fuzz_relay_frames fuzz_relay_auth fuzz_serial_frames fuzz_schema fuzz_stream_check fuzz_tsdl fuzz_packet fuzz_format fuzz_page fuzz_kernel_filter
  fuzz_sdt_args fuzz_probe_args fuzz_live_requests fuzz_live_replies fuzz_session_file)
ninja -C build-fuzz "${targets[@]}"
[[ $seconds != --build-only ]] || exit 0
# One target's run: its log in build-fuzz/TARGET.log, its figures printed.
run_target() {
  local t=$1
  mkdir -p "build-fuzz/corpus/$t"
  # Seeds kept in the tree (well-formed inputs to start from), read only:
  # fuzz/seeds/TARGET where a component has several targets, else fuzz/seeds.
  local seeds=()
  if [[ -d src/${dirs[$t]}/fuzz/seeds/$t ]]; then
    seeds=("src/${dirs[$t]}/fuzz/seeds/$t")
  elif [[ -d src/${dirs[$t]}/fuzz/seeds ]]; then
    seeds=("src/${dirs[$t]}/fuzz/seeds")
  fi
  if ! "build-fuzz/src/${dirs[$t]}/$t" -max_total_time="$seconds" -print_final_stats=1 "build-fuzz/corpus/$t" \
      "${seeds[@]}" >"build-fuzz/$t.log" 2>&1; then
    cat "build-fuzz/$t.log"
    echo "fuzz: $t found a failure (the input is saved as crash-*/leak-*/timeout-* in $PWD)" >&2
    return 1
  fi
  echo "fuzz: $t ran ${seconds}s: $(grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-fuzz/$t.log" |
    tr -s ' \n' ' ')"
}
# As many targets at once as there are cores (each is single-threaded),
# waited for in the order they started (they run the same time); the first
# failure stops the run once the running ones end.
jobs_max=$(nproc)
running=()
failed=0
for t in "${targets[@]}"; do
  if [[ ${#running[@]} -ge $jobs_max ]]; then
    wait "${running[0]}" || failed=1
    running=("${running[@]:1}")
  fi
  [[ $failed -eq 0 ]] || break
  run_target "$t" &
  running+=($!)
done
for pid in "${running[@]}"; do
  wait "$pid" || failed=1
done
exit $failed
