#!/usr/bin/env bash
# The learner's run of an exercise checked by a GoogleTest program of its own (chapter 9's
# block and CUDA Graph exercises run the whole model): runs the program's tests of that
# exercise, prints one line as `chNN_tests --exercise` does, and records the verdict for the
# end-of-run summary (WORKBOOK_OUTCOMES, read by harness/report/summary.cpp).
#
# usage: gtest-exercise.sh NAME FILE CHAPTER PROGRAM FILTER
# Exit status: 0 passed; 1 failed, not written yet, or not run (no GPU).
set -uo pipefail
[ $# -eq 5 ] || { echo "usage: gtest-exercise.sh NAME FILE CHAPTER PROGRAM FILTER" >&2; exit 2; }
name=$1 file=$2 chapter=$3 program=$4 filter=$5

out=$("$program" --gtest_filter="$filter" --gtest_brief=1 2>&1)
rc=$?
# GoogleTest prints "file:line: Failure" and then what failed: the summary line is the first
# of those lines that says something ("Which is: ..." for an EXPECT_EQ), the console gets them all.
block=$(printf '%s\n' "$out" | grep -m1 -A20 -E ': Failure$|not implemented yet|error' | grep -v -E '^\[|^$')
first_failure=$(printf '%s\n' "$block" | grep -m1 'Which is: "' | sed 's/^ *//' | cut -c1-160)
block=$(printf '%s\n' "$block" | head -8)
[ -n "$first_failure" ] || first_failure=$(printf '%s\n' "$block" | sed -n '2p;1p' | tail -1 | sed 's/^ *//' | cut -c1-160)
detail="$program --gtest_filter='$filter'"
if printf '%s\n' "$out" | grep -q 'not implemented yet'; then
  verdict=not_written code=not_implemented line="open $file" detail=""
  echo "$name: not written yet: open $file"
elif [ $rc = 0 ] && printf '%s\n' "$out" | grep -q 'SKIPPED'; then
  verdict=not_run code=compiled_not_run line="$(printf '%s\n' "$out" | grep -m1 -A1 'SKIPPED' | tail -n1 | sed 's/^ *//' | cut -c1-120)" detail=""
  echo "$name: compiled, not run: $line"
elif [ $rc = 0 ]; then
  verdict=passed code=pass line="$(printf '%s\n' "$out" | grep -m1 -oE '[0-9]+ tests? from [0-9]+ test suites? ran' || echo "passed")" detail=""
  echo "$name: passed ($line)"
else
  verdict=failed code=wrong line="${first_failure:-the program exited with status $rc}"
  printf '%s: FAILED %s\n%s\n  in full: %s\n' "$name" "$line" "$(printf '%s\n' "$block" | sed 's/^/    /')" "$detail"
fi
if [ -n "${WORKBOOK_OUTCOMES:-}" ] && command -v jq >/dev/null 2>&1; then
  mkdir -p "$WORKBOOK_OUTCOMES"
  jq -cn --arg exercise "$name" --arg chapter "$chapter" --arg file "$file" --arg verdict "$verdict" \
     --arg code "$code" --arg line "$line" --arg detail "$detail" \
     '{exercise: $exercise, chapter: $chapter, file: $file, verdict: $verdict, code: $code, line: $line, detail: $detail}' \
     >>"$WORKBOOK_OUTCOMES/$$.jsonl"
fi
[ "$verdict" = passed ]
