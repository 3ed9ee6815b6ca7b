#!/usr/bin/env bash
# Soak: jackvu for SECONDS (default 600) with 16 channels at 64-frame periods on a dummy
# real-time JACK server (jackd -R), fed by jacktone, while the server is killed (SIGKILL) and
# started again every SOAK_RESTART seconds (default 120). jackvu is the RealtimeSanitizer
# build, with halt_on_error=false, so every allocation, lock or system call in a process
# callback is reported and counted instead of ending the run. Reports: reconnects, xruns the
# servers reported, overruns, jackvu's resident memory at the start and the end, callback
# violations. Usage: bash Tools/soak.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
. Tools/swift-tmp.sh
. Tools/stop.sh
seconds="${1:-600}"
restart="${SOAK_RESTART:-120}"
bash Tools/setup.sh --tests >&2
swift build -c release --product jacktone 2>&1 | cat >&2
for product in jackvu jacktone; do
  swift build --scratch-path .build-rtsan --product "$product" -Xswiftc -Xclang-linker -Xswiftc -fsanitize=realtime 2>&1 | cat >&2
done
vu_bin="$PWD/.build-rtsan/debug/jackvu"
tone_bin="$(swift build -c release --show-bin-path)/jacktone"

work="$(mktemp -d)"
server="jackvu-soak-$$"
export JACK_DEFAULT_SERVER="$server"
pids=()
jackd_pid=""
tone_pid=""
cleanup() {
  stop_all $jackd_pid $tone_pid "${pids[@]}"  # jackvu first, the server last
  if [ -n "${KEEP_SOAK_LOGS:-}" ]; then echo "soak: logs in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

start_server() {
  jackd -n "$server" -R -d dummy -r 48000 -p 64 >>"$work/jackd.log" 2>&1 &
  jackd_pid=$!
  for _ in $(seq 100); do jack_lsp >/dev/null 2>&1 && break; sleep 0.05; done
  "$tone_bin" --freq 440 --freq 1000 --level -18 >>"$work/jacktone.log" 2>&1 &
  tone_pid=$!
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

start_server
connect=(); for _ in $(seq 16); do connect+=(--connect jacktone:out); done
RTSAN_OPTIONS=halt_on_error=false "$vu_bin" --name soak --channels 16 --format json --rate 1 "${connect[@]}" \
  >"$work/jackvu.jsonl" 2>"$work/jackvu.err" &
vu=$!
pids+=($vu)
sleep 10
rss_start="$(rss_kib "$vu")"
start=$(date +%s)
next=$((start + restart))
restarts=0
while [ $(( $(date +%s) - start )) -lt "$seconds" ]; do
  sleep 1
  kill -0 "$vu" 2>/dev/null || { echo "soak: jackvu ended early: $(tail -3 "$work/jackvu.err")" >&2; exit 1; }
  if [ "$(date +%s)" -ge "$next" ]; then
    kill -9 "$jackd_pid" 2>/dev/null || true
    wait "$jackd_pid" 2>/dev/null || true
    stop_all $tone_pid
    sleep 1
    start_server
    restarts=$((restarts + 1))
    next=$(( $(date +%s) + restart ))
  fi
done
sleep 5  # the last restart's reconnect
rss_end="$(rss_kib "$vu")"
last="$(tail -n 1 "$work/jackvu.jsonl")"
field() { printf '%s' "$last" | grep -o "\"$1\": [0-9a-z]*" | head -1 | awk '{ print $2 }'; }
violations="$(grep -c 'Real-time violation' "$work/jackvu.err" || true)"
echo "## soak: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
echo "jackd -R -d dummy -r 48000 -p 64; jackvu (RealtimeSanitizer build) --channels 16 --rate 1; ${seconds} s; server killed every ${restart} s"
echo "server restarts:        $restarts"
echo "jackvu reconnects:      $(field reconnects)"
echo "server connected now:   $(field server_connected)"
echo "xruns reported by the servers: $(field xruns)"
echo "overruns:               $(field overruns)"
echo "process cycles:         $(field cycles)"
echo "RSS start / end (KiB):  $rss_start / $rss_end"
echo "callback violations (RealtimeSanitizer reports): $violations"
