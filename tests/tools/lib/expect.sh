# Helpers of the tools' command-line tests (sourced by tests/tools/*_check.sh and the
# models' tool checks). Each test runs a program the way a learner types it and checks
# three things: the message, the exit status, and that nothing was left behind.
#
#   source "$(dirname "$0")/lib/expect.sh"
#   work=$(fresh_dir "${2:?usage}") || exit 1
#   expect 2 "--device: 'abc' is not a whole number" -- "$tool" --device=abc
#   nothing_left "$work/out" "$work/r.json"
#
# Sourcing it sets the mode every check runs in (set -uo pipefail): an unset variable stops
# the check, and a pipeline fails when any of its commands does; a failed command alone does
# not stop it, since the checks test exit statuses themselves.
set -uo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }

# fresh_dir DIR: DIR emptied for the check's files (removed, then made again); prints DIR,
# or fails when it cannot. work=$(fresh_dir "$3") || exit 1
fresh_dir() {
  rm -rf "$1" || fail "cannot remove $1"
  mkdir -p "$1" || fail "cannot make $1"
  echo "$1"
}

# expect RC PATTERN -- COMMAND...: runs it; the exit status must be RC and the output
# (stdout and stderr together) must match the extended regex PATTERN, across lines.
expect() {
  local want_rc=$1 pattern=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  echo "\$ ${*##*/}"
  echo "$out" | sed 's/^/  /' | head -n 40
  [ "$rc" = "$want_rc" ] || fail "exit status $rc, expected $want_rc: $*"
  echo "$out" | grep -E -z -q -- "$pattern" || fail "output does not match /$pattern/: $*"
}

# nothing_left PATH...: none of these paths exists, and no temporary file of one
# (PATH.tmp.*, PATH.partial) is left beside it.
nothing_left() {
  local p
  for p in "$@"; do
    [ -e "$p" ] && fail "a refused or failed run left $p behind"
    compgen -G "$p.tmp.*" >/dev/null && fail "a temporary of $p was left behind: $(compgen -G "$p.tmp.*")"
    [ -e "$p.partial" ] && fail "a partial $p.partial was left behind"
  done
  return 0
}

# no_temporaries DIR: no file in DIR is a temporary of an output (*.tmp.*, *.partial).
no_temporaries() {
  local left
  left=$(find "$1" -name '*.tmp.*' -o -name '*.partial' 2>/dev/null)
  [ -z "$left" ] || fail "temporaries left in $1: $left"
}

# has_gpu: a GPU and its driver answer (the checks that need one run only then).
has_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }
