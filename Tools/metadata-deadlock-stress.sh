#!/usr/bin/env bash
# The JACK metadata deadlock of BENCHMARKS.md, provoked: jackvu starts with 64 channels (it
# writes 4 properties per port) while a loop of jack_lsp clients opens and closes (each close
# makes jackd walk the metadata database to remove that client's properties), ROUNDS times,
# each round on a fresh jackd and a fresh metadata database. A round whose jack_lsp does not
# finish in 10 s is a hung server: the script says so and stops.
#
#   Tools/metadata-deadlock-stress.sh [ROUNDS] [CHANNELS] [detect|none]
#
# `detect` (the default) leaves the database to jackvu, which turns Berkeley DB's deadlock
# detector on (MetadataDatabase); `none` writes an empty DB_CONFIG first, which jackvu leaves
# alone: JACK's own behaviour. Each round prints how many deadlocks Berkeley DB resolved
# (db5.3_stat, package db5.3-util) and whether the database verifies (db5.3_verify).
#
# It removes /dev/shm/jack_db-UID, JACK's metadata of every server of this user: it refuses
# to run while any jackd runs. jackvu: .build/release/jackvu, or JACKVU=path.
set -euo pipefail
rounds=${1:-20} channels=${2:-64} mode=${3:-detect}
here=$(cd "$(dirname "$0")/.." && pwd)
vu=${JACKVU:-$here/.build/release/jackvu}
[ -x "$vu" ] || { echo "no jackvu at $vu (swift build -c release, or JACKVU=path)" >&2; exit 64; }
command -v db5.3_stat > /dev/null || { echo "needs db5.3_stat and db5.3_verify (apt-get install db5.3-util)" >&2; exit 69; }
pgrep -x jackd > /dev/null && { echo "a jackd runs: this script removes JACK's metadata database; stop it first" >&2; exit 75; }
export JACK_DEFAULT_SERVER=jackvu-deadlock-stress-$$
db=/dev/shm/jack_db-$(id -u)
out=$(mktemp -d)
server= meter=
cleanup() {
  [ -n "$meter" ] && kill -TERM "$meter" 2> /dev/null && wait "$meter" 2> /dev/null
  [ -n "$server" ] && kill -KILL "$server" 2> /dev/null && wait "$server" 2> /dev/null
  rm -rf "$out"
}
trap cleanup EXIT
for round in $(seq 1 "$rounds"); do
  rm -rf "$db"
  if [ "$mode" = none ]; then mkdir -m 0750 "$db" && : > "$db/DB_CONFIG"; fi
  jackd -n "$JACK_DEFAULT_SERVER" --no-realtime -d dummy -r 48000 -p 256 > "$out/jackd.log" 2>&1 &
  server=$!
  for _ in $(seq 1 50); do jack_lsp > /dev/null 2>&1 && break; sleep 0.1; done
  "$vu" --channels "$channels" --rate 5 --send status,callback > "$out/jackvu.out" 2> "$out/jackvu.err" &
  meter=$!
  end=$((SECONDS + 4))
  while [ $SECONDS -lt $end ]; do
    if ! timeout 10 jack_lsp > /dev/null 2>&1; then
      echo "round $round: jack_lsp did not finish in 10 s: the server hangs"
      db5.3_stat -h "$db" -Co 2> /dev/null | sed -n '/grouped by object/,$p'
      exit 1
    fi
  done
  kill -TERM "$meter"; status=0; wait "$meter" || status=$?; meter=
  # Read while jackd runs: its clean exit removes the environment.
  deadlocks=$(db5.3_stat -h "$db" -c 2> /dev/null | awk '/Number of deadlocks/ {print $1}' || true)
  verified=$(db5.3_verify -h "$db" metadata.db > /dev/null 2>&1 && echo verifies || echo "DOES NOT VERIFY")
  kill -TERM "$server"; wait "$server" 2> /dev/null || true; server=
  echo "round $round: jackvu exit $status, deadlocks resolved ${deadlocks:-?}, the database $verified, warnings $(grep -c warning "$out/jackvu.err" || true)"
done
rm -rf "$db"
