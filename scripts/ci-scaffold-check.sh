#!/usr/bin/env bash
# CI: scaffolds a throwaway chapter 42 in a temporary copy of the repository and checks that
# it configures, builds and registers its tests, without touching this tree.
#
#   1. copies the tree (the files git tracks plus untracked ones it does not ignore)
#   2. scripts/new-chapter.sh 42 throwaway in the copy; bad input must be refused there
#   3. before configuring, `ctest --preset ch42` must say to run `cmake --preset ch42` first
#   4. cmake --preset ch42 -DCMAKE_CUDA_ARCHITECTURES=80 (the new preset; WORKBOOK_CHAPTERS=ch42);
#      then, with no build step in between, the first `ctest --preset ch42-solution -N` must
#      build and list the solution's and the self-test's tests, `ctest --preset ch42 -N` the
#      stub's (none in common), and plain `ctest -N` in the copy's root exactly the stub's
#   5. with a GPU: the stub fails with "not implemented yet" and the solution tests pass
#
# usage: scripts/ci-scaffold-check.sh [--keep]      (--keep leaves the copy for a look)
set -uo pipefail
wb_prog=ci-scaffold-check.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

keep=0
case "${1:-}" in
  --keep) keep=1 ;;
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) wb_usage_error "unknown argument '$1'" ;;
esac
export PATH="$PATH:/usr/local/cuda/bin"
copy=$(mktemp -d "${TMPDIR:-/tmp}/wb-scaffold.XXXXXX") || wb_die "cannot make a temporary folder"
if [ "$keep" = 0 ]; then trap 'rm -rf "$copy"' EXIT; fi
fail() {
  echo "$wb_prog: FAILED: $*" >&2
  [ "$keep" = 1 ] && echo "$wb_prog: the copy is kept in $copy" >&2
  exit 1
}
step() { echo "--- $*"; }

# --- 1. the copy -----------------------------------------------------------------------------
step "copying the tree to $copy"
if command -v git >/dev/null 2>&1 && git -C "$wb_root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked files still present, plus untracked files that are not ignored (work in progress).
  (cd "$wb_root" && git ls-files -z --cached --others --exclude-standard |
     while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
     tar --null -T - -cf -) | tar -xf - -C "$copy" || fail "copying the tree"
else
  (cd "$wb_root" && tar --exclude=./build --exclude=./results --exclude=./.git -cf - .) | tar -xf - -C "$copy" ||
    fail "copying the tree"
fi
[ -f "$copy/CMakePresets.json" ] || fail "the copy has no CMakePresets.json"
rm -rf "$copy"/chapters/ch42_* "$copy"/reference/ch42_* "$copy"/solutions/ch42_* "$copy"/docs/ch42-*.md

# --- 2. scaffold (and refuse bad input) -------------------------------------------------------
step "scripts/new-chapter.sh 42 throwaway"
"$copy/scripts/new-chapter.sh" 42 throwaway --title "throwaway check" || fail "new-chapter.sh 42 throwaway"
for bad in "42 throwaway" "4 two" "43 Bad_Name" "01 again"; do
  # shellcheck disable=SC2086
  if out=$("$copy/scripts/new-chapter.sh" $bad 2>&1); then fail "new-chapter.sh accepted '$bad'"; fi
  echo "refused '$bad': $(echo "$out" | head -n 1)"
done
grep -q '"name": "ch42-solution"' "$copy/CMakePresets.json" || fail "no ch42-solution preset"

# --- 3. ctest before cmake: a message, not "No tests were found" ---------------------------------
step "ctest --preset ch42 before cmake --preset ch42"
rm -rf "$copy/build" "$copy/Testing"
if (cd "$copy" && ctest --preset ch42) >"$copy/early.log" 2>&1; then fail "ctest --preset ch42 passed before configuring"; fi
grep -q "cmake --preset ch42" "$copy/early.log" || { cat "$copy/early.log"; fail "ctest before configuring does not say to run cmake --preset ch42"; }
(cd "$copy" && ctest --preset ch42-solution) >"$copy/early2.log" 2>&1
grep -q "cmake --preset ch42" "$copy/early2.log" || { cat "$copy/early2.log"; fail "a second ctest before configuring does not say it either"; }
echo "ok: $(grep -m1 'not configured yet' "$copy/early.log" | sed 's/^ *//')"

# --- 4. configure; the first ctest builds and finds every test ----------------------------------
step "cmake --preset ch42 -DCMAKE_CUDA_ARCHITECTURES=80"
(cd "$copy" && cmake --preset ch42 -DCMAKE_CUDA_ARCHITECTURES=80) >"$copy/configure.log" 2>&1 ||
  { tail -n 30 "$copy/configure.log"; fail "configuring ch42"; }
grep -q "Plain \`ctest\` in the repository root now runs build/ch42" "$copy/configure.log" ||
  fail "the configure output does not say which build plain ctest follows"
step "ctest --preset ch42-solution -N (builds first: no build step before it)"
(cd "$copy" && ctest --preset ch42-solution -N) >"$copy/list.log" 2>&1 ||
  { grep -E -B2 -A6 'error|Error' "$copy/list.log" | head -n 60; fail "building or listing ch42"; }
# The test names come from the templates; the checks lean on the labels and the counts.
tests_of() { sed -n 's/^ *Test *#[0-9]*: //p' "$1" | sort; }
n_solution=$(tests_of "$copy/list.log" | wc -l)
[ "$n_solution" -gt 0 ] || fail "ctest --preset ch42-solution finds no test"
grep -qi "broken" "$copy/list.log" || fail "ctest --preset ch42-solution lists no self-test (a broken variant)"
(cd "$copy" && ctest --preset ch42 -N) >"$copy/list-student.log" 2>&1 || { tail -n 20 "$copy/list-student.log"; fail "ctest --preset ch42 -N"; }
n_student=$(tests_of "$copy/list-student.log" | wc -l)
[ "$n_student" -gt 0 ] || fail "ctest --preset ch42 finds no test of the stub"
[ -z "$(comm -12 <(tests_of "$copy/list.log") <(tests_of "$copy/list-student.log"))" ] ||
  fail "ctest --preset ch42 and ch42-solution share tests"
step "plain ctest -N in the copy's root"
(cd "$copy" && ctest -N) >"$copy/list-root.log" 2>&1 || { tail -n 20 "$copy/list-root.log"; fail "plain ctest -N"; }
[ "$(tests_of "$copy/list-root.log")" = "$(tests_of "$copy/list-student.log")" ] ||
  fail "plain ctest in the root does not run exactly the tests of ctest --preset ch42"
echo "ctest --preset ch42: $n_student tests; ctest --preset ch42-solution: $n_solution; plain ctest: the same $n_student as ch42"

# --- 5. with a GPU, run them -------------------------------------------------------------------
reason=$(wb_gpu_missing_reason)
if [ -n "$reason" ]; then
  echo "no GPU ($reason): the stub and solution tests were listed, not run"
else
  step "ctest --preset ch42 (the stub must be reported not written yet)"
  if (cd "$copy" && ctest --preset ch42) >"$copy/stub.log" 2>&1; then fail "the stub passed its tests"; fi
  grep -q "not written yet" "$copy/stub.log" || { tail -n 20 "$copy/stub.log"; fail "no 'not written yet' line"; }
  step "ctest --preset ch42-solution"
  (cd "$copy" && ctest --preset ch42-solution) >"$copy/solution.log" 2>&1 ||
    { tail -n 30 "$copy/solution.log"; fail "the ch42 solution tests"; }
fi
echo "$wb_prog: ok: a new chapter scaffolds, configures, builds and registers its tests; ctest builds first"
