#!/usr/bin/env bash
# Makes the README's screenshots from a real run: a dummy JACK server, jacktone playing A4 and
# a quieter E5 into a 4-channel jackvu, release build.
#   docs/tui.png           the terminal display in a 100x30 tmux pane (`tmux capture-pane -e`,
#                          its escape sequences turned into HTML, rendered by headless Chromium)
#   docs/browser.png       the browser display in headless Chromium, 1280x800
#   docs/browser-phone.png the same page at 390x844 (a phone)
# and the pictures (docs/pictures.md), from a second set of sources: a tone, its inverted copy,
# two noises, a tone rising in steps, a 16-bit tone, a DC offset, a constant:
#   docs/browser-goniometer.png, docs/browser-spectrogram.png, docs/browser-histogram.png,
#   docs/browser-bits.png, docs/tui-goniometer.png, docs/tui-spectrogram.png
set -euo pipefail
cd "$(dirname "$0")/.."
. Tools/swift-tmp.sh
. Tools/stop.sh
bash Tools/setup.sh --tests
swift build -c release --product jackvu 2>&1 | cat >&2
swift build -c release --product jacktone 2>&1 | cat >&2
bin="$(swift build -c release --show-bin-path)"
mkdir -p docs
work="$(mktemp -d)"
server="jackvu-shots-$$"
sock="jackvu-shots-$$"
pids=()
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"
  stop_all "${pids[@]}"
  rm -rf "$work"
}
trap cleanup EXIT

jackd -n "$server" --no-realtime -d dummy -r 48000 -p 256 >"$work/jackd.log" 2>&1 &
pids+=($!)
export JACK_DEFAULT_SERVER="$server"
for _ in $(seq 50); do jack_lsp >/dev/null 2>&1 && break; sleep 0.1; done
"$bin/jacktone" --name a4 --freq 440 --level -12 >/dev/null 2>&1 &
pids+=($!)
"$bin/jacktone" --name e5 --freq 659.26 --level -24 >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^e5:out$' && break; sleep 0.1; done
port=$((20000 + $$ % 20000))
args=(--channels 4 --connect a4:out --connect e5:out --connect a4:out --connect e5:out --rate 10)

# The terminal display.
tmux -L "$sock" new-session -d -s shot -x 100 -y 30 \
  "env JACK_DEFAULT_SERVER=$server TERM=xterm-256color LANG=C.UTF-8 NO_COLOR= $bin/jackvu --name tuishot --tui ${args[*]} 2>/dev/null"
sleep 5
tmux -L "$sock" capture-pane -p -e -t shot >"$work/tui.ansi"
cat >"$work/ansi2html.py" <<'PY'
import html, re, sys
colours = {31: "#ff5f56", 32: "#27c93f", 33: "#ffbd2e", 34: "#5c9dff", 35: "#d070ff", 36: "#3fd0d0", 37: "#e6e6e6"}
out = ['<!doctype html><meta charset="utf-8"><body style="margin:0;background:#14161a">'
       '<pre style="margin:0;padding:12px;font:15px/1.2 \'DejaVu Sans Mono\',monospace;color:#d0d4da">']
state = {"fg": None, "bg": None, "bold": False, "dim": False, "rev": False}
def span(text):
    fg = colours.get(state["fg"], "#d0d4da")
    bg = colours.get(state["bg"], "transparent")
    if state["rev"]: fg, bg = "#14161a", colours.get(state["fg"], "#d0d4da")
    style = f"color:{fg};background:{bg}"
    if state["bold"]: style += ";font-weight:bold"
    if state["dim"]: style += ";opacity:0.55"
    return f'<span style="{style}">{html.escape(text)}</span>'
for line in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    for part in re.split(r"(\x1b\[[0-9;]*m)", line):
        m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
        if not m:
            if part: out.append(span(part))
            continue
        for code in [int(c) for c in (m.group(1) or "0").split(";") if c != ""] or [0]:
            if code == 0: state.update(fg=None, bg=None, bold=False, dim=False, rev=False)
            elif code == 1: state["bold"] = True
            elif code == 2: state["dim"] = True
            elif code == 7: state["rev"] = True
            elif code in (22,): state.update(bold=False, dim=False)
            elif code == 27: state["rev"] = False
            elif code == 39: state["fg"] = None
            elif code == 49: state["bg"] = None
            elif 30 <= code <= 37: state["fg"] = code
            elif 40 <= code <= 47: state["bg"] = code - 10
    out.append("\n")
out.append("</pre></body>")
print("".join(out))
PY
python3 "$work/ansi2html.py" "$work/tui.ansi" >"$work/tui.html"
shot() { # URL FILE SIZE
  chromium --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile-$RANDOM" \
    --hide-scrollbars --window-size="$3" --virtual-time-budget=4000 --screenshot="$2" "$1" >/dev/null 2>&1
}
shot "file://$work/tui.html" docs/tui.png 940,600
tmux -L "$sock" send-keys -t shot q  # jackvu ends as a user would end it
sleep 1
tmux -L "$sock" kill-server 2>/dev/null || true; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"

# The browser display.
"$bin/jackvu" --name webshot --http "$port" --text "${args[@]}" >/dev/null 2>&1 &
pids+=($!)
sleep 5
shot "http://127.0.0.1:$port/" docs/browser.png 1280,800
shot "http://127.0.0.1:$port/" docs/browser-phone.png 390,844

# The pictures.
"$bin/jacktone" --name src --freq 440 --level -14 --inverted --noise >/dev/null 2>&1 &
pids+=($!)
mkfifo "$work/sweep"
"$bin/jacktone" --name sweep --freq 100 --level -12 <"$work/sweep" >/dev/null 2>&1 &
pids+=($!)
exec 3>"$work/sweep"
"$bin/jacktone" --name w16 --freq 997 --level -20 --bits 16 >/dev/null 2>&1 &
pids+=($!)
"$bin/jacktone" --name offset --freq 997 --level -20 --dc -30 >/dev/null 2>&1 &
pids+=($!)
"$bin/jacktone" --name still --level -200 --dc -12 >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^still:out$' && break; sleep 0.1; done
pictures=(--channels 8 --connect 'src:noise_1' --connect 'src:noise_2' --connect 'src:out$' --connect 'src:out_inverted'
  --connect 'sweep:out' --connect 'w16:out' --connect 'offset:out' --connect 'still:out' --rate 20)
"$bin/jackvu" --name picshot --http "$((port + 1))" --text "${pictures[@]}" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 50); do jack_lsp 2>/dev/null | grep -q '^picshot:in_8$' && break; sleep 0.1; done
# A wide mix on pair 1-2: the tone in both legs beside the two noises.
jack_connect src:out picshot:in_1 && jack_connect src:out picshot:in_2
# The sweep: the tone rising in steps through the picture shots, a cycle every 2.75 s, its
# level changing every third cycle (the loudness histogram's second peak).
( while :; do for level in -16 -30; do echo "level $level"; for _ in 1 2 3; do for f in 100 160 250 400 630 1000 1600 2500 4000 6300 10000; do
  echo "$f"; sleep 0.25; done; done; done; done ) >&3 &
pids+=($!)
sleep 25
shot "http://127.0.0.1:$((port + 1))/?view=goniometer&pair=1" docs/browser-goniometer.png 800,800
shot "http://127.0.0.1:$((port + 1))/?view=spectrogram&ch=5&span=30" docs/browser-spectrogram.png 1280,600
# The histogram: a programme of the sweep alone, against EBU R 128's target.
"$bin/jackvu" --name histshot --http "$((port + 2))" --quiet --channels 1 --connect 'sweep:out' --target ebu-r128 >/dev/null 2>&1 &
pids+=($!)
sleep 30
shot "http://127.0.0.1:$((port + 2))/?view=loudness&minutes=1" docs/browser-histogram.png 1280,500
shot "http://127.0.0.1:$((port + 1))/?view=bits" docs/browser-bits.png 1280,500
for view in goniometer spectrogram; do
  key=$([ "$view" = goniometer ] && echo g || echo w)
  tmux -L "$sock" new-session -d -s "$view" -x 80 -y 24 \
    "env JACK_DEFAULT_SERVER=$server TERM=xterm-256color LANG=C.UTF-8 NO_COLOR= $bin/jackvu --name tui$view --tui ${pictures[*]} 2>/dev/null"
  sleep 3
  [ "$view" = spectrogram ] && for _ in 1 2 3 4; do tmux -L "$sock" send-keys -t "$view" Tab; done
  tmux -L "$sock" send-keys -t "$view" "$key"
  sleep 6
  tmux -L "$sock" capture-pane -p -e -t "$view" >"$work/$view.ansi"
  python3 "$work/ansi2html.py" "$work/$view.ansi" >"$work/$view.html"
  shot "file://$work/$view.html" "docs/tui-$view.png" 780,520
  tmux -L "$sock" send-keys -t "$view" q
done
exec 3>&-
echo "screenshots: docs/tui.png docs/browser.png docs/browser-phone.png docs/browser-{goniometer,spectrogram,histogram,bits}.png docs/tui-{goniometer,spectrogram}.png" >&2
