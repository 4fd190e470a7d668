#!/usr/bin/env bash
# The README's first command as a new learner runs it, checked: on a fresh clone of this
# repository, `cmake --workflow --preset CHAPTER` (default ch01) must end with the run's
# summary (one line per exercise, then what to do next), with at most MAX_LINES lines from
# the test step, and every exercise of an untouched clone reported "not written yet".
#
# usage: scripts/check-learner-run.sh [--chapter ch01] [--max-lines 60] [--keep DIR]
# Exit status: 0 as described, 1 otherwise (the output is shown), 2 bad usage.
set -uo pipefail
wb_prog=check-learner-run.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

chapter=ch01 max_lines=60 keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --chapter) [ $# -ge 2 ] || wb_usage_error "--chapter needs a value"; chapter=$2; shift 2 ;;
    --max-lines) [ $# -ge 2 ] || wb_usage_error "--max-lines needs a value"; max_lines=$2; shift 2 ;;
    --keep) [ $# -ge 2 ] || wb_usage_error "--keep needs a folder"; keep=$2; shift 2 ;;
    *) wb_usage_error "unknown argument '$1'" ;;
  esac
done
[[ $max_lines =~ ^[0-9]+$ ]] || wb_usage_error "--max-lines takes a number, not '$max_lines'"

work=${keep:-$(mktemp -d)}
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
rm -rf "$work/clone" && git clone -q "$wb_root" "$work/clone" || wb_die "cannot clone $wb_root"
log=$work/run.log
start=$(date +%s)
(cd "$work/clone" && cmake --workflow --preset "$chapter") >"$log" 2>&1
rc=$?
seconds=$(( $(date +%s) - start ))

fail() { echo "$wb_prog: $*" >&2; echo "--- the run's output:" >&2; cat "$log" >&2; exit 1; }
[ "$rc" != 0 ] || fail "the run passed on untouched stubs (exit 0): the stubs must fail"
test_lines=$(awk '/^Test project /{on=1} on' "$log" | wc -l)
[ "$test_lines" -gt 0 ] || fail "the test step never started"
[ "$test_lines" -le "$max_lines" ] || fail "the test step printed $test_lines lines (at most $max_lines)"
# The summary's closing rule must be the last line but ctest's own closing words.
last=$(grep -v -E '^(Errors while running CTest|Output from these tests are in|Use "--rerun-failed)' "$log" | tail -n 1)
[[ $last =~ ^=+$ ]] || fail "the last line is not the summary's (got: '$last')"
grep -q "^$chapter, your kernels: 0 passed, 0 failed, [0-9]* not written yet" "$log" ||
  fail "no '$chapter, your kernels: ...' line saying every exercise is not written yet"
exercises=$(ls "$work/clone"/chapters/"$chapter"_*/ex*.cu | wc -l)
listed=$(grep -c '  not written yet   open chapters/' "$log")
[ "$listed" -ge 1 ] || fail "no exercise is listed as not written yet"
echo "$wb_prog: cmake --workflow --preset $chapter on a fresh clone: ${seconds} s, $test_lines lines from the test step," \
     "$listed of $exercises exercise files listed as not written yet, the summary last"
