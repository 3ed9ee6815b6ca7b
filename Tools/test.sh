#!/usr/bin/env bash
# The test command: installs what is needed, builds jackvu three times (normally, with
# RealtimeSanitizer for the real-time tests, and the fuzzer with libFuzzer and
# AddressSanitizer) and runs every test. The tests start their own
# named JACK servers (jackd -n jackvu-test-RUN-… -d dummy) and stop them; nothing touches the
# default server. Logs of passing tests are removed; a failing test's are named on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
. Tools/swift-tmp.sh
bash Tools/setup.sh --tests

echo "== build" >&2
# Warnings in jackvu's own code fail the run (those of dependencies do not). An incremental
# build only shows the warnings of the files it compiles; CI always builds from scratch.
build_log="$(mktemp)"
swift build --build-tests 2>&1 | tee "$build_log"
own_warnings="$(grep -E "^$PWD/(Sources|Tests|Tools)/[^ ]*: warning:" "$build_log" | sort -u || true)"
rm -f "$build_log"
if [ -n "$own_warnings" ]; then
  echo "test: the build has compiler warnings in jackvu's code:" >&2
  echo "$own_warnings" >&2
  exit 1
fi
echo "== build with RealtimeSanitizer (.build-rtsan)" >&2
for product in jackvu jacktone; do
  swift build --scratch-path .build-rtsan --product "$product" \
    -Xswiftc -Xclang-linker -Xswiftc -fsanitize=realtime
done
# The LV2 plugin runs in a host that has no sanitizer of its own: its runtime as a library to
# preload into the host (jalv), which the plugin's run() then reports to (LV2Tests).
rtsan_archive="$(ls "$(dirname "$(dirname "$(type -P swift)")")"/lib/clang/*/lib/linux/libclang_rt.rtsan-x86_64.a | head -n 1)"
clang -shared -fPIC -o .build-rtsan/debug/librtsan-preload.so Tools/rtsan-preload.c \
  -Wl,--whole-archive "$rtsan_archive" -Wl,--no-whole-archive -lpthread -ldl -lrt -lm -lstdc++

echo "== build the fuzzer with libFuzzer and AddressSanitizer (.build-fuzz)" >&2
swift build --scratch-path .build-fuzz --product jackvu-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING

# Each run names its JACK servers jackvu-test-RUN-… (RUN: this script's process id), so two
# runs on one machine never share a server.
export JACKVU_TEST_RUN="$$"
export JACKVU_RTSAN_BIN_DIR="$PWD/.build-rtsan/debug"
export JACKVU_FUZZ_BIN_DIR="$PWD/.build-fuzz/debug"
# With no arguments the test bundle runs directly: `swift test` would hold the build folder's
# lock for the whole run, and a second run from the same checkout would wait for it. With
# arguments (e.g. --filter ErrorTests) they go to `swift test`. XCTest only: no Swift Testing
# suites here, so its empty run would only confuse the summary.
if [ $# -eq 0 ]; then
  tests=("$(swift build --show-bin-path)/jackvuPackageTests.xctest")
else
  tests=(command swift test --skip-build --disable-swift-testing "$@")
fi

# JACK2 keeps its server registry, semaphores, sockets and metadata database in /dev/shm,
# shared by every JACK server of the user; its registry has eight places and keeps the entry
# of a server stopped while clients were connected. As root (CI), the tests run in mount and
# PID namespaces of their own: a fresh /dev/shm (a tmpfs that goes away with them), so they
# leave nothing there and another run — or the user's own JACK — is never in their way; and
# when the test process ends, even by a crash, the kernel ends every process it started.
private=(unshare --mount --pid --fork --mount-proc --propagation private)
if [ "$(id -u)" = 0 ] && [ -z "${JACKVU_PRIVATE_SHM:-}" ] && "${private[@]}" true 2>/dev/null; then
  echo "== test (private /dev/shm and process namespace)" >&2
  runner=(env JACKVU_PRIVATE_SHM=1 "${private[@]}" bash -c
    'mount -t tmpfs -o mode=1777,size=2g jackvu-test-shm /dev/shm && "$@"; exit $?' bash)
else
  # Otherwise: with no jackd running at all, nothing uses the registry: clear it, so stale
  # entries left by anything else cannot fill it.
  if ! pgrep -x jackd >/dev/null 2>&1; then
    rm -rf /dev/shm/jack-shm-registry /dev/shm/jack-[0-9]*-[0-9]* /dev/shm/jack_sem.* /dev/shm/jack_db-* 2>/dev/null || true
  fi
  echo "== test" >&2
  runner=()
fi

# The whole output is kept in a file, and the failures' own messages are repeated at the end,
# where a CI log that shows only its last part still has them.
output="$(mktemp "${TMPDIR:-/tmp}/jackvu-test-output.XXXXXX")"
set +e
"${runner[@]}" "${tests[@]}" 2>&1 | tee "$output"
status=${PIPESTATUS[0]}
set -e
if grep -q ': error: ' "$output"; then
  echo "== the failures' messages (the whole output: $output)"
  grep -E ': error: ' "$output" | cut -c1-700 | head -n 40
else
  rm -f "$output"
fi
exit "$status"
