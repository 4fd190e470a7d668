#!/usr/bin/env bash
# CI: scaffolds a throwaway chapter 42 in a temporary copy of the repository and checks that
# it configures, builds and registers its tests, without touching this tree.
#
#   1. copies the tree (the files git tracks plus untracked ones it does not ignore)
#   2. scripts/new-chapter.sh 42 throwaway in the copy; bad input must be refused there
#   3. cmake --preset ch42 -DCMAKE_CUDA_ARCHITECTURES=80 (the new preset; WORKBOOK_CHAPTERS=ch42)
#   4. builds it; ctest must list the stub's, the solution's and the self-test's tests
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
rm -rf "$copy"/chapters/ch42_* "$copy"/reference/ch42_* "$copy"/solutions/ch42_* "$copy"/docs/ch42-*.md \
       "$copy"/harness/selftest/ch42_*.cu

# --- 2. scaffold (and refuse bad input) -------------------------------------------------------
step "scripts/new-chapter.sh 42 throwaway"
"$copy/scripts/new-chapter.sh" 42 throwaway --title "throwaway check" || fail "new-chapter.sh 42 throwaway"
for bad in "42 throwaway" "4 two" "43 Bad_Name" "01 again"; do
  # shellcheck disable=SC2086
  if out=$("$copy/scripts/new-chapter.sh" $bad 2>&1); then fail "new-chapter.sh accepted '$bad'"; fi
  echo "refused '$bad': $(echo "$out" | head -n 1)"
done
grep -q '"name": "ch42-solution"' "$copy/CMakePresets.json" || fail "no ch42-solution preset"

# --- 3, 4. configure, build, list -------------------------------------------------------------
step "cmake --preset ch42 -DCMAKE_CUDA_ARCHITECTURES=80"
(cd "$copy" && cmake --preset ch42 -DCMAKE_CUDA_ARCHITECTURES=80) >"$copy/configure.log" 2>&1 ||
  { tail -n 30 "$copy/configure.log"; fail "configuring ch42"; }
step "cmake --build --preset ch42"
(cd "$copy" && cmake --build --preset ch42) >"$copy/build.log" 2>&1 ||
  { grep -E -B2 -A6 'error' "$copy/build.log" | head -n 60; fail "building ch42"; }
step "ctest -N"
(cd "$copy" && ctest --test-dir build/ch42 -N) >"$copy/list.log" 2>&1 || { tail -n 20 "$copy/list.log"; fail "ctest -N"; }
for want in "Ch42Saxpy.MatchesFloat64/student_n1025" "Ch42Saxpy.MatchesFloat64/v1_one_per_thread_n1025" \
            "Ch42Saxpy.MatchesFloat64/cublas_saxpy_n1025" "Ch42Broken.SaxpyThatDropsTheTail"; do
  grep -q "$want" "$copy/list.log" || fail "ctest does not list $want"
done
for label in ch42-student ch42-solution; do
  n=$(cd "$copy" && ctest --test-dir build/ch42 -N -L "^$label\$" | sed -n 's/^Total Tests: //p')
  [ "${n:-0}" -gt 0 ] || fail "no test carries the label $label"
  echo "label $label: $n tests"
done

# --- 5. with a GPU, run them -------------------------------------------------------------------
reason=$(wb_gpu_missing_reason)
if [ -n "$reason" ]; then
  echo "no GPU ($reason): the stub and solution tests were listed, not run"
else
  step "ctest --preset ch42 (the stub must fail with the not-implemented message)"
  if (cd "$copy" && ctest --preset ch42 -R 'n1025$') >"$copy/stub.log" 2>&1; then fail "the stub passed its test"; fi
  grep -q "not implemented yet" "$copy/stub.log" || { tail -n 20 "$copy/stub.log"; fail "no 'not implemented yet' message"; }
  step "ctest --preset ch42-solution"
  (cd "$copy" && cmake --preset ch42-solution >/dev/null &&
     cmake --build --preset ch42-solution >/dev/null && ctest --preset ch42-solution) >"$copy/solution.log" 2>&1 ||
    { tail -n 30 "$copy/solution.log"; fail "the ch42 solution tests"; }
fi
echo "$wb_prog: ok: a new chapter scaffolds, configures, builds and registers its tests"
