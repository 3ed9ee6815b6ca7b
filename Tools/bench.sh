#!/usr/bin/env bash
# Reproduces every figure in BENCHMARKS.md (release build):
#   1. the SIMD helpers against plain scalar loops,
#   2. the worker's CPU time per second of audio per channel (default settings),
#   3. the process callback's mean and maximum time per cycle for 2 and 8 channels at
#      256 frames, measured inside jackvu running on a dummy JACK server with a tone on every
#      input (read from jackvu's own /jackvu/callback message).
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tools/setup.sh
swift build -c release >&2
bin="$(swift build -c release --show-bin-path)"
seconds="${BENCH_SECONDS:-20}"

echo "## machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
echo
"$bin/jackvu-bench" simd
echo
"$bin/jackvu-bench" worker 60
echo

server="jackvu-bench-$$"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
jackd -n "$server" --no-realtime -d dummy -r 48000 -p 256 >/tmp/jackvu-bench-jackd.log 2>&1 &
pids+=($!)
export JACK_DEFAULT_SERVER="$server"
for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done

echo "Process callback per cycle, 48000 Hz, 256 frames, ${seconds} s each (jackd -d dummy, not real-time)"
echo "channels   mean µs   max µs   cycles"
for channels in 2 8; do
  out="/tmp/jackvu-bench-$channels.out"
  "$bin/jacktone" --name "tone$channels" --freq 440 --freq 1000 >/dev/null 2>&1 &
  tone=$!
  pids+=($tone)
  for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q "^tone$channels:out$" && break; sleep 0.1; done
  args=()
  for _ in $(seq "$channels"); do args+=(--connect "tone$channels:out"); done
  # One source port per --connect: every input gets the tone.
  "$bin/jackvu" --name "bench$channels" --channels "$channels" --rate 2 "${args[@]}" >"$out" 2>&1 &
  vu=$!
  pids+=($vu)
  sleep "$seconds"
  kill -INT "$vu"; wait "$vu" || true
  kill "$tone"; wait "$tone" 2>/dev/null || true
  cb=$(grep '/callback ' "$out" | tail -1)
  st=$(grep '/status ' "$out" | tail -1)
  echo "$channels          $(echo "$cb" | awk '{print $3}')   $(echo "$cb" | awk '{print $4}')   $(echo "$st" | awk '{print $7}')"
done
