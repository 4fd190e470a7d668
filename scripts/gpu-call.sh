#!/usr/bin/env bash
# One call on a GPU machine, in a throwaway copy of the tree: the learner's exercise files
# replaced by correct kernels (tests/leaderboard/fixture-class/fast), every chapter built
# into build/all, then the steps asked for. Logs go to $OUT (one archive and a table).
#
# usage: scripts/gpu-call.sh STEP...   steps: build, learner[:ch01,ch02], solutions[:ch01,...],
#                                            wrong, stubs, bench[:ch01,...], cmd:'shell command'
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
chapters_of() { local c=${1#*:}; [ "$c" = "$1" ] && c="ch01,ch02,ch03,ch04,ch05,ch06,ch07,ch08,ch09"; echo "${c//,/ }"; }
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
    wrong)
      # A kernel wrong on small shapes: how soon the learner hears of it.
      cp "$classes"/wrong-answers/ch03/*.cu chapters/ch03_coarsening/
      ctest --test-dir build/all -L "^ch03-student$" -j 4 --output-on-failure >"$out/logs/wrong-ch03.log" 2>&1
      note "wrong kernels, ch03: $(grep -E "Test +#" "$out/logs/wrong-ch03.log" | awk '{print $4, $(NF-1)}' | tr '\n' ' ')"
      cp "$classes"/fast/ch03/*.cu chapters/ch03_coarsening/ ;;
    cmd:*)
      bash -c "${step#cmd:}" 2>&1 | tee "$out/logs/cmd-$t0.log" | tail -60 ;;
    *) echo "gpu-call: unknown step '$step'" >&2 ;;
  esac
done
