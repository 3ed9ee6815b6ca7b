#!/usr/bin/env bash
# Reproduces every figure in BENCHMARKS.md (release build):
#   1. the SIMD helpers against plain scalar loops,
#   2. the worker's CPU time per second of audio per channel (default settings),
#   3. the process callback's mean and maximum time per cycle for 2 and 8 channels at
#      256 frames, measured inside jackvu running on a dummy JACK server with a tone on every
#      input (read from jackvu's own /jackvu/callback message).
# `bash Tools/bench.sh analyze` runs only the last comparison; `bash Tools/bench.sh outputs`
# only the outputs' figures: worker CPU by --send, and OSC-over-UDP latency (time tag of the
# last analysed frame to the datagram's arrival) on a real-time dummy server.
# `bash Tools/bench.sh latency`: a level step at the input to the meter port, per --meter, on a
# real-time dummy server at 256 frames (jackvu-probe meter-latency, 20 trials each).
# `bash Tools/bench.sh rt`: the real-time threads' own CPU per period (schedstat: the
# thread CPU clock) of jack_meter and of jackvu with 1, 8, 64 and 256 channels, and of jackd's
# process thread with jackvu loaded in process, on one real-time dummy server, with jackvu's
# own wall-time figures for its callback beside them.
# `bash Tools/bench.sh capacity`: jackvu with every meter on (the default --send) for
# BENCH_SECONDS each at CAPACITY's channels:workers pairs (default 256:1 512:1 1024:2, issue
# 33's counts: 512 on one worker core, 1,024 on two): overruns, xruns (jackvu's and, for the
# server's own, a one-channel observer's), cycles, and the callback's mean and maximum per cycle.
# `bash Tools/bench.sh metrics`: Prometheus scrapes (bytes, latency, CPU per scrape) for 2, 64
# and 256 channels with 1 and 8 programmes, and K scraped 64-channel instances on one server.
# `bash Tools/bench.sh watch`: the alarms and the log: the time from a silence starting to the
# --on-alarm command running (raise 0, 10 trials); the log's size per programme per day and
# its writer thread's CPU per programme (1, 8 and 32 programmes, BENCH_SECONDS each); and
# `jackvu report` of a 24-hour log of 8 programmes (written by Python's sqlite3 into the
# schema jackvu made).
# `bash Tools/bench.sh displays`: CPU of the display threads at --rate 20 with 8 channels
# (terminal display in a 100×30 tmux pane; browser display with one WebSocket reader) and
# the bytes per second that reader receives.
# `bash Tools/bench.sh pictures`: the bytes per second one browser receives with 2 and 8
# channels (the JSON updates and the pictures' binary frames).
# `bash Tools/bench.sh lv2host`: the LV2 plugin (stereo) and x42's EBU R128 meter (Debian's
# x42-plugins) side by side in jalv on one real-time dummy server, the same two noises into
# both, BENCH_SECONDS: each thread's CPU per second of audio per channel (schedstat: the
# thread CPU clock) — jalv's process thread, which calls run(), and jackvu's worker — and, with
# perf, the share of each process thread spent in the plugin's own library.
set -euo pipefail
cd "$(dirname "$0")/.."
. Tools/swift-tmp.sh
. Tools/stop.sh
bash Tools/setup.sh --tests
swift build -c release 2>&1 | cat >&2
bin="$(swift build -c release --show-bin-path)"
seconds="${BENCH_SECONDS:-20}"
only="${1:-all}"

echo "## machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
echo
pids=()
# Logs and scratch files of this run: a directory of its own, never a fixed name in /tmp.
work="$(mktemp -d -t jackvu-bench.XXXXXX)"
cleanup() { stop_all "${pids[@]}"; rm -rf "$work"; }
trap cleanup EXIT
# A real-time dummy server for one measurement, jackd -R -d dummy -r 48000 -p 256, named for
# it, as the default server from here on; its pid in $jackd_pid. (Extra environment before
# the call, e.g. JACK_INTERNAL_DIR=….)
start_server() {
  server="jackvu-bench-$$-$1"
  jackd -n "$server" -R -d dummy -r 48000 -p 256 >"$work/$1-jackd.log" 2>&1 &
  jackd_pid=$!
  pids+=($jackd_pid)
  export JACK_DEFAULT_SERVER="$server"
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
}
# jacktone playing a 440 + 1000 Hz chord on the current server, once its port exists.
start_chord() {
  "$bin/jacktone" --freq 440 --freq 1000 >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^jacktone:out$' && break; sleep 0.1; done
}

# mode: "-R" (real-time scheduling, as in a studio; needs rtprio, e.g. root) or "--no-realtime"
callbacks() {
  local mode="$1" server="jackvu-bench-$$-${1//-/}"
  jackd -n "$server" "$mode" -d dummy -r 48000 -p 256 >"$work/jackd$mode.log" 2>&1 &
  local jackd_pid=$!
  pids+=($jackd_pid)
  export JACK_DEFAULT_SERVER="$server"
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
  if ! jack_lsp >/dev/null 2>&1; then echo "(jackd $mode did not start: $(tail -n 3 "$work/jackd$mode.log" | tr "\n" " "))"; return; fi
  echo "Process callback per cycle, jackd $mode -d dummy -r 48000 -p 256, ${seconds} s each"
  echo "channels   mean µs   p99 µs (≤)   max µs   cycles"
  for channels in 2 8; do
    local out="$work/$channels.out"
    "$bin/jacktone" --name "tone$channels" --freq 440 --freq 1000 >/dev/null 2>&1 &
    local tone=$!
    pids+=($tone)
    for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q "^tone$channels:out$" && break; sleep 0.1; done
    local args=()
    # One source port per --connect: every input gets the tone.
    for _ in $(seq "$channels"); do args+=(--connect "tone$channels:out"); done
    "$bin/jackvu" --name "bench$channels" --channels "$channels" --rate 2 "${args[@]}" >"$out" 2>&1 &
    local vu=$!
    pids+=($vu)
    sleep "$seconds"
    kill -INT "$vu"; wait "$vu" || true
    kill "$tone"; wait "$tone" 2>/dev/null || true
    local cb st
    cb=$(grep '/callback ' "$out" | tail -1)
    st=$(grep '/status ' "$out" | tail -1)
    echo "$channels          $(echo "$cb" | awk '{print $3}')   $(echo "$cb" | awk '{print $4}')   $(echo "$cb" | awk '{print $5}')   $(echo "$st" | awk '{print $7}')"
  done
  kill "$jackd_pid"; wait "$jackd_pid" 2>/dev/null || true
  echo
}
if [ "$only" = all ]; then
"$bin/jackvu-bench" simd
echo
"$bin/jackvu-bench" worker 60
echo

callbacks -R
callbacks --no-realtime
fi
if [ "$only" = callbacks ]; then
  callbacks -R
  exit 0
fi

# CPU time (ns) of the SCHED_FIFO threads of process $1 so far (schedstat's first field);
# with $2, only threads whose name is (=NAME) or is not (!NAME) that.
rt_ns() {
  local total=0 t policy name
  for t in /proc/"$1"/task/*; do
    policy=$(awk '{print $41}' "$t/stat" 2>/dev/null || echo 0)
    [ "$policy" = 1 ] || [ "$policy" = 2 ] || continue
    name=$(cat "$t/comm" 2>/dev/null)
    case "${2:-}" in
      =*) [ "$name" = "${2#=}" ] || continue ;;
      !*) [ "$name" != "${2#!}" ] || continue ;;
    esac
    total=$((total + $(cut -d' ' -f1 "$t/schedstat")))
  done
  echo "$total"
}
# µs per period of process $1's real-time threads (filter $3) over $2 seconds at 48 kHz / 256.
rt_per_period() {
  local a b
  a=$(rt_ns "$1" "${3:-}"); sleep "$2"; b=$(rt_ns "$1" "${3:-}")
  echo "$a $b $2" | awk '{printf "%.2f", ($2 - $1) / 1000 / ($3 * 48000 / 256)}'
}

if [ "$only" = rt ]; then
  # jack_meter (Debian's jackmeter) is the reference real-time client measured beside jackvu.
  command -v jack_meter >/dev/null || {
    echo "bench: installing jackmeter for the comparison" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends jackmeter >/dev/null
  }
  start_server rt
  start_chord
  echo "Real-time threads' own CPU per period (thread CPU clock, schedstat), jackd -R -d dummy -r 48000 -p 256, ${seconds} s each, $(date -u +%F)"
  echo "jackd's process thread alone (with jacktone): $(rt_per_period "$jackd_pid" "$seconds") µs"
  jack_meter -n -f 1 jacktone:out >/dev/null 2>&1 &
  meter=$!
  pids+=($meter)
  sleep 1
  echo "jack_meter (1 port): $(rt_per_period "$meter" "$seconds") µs per period"
  for channels in 1 8 64 256; do
    args=()
    for _ in $(seq "$channels"); do args+=(--connect jacktone:out); done
    "$bin/jackvu" --name "rt$channels" --channels "$channels" --text --send callback,status --rate 1 "${args[@]}" >$work/rt.out 2>&1 &
    vu=$!
    pids+=($vu)
    sleep 3
    cost=$(rt_per_period "$vu" "$seconds")
    kill -INT "$vu"; wait "$vu" || true
    cb=$(grep '/callback ' $work/rt.out | tail -1)
    echo "jackvu, $channels channels: $cost µs per period (real-time thread); its callback (wall): mean $(echo "$cb" | awk '{print $3}') µs, p99 ≤ $(echo "$cb" | awk '{print $4}') µs, max $(echo "$cb" | awk '{print $5}') µs"
  done
  # 64 channels again with every meter port connected (to system:playback_1): a connected
  # meter port is filled every period, an unconnected one is not.
  args=()
  for _ in $(seq 64); do args+=(--connect jacktone:out); done
  "$bin/jackvu" --name rt64m --channels 64 --text --send callback,status --rate 1 "${args[@]}" >$work/rt.out 2>&1 &
  vu=$!
  pids+=($vu)
  for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^rt64m:meter_64$' && break; sleep 0.1; done
  for n in $(seq 64); do jack_connect "rt64m:meter_$n" system:playback_1; done
  sleep 3
  cost=$(rt_per_period "$vu" "$seconds")
  kill -INT "$vu"; wait "$vu" || true
  cb=$(grep '/callback ' $work/rt.out | tail -1)
  echo "jackvu, 64 channels, every meter port connected: $cost µs per period (real-time thread); its callback (wall): mean $(echo "$cb" | awk '{print $3}') µs, p99 ≤ $(echo "$cb" | awk '{print $4}') µs, max $(echo "$cb" | awk '{print $5}') µs"
  kill "$meter" 2>/dev/null || true; wait "$meter" 2>/dev/null || true
  # In process: jackd's own process thread with jackvu loaded, less jackd alone.
  kill "$jackd_pid"; wait "$jackd_pid" 2>/dev/null || true
  dir=$(mktemp -d)
  cp "$bin/libJackVUInternal.so" "$dir/jackvu.so"
  JACK_INTERNAL_DIR="$dir" jackd -n "$server" -R -d dummy -r 48000 -p 256 >$work/rt-jackd2.log 2>&1 &
  jackd_pid=$!
  pids+=($jackd_pid)
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
  "$bin/jacktone" --freq 440 --freq 1000 >/dev/null 2>&1 &
  pids+=($!)
  sleep 1
  alone=$(rt_per_period "$jackd_pid" "$seconds" '=jackd')
  echo "jackd's process thread alone (with jacktone): $alone µs per period"
  for channels in 1 8 64; do
    # (jack_load's -i string is at most 1023 bytes: the tone goes to every input by regex.)
    jack_load -i "--channels $channels --send status" jackvu jackvu >/dev/null
    jack_connect jacktone:out jackvu:in_1 2>/dev/null || true
    for n in $(seq 2 "$channels"); do jack_connect jacktone:out "jackvu:in_$n" 2>/dev/null || true; done
    sleep 3
    # jack2 gives an internal client a real-time thread of its own inside jackd (named after
    # the thread that activated it, jackvu-engine): the server's own thread is measured apart.
    a_own=$(rt_ns "$jackd_pid" '!jackd'); a_srv=$(rt_ns "$jackd_pid" '=jackd'); sleep "$seconds"
    b_own=$(rt_ns "$jackd_pid" '!jackd'); b_srv=$(rt_ns "$jackd_pid" '=jackd')
    jack_unload jackvu >/dev/null
    echo "$a_own $b_own $a_srv $b_srv $seconds $channels" | awk '{p = $5 * 48000 / 256; printf "jackvu in process, %d channels: its real-time thread %.2f µs per period; jackd'"'"'s own %.2f\n", $6, ($2 - $1) / 1000 / p, ($4 - $3) / 1000 / p}'
  done
  rm -rf "$dir"
  exit 0
fi

if [ "$only" = capacity ]; then
  # Room for 1,024 channels' 2,049 ports.
  server="jackvu-bench-$$-capacity"
  jackd -n "$server" -p 4096 -R -d dummy -r 48000 -p 256 >"$work/capacity-jackd.log" 2>&1 &
  jackd_pid=$!
  pids+=($jackd_pid)
  export JACK_DEFAULT_SERVER="$server"
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
  start_chord
  # The server's own xruns over each run: a one-channel observer that only reports status.
  "$bin/jackvu" --name observer --channels 1 --text --send status --rate 1 >$work/observer.out 2>&1 &
  pids+=($!)
  echo "Every meter on (the default --send), a chord on every input, jackd -R -d dummy -r 48000 -p 256, ${seconds} s each ($(nproc) cores)"
  echo "channels  workers  overruns  xruns  server xruns  cycles  callback mean µs  max µs"
  for pair in ${CAPACITY:-256:1 512:1 1024:2}; do
    channels=${pair%%:*} workers=${pair##*:}
    args=()
    for _ in $(seq "$channels"); do args+=(--connect jacktone:out); done
    "$bin/jackvu" --name "cap$channels" --channels "$channels" --workers "$workers" --text --rate 1 "${args[@]}" >$work/capacity.out 2>&1 &
    vu=$!
    pids+=($vu)
    for _ in $(seq 100); do grep -aq '/status ' $work/capacity.out && break; sleep 0.3; done
    sleep 2
    first=$(grep -a '/status ' $work/capacity.out | tail -1 || true)
    observed=$(grep -a '/status ' $work/observer.out | tail -1 | awk '{print $4}')
    sleep "$seconds"
    last=$(grep -a '/status ' $work/capacity.out | tail -1 || true)
    observed=$(( $(grep -a '/status ' $work/observer.out | tail -1 | awk '{print $4}') - observed ))
    cb=$(grep -a '/callback ' $work/capacity.out | tail -1 || true)
    kill -INT "$vu"; wait "$vu" || true
    echo "$first" "$last" | awk -v c="$channels" -v w="$workers" -v o="$observed" -v m="$(echo "$cb" | awk '{print $3}')" -v x="$(echo "$cb" | awk '{print $5}')" \
      '{printf "%-9s %-8s %-9d %-6d %-13d %-7d %-17s %s\n", c, w, $19 - $5, $18 - $4, o, $21 - $7, m, x}'
  done
  exit 0
fi

if [ "$only" = lv2host ]; then
  dpkg -s x42-plugins >/dev/null 2>&1 || {
    echo "bench: installing x42-plugins and jalv for the comparison" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends x42-plugins jalv >/dev/null
  }
  mkdir -p "$work/lv2/jackvu.lv2"
  cp "$bin/libJackVULV2.so" "$work/lv2/jackvu.lv2/jackvu.so"
  "$bin/jackvu-lv2-ttl" "$work/lv2/jackvu.lv2" jackvu.so
  export LV2_PATH="$work/lv2:/usr/lib/lv2"
  start_server lv2host
  "$bin/jacktone" --noise --level -20 >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^jacktone:noise_2$' && break; sleep 0.1; done
  # jalv reads commands on stdin: a pipe that stays open (and idle) for the run.
  sleep 100000 | jalv -x -n jv urn:jackvu:lv2:stereo >"$work/jv.log" 2>&1 &
  pids+=($!)
  sleep 100000 | jalv -x -n x42 "http://gareus.org/oss/lv2/meters#EBUr128" >"$work/x42.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do jack_lsp 2>/dev/null | grep -q '^x42:inR$' && jack_lsp 2>/dev/null | grep -q '^jv:in_2$' && break; sleep 0.1; done
  jack_connect jacktone:noise_1 jv:in_1; jack_connect jacktone:noise_2 jv:in_2
  jack_connect jacktone:noise_1 x42:inL; jack_connect jacktone:noise_2 x42:inR
  sleep 3
  # Every thread of both jalvs: pid tid name CPU-ns.
  threads() { for p in $(pgrep -x jalv); do for t in /proc/$p/task/*; do
    echo "$(tr '\0' ' ' </proc/$p/cmdline | awk '{print $NF}') ${t##*/} $(cat $t/comm) $(awk '{print $1}' $t/schedstat)"; done; done; }
  threads >"$work/t0"
  sleep "$seconds"
  threads >"$work/t1"
  echo "jalv hosting urn:jackvu:lv2:stereo and x42's EBUr128 on jackd -R -d dummy -r 48000 -p 256, white noise -20 dBFS on both channels, ${seconds} s"
  echo "plugin                    thread        ms CPU per s of audio   per channel"
  paste "$work/t0" "$work/t1" | awk -v s="$seconds" '{d=($8-$4)/1e6/s; if (d > 0.05) printf "%-25s %-13s %-23.3f %.3f\n", $1, $3, d, d/2}'
  # The plugins' own code in each process thread (jalv's own work there, and JACK's wake-up,
  # are not the plugin's): perf's share of the thread's samples in the plugin's library, times
  # the thread's CPU over the same 10 s.
  if command -v perf >/dev/null && perf record -q -o "$work/probe.perf" true >/dev/null 2>&1; then
    echo "run() alone (perf: the plugin library's share of its process thread, 10 s):"
    for name in jv x42; do
      pid=$(pgrep -f "jalv -x -n $name " | head -1)
      tid=$(for t in /proc/$pid/task/*; do [ "$(cat $t/comm)" = jalv ] && echo "$(awk '{print $1}' $t/schedstat) ${t##*/}"; done | sort -n | tail -1 | awk '{print $2}')
      before=$(awk '{print $1}' /proc/$pid/task/$tid/schedstat)
      perf record -q -F 10000 -o "$work/$name.perf" -t "$tid" -- sleep 10 >/dev/null 2>&1 || true
      after=$(awk '{print $1}' /proc/$pid/task/$tid/schedstat)
      library=$([ "$name" = jv ] && echo jackvu.so || echo meters.so)
      share=$(perf report -i "$work/$name.perf" --no-children --stdio --sort dso 2>/dev/null | awk -v l="$library" '$2 == l {gsub("%", "", $1); print $1}')
      echo "$name $library ${share:-0} $before $after" | awk '{cpu = ($5 - $4) / 1e6 / 10; printf "  %-4s %-10s %5.1f %% of %.3f ms/s = %.3f ms per s of audio, %.3f per channel\n", $1, $2, $3, cpu, cpu * $3 / 100, cpu * $3 / 200}'
    done
  fi
  exit 0
fi

# Prometheus (issue 21): per configuration (channels × programmes, every meter, a chord on every
# input), 200 back-to-back scrapes of /metrics with curl: bytes, median and 99th-percentile
# latency, and jackvu's CPU per scrape (its CPU time over the scrapes, less the same span
# idle). Then capacity: K instances of 64 channels on one real-time server, one Prometheus
# scraping each every second for BENCH_SECONDS, the overruns and xruns.
if [ "$only" = metrics ]; then
  command -v curl >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl >/dev/null; }
  start_server metrics
  start_chord
  cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, clock ticks
  tick=$(getconf CLK_TCK)
  echo "Scrapes of /metrics, jackd -R -d dummy -r 48000 -p 256, every meter on, --rate 10"
  echo "channels  programmes  bytes    series  median ms  p99 ms  CPU ms/scrape"
  for channels in 2 64 256; do
    for programmes in 1 8; do
      args=()
      for _ in $(seq "$channels"); do args+=(--connect jacktone:out); done
      if [ "$programmes" -gt 1 ]; then
        per=$((channels / programmes)); [ "$per" -lt 1 ] && per=1
        for p in $(seq "$programmes"); do
          first=$(( (p - 1) * per % channels + 1 )); last=$(( first + per - 1 )); [ "$last" -gt "$channels" ] && last=$channels
          args+=(--programme "p$p=$first-$last")
        done
      fi
      port=$((19000 + channels + programmes))
      "$bin/jackvu" --name "met$channels-$programmes" --channels "$channels" --quiet --rate 10 --target ebu-r128 --metrics "$port" "${args[@]}" >$work/metrics.out 2>&1 &
      vu=$!
      pids+=($vu)
      for _ in $(seq 100); do curl -sf "localhost:$port/metrics" 2>/dev/null | grep -q short_term && break; sleep 0.2; done
      sleep 2
      idle0=$(cpu $vu); t0=$(date +%s.%N); sleep 5; idle1=$(cpu $vu); t1=$(date +%s.%N)
      : >$work/times
      s0=$(cpu $vu); u0=$(date +%s.%N)
      for _ in $(seq 200); do curl -s -o $work/scrape -w '%{time_total}\n' "localhost:$port/metrics" >>$work/times; done
      s1=$(cpu $vu); u1=$(date +%s.%N)
      bytes=$(wc -c <$work/scrape); series=$(grep -vc '^#' $work/scrape)
      read -r median p99 < <(sort -n $work/times | awk '{a[NR]=$1} END {printf "%.2f %.2f\n", a[int(NR/2)]*1000, a[int(NR*0.99)]*1000}')
      per_scrape=$(awk -v s0="$s0" -v s1="$s1" -v u0="$u0" -v u1="$u1" -v i0="$idle0" -v i1="$idle1" -v t0="$t0" -v t1="$t1" -v hz="$tick" \
        'BEGIN {busy=(s1-s0)/hz; idle=(i1-i0)/hz*(u1-u0)/(t1-t0); printf "%.2f", (busy-idle)/200*1000}')
      printf "%-9s %-11s %-8s %-7s %-10s %-7s %s\n" "$channels" "$programmes" "$bytes" "$series" "$median" "$p99" "$per_scrape"
      kill -INT "$vu"; wait "$vu" || true
    done
  done
  echo
  command -v prometheus >/dev/null || { echo "(no prometheus: bash Tools/setup.sh --tests installs it)"; exit 0; }
  echo "Capacity: K instances × 64 channels on one server, each scraped every 1 s by one Prometheus, ${seconds} s ($(nproc) cores)"
  echo "instances  channels  overruns  xruns"
  for k in 1 2 4 6; do
    targets=(); vus=()
    for i in $(seq "$k"); do
      args=(); for _ in $(seq 64); do args+=(--connect jacktone:out); done
      port=$((19500 + i))
      "$bin/jackvu" --name "fleet$i" --channels 64 --text --rate 1 --target ebu-r128 --metrics "$port" "${args[@]}" >"$work/fleet$i.out" 2>&1 &
      vus+=($!); pids+=($!); targets+=("\"127.0.0.1:$port\"")
    done
    mkdir -p "$work/prom$k"
    printf 'global: {scrape_interval: 1s}\nscrape_configs: [{job_name: jackvu, static_configs: [{targets: [%s]}]}]\n' "$(IFS=,; echo "${targets[*]}")" >"$work/prom$k/p.yml"
    prometheus --config.file="$work/prom$k/p.yml" --storage.tsdb.path="$work/prom$k/data" --web.listen-address=127.0.0.1:19490 --log.level=error >"$work/prom$k/log" 2>&1 &
    prom=$!; pids+=($prom)
    sleep 5
    first=(); for i in $(seq "$k"); do first+=("$(grep -a '/status ' "$work/fleet$i.out" | tail -1 || true)"); done
    sleep "$seconds"
    over=0; xr=0
    for i in $(seq "$k"); do
      last=$(grep -a '/status ' "$work/fleet$i.out" | tail -1 || true)
      read -r o x < <(echo "${first[$((i-1))]}" "$last" | awk '{print $19 - $5, $18 - $4}') || true
      over=$((over + o)); xr=$((xr + x))
    done
    up=$(curl -s 'localhost:19490/api/v1/query?query=count(up==1)' | grep -o '"value":\[[^]]*\]' | grep -o '"[0-9]*"\]$' | tr -d '"]' || true)
    printf "%-10s %-9s %-9s %s   (targets up: %s)\n" "$k" "$((64 * k))" "$over" "$xr" "$up"
    kill "$prom"; wait "$prom" 2>/dev/null || true
    for v in "${vus[@]}"; do kill -INT "$v"; wait "$v" || true; done
  done
  exit 0
fi

if [ "$only" = latency ]; then
  start_server latency
  echo "Level step at in_1 to meter_1, jackd -R -d dummy -r 48000 -p 256, 20 trials per --meter"
  for meter in rms peak truepeak vu ppm k momentary shortterm; do
    "$bin/jackvu" --channels 1 --quiet --fall 1000 --meter "$meter" >$work/latency.log 2>&1 &
    vu=$!
    pids+=($vu)
    for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^jackvu:meter_1$' && break; sleep 0.1; done
    echo "--meter $meter: $("$bin/jackvu-probe" meter-latency jackvu 20 | tail -1)"
    kill -INT "$vu"; wait "$vu" || true
  done
  exit 0
fi

if [ "$only" = outputs ]; then
  "$bin/jackvu-bench" send 20
  server="jackvu-bench-$$-osc"
  jackd -n "$server" -R -d dummy -r 48000 -p 256 >$work/osc-jackd.log 2>&1 &
  pids+=($!)
  export JACK_DEFAULT_SERVER="$server"
  for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
  "$bin/jacktone" --freq 440 >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^jacktone:out$' && break; sleep 0.1; done
  port=$((20000 + $$ % 20000))
  "$bin/jackvu" --connect jacktone:out --osc "udp://127.0.0.1:$port" --rate 20 >/dev/null 2>&1 &
  pids+=($!)
  echo "jackd -R -d dummy -r 48000 -p 256, jackvu --osc udp://127.0.0.1:$port --rate 20, 20 s:"
  "$bin/jackvu-probe" osc-latency "$port" 20
  exit 0
fi

if [ "$only" = displays ]; then
  start_server displays
  start_chord
  connect=(); for _ in $(seq 8); do connect+=(--connect jacktone:out); done
  sock="jackvu-bench-$$"
  trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"; cleanup' EXIT
  echo "Terminal display: jackd -R -d dummy -r 48000 -p 256, jackvu --tui --channels 8 --rate 20 in a 100x30 tmux pane, ${seconds} s"
  tmux -L "$sock" new-session -d -s bench -x 100 -y 30 \
    "env JACK_DEFAULT_SERVER=$server TERM=xterm-256color LANG=C.UTF-8 $bin/jackvu --name tuibench --tui --channels 8 --rate 20 ${connect[*]} 2>/dev/null"
  sleep 3
  "$bin/jackvu-probe" threads "$(pgrep -f "^$bin/jackvu --name tuibench")" "$seconds"
  tmux -L "$sock" send-keys -t bench q
  sleep 1
  tmux -L "$sock" kill-server 2>/dev/null || true; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"
  sleep 1
  port=$((20000 + $$ % 20000))
  echo
  echo "Browser display: jackvu --http $port --send status --channels 8 --rate 20 (stdout to /dev/null), one WebSocket reader, ${seconds} s"
  "$bin/jackvu" --name webbench --http "$port" --send status --channels 8 --rate 20 "${connect[@]}" >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do "$bin/jackvu-probe" ws-read "$port" 0.1 >/dev/null 2>&1 && break; sleep 0.2; done
  "$bin/jackvu-probe" ws-read "$port" "$((seconds + 2))" &
  reader=$!
  sleep 1
  "$bin/jackvu-probe" threads "$(pgrep -f "^$bin/jackvu --name webbench")" "$seconds"
  wait "$reader"
  exit 0
fi

if [ "$only" = pictures ]; then
  start_server pictures
  start_chord
  port=$((20000 + $$ % 20000))
  for channels in 2 8; do
    connect=(); for _ in $(seq "$channels"); do connect+=(--connect jacktone:out); done
    echo "Browser display with the pictures: jackvu --http $port --quiet --channels $channels --rate 20, one WebSocket reader, ${seconds} s"
    "$bin/jackvu" --name "pic$channels" --http "$port" --quiet --channels "$channels" --rate 20 "${connect[@]}" >/dev/null 2>&1 &
    pid=$!
    pids+=($pid)
    for _ in $(seq 50); do "$bin/jackvu-probe" ws-read "$port" 0.1 >/dev/null 2>&1 && break; sleep 0.2; done
    "$bin/jackvu-probe" ws-read "$port" "$seconds"
    kill -INT "$pid"; wait "$pid" 2>/dev/null || true
    port=$((port + 1))
  done
  exit 0
fi

if [ "$only" = watch ]; then
  start_server watch
  fifo="$work/tone.in"
  mkfifo "$fifo"
  "$bin/jacktone" --freq 440 --level -20 <"$fifo" >/dev/null 2>&1 &
  pids+=($!)
  exec 3>"$fifo"
  for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^jacktone:out$' && break; sleep 0.1; done
  ran="$work/ran"
  : >"$ran"
  "$bin/jackvu" --name watch --channels 1 --connect 'jacktone:out$' --quiet --alarm silence:raise=0,clear=0.2 \
    --on-alarm "[ \"\$JACKVU_STATE\" = raised ] && date +%s.%N >> $ran" >"$work/watch.log" 2>&1 &
  pids+=($!)
  sleep 3
  echo "Silence to the --on-alarm command: jackvu --alarm silence:raise=0 (−40 dBFS over the 4096-sample block), jacktone 440 Hz −20 dBFS 'off' (20 ms ramp), 48 kHz, 256 frames, jackd -R; 10 trials"
  deltas=()
  for trial in $(seq 10); do
    before=$(wc -l <"$ran")
    t0=$(date +%s.%N)
    echo off >&3
    for _ in $(seq 100); do [ "$(wc -l <"$ran")" -gt "$before" ] && break; sleep 0.01; done
    t1=$(tail -n 1 "$ran")
    deltas+=("$(echo "$t1 $t0" | awk '{printf "%.3f", $1 - $2}')")
    echo 440 >&3
    sleep 1.5
  done
  printf '%s\n' "${deltas[@]}" | sort -n | awk '{a[NR]=$1} END {printf "seconds: min %.3f, median %.3f, max %.3f (with the default raise time add 10 s)\n", a[1], a[int((NR+1)/2)], a[NR]}'
  exec 3>&-
  echo
  echo "The log: jackvu --channels 2 --quiet --target ebu-r128 [--log FILE] with P programmes (each over inputs 1-2, a 440 Hz tone), ${seconds} s; thread CPU in ms per second from schedstat"
  for run in 8-nolog 8 32-nolog 32; do
    count=${run%-nolog}
    db="$work/log-$run.db"
    args=()
    for p in $(seq "$count"); do args+=(--programme "p$p=1-2"); done
    [ "$run" = "$count" ] && args+=(--log "$db")
    "$bin/jackvu" --name "log$count" --channels 2 --connect 'jacktone:out$' --connect 'jacktone:out$' --quiet --target ebu-r128 \
      "${args[@]}" >"$work/log-$run.out" 2>&1 &
    vu=$!
    pids+=($vu)
    sleep 2
    "$bin/jackvu-probe" threads "$vu" "$seconds" | grep -E "jackvu-log|jackvu-worker" | sed "s/^/  $count programmes$([ "$run" != "$count" ] && echo ', no log'): /"
    kill -TERM "$vu"; wait "$vu" || true
    [ "$run" = "$count" ] || continue
    rows=$(sqlite3 "$db" "SELECT count(*) FROM blocks")
    bytes=$(du -cb "$db"* | tail -n 1 | cut -f1)
    echo "  $count programmes: $rows blocks, $bytes bytes on disk: $(echo "$bytes $rows" | awk '{printf "%.1f", $1/$2}') bytes a block, $(echo "$bytes $rows" | awk '{printf "%.1f", $1/$2 * 864000 / 1e6}') MB per programme per day"
  done
  echo
  echo "jackvu report of 24 hours of 8 programmes (6,912,000 blocks, written by Python's sqlite3 into jackvu's schema)"
  big="$work/day.db"
  sox -n -r 48000 -c 1 "$work/tiny.wav" synth 1 sine 1000 2>/dev/null
  args=()
  for p in $(seq 8); do args+=(--programme "p$p=1"); done
  "$bin/jackvu" --log "$big" analyze --log-start 2026-11-24T00:00:00Z "${args[@]}" "$work/tiny.wav" >/dev/null
  python3 - "$big" <<'PY'
import math, random, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("DELETE FROM blocks")
start = 1795478400.0  # 2026-11-24T00:00:00Z
ids = [r[0] for r in db.execute("SELECT id FROM programmes ORDER BY id")]
random.seed(1)
for p in ids:
    rows = []
    for k in range(864000):
        lufs = -23 + 6 * math.sin(k / 3000.0 + p) + random.uniform(-3, 3)
        rows.append((p, start + (k + 1) / 10, k + 1, 10 ** ((lufs + 0.691) / 10), lufs + 12, lufs + 11))
    db.executemany("INSERT INTO blocks VALUES (?, ?, ?, ?, ?, ?)", rows)
    db.commit()
print("  the log:", db.execute("SELECT count(*) FROM blocks").fetchone()[0], "blocks")
PY
  ls -l "$big" | awk '{printf "  %d bytes\n", $5}'
  for form in html json csv; do
    /usr/bin/time -f "  jackvu report -o day.$form: %e s wall, %M KB peak memory" "$bin/jackvu" report "$big" -o "$work/day.$form"
    /usr/bin/time -f "  jackvu report --segments every:60 -o day.$form: %e s wall, %M KB peak memory" "$bin/jackvu" report "$big" --segments every:60 -o "$work/day.$form"
  done
  ls -l "$work"/day.html "$work"/day.json "$work"/day.csv | awk '{print "  " $5 " bytes " $9}'
  exit 0
fi

# jackvu analyze against ffmpeg's ebur128 filter, libebur128 (loudgain, which measures
# true peak too) and sox's stats, on the same 10-minute stereo 48 kHz file (24-bit pink
# noise with a slow tremolo, so the loudness varies): best wall time of 5 runs each,
# alternating, and the values side by side.
for tool in ffmpeg loudgain; do
  command -v $tool >/dev/null || {
    echo "bench: installing $tool for the comparison" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $tool >/dev/null
  }
done
file=$work/pink.wav
[ -f "$file" ] || sox -n -r 48000 -c 2 -b 24 "$file" synth 600 pinknoise tremolo 0.02 60 vol 0.5
# wall seconds of one command (its own output discarded)
wall() { /usr/bin/time -f "%e" -o $work/time "$@" >/dev/null 2>&1; cat $work/time; }
lowest() { echo "$1 $2" | awk '{print ($1<$2)?$1:$2}'; }
tj=99; tf=99; tl=99; ts=99
for _ in 1 2 3 4 5; do
  tj=$(lowest "$(wall "$bin/jackvu" analyze "$file")" "$tj")
  tf=$(lowest "$(wall ffmpeg -nostats -i "$file" -af ebur128=peak=true -f null -)" "$tf")
  tl=$(lowest "$(wall loudgain -q "$file")" "$tl")
  ts=$(lowest "$(wall sox "$file" -n stats)" "$ts")
done
ratio() { echo "$1 $2" | awk '{printf "%.1f", $1/$2}'; }
echo "jackvu analyze vs ffmpeg ebur128=peak=true vs loudgain (libebur128) vs sox stats, $file (600 s, stereo, 48 kHz, 24-bit)"
echo "wall time (best of 5): jackvu ${tj} s, ffmpeg ${tf} s, loudgain ${tl} s, sox ${ts} s; ffmpeg/jackvu $(ratio "$tf" "$tj")×, loudgain/jackvu $(ratio "$tl" "$tj")×, sox/jackvu $(ratio "$ts" "$tj")×"
echo "--- jackvu"
"$bin/jackvu" analyze "$file"
echo "--- ffmpeg"
ffmpeg -nostats -i "$file" -af ebur128=peak=true -f null - 2>&1 | sed -n '/Summary:/,$p'
echo "--- loudgain"
loudgain -q "$file" 2>&1 | tail -n 8
echo "--- sox"
sox "$file" -n stats 2>&1 | grep -E "Pk lev dB|RMS lev dB"
