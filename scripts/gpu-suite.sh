#!/usr/bin/env bash
# Runs the whole GPU suite on a machine with an NVIDIA GPU:
#   1. devicequery (with measured ceilings) and instpeak (FFMA and mma.sync ceilings)
#   2. configure + build every chapter (build/gpu-suite, this GPU's architecture), run the solutions', references',
#      self-tests' and harness's tests through ctest (-j, labels, timeouts, JUnit)
#   3. run the learner's stubs (the chNN_tests programs of the same build): every exercise
#      must be reported "not written yet"
#   4. with --autotune: run every chapter's chNN_tune (harness/tune: ch04's SGEMM tiles, ch07's
#      top-k), which write this GPU's winners into configs/ (copies go to the output folder)
#   5. run every chapter's benchmark (twice with --repeat, to show run-to-run agreement)
#   6. with --peers: the PyTorch peer scripts (scripts/torch_*_peer.py) on this GPU, and the GPT-2
#      float64 CPU forward against transformers' logits (scripts/gpt2_torch_reference.py)
#   7. with the step `leaderboard`: the leaderboard's own classes through scripts/leaderboard.sh,
#      the hostile one, then the fixture one, each compared with its tests/leaderboard/*-expected.json
#      (in a sandbox: bwrap on PATH, or the one scripts/fetch-bwrap.sh put in .bwrap/)
#   8. with the steps `programs`, `large` and `learner` (not in the default run):
#      programs: each chapter's solution program whole but its large cases (--small-cases), one
#        process per chapter (all its cases in one CUDA context: minutes where ctest's process per
#        case takes an hour; a fault ends the process, so it is a quick check, and the broken
#        kernels stay with the tests step); the step `large` runs the large ones;
#      large: each chapter's large cases only (--large-cases), four chapters at a time;
#      learner: a scratch copy of the tree with correct kernels in the exercise files (the
#        leaderboard's fast class), built and run as a learner runs it, timed per chapter
#        (scripts/gpu-learner-times.sh): the learner-run time of every chapter
#   9. print a summary table last
# Logs and JSON go to the output folder.
#
# usage: scripts/gpu-suite.sh [--out DIR] [--chapters "ch01 ch02"] [--full] [--repeat] [--skip-build]
#                             [--no-stubs] [--no-bench] [--autotune] [--peers] [--bench-timeout SECONDS]
#                             [--bench-chapters "ch02 ch03"]   (benchmarks of these only)
#                             [--test-chapters "ch04"]         (tests and stubs of these only)
#                             [--test-timeout SECONDS]         (per test case; default 900)
#                             [--deadline SECONDS]             (start no new step after this many seconds;
#                                                               the summary says what was left out)
#                             [--leaderboard-chapters "ch01 ch06"]  (the fixture class's chapters; default ch01)
#                             [--leaderboard-classes "fixture"]     (which classes; default "hostile fixture":
#                                                               a whole fixture run is ~45 min of one GPU, so a
#                                                               run can be split over machines)
#                             [--steps "build query bench gpt2 tests"]  (these steps, in this order; the steps:
#                                                               build query tests stubs tune peers bench gpt2 leaderboard
#                                                               programs large learner)
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out="$here/results/gpu-suite-$(date +%Y%m%d-%H%M%S)"
chapters=""
quick=""
repeat=0
skip_build=0
stubs=1
bench_timeout=0
autotune=0
peers=0
bench_chapters=""
test_chapters=""
bench=1
test_timeout=900
deadline=0
steps=""
lb_chapters="ch01"
lb_classes="hostile fixture"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --chapters) chapters="${2:?--chapters needs a list}"; shift 2 ;;
    --chapters=*) chapters="${1#--chapters=}"; shift ;;
    --quick) shift ;;  # the default benchmark is the quick one now; --full runs the sweep
    --full) quick="--full"; shift ;;
    --repeat) repeat=1; shift ;;
    --skip-build) skip_build=1; shift ;;
    --no-stubs) stubs=0; shift ;;
    --autotune) autotune=1; shift ;;
    --peers) peers=1; shift ;;
    --no-bench) bench=0; shift ;;
    --bench-chapters) bench_chapters="${2:?--bench-chapters needs a list}"; shift 2 ;;
    --bench-chapters=*) bench_chapters="${1#--bench-chapters=}"; shift ;;
    --test-chapters) test_chapters="${2:?--test-chapters needs a list}"; shift 2 ;;
    --test-chapters=*) test_chapters="${1#--test-chapters=}"; shift ;;
    --deadline) deadline="${2:?--deadline needs seconds}"; shift 2 ;;
    --deadline=*) deadline="${1#--deadline=}"; shift ;;
    --leaderboard-chapters) lb_chapters="${2:?--leaderboard-chapters needs a list}"; shift 2 ;;
    --leaderboard-classes) lb_classes="${2:?--leaderboard-classes needs a list}"; shift 2 ;;
    --leaderboard-chapters=*) lb_chapters="${1#--leaderboard-chapters=}"; shift ;;
    --steps) steps="${2:?--steps needs a list}"; shift 2 ;;
    --steps=*) steps="${1#--steps=}"; shift ;;
    --test-timeout) test_timeout="${2:?--test-timeout needs seconds}"; shift 2 ;;
    --test-timeout=*) test_timeout="${1#--test-timeout=}"; shift ;;
    --bench-timeout) bench_timeout="${2:?--bench-timeout needs seconds}"; shift 2 ;;
    --bench-timeout=*) bench_timeout="${1#--bench-timeout=}"; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {print}' "$0"; exit 0 ;;
    *) echo "gpu-suite: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

for step in $steps; do
  case "$step" in
    build|query|tests|stubs|tune|peers|bench|gpt2|leaderboard|programs|large|learner) ;;
    *) echo "gpu-suite: unknown step '$step' in --steps (the steps: build query tests stubs tune peers bench gpt2" \
         "leaderboard programs large learner)" >&2; exit 2 ;;
  esac
done
for class in $lb_classes; do
  case "$class" in
    hostile|fixture) ;;
    *) echo "gpu-suite: unknown class '$class' in --leaderboard-classes (the classes: hostile fixture)" >&2; exit 2 ;;
  esac
done
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-suite: no NVIDIA GPU is visible (nvidia-smi -L failed); this script needs one." >&2
  echo "           Without a GPU, run the host tests instead: cmake --workflow --preset ci" >&2
  exit 1
fi
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
cd "$here" || exit 1
chapter_def=()
if [ -z "$chapters" ]; then
  chapters=$(ls -d chapters/ch[0-9][0-9]_* | sed 's|chapters/\(ch[0-9][0-9]\)_.*|\1|' | tr '\n' ' ')
else
  chapter_def=("-DWORKBOOK_CHAPTERS=$(echo $chapters | tr ' ' ';')")
fi
summary="$out/summary.txt"
: > "$summary"
note() { printf '%s\n' "$*" | tee -a "$summary"; }
suite_start=$(date +%s)
# past_deadline WHAT: true (and noted) once --deadline seconds have gone by.
past_deadline() {
  [ "$deadline" != 0 ] && [ $(( $(date +%s) - suite_start )) -ge "$deadline" ] || return 1
  note "left out (past --deadline $deadline s): $1"
  return 0
}
jobs=$(nproc 2>/dev/null || echo 8)

note "kernel-workbook GPU suite — $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${WORKBOOK_GIT_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv > "$out/nvidia-smi.csv" 2>&1
note "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

bin=build/gpu-suite

# --- build ------------------------------------------------------------------------------
step_build() {
  # Keep going past a chapter that does not build, so the others are still tested.
  { cmake -S . -B build/gpu-suite -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
      "${chapter_def[@]}" -DWORKBOOK_BUILD_ON_TEST=OFF &&
    cmake --build build/gpu-suite --target workbook_everything -j "$jobs" -- -k 0; } > "$out/build-solutions.log" 2>&1
  build_rc=$?
  note "build all-solutions: $([ $build_rc = 0 ] && echo ok || echo "FAILED (some targets), see build-solutions.log")"
  [ $build_rc = 0 ] || grep -E "error|FAILED" "$out/build-solutions.log" | head -20 | tee -a "$summary"
}

# --- the measured ceilings ----------------------------------------------------------------
step_query() {
  "$bin/bin/devicequery" --measure > "$out/devicequery.txt" 2>&1
  "$bin/bin/devicequery" --measure --json > "$out/devicequery.json" 2>/dev/null
  cat "$out/devicequery.txt"
  # The instruction ceilings (FFMA, mma.sync) that chapters 4 and 5 compare against.
  [ -x "$bin/bin/instpeak" ] && "$bin/bin/instpeak" > "$out/instpeak.txt" 2>&1 && cat "$out/instpeak.txt"
}

# --- tests of the solutions, references, self-tests and harness: ctest, one process per case -
# (ctest's parallelism, labels, timeouts and JUnit; the large cases take a machine-wide lock
# of their own, harness/check/tests_main.cpp, so any number of processes share one GPU.)
step_tests() {
  local labels="^host\$|^harness-gpu\$" ch
  for ch in ${test_chapters:-$chapters}; do labels="$labels|^$ch-solution\$"; done
  local start
  start=$(date +%s)
  ctest --test-dir "$bin" -L "$labels" -j "$jobs" --timeout "$test_timeout" --output-on-failure \
    --output-junit "$out/ctest-tests.xml" > "$out/ctest-tests.log" 2>&1
  note "tests ($labels): $(grep -E 'tests passed' "$out/ctest-tests.log" | tail -1) in $(( $(date +%s) - start )) s" \
       "(skipped: $(grep -c '\*\*\*Skipped' "$out/ctest-tests.log"))"
  grep -A40 'The following tests FAILED' "$out/ctest-tests.log" | head -40 | tee -a "$summary"
  # The slowest cases, where a faster check would pay most.
  grep -E '^ *[0-9]+/[0-9]+ Test +#' "$out/ctest-tests.log" | awk '{print $(NF-1), $4}' | sort -rn | head -15 \
    > "$out/slowest-cases.txt"
}

# --- the learner's stubs: every exercise must be reported not written yet --------------------
step_stubs() {
  local ch
  for ch in ${test_chapters:-$chapters}; do
    past_deadline "stub $ch" && continue
    ctest --test-dir "$bin" -L "^$ch-student\$" -j "$jobs" --timeout "$test_timeout" --output-on-failure \
      > "$out/stubs-$ch.log" 2>&1
    note "stub $ch: $(grep -m1 "^$ch, your kernels:" "$out/stubs-$ch.log" || echo 'no summary line')"
  done
}

# --- the autotuners write this GPU's best configurations before the benchmarks -------------
step_tune() {
  for ch in ${bench_chapters:-$chapters}; do
    [ -x "$bin/bin/${ch}_tune" ] || continue
    past_deadline "${ch}_tune" && continue
    start=$(date +%s)
    "$bin/bin/${ch}_tune" --quick --markdown="$out/$ch-tune.md" --json="$out/$ch-tune.json" > "$out/$ch-tune.log" 2>&1
    note "${ch}_tune: exit $? in $(( $(date +%s) - start )) s (log $ch-tune.log)"
  done
  cp configs/*.json "$out/" 2>/dev/null
}

# --- PyTorch peers, same GPU, same session ----------------------------------------------------
step_peers() {
  for script in scripts/torch_*_peer.py; do
    past_deadline "$(basename "$script")" && continue
    name=$(basename "$script" .py)
    timeout 600 python3 "$script" --json "$out/$name.json" > "$out/$name.log" 2>&1
    note "$name: exit $? ($(tail -n 1 "$out/$name.log"))"
  done
  # The GPT-2 float64 CPU forward against transformers' own FP32 logits (the GPU model is held
  # to that forward by its tests): a tiny model in FP32 and BF16 weights, and GPT-2 124M.
  [ -x "$bin/bin/gpt2_cpu_check" ] || return 0
  for run in "tiny f32" "tiny bf16" "124M f32"; do
    set -- $run
    past_deadline "transformers check $1 $2" && continue
    d="$bin/gpt2-transformers-$1-$2"
    timeout 300 python3 scripts/gpt2_torch_reference.py --config="$1" --seed=3 --weights-dtype="$2" \
      --out-dir="$d" --force > "$out/gpt2-transformers-$1-$2.log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
      timeout 300 "$bin/bin/gpt2_cpu_check" --weights="$d/model.safetensors" --expect="$d/reference.json" \
        >> "$out/gpt2-transformers-$1-$2.log" 2>&1
      rc=$?
    fi
    note "gpt2 CPU forward vs transformers ($1, $2 weights): exit $rc ($(tail -n 1 "$out/gpt2-transformers-$1-$2.log"))"
  done
}

# --- benchmarks ---------------------------------------------------------------------------
step_bench() {
  for ch in ${bench_chapters:-$chapters}; do
    past_deadline "bench $ch" && continue
    exe="$bin/bin/${ch}_bench"
    [ -x "$exe" ] || { note "bench $ch: no ${ch}_bench built"; continue; }
    limit=()
    [ "$bench_timeout" != 0 ] && limit=(timeout "$bench_timeout")
    start=$(date +%s)
    "${limit[@]}" "$exe" $quick --benchmark_out="$out/$ch-bench.json" --markdown="$out/$ch-bench.md" \
      > "$out/$ch-bench.log" 2>&1
    note "bench $ch: exit $? in $(( $(date +%s) - start )) s wall (log $ch-bench.log)"
    if [ "$repeat" = 1 ]; then
      "${limit[@]}" "$exe" $quick --benchmark_out="$out/$ch-bench-2.json" > "$out/$ch-bench-2.log" 2>&1
      note "bench $ch (second run): exit $?"
    fi
  done
}

# --- chapter 9: the decoder end to end, 124M and 1.5B random weights, prompt 512 ----------------
step_gpt2() {
  if [ -x "$bin/bin/gpt2" ] && [ -x "$bin/bin/gpt2_random_weights" ]; then
    for cfg in 124M 1.5B; do
      past_deadline "gpt2 $cfg" && continue
      w="$bin/gpt2-$cfg-bf16.safetensors"
      [ -f "$w" ] || "$bin/bin/gpt2_random_weights" --config=$cfg --dtype=bf16 --gpt2-affine --out="$w" > "$out/gpt2-weights-$cfg.log" 2>&1
      # The ladder of the decode step: op by op (library, then solution kernels), fused, INT8
      # (op by op), INT8 fused, INT4 (op by op), INT4 fused; then batched decode (1, 4, 16, 64 sequences: the weights read
      # once for B tokens); then a second request's prefill during this one's decode (--overlap).
      for run in "ops:--kernels=library,solution" "fused:--decode=fused" "int8:--int8" \
        "int8-fused:--int8 --decode=fused" "int4:--int4" "int4-fused:--int4 --decode=fused" \
        "batch:--batch=1,4,16,64 --kernels=library,solution" "overlap:--overlap"; do
        name=${run%%:*}
        start=$(date +%s)
        "$bin/bin/gpt2" --weights="$w" --prompt-len=512 --new=128 ${run#*:} \
          --json="$out/gpt2-$cfg-$name.json" > "$out/gpt2-$cfg-$name.log" 2>&1
        note "gpt2 $cfg $name: exit $? in $(( $(date +%s) - start )) s ($(grep -m1 -o 'decode: [0-9.]* tokens/s' "$out/gpt2-$cfg-$name.log"))"
      done
    done
    "$bin/bin/gpt2_random_weights" --config=tiny --out="$bin/gpt2-tiny.safetensors" --force > /dev/null 2>&1 &&
      "$bin/bin/gpt2" --weights="$bin/gpt2-tiny.safetensors" --dtype=f32 --prompt-len=16 --new=32 --check \
        > "$out/gpt2-check.log" 2>&1
    note "gpt2 --check (tiny, FP32): exit $?"
    "$bin/bin/gpt2_random_weights" --config=tiny --dtype=bf16 --out="$bin/gpt2-tiny-bf16.safetensors" --force > /dev/null 2>&1
    for run in "fused:--decode=fused" "int8:--int8" "int8-fused:--int8 --decode=fused" "int4:--int4" \
      "int4-fused:--int4 --decode=fused"; do
      "$bin/bin/gpt2" --weights="$bin/gpt2-tiny-bf16.safetensors" --prompt-len=16 --new=32 --check ${run#*:} \
        > "$out/gpt2-check-${run%%:*}.log" 2>&1
      note "gpt2 --check ${run#*:} (tiny, BF16): exit $?"
    done
  fi
}

# --- the leaderboard's own classes: nothing hostile ranks, the honest ranks are as expected ------
step_leaderboard() {
  local bw="" class start rc ch
  bw=$(command -v bwrap 2>/dev/null)
  if [ -z "$bw" ] && compgen -G ".bwrap/bubblewrap_*.deb" > /dev/null; then
    [ -x .bwrap/usr/bin/bwrap ] || scripts/fetch-bwrap.sh --unpack > "$out/bwrap-unpack.log" 2>&1
    [ -x .bwrap/usr/bin/bwrap ] && bw="$here/.bwrap/usr/bin/bwrap"
  fi
  if [ -n "$bw" ]; then
    note "leaderboard: sandbox $bw"
  else
    note "leaderboard: no bubblewrap here (scripts/fetch-bwrap.sh puts one in .bwrap/ to carry along):" \
      "the hostile class is left out, the fixture class runs with --unsafe-no-sandbox"
  fi
  local chapter_args=()
  for ch in $lb_chapters; do chapter_args+=(--chapter "$ch"); done
  for class in $lb_classes; do
    past_deadline "leaderboard $class" && continue
    local how=(--bwrap "$bw") chosen=("${chapter_args[@]}")
    if [ -z "$bw" ]; then
      [ "$class" = hostile ] && continue
      how=(--unsafe-no-sandbox)
    fi
    [ "$class" = hostile ] && chosen=()  # the hostile class has chapter 1 only
    start=$(date +%s)
    scripts/leaderboard.sh "--$class" "${how[@]}" "${chosen[@]}" --out "$out/leaderboard-$class" \
      --expect "tests/leaderboard/$class-expected.json" > "$out/leaderboard-$class.log" 2>&1
    rc=$?
    note "leaderboard $class: exit $rc in $(( $(date +%s) - start )) s ($(tail -n 1 "$out/leaderboard-$class.log"))"
  done
}

# --- each chapter's solution program in one process: the quick check of every solution case ----
step_programs() {
  local ch pids=""
  for ch in ${test_chapters:-$chapters}; do
    [ -x "$bin/bin/${ch}_solution_tests" ] || { note "programs $ch: no ${ch}_solution_tests built"; continue; }
    ( timeout "$test_timeout" "$bin/bin/${ch}_solution_tests" --small-cases > "$out/$ch-program.log" 2>&1
      echo "exit $?" >> "$out/$ch-program.log" ) &
    pids="$pids $!"
  done
  wait $pids
  for ch in ${test_chapters:-$chapters}; do
    [ -f "$out/$ch-program.log" ] || continue
    note "programs $ch: $(tail -n 1 "$out/$ch-program.log"), $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' \
      "$out/$ch-program.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \] [^0-9]' "$out/$ch-program.log" | head -12 | tee -a "$summary"
  done
}

# --- the large cases alone, four chapters at a time (each holds up to ~30 GB of host memory; the
# slots that bound them machine-wide live in TMPDIR, so each chapter gets its own set here) ------
step_large() {
  local ch
  for ch in ${test_chapters:-$chapters}; do echo "$ch"; done |
    OUTDIR="$out" BIN="$bin" LIMIT="$test_timeout" xargs -P 4 -I{} bash -c \
      'export TMPDIR=$(mktemp -d); [ -x "$BIN/bin/{}_solution_tests" ] || exit 0
       timeout "$LIMIT" "$BIN/bin/{}_solution_tests" --large-cases > "$OUTDIR/{}-large.log" 2>&1
       echo "exit $?" >> "$OUTDIR/{}-large.log"; rm -rf "$TMPDIR"'
  for ch in ${test_chapters:-$chapters}; do
    [ -f "$out/$ch-large.log" ] || continue
    note "large $ch: $(tail -n 1 "$out/$ch-large.log"), $(grep -c '^\[       OK' "$out/$ch-large.log") passed," \
      "$(grep -c '^\[  FAILED  \] [^0-9]' "$out/$ch-large.log") failed"
    grep -E '^\[  FAILED  \] [^0-9]' "$out/$ch-large.log" | head -8 | tee -a "$summary"
  done
}

# --- the learner's run with correct kernels, timed per chapter, in a scratch copy of the tree ----
step_learner() {
  local scratch classes d ch
  scratch=$(mktemp -d) || return
  git ls-files -z | (cd "$here" && tar --null -T - -cf -) | tar -xf - -C "$scratch"
  classes="$scratch/build/classes"
  PYTHONPATH=tools/leaderboard python3 -m wb_leaderboard.classes fixture "$classes" > "$out/learner-classes.log" 2>&1 ||
    { note "learner: the fixture class could not be made (learner-classes.log)"; return; }
  for d in "$classes"/fast/ch*; do
    ch=$(basename "$d")
    cp "$d"/*.cu "$scratch"/chapters/"$ch"_*/
  done
  { cmake -S "$scratch" -B "$scratch/build/all" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
      "${chapter_def[@]}" -DWORKBOOK_BUILD_ON_TEST=OFF &&
    cmake --build "$scratch/build/all" -j "$jobs" --target \
      $(for ch in ${test_chapters:-$chapters}; do echo "${ch}_tests"; done) $([[ " ${test_chapters:-$chapters} " == *" ch09 "* ]] &&
      echo ch09_model_tests); } > "$out/learner-build.log" 2>&1 ||
    { note "learner: the scratch build failed (learner-build.log)"; rm -rf "$scratch"; return; }
  scripts/gpu-learner-times.sh "$scratch/build/all" --chapters "${test_chapters:-$chapters}" --out "$out/learner" |
    tee -a "$summary"
  rm -rf "$scratch"
}

# --- the steps, in order -------------------------------------------------------------------
if [ -z "$steps" ]; then
  steps="build query tests"
  [ "$stubs" = 1 ] && steps="$steps stubs"
  [ "$autotune" = 1 ] && steps="$steps tune"
  [ "$peers" = 1 ] && steps="$steps peers"
  [ "$bench" = 1 ] && steps="$steps bench gpt2"
  [ "$skip_build" = 1 ] && steps=${steps#build }
fi
for step in $steps; do "step_$step"; done

# --- summary table, last --------------------------------------------------------------------
echo
echo "================ summary ================"
cat "$summary"
for ch in ${bench_chapters:-$chapters}; do
  [ -f "$out/$ch-bench.json" ] || continue
  echo
  echo "$ch — median us, GB/s, TFLOPS, % of measured roofline, x reference:"
  second=()
  [ -f "$out/$ch-bench-2.json" ] && second=("$out/$ch-bench-2.json")
  python3 scripts/lib/wb_results.py summary "$out/$ch-bench.json" "${second[@]}"
done
echo
echo "logs and JSON: $out"
