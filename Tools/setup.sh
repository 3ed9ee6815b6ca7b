#!/usr/bin/env bash
# Installs what jackvu needs on Debian (12 or later) unless it is already there:
# the JACK, FFTW, liblo, libsndfile, libmpg123, SQLite and LV2 development packages, the JACK server and example tools
# (jackd, jack_lsp, jack_property) and pkg-config. With --tests also what the tests drive:
# oscdump/oscsend (liblo-tools), sox, strace (system calls of the process thread), tmux (the
# terminal display), chromium (the browser display) and PipeWire with its JACK (pipewire-bin,
# pipewire-jack: jackvu under pw-jack), and what the install and package tests use (dpkg-dev
# for dpkg-shlibdeps, man-db, bash-completion, systemd for systemd-analyze), and gcc for the
# LD_PRELOAD shim of the clock-step test, and fluidsynth, timgm6mb-soundfont and aubio-tools
# (instrument notes for the pitch test, and aubio's reading of them), lame (MP3s for the MPEG
# decoding test), and nodejs (node --check
# of the browser page's script), prometheus and iproute2 (the metrics tests) and sqlite3 (the
# log tests read the log with SQLite's own shell) and espeak-ng (speech, for the alarms' test on
# programme material), and LV2's hosts and checkers for the plugin's tests (jalv, lilv-utils
# for lv2apply and lv2info, liblilv-dev for the tests' own lilv host, sordi for sord_validate, socat: a
# JSON lines socket's reader), and gdb (a jack_property stopped and killed inside its write to
# JACK's metadata database, as a client crashing there would) and libdb5.3-dev (Berkeley DB's
# header, for the test that reads that database's deadlock detection). With --package
# dpkg-dev (Tools/package.sh).
# Swift 6 itself must already be on PATH (this machine image has it in /opt/swift).
set -euo pipefail

packages=(pkg-config libjack-jackd2-dev jackd2 libfftw3-dev liblo-dev libsndfile1-dev libmpg123-dev libsqlite3-dev lv2-dev)
[ "${1:-}" = "--package" ] && packages+=(dpkg-dev)
[ "${1:-}" = "--tests" ] && packages+=(liblo-tools sox tmux chromium strace pipewire-bin pipewire-jack dpkg-dev man-db bash-completion systemd gcc libc6-dev fluidsynth timgm6mb-soundfont aubio-tools lame nodejs prometheus iproute2 sqlite3 espeak-ng jalv lilv-utils liblilv-dev sordi socat gdb libdb5.3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "setup: swift is not on PATH (Swift 6.0 or later is needed)" >&2; exit 1; }
