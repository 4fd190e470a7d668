#!/usr/bin/env bash
# After a ctest run: how many tests were skipped, and why (grouped by reason).
# usage: scripts/skip-report.sh [BUILD_DIR]      (default: build/ci)
set -u
dir="${1:-build/ci}"
log="$dir/Testing/Temporary/LastTest.log"
if [ ! -f "$log" ]; then
  echo "skip-report: no ctest log at $log; run ctest in $dir first" >&2
  exit 2
fi
count=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$log" || true)
if [ "$count" = 0 ]; then
  echo "ctest skipped no test."
  exit 0
fi
echo "ctest skipped $count tests (counted as skipped, not passed). Reasons:"
# The reason is the line after gtest's "<file>:<line>: Skipped".
grep -A1 ': Skipped$' "$log" | grep -v -e ': Skipped$' -e '^--$' | sort | uniq -c | sort -rn |
  sed 's/^ *\([0-9]*\) /  \1 x /'
