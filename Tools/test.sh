#!/usr/bin/env bash
# The test command: installs what is needed, builds jackvu twice (normally, and with
# RealtimeSanitizer for the real-time tests) and runs every test. The tests start their own
# named JACK servers (jackd -n jackvu-test-… -d dummy) and stop them; nothing touches the
# default server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tools/setup.sh --tests

echo "== build" >&2
swift build --build-tests
echo "== build with RealtimeSanitizer (.build-rtsan)" >&2
for product in jackvu jacktone; do
  swift build --scratch-path .build-rtsan --product "$product" \
    -Xswiftc -Xclang-linker -Xswiftc -fsanitize=realtime
done

# JACK2 keeps a registry of servers in /dev/shm with eight places and never frees the entry of
# a server stopped while clients were connected (some tests do that on purpose; the tests reuse
# their server names, which lets JACK reclaim those entries). With no jackd running at all,
# nothing uses the registry: clear it, so stale entries left by anything else cannot fill it.
if ! pgrep -x jackd >/dev/null 2>&1; then
  rm -rf /dev/shm/jack-shm-registry /dev/shm/jack-[0-9]*-[0-9]* /dev/shm/jack_sem.* /dev/shm/jack_db-* 2>/dev/null || true
fi

echo "== test" >&2
# XCTest only: no Swift Testing suites here, so its empty run would only confuse the summary.
JACKVU_RTSAN_BIN_DIR="$PWD/.build-rtsan/debug" swift test --skip-build --disable-swift-testing "$@"
