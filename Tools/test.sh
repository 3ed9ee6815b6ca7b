#!/usr/bin/env bash
# The test command: installs what is needed, builds jackvu twice (normally, and with
# RealtimeSanitizer for the real-time tests) and runs every test. The tests start their own
# named JACK servers (jackd -n jackvu-test-… -d dummy) and stop them; nothing touches the
# default server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tools/setup.sh

echo "== build" >&2
swift build --build-tests
echo "== build with RealtimeSanitizer (.build-rtsan)" >&2
for product in jackvu jacktone; do
  swift build --scratch-path .build-rtsan --product "$product" \
    -Xswiftc -Xclang-linker -Xswiftc -fsanitize=realtime
done

echo "== test" >&2
# XCTest only: no Swift Testing suites here, so its empty run would only confuse the summary.
JACKVU_RTSAN_BIN_DIR="$PWD/.build-rtsan/debug" swift test --skip-build --disable-swift-testing "$@"
