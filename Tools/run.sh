#!/usr/bin/env bash
# The main job: installs what is needed, builds jackvu and jacktone (release), and runs
# jackvu on a 440 Hz test tone. With no JACK server running it starts a dummy one
# (jackd -d dummy) as the default server, and stops it again at the end. Extra arguments go
# to jackvu, e.g. `Tools/run.sh --channels 1 --rate 5`. Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
. Tools/swift-tmp.sh
. Tools/stop.sh
bash Tools/setup.sh
# Always through a pipe: SwiftPM colours its diagnostics (a different compiler flag) when its
# output is a terminal, and a changed flag rebuilds every module; piped, a run from a terminal
# reuses what a run from a script built, and the other way round.
swift build -c release --product jackvu 2>&1 | cat >&2
swift build -c release --product jacktone 2>&1 | cat >&2
bin="$(swift build -c release --show-bin-path)"

pids=()
# The logs of the server and tone it starts: a directory of its own (no fixed name in /tmp),
# removed at the end.
logs="$(mktemp -d -t jackvu-run.XXXXXX)"
cleanup() { stop_all "${pids[@]}"; rm -rf "$logs"; }
trap cleanup EXIT

if ! jack_lsp >/dev/null 2>&1; then
  echo "run: no JACK server is running: starting jackd -d dummy -r 48000 -p 256 (log: $logs/jackd.log)" >&2
  jackd --no-realtime -d dummy -r 48000 -p 256 >"$logs/jackd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
  if ! jack_lsp >/dev/null 2>&1; then
    echo "run: jackd did not start; it said:" >&2
    cat "$logs/jackd.log" >&2
    exit 69
  fi
fi

echo "run: jacktone plays A4 (440 Hz) at -18 dBFS into jackvu:in_1; Ctrl-C stops" >&2
"$bin/jacktone" --freq 440 --level -18 >"$logs/jacktone.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^jacktone:out$' && break; sleep 0.1; done
"$bin/jackvu" --connect jacktone:out "$@"
