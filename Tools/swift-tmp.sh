# Sourced by the Tools scripts that run the Swift toolchain. Every `swift` and `swiftc` command
# leaves an empty TemporaryDirectory.XXXXXX folder in TMPDIR (even `swiftc -typecheck`): each
# call here gets a TMPDIR of its own, removed when it ends, so a build, an install or a test
# run leaves nothing in the caller's TMPDIR. (Scripts that need the caller's TMPDIR for what a
# command runs, as the tests do, call `command swift` instead.)
swift() { _swift_tmp swift "$@"; }
swiftc() { _swift_tmp swiftc "$@"; }
_swift_tmp() {
  local tool="$1" dir status=0
  shift
  dir="$(mktemp -d)"
  TMPDIR="$dir" command "$tool" "$@" || status=$?
  rm -rf "$dir"
  return "$status"
}
