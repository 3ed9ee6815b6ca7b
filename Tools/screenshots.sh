#!/usr/bin/env bash
# Makes the README's screenshots from a real run: a dummy JACK server, jacktone playing A4 and
# a quieter E5 into a 4-channel jackvu, release build.
#   docs/tui.png           the terminal display in a 100x30 tmux pane (`tmux capture-pane -e`,
#                          its escape sequences turned into HTML, rendered by headless Chromium)
#   docs/browser.png       the browser display in headless Chromium, 1280x800
#   docs/browser-phone.png the same page at 390x844 (a phone)
set -euo pipefail
cd "$(dirname "$0")/.."
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
python3 - "$work/tui.ansi" >"$work/tui.html" <<'PY'
import html, re, sys
colours = {31: "#ff5f56", 32: "#27c93f", 33: "#ffbd2e", 34: "#5c9dff", 35: "#d070ff", 36: "#3fd0d0", 37: "#e6e6e6"}
out = ['<!doctype html><meta charset="utf-8"><body style="margin:0;background:#14161a">'
       '<pre style="margin:0;padding:12px;font:15px/1.2 \'DejaVu Sans Mono\',monospace;color:#d0d4da">']
state = {"fg": None, "bold": False, "dim": False, "rev": False}
def span(text):
    fg = colours.get(state["fg"], "#d0d4da")
    bg = "transparent"
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
            if code == 0: state.update(fg=None, bold=False, dim=False, rev=False)
            elif code == 1: state["bold"] = True
            elif code == 2: state["dim"] = True
            elif code == 7: state["rev"] = True
            elif code in (22,): state.update(bold=False, dim=False)
            elif code == 27: state["rev"] = False
            elif code == 39: state["fg"] = None
            elif 30 <= code <= 37: state["fg"] = code
    out.append("\n")
out.append("</pre></body>")
print("".join(out))
PY
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
echo "screenshots: docs/tui.png docs/browser.png docs/browser-phone.png" >&2
