#!/usr/bin/env bash
# Builds a Debian package, jackvu_VERSION_ARCH.deb, with dpkg-deb: the same files as
# Tools/install.sh puts under /usr (binaries with the Swift runtime linked statically, man
# pages, completions, the systemd user unit, docs), man pages gzipped as Debian does, and
# Depends: found by dpkg-shlibdeps from the binaries themselves.
#
# Usage: bash Tools/package.sh [--output DIR] [--no-setup]   (default DIR: the checkout)
# Then:  sudo apt-get install ./jackvu_VERSION_ARCH.deb      and  sudo apt-get remove jackvu
set -euo pipefail

output=""
setup=true
while [ $# -gt 0 ]; do
  case "$1" in
    --output) output="${2:?--output needs a folder}"; shift 2 ;;
    --no-setup) setup=false; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package: unknown option '$1' (see --help)" >&2; exit 64 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
output="${output:-$root}"
mkdir -p "$output"
output="$(cd "$output" && pwd)"

$setup && bash "$root/Tools/setup.sh" --package
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/jackvu"
bash "$root/Tools/install.sh" --prefix /usr --destdir "$stage" --no-setup

version="$("$stage/usr/bin/jackvu" --version)"
arch="$(dpkg --print-architecture)"
gzip -9n "$stage"/usr/share/man/man1/*.1

cat > "$stage/usr/share/doc/jackvu/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: jackvu
Comment: The binaries link the Swift runtime and the Swift packages swift-argument-parser,
 hummingbird, hummingbird-websocket, swift-nio and swift-log statically (Apache-2.0).

Files: *
Copyright: the jackvu developers
EOF

# dpkg-shlibdeps wants a debian/control beside it; it only reads the binaries' libraries.
mkdir -p "$work/shlibs/debian"
touch "$work/shlibs/debian/control"
depends="$(cd "$work/shlibs" && dpkg-shlibdeps -O "$stage/usr/bin/jackvu" "$stage/usr/bin/jacktone" "$stage"/usr/lib/*/jack/jackvu.so \
  "$stage"/usr/lib/lv2/jackvu.lv2/jackvu.so 2>/dev/null \
  | sed -n 's/^shlibs:Depends=//p')"
[ -n "$depends" ] || { echo "package: dpkg-shlibdeps found no dependencies" >&2; exit 70; }

mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<EOF
Package: jackvu
Version: $version
Architecture: $arch
Maintainer: the jackvu developers <jackvu@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Recommends: jackd2 | pipewire-jack
Suggests: liblo-tools
Section: sound
Priority: optional
Description: real-time meter and analyser for JACK audio buses
 jackvu is a headless JACK client that meters and analyses audio buses in real
 time: sample peak, RMS, true peak, VU, PPM, K-System, EBU R 128 loudness,
 phase correlation, an FFT spectrum, 1/3-octave bands and the note played.
 Results go out on CV meter ports (with JACK metadata), as OSC-style text or
 JSON lines on stdout, as OSC over UDP, on a terminal display and in a browser.
 jackvu analyze runs the same analysis on audio files. jacktone, included,
 plays test tones into JACK.
EOF
deb="$output/jackvu_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >&2
echo "$deb"
