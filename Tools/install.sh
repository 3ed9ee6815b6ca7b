#!/usr/bin/env bash
# Installs jackvu and jacktone like a Linux audio tool:
#   PREFIX/bin/jackvu, PREFIX/bin/jacktone      release builds (stripped), Swift runtime linked statically
#                                               (they need only Debian's libjack, FFTW,
#                                               libsndfile and liblo at run time)
#   PREFIX/share/man/man1/{jackvu,jacktone}.1   from the argument parser's definitions
#                                               (generate-manual) plus Tools/man/*.extra
#   PREFIX/share/bash-completion/completions/   bash, zsh and fish completions
#   PREFIX/share/zsh/{site-functions|vendor-completions}/, PREFIX/share/fish/vendor_completions.d/
#   PREFIX/lib/systemd/user/jackvu@.service     a user service per bus (jackvu@mixbus)
#   PREFIX/lib/jack/jackvu.so                   the in-process form for jack_load (for /usr:
#                                               /usr/lib/<multiarch>/jack, where jackd looks)
#   PREFIX/lib/lv2/jackvu.lv2/                  the LV2 plugin: jackvu.so and its Turtle (written
#                                               from the reading table by jackvu-lv2-ttl)
#   PREFIX/share/doc/jackvu/                    README.md, docs/*.md (outputs, options, tests), jackvu.env.example
#   PREFIX/share/jackvu/prometheus/             alert rules and their tests, a fleet scrape config
#   PREFIX/share/jackvu/grafana/                a Grafana dashboard
#   PREFIX/share/jackvu/pipewire/               a filter-chain with the LV2 plugin (jackvu-meter.conf)
#   PREFIX/share/jackvu/install-manifest        what was installed, for --uninstall
#
# Usage: bash Tools/install.sh [--prefix DIR] [--destdir DIR] [--no-setup] [--cpu native|NAME]
#        bash Tools/install.sh [--prefix DIR] --uninstall
# --prefix: default /usr/local. --destdir: stage into DIR/PREFIX (for packages: no manifest).
# --uninstall removes exactly the files the install wrote, and the folders it created if they
# are empty again. --no-setup: do not install Debian packages (Tools/setup.sh).
# --cpu: build for this CPU (native: haswell when it has AVX2 and FMA, else the baseline) or a
# named one (haswell, znver3, ...: Swift's -target-cpu): every meter costs about a fifth less
# CPU on an AVX2 machine (BENCHMARKS.md), and the binaries then run only on CPUs that have
# those instructions. The default, and the .deb, run on any x86-64.
set -euo pipefail
. "$(dirname "$0")/swift-tmp.sh"

prefix=/usr/local
destdir=""
uninstall=false
setup=true
cpu=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a folder}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --destdir) destdir="${2:?--destdir needs a folder}"; shift 2 ;;
    --destdir=*) destdir="${1#--destdir=}"; shift ;;
    --uninstall) uninstall=true; shift ;;
    --no-setup) setup=false; shift ;;
    --cpu) cpu="${2:?--cpu needs native or a CPU name}"; shift 2 ;;
    --cpu=*) cpu="${1#--cpu=}"; shift ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install: unknown option '$1' (see --help)" >&2; exit 64 ;;
  esac
done
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
if [ "$cpu" = native ]; then
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) "
  case "$flags" in *" avx2 "*" fma "*|*" fma "*" avx2 "*) cpu=haswell ;; *) cpu="" ;; esac
  echo "install: --cpu native: ${cpu:-the baseline x86-64 (no AVX2 and FMA here)}" >&2
fi
if [ -n "$cpu" ]; then
  # A name Swift knows (its list is long: say so in one line, not with the compiler's list).
  if ! [[ "$cpu" =~ ^[a-z][a-z0-9._-]*$ ]] || ! type -P swiftc >/dev/null \
     || ! swiftc -target-cpu "$cpu" -typecheck - </dev/null >/dev/null 2>&1; then
    echo "install: --cpu '$cpu': not a CPU Swift knows (try native, haswell, znver3, skylake-avx512)" >&2
    exit 64
  fi
fi
prefix="${prefix%/}"
root="$(cd "$(dirname "$0")/.." && pwd)"
target="$destdir$prefix"
manifest="$target/share/jackvu/install-manifest"

if $uninstall; then
  [ -f "$manifest" ] || { echo "install: nothing installed in $prefix (no $manifest)" >&2; exit 66; }
  # Files first, then the folders the install created, deepest first, if they are empty.
  listed="$(cat "$manifest")"
  grep '^f ' <<<"$listed" | cut -c3- | while IFS= read -r f; do rm -f -- "$f"; done
  grep '^d ' <<<"$listed" | cut -c3- | sort -r | while IFS= read -r d; do rmdir -- "$d" 2>/dev/null || true; done
  echo "install: removed jackvu from $prefix" >&2
  exit 0
fi

cd "$root"
$setup && bash Tools/setup.sh
type -P swift >/dev/null || { echo "install: swift is not on PATH (Swift 6 is needed to build)" >&2; exit 69; }

echo "install: building release binaries (Swift runtime linked statically)" >&2
stage=""
trap 'rm -rf ${stage:+"$stage"}' EXIT
# A build folder of its own: never waits for (or disturbs) a debug build or test run in .build.
build=(swift build -c release --scratch-path "$root/.build-release${cpu:+-$cpu}")
[ -n "$cpu" ] && build+=(-Xswiftc -target-cpu -Xswiftc "$cpu")
for product in jackvu jacktone JackVUInternal JackVULV2 jackvu-lv2-ttl generate-manual; do
  "${build[@]}" --static-swift-stdlib --product "$product" >&2
done
bin="$("${build[@]}" --show-bin-path)"
generate_manual="$bin/generate-manual"

stage="$(mktemp -d)"
date="$(git -C "$root" log -1 --format=%cs 2>/dev/null || date +%F)"
for tool in jackvu jacktone; do
  "$generate_manual" "$bin/$tool" --date "$date" --authors "the jackvu developers" -o "$stage" >&2
  # The generated page says only "0 on success, >0 on error": put the documented exit codes,
  # environment, examples (and for jackvu the OSC address space) in place of that section.
  awk -v extra="$root/Tools/man/$tool.1.extra" '
    /^\.Sh "EXIT STATUS"/ { while ((getline line < extra) > 0) print line; skipping = 1; next }
    skipping && /^\.Sh / && !/^\.Sh "SEE ALSO"/ { skipping = 0 }
    !skipping { print }
  ' "$stage/$tool.1" > "$stage/$tool.1.new"
  mv "$stage/$tool.1.new" "$stage/$tool.1"
  "$bin/$tool" --generate-completion-script bash > "$stage/$tool.bash"
  "$bin/$tool" --generate-completion-script zsh > "$stage/_$tool"
  "$bin/$tool" --generate-completion-script fish > "$stage/$tool.fish"
done
sed "s|@BINDIR@|$prefix/bin|g" Tools/systemd/jackvu@.service.in > "$stage/jackvu@.service"

zsh_dir=site-functions
[ "$prefix" = /usr ] && zsh_dir=vendor-completions  # Debian's zsh reads /usr/share/zsh/vendor-completions

# Every file and every folder created is recorded (without DESTDIR: the paths on this machine).
records=()
make_dirs() {  # make_dirs DIR: mkdir -p, recording each folder it creates
  local dir="$1" missing=()
  while [ ! -d "$dir" ]; do missing=("$dir" "${missing[@]}"); dir="$(dirname "$dir")"; done
  for d in "${missing[@]}"; do mkdir -m 755 "$d"; records+=("d ${d#"$destdir"}"); done
}
place() {  # place MODE SOURCE DESTINATION
  local mode="$1" source="$2" dest="$target/$3"
  make_dirs "$(dirname "$dest")"
  install -m "$mode" "$source" "$dest"
  records+=("f ${dest#"$destdir"}")
}
for tool in jackvu jacktone; do
  # Without the symbol tables (120 MB → 72 MB for jackvu; most of the rest is the static
  # Swift runtime and Foundation with its Unicode data).
  strip --strip-unneeded -o "$stage/$tool" "$bin/$tool"
  place 755 "$stage/$tool" "bin/$tool"
done
for tool in jackvu jacktone; do
  place 644 "$stage/$tool.1" "share/man/man1/$tool.1"
  place 644 "$stage/$tool.bash" "share/bash-completion/completions/$tool"
  place 644 "$stage/_$tool" "share/zsh/$zsh_dir/_$tool"
  place 644 "$stage/$tool.fish" "share/fish/vendor_completions.d/$tool.fish"
done
# The in-process form (jack_load): where jackd looks for internal clients. Debian's jackd
# reads /usr/lib/<multiarch>/jack; for another prefix, start jackd with
# JACK_INTERNAL_DIR=PREFIX/lib/jack.
jack_dir=lib/jack
if [ "$prefix" = /usr ] && command -v dpkg-architecture >/dev/null; then
  jack_dir="lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/jack"
fi
strip --strip-unneeded -o "$stage/jackvu.so" "$bin/libJackVUInternal.so"
place 644 "$stage/jackvu.so" "$jack_dir/jackvu.so"
# The LV2 bundle, where hosts look (LV2_PATH's default: ~/.lv2, /usr/local/lib/lv2, /usr/lib/lv2).
mkdir -p "$stage/jackvu.lv2"
strip --strip-unneeded -o "$stage/jackvu.lv2/jackvu.so" "$bin/libJackVULV2.so"
"$bin/jackvu-lv2-ttl" "$stage/jackvu.lv2" jackvu.so
for f in jackvu.so manifest.ttl jackvu.ttl; do place 644 "$stage/jackvu.lv2/$f" "lib/lv2/jackvu.lv2/$f"; done
place 644 Tools/pipewire/jackvu-meter.conf share/jackvu/pipewire/jackvu-meter.conf
place 644 "$stage/jackvu@.service" "lib/systemd/user/jackvu@.service"
place 644 Tools/systemd/jackvu.env.example share/doc/jackvu/jackvu.env.example
place 644 README.md share/doc/jackvu/README.md
for doc in docs/*.md; do place 644 "$doc" "share/doc/jackvu/$doc"; done
# For a fleet's monitoring: Prometheus alert rules (and their unit tests), an example scrape
# configuration with file-based discovery, and a Grafana dashboard.
for f in jackvu-alerts.yml jackvu-alerts.test.yml prometheus-fleet.yml jackvu-targets.example.json; do
  place 644 "Tools/prometheus/$f" "share/jackvu/prometheus/$f"
done
place 644 Tools/grafana/jackvu-dashboard.json share/jackvu/grafana/jackvu-dashboard.json

if [ -z "$destdir" ]; then
  # The manifest lists itself, so that --uninstall leaves nothing behind.
  make_dirs "$(dirname "$manifest")"
  printf '%s\n' "${records[@]}" "f $manifest" > "$manifest"
fi
echo "install: jackvu $("$bin/jackvu" --version) installed in $destdir$prefix (bin, man, completions, systemd user unit, the LV2 plugin)" >&2
