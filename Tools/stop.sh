# Sourced by the Tools scripts (JACK's tools with time limits, at the end). stop_all PID...: stops the processes newest first, so that
# JACK clients close before the server they use, each with SIGTERM and, after 5 s, SIGKILL.
# (Stopping a server and its clients at the same moment makes them all remove port metadata
# from JACK's shared database at once; clients first is the order JACK expects.)
stop_all() {
  local i p
  for (( i = $#; i >= 1; i-- )); do
    p="${!i}"
    kill "$p" 2>/dev/null || continue
    for _ in $(seq 50); do
      # A child that has exited is a zombie until waited for: that counts as gone.
      state="$(awk '/^State:/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)"
      [ -z "$state" ] || [ "$state" = Z ] && break
      sleep 0.1
    done
    kill -9 "$p" 2>/dev/null || true
  done
  # Reap these (a plain `wait` would also wait for every other child still running).
  for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# JACK's tools, each with a time limit: a client that opens JACK's metadata database can hang
# for good on a lock another process left (JACK2's Berkeley DB deadlock; a bench run waited
# 30 minutes on one jack_lsp), and a script must go on, or fail, rather than wait with it.
jack_lsp() { timeout 10 jack_lsp "$@"; }
jack_connect() { timeout 10 jack_connect "$@"; }
jack_load() { timeout 20 jack_load "$@"; }
jack_unload() { timeout 20 jack_unload "$@"; }
