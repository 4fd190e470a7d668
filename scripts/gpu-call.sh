#!/usr/bin/env bash
# One call on a GPU machine, in a throwaway copy of the tree: the learner's exercise files
# replaced by correct kernels (tests/leaderboard/fixture-class/fast), every chapter built
# into build/all, then the steps asked for. Logs go to $OUT (one archive and a table).
#
# usage: scripts/gpu-call.sh STEP...   steps: build, learner[:ch01,ch02], solutions[:ch01,...],
#                                            programs[:ch03,...], large[:ch03,...], broken, build-tests,
#                                            wrong, oldbench, cmd:'shell command'
#   large: every kernel's large cases (--large-cases), four chapters' programs at a time
#   broken: the self-tests (broken kernels), one process per case through ctest
#   build-tests: the test programs only (no benchmarks or tools), and GPU_CALL_TARGETS
#   programs: each chapter's solution program, one process each (all of a chapter's cases in
#   one CUDA context: minutes, where ctest's one process per case takes an hour; a fault ends
#   the process, so the broken kernels go through the `broken` step instead)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out/logs"
table=$out/table.txt
note() { echo "$*" | tee -a "$table"; }
finish() { tar -czf "$out/logs.tgz" -C "$out" logs 2>/dev/null; rm -rf "$out/logs"; }
trap finish EXIT
classes=tests/leaderboard/fixture-class
if [ ! -d "$classes/fast" ]; then  # the classes are made from base kernels and a table of changes
  classes=/tmp/gpu-call-classes
  rm -rf "$classes" && PYTHONPATH=tools/leaderboard python3 -m wb_leaderboard.classes fixture "$classes" >/dev/null
fi
for d in "$classes"/fast/ch*; do
  ch=$(basename "$d"); cp "$d"/*.cu chapters/"$ch"_*/
done
note "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) · $(nproc) cores · cuDNN $(ls /usr/lib/x86_64-linux-gnu/libcudnn.so.* /usr/local/cuda/lib64/libcudnn.so.* 2>/dev/null | head -1 | sed 's/.*so\.//')"
chapters_of() { local c=${1#*:}; [ "$c" = "$1" ] && c="ch01,ch02,ch03,ch04,ch05,ch06,ch07,ch08,ch09,ch10,ch11"; echo "${c//,/ }"; }
deadline=$(( $(date +%s) + ${GPU_CALL_SECONDS:-540} ))
for step in "$@"; do
  t0=$(date +%s)
  if [ "$t0" -ge "$deadline" ]; then note "skipped (out of time): $step"; continue; fi
  case "$step" in
    build)
      [ -f build/all/CMakeCache.txt ] || cmake --preset all >"$out/logs/configure.log" 2>&1
      cmake --build build/all -j "$(nproc)" -- -k 0 >"$out/logs/build.log" 2>&1
      rc=$?
      note "build: rc=$rc in $(( $(date +%s) - t0 )) s; errors: $(grep -c 'error' "$out/logs/build.log")"
      grep -B2 -A6 -m 12 'error' "$out/logs/build.log" | head -60 ;;
    build-tests)
      [ -f build/all/CMakeCache.txt ] || cmake --preset all >"$out/logs/configure.log" 2>&1
      targets=$(for d in chapters/ch[0-9][0-9]_*; do c=$(basename "$d" | cut -c1-4); echo "${c}_tests ${c}_solution_tests ${c}_selftests"; done)
      cmake --build build/all -j "$(nproc)" --target $targets ch09_model_tests ${GPU_CALL_TARGETS:-} -- -k 0 >"$out/logs/build.log" 2>&1
      rc=$?
      note "build-tests: rc=$rc in $(( $(date +%s) - t0 )) s"
      [ "$rc" = 0 ] || grep -B2 -A6 -m 12 'error' "$out/logs/build.log" | head -60 | tee -a "$table" ;;
    large*)
      # The slots that limit how many large cases run at once live in TMPDIR: one set per
      # chapter here, four chapters at a time (each large case holds up to ~30 GB of host memory).
      left=$(( deadline - $(date +%s) ))
      printf '%s\n' $(chapters_of "$step") | OUTDIR=$out/logs LEFT=$left xargs -P 4 -I{} bash -c \
        'export TMPDIR=/tmp/large-{}; mkdir -p $TMPDIR
         timeout $LEFT build/all/bin/{}_solution_tests --large-cases >$OUTDIR/{}-large.log 2>&1
         echo "rc=$?" >>$OUTDIR/{}-large.log'
      for ch in $(chapters_of "$step"); do
        f=$out/logs/$ch-large.log; [ -f "$f" ] || continue
        note "$ch large: $(tail -1 "$f") ok $(grep -c '^\[       OK' "$f") failed $(grep -c '^\[  FAILED  \] [^0-9]' "$f")"
        grep -E -A4 ': Failure$' "$f" | head -12 | tee -a "$table"
      done
      note "large: $(( $(date +%s) - t0 )) s" ;;
    broken)
      timeout $(( deadline - $(date +%s) )) ctest --test-dir build/all -R '/broken\.' -j 8 --timeout 300 --output-on-failure \
        >"$out/logs/broken.log" 2>&1
      note "broken: rc=$? $(grep -E '^[0-9]+% tests passed' "$out/logs/broken.log") in $(( $(date +%s) - t0 )) s"
      grep -A30 'The following tests FAILED' "$out/logs/broken.log" | head -30 | tee -a "$table" ;;
    learner*)
      scripts/gpu-learner-times.sh build/all --chapters "$(chapters_of "$step")" --out "$out/logs" | tee -a "$table" ;;
    solutions*)
      labels=""
      for ch in $(chapters_of "$step"); do labels="$labels${labels:+|}^$ch-solution\$"; done
      left=$(( deadline - $(date +%s) ))
      timeout "$left" ctest --test-dir build/all -L "$labels|^harness-gpu\$" -j "$(nproc)" --timeout 300 \
        --output-junit "$out/logs/solutions.xml" >"$out/logs/solutions.log" 2>&1
      note "solutions ($labels): rc=$? $(grep -E '^[0-9]+% tests passed' "$out/logs/solutions.log") in $(( $(date +%s) - t0 )) s"
      grep -A40 'The following tests FAILED' "$out/logs/solutions.log" | head -40 | tee -a "$table"
      grep -E 'Test +#' "$out/logs/solutions.log" | awk '{print $(NF-1), $4}' | sort -rn | head -8 | tee -a "$table" ;;
    programs*)
      pids=""
      for ch in $(chapters_of "$step"); do
        [ -x build/all/bin/${ch}_solution_tests ] || continue
        ( timeout $(( deadline - $(date +%s) )) build/all/bin/${ch}_solution_tests >"$out/logs/$ch-solution_tests.log" 2>&1
          echo "rc=$?" >>"$out/logs/$ch-solution_tests.log" ) &
        pids="$pids $!"
      done
      wait $pids
      for f in "$out"/logs/ch*-solution_tests.log; do
        [ -f "$f" ] || continue
        note "$(basename "$f" .log): $(tail -1 "$f") $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$f" | tr '\n' ' ')"
        grep -E '^\[  FAILED  \] [^0-9]' "$f" | head -12 | tee -a "$table"
      done
      note "programs: $(( $(date +%s) - t0 )) s" ;;
    wrong)
      # A kernel wrong on small shapes: how soon the learner hears of it.
      cp "$classes"/wrong-answers/ch03/*.cu chapters/ch03_coarsening/
      ctest --test-dir build/all -L "^ch03-student$" -j 4 --output-on-failure >"$out/logs/wrong-ch03.log" 2>&1
      note "wrong kernels, ch03: $(grep -E "Test +#" "$out/logs/wrong-ch03.log" | awk '{print $4, $(NF-1)}' | tr '\n' ' ')"
      cp "$classes"/fast/ch03/*.cu chapters/ch03_coarsening/ ;;
    oldbench)
      # The benchmark of an older commit (build/old-*.tgz, a git archive) beside this one's, ch01.
      old=/tmp/old-tree
      rm -rf "$old" && mkdir -p "$old" && tar -xzf build/old-*.tgz -C "$old"
      (cd "$old" && cmake --preset ch01 -DWORKBOOK_BUILD_ON_TEST=OFF && cmake --build build/ch01 --target ch01_bench -j "$(nproc)") \
        >"$out/logs/old-build.log" 2>&1 || note "oldbench: the old tree did not build"
      "$old"/build/ch01/bin/ch01_bench --json="$out/logs/old-ch01.json" >"$out/logs/old-ch01.txt" 2>&1
      build/all/bin/ch01_bench --benchmark_out="$out/logs/new-ch01.json" >"$out/logs/new-ch01.txt" 2>&1
      python3 - "$out/logs/old-ch01.json" "$out/logs/new-ch01.json" <<'PY' | tee -a "$table"
import sys
sys.path.insert(0, "scripts/lib")
import wb_results as R
old, new = (R.load(p) for p in sys.argv[1:3])
key = lambda r: (r.get("op"), r.get("shape"), r.get("impl"))
o = {key(r): r for r in R.rows(old)}
print("ch01_bench, old (6a8c495) vs new: op shape impl | median us old new new/old | x ref old new")
for r in R.rows(new):
    a = o.get(key(r))
    if not a or not a.get("median_us") or not r.get("median_us"):
        continue
    print("  %s %s %s | %.1f %.1f %.3f | %s %s" % (*key(r), a["median_us"], r["median_us"], r["median_us"] / a["median_us"],
          a.get("vs_reference"), r.get("vs_reference")))
PY
      ;;
    cmd:*)
      bash -c "${step#cmd:}" 2>&1 | tee "$out/logs/cmd-$t0.log" | tail -60 ;;
    *) echo "gpu-call: unknown step '$step'" >&2 ;;
  esac
done
