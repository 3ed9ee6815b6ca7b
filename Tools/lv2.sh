#!/usr/bin/env bash
# Makes jackvu's LV2 bundle, jackvu.lv2/: the plugin library as jackvu.so (the Swift runtime
# linked in; only lv2_descriptor exported) and its Turtle, written from the reading table by
# jackvu-lv2-ttl (manifest.ttl, jackvu.ttl). Four plugins: urn:jackvu:lv2:mono, :stereo, :5.1, :7.1.4.
#   bash Tools/lv2.sh              makes .build/lv2/jackvu.lv2 (release build)
#   bash Tools/lv2.sh DIR          makes DIR/jackvu.lv2
#   bash Tools/lv2.sh --install    makes ~/.lv2/jackvu.lv2 (where hosts look for a user's plugins)
# LV2_CONFIG=debug builds the debug library instead (the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
. Tools/swift-tmp.sh
bash Tools/setup.sh
config="${LV2_CONFIG:-release}"
dest="${1:-.build/lv2}"
[ "$dest" = "--install" ] && dest="$HOME/.lv2"
swift build -c "$config" --product JackVULV2 2>&1 | cat >&2
swift build -c "$config" --product jackvu-lv2-ttl 2>&1 | cat >&2
bin="$(swift build -c "$config" --show-bin-path)"
bundle="$dest/jackvu.lv2"
rm -rf "$bundle"
mkdir -p "$bundle"
cp "$bin/libJackVULV2.so" "$bundle/jackvu.so"
"$bin/jackvu-lv2-ttl" "$bundle" jackvu.so
echo "lv2: $bundle (urn:jackvu:lv2:mono, :stereo, :5.1, :7.1.4)" >&2
