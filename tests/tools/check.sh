#!/usr/bin/env bash
# Host tests of the learner's tools (ctest label `host`; cmake/Tools.cmake registers them).
# Each case runs a script on recorded inputs (tests/tools/fixtures) with stand-ins for the
# GPU tools (tests/tools/fake), so no GPU, ncu or compute-sanitizer is needed.
#
# usage: tests/tools/check.sh CASE WORK_DIR [PROGRAM]   (bench_flags: PROGRAM is a chapter's benchmark)
# Exit status: 0 pass, 1 fail, 77 skipped (matplotlib missing, for the plotting cases).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fixtures=$here/fixtures
fake=$here/fake
case_name=${1:?usage: check.sh CASE WORK_DIR}
work=${2:?usage: check.sh CASE WORK_DIR}/$case_name
rm -rf "$work" && mkdir -p "$work" || exit 1

# expect RC PATTERN -- COMMAND... and the other helpers of the tools' command-line tests; a
# failure names the case.
source "$here/lib/expect.sh"
fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }
nonempty() { for f in "$@"; do [ -s "$f" ] || fail "missing or empty: $f"; done; }
# The plots need matplotlib: without it the scripts exit 3, and the case is skipped.
plot_or_skip() {
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  echo "$out"
  if [ "$rc" = 3 ] && echo "$out" | grep -q "matplotlib is not installed"; then
    echo "SKIP: matplotlib is missing (scripts/install-deps.sh installs python3-matplotlib)"
    exit 77
  fi
  [ "$rc" = 0 ] || fail "exit status $rc: $*"
}

case "$case_name" in
  plot_roofline)
    plot_or_skip python3 "$root/scripts/plot_roofline.py" "$fixtures"/results-ch0{1,2,4}-h200.json --out "$work"
    nonempty "$work"/ch01-roofline.{png,svg} "$work"/ch02-roofline.{png,svg} "$work"/ch04-roofline.{png,svg}
    head -c 8 "$work/ch01-roofline.png" | grep -q PNG || fail "ch01-roofline.png is not a PNG"
    grep -q "<svg" "$work/ch04-roofline.svg" || fail "ch04-roofline.svg is not an SVG"
    ;;
  plot_progress)
    plot_or_skip python3 "$root/scripts/plot_progress.py" "$fixtures"/results-ch0{1,2,4}-h200.json --out "$work" \
      --name "fixture learner"
    nonempty "$work"/progress.{png,svg}
    ;;
  plot_bad_input)
    printf '{"chapter": "ch01", "results": [' >"$work/truncated.json"
    printf '{"hello": 1}' >"$work/other.json"
    for script in plot_roofline.py plot_progress.py; do
      expect 2 "does not parse as JSON \(line 1, column" -- python3 "$root/scripts/$script" "$work/truncated.json" --out "$work"
      expect 2 "not a benchmark results file" -- python3 "$root/scripts/$script" "$work/other.json" --out "$work"
      expect 2 "no such file" -- python3 "$root/scripts/$script" "$work/missing.json" --out "$work"
    done
    ;;
  ncu_table)
    expect 0 "sectors/request, global stores +32.00 +16.00 +<- [0-9]" -- python3 "$root/scripts/lib/profile_tool.py" table \
      --side "v1_naive=$fixtures/ncu-ch02-v1_naive.csv" --side "v4_vectorized=$fixtures/ncu-ch02-v4_vectorized.csv"
    expect 0 "stage the tile in shared memory" -- python3 "$root/scripts/lib/profile_tool.py" table \
      --side "v1_naive=$fixtures/ncu-ch02-v1_naive.csv" --side "v4_vectorized=$fixtures/ncu-ch02-v4_vectorized.csv"
    echo "not,a,profile" >"$work/bad.csv"
    expect 2 "not an Nsight Compute CSV export" -- python3 "$root/scripts/lib/profile_tool.py" table --side "x=$work/bad.csv"
    # The whole of profile.sh, with a stand-in benchmark and ncu: the learner's transpose is
    # not written, so the ladder's first step is shown beside its last.
    mkdir -p "$work/build/bin"
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$fake/bench" >"$work/build/bin/ch02_bench"
    chmod +x "$work/build/bin/ch02_bench"
    if [ -d "$root"/chapters/ch02_* ]; then
      expect 0 "not implemented yet, so here is the solution ladder's first step beside its last" -- \
        env NCU="$fake/ncu" WORKBOOK_GPU_FAKE=present "$root/scripts/profile.sh" ch02 --no-build \
        --build-dir "$work/build" --out "$work/reports"
      expect 0 "v1_naive \(ladder's first\) +v4_vectorized \(ladder's best\)" -- \
        env NCU="$fake/ncu" WORKBOOK_GPU_FAKE=present "$root/scripts/profile.sh" ch02 --no-build \
        --build-dir "$work/build" --out "$work/reports" --shape 8192x8192 --op transpose_f32
    fi
    ;;
  sanitizer_summary)
    awk_summary() { awk -v root=/work/main -f "$root/scripts/lib/sanitizer_summary.awk" "$1"; }
    expect 0 $'FINDING\t2\tInvalid __global__ write of size 4 bytes\tplanted_oob_write\tharness/tests/sanitize_planted.cu:33' \
      -- awk_summary "$fixtures/sanitizer-memcheck.log"
    expect 0 $'SUMMARY\t1' -- awk_summary "$fixtures/sanitizer-racecheck.log"
    expect 0 $'Race between Write access and Read access\tneighbour_sum<\\(bool\\)0>\t.*:50 / line 52' \
      -- awk_summary "$fixtures/sanitizer-racecheck.log"
    expect 0 $'FINDING\t2\tUninitialized __global__ memory read of size 4 bytes\tcopy_kernel\tharness/tests/sanitize_planted.cu:58' \
      -- awk_summary "$fixtures/sanitizer-initcheck-old.log"
    expect 0 $'TESTS\t12\t-1\t-1' -- awk_summary "$fixtures/sanitizer-clean.log"
    # The whole of sanitize.sh with a stand-in compute-sanitizer: the planted bugs ...
    mkdir -p "$work/build/bin"
    printf '#!/bin/sh\nexit 0\n' >"$work/build/bin/planted_bugs"
    chmod +x "$work/build/bin/planted_bugs"
    expect 0 "every planted bug was caught by its tool" -- env COMPUTE_SANITIZER="$fake/compute-sanitizer" \
      WORKBOOK_GPU_FAKE=present "$root/scripts/sanitize.sh" --planted --no-build --build-dir "$work/build"
    # ... and a chapter's solutions on the small shapes picked from the test list.
    printf '#!/bin/sh\ncat "%s"\n' "$fixtures/gtest-list-ch01-solution.txt" >"$work/build/bin/ch01_solution_tests"
    chmod +x "$work/build/bin/ch01_solution_tests"
    expect 0 "14 tests on small shapes" -- env COMPUTE_SANITIZER="$fake/compute-sanitizer" \
      WORKBOOK_GPU_FAKE=present "$root/scripts/sanitize.sh" ch01 --solution --no-build --build-dir "$work/build"
    expect 0 "matrix_add/f32/v3_vectorized.rows17_cols1025_pad3" -- env COMPUTE_SANITIZER="$fake/compute-sanitizer" \
      WORKBOOK_GPU_FAKE=present "$root/scripts/sanitize.sh" ch01 --solution --no-build --build-dir "$work/build"
    expect 0 "clean: no tool found anything" -- env COMPUTE_SANITIZER="$fake/compute-sanitizer" \
      WORKBOOK_GPU_FAKE=present "$root/scripts/sanitize.sh" ch01 --solution --no-build --build-dir "$work/build"
    ;;
  resource_summary)
    mkdir -p "$work/build/bin"
    printf '#!/bin/sh\nexit 0\n' >"$work/build/bin/ch01_bench"
    chmod +x "$work/build/bin/ch01_bench"
    expect 0 "solution +sm_90 +168 +8192 +24 +16 +ch04::solution::.*sgemm_registers<(\(int\))?128, (\(int\))?128, .*<- local memory" -- \
      env CUOBJDUMP="$fake/cuobjdump" "$root/scripts/resources.sh" ch01 --no-build --build-dir "$work/build"
    expect 0 "LDG.E.128" -- env CUOBJDUMP="$fake/cuobjdump" "$root/scripts/resources.sh" ch01 --no-build \
      --build-dir "$work/build" --sass --kernel vector_add
    expect 1 "no kernel matches 'nothing_like_this'" -- env CUOBJDUMP="$fake/cuobjdump" "$root/scripts/resources.sh" ch01 \
      --no-build --build-dir "$work/build" --kernel nothing_like_this
    ;;
  bad_chapter)
    for script in sanitize.sh profile.sh resources.sh; do
      expect 2 "there is no chapter ch99" -- "$root/scripts/$script" ch99
      expect 2 "'banana' is not a chapter" -- "$root/scripts/$script" banana
      expect 2 "unknown option '--frobnicate'" -- "$root/scripts/$script" ch01 --frobnicate
    done
    expect 2 "unknown tool 'valgrind'" -- "$root/scripts/sanitize.sh" ch01 --tools memcheck,valgrind
    expect 2 "--clock-control is none or base" -- "$root/scripts/profile.sh" ch01 --clock-control fast
    # A missing tool or GPU: a clear message and a non-zero exit (77 when ctest asks for it).
    expect 1 "COMPUTE_SANITIZER=/nonexistent is not an executable" -- env COMPUTE_SANITIZER=/nonexistent \
      "$root/scripts/sanitize.sh" ch01
    expect 77 "Nsight Compute \(ncu\) not found" -- env NCU=/nonexistent "$root/scripts/profile.sh" ch01 --skip-code 77
    expect 1 "cuobjdump not found" -- env CUOBJDUMP=/nonexistent "$root/scripts/resources.sh" ch01
    expect 1 "cannot sanitize: no NVIDIA GPU is visible" -- env COMPUTE_SANITIZER="$fake/compute-sanitizer" \
      WORKBOOK_GPU_FAKE=none "$root/scripts/sanitize.sh" ch01
    expect 77 "cannot profile: no NVIDIA GPU is visible" -- env NCU="$fake/ncu" WORKBOOK_GPU_FAKE=none \
      "$root/scripts/profile.sh" ch01 --skip-code 77
    ;;
  gpu_suite_bad_input)
    # Bad arguments are refused (exit 2) before the GPU is looked for; no GPU: exit 1, said so.
    expect 2 "unknown step 'nope'.*programs large learner" -- "$root/scripts/gpu-suite.sh" --steps "build nope" --out "$work/o"
    expect 2 "unknown class 'polite'" -- "$root/scripts/gpu-suite.sh" --leaderboard-classes polite --out "$work/o"
    expect 2 "unknown argument '--frobnicate'" -- "$root/scripts/gpu-suite.sh" --frobnicate
    expect 0 "programs: each chapter's solution program" -- "$root/scripts/gpu-suite.sh" --help
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
      expect 1 "no NVIDIA GPU is visible" -- "$root/scripts/gpu-suite.sh" --steps "large learner" --out "$work/o"
      [ ! -e "$work/o" ] || fail "a refused run left $work/o behind"
    fi
    ;;
  test_flags)
    # A chapter's test program refuses unknown flags and contradictory ones, exit status 2,
    # before it looks for a GPU; --large-cases keeps only the large cases, --small-cases all but them.
    tests=${3:?test_flags needs the test program}
    expect 2 "unknown argument '--nonsense'" -- "$tests" --nonsense
    expect 2 "Give one of the two" -- "$tests" --large-cases --exercise ex1_vector_add
    expect 0 "n2147483647" -- "$tests" --large-cases --gtest_list_tests
    if "$tests" --large-cases --gtest_list_tests | grep -q "n1025$"; then
      echo "check.sh: --large-cases listed a small case (n1025)" >&2
      exit 1
    fi
    expect 2 "exclude each other" -- "$tests" --large-cases --small-cases
    expect 2 "Give one of the two" -- "$tests" --small-cases --exercise ex1_vector_add
    expect 0 "n1025" -- "$tests" --small-cases --gtest_list_tests
    if "$tests" --small-cases --gtest_list_tests | grep -q "n2147483647$"; then
      echo "check.sh: --small-cases listed a large case (n2147483647)" >&2
      exit 1
    fi
    ;;
  bench_flags)
    # A chapter's benchmark refuses bad flags (its own and Google Benchmark's) with a message
    # naming the flag and listing the known ones, exit status 2, before it looks for a GPU.
    bench=${3:?bench_flags needs the benchmark program}
    expect 2 "unknown option '--nonsense'" -- "$bench" --nonsense
    expect 2 "--samples: -5 is out of range" -- "$bench" --samples=-5
    expect 2 "--samples: 'abc' is not a whole number" -- "$bench" --samples=abc
    expect 2 "--benchmark_repetitions: 'abc' is not a whole number" -- "$bench" --benchmark_repetitions=abc
    expect 2 "--benchmark_format: 'xml' is not one of console\|json\|csv" -- "$bench" --benchmark_format=xml
    expect 2 "Google Benchmark's flags are --benchmark_filter" -- "$bench" --benchmark_nonsense=1
    expect 2 "--benchmark_min_time: '-1' is not a number of seconds" -- "$bench" --benchmark_min_time=-1
    expect 2 "--benchmark_filter: '\(v3' is not a regular expression" -- "$bench" "--benchmark_filter=(v3"
    expect 2 "--json and --benchmark_out both name a results file" -- "$bench" --json=a.json --benchmark_out=b.json
    expect 2 "--benchmark_repetitions=N" -- "$bench" --benchmark_repetitions=0
    expect 0 "--benchmark_filter=REGEX" -- "$bench" --help
    # Without a GPU, good flags end in a clear message (and no results file).
    . "$root/scripts/lib/common.sh"
    if [ -n "$(wb_gpu_missing_reason)" ]; then
      expect 1 "cannot benchmark: .*The command line is valid" -- "$bench" --benchmark_filter=v3 --benchmark_format=json
    fi
    ;;
  new_chapter_bad_input)
    # On a stand-in tree of its own (--root), so that whatever else happens in the repository
    # while the tests run (a chapter being scaffolded, presets being edited) cannot change the
    # outcome: it holds chapter 01 and the real CMakePresets.json, and nothing else.
    tree=$work/tree
    mkdir -p "$tree/chapters/ch01_indexing" && cp "$root/CMakePresets.json" "$tree/" || fail "cannot make $tree"
    scaffold() { "$root/scripts/new-chapter.sh" "$@" --root "$tree"; }
    expect 2 "NN must be exactly two digits" -- scaffold 5 wmma
    expect 2 "NN must be 01 to 99" -- scaffold 00 setup
    expect 2 "chapter 01 exists already" -- scaffold 01 indexing
    expect 2 "must be lower case letters" -- scaffold 42 Bad-Name
    expect 2 "must not hold '__'" -- scaffold 42 a__b
    expect 2 "usage: new-chapter.sh NN name" -- scaffold 42
    expect 2 "is not a kernel-workbook tree" -- "$root/scripts/new-chapter.sh" 42 throwaway --root "$work/nowhere"
    expect 0 "would create chapter 42 \(throwaway\)" -- scaffold 42 throwaway --dry-run
    # Byte order (LC_ALL=C): a UTF-8 locale's collation puts ./chapters before ./CMakePresets.json.
    listing=$(cd "$tree" && find . | LC_ALL=C sort | tr '\n' ' ')
    [ "$listing" = ". ./CMakePresets.json ./chapters ./chapters/ch01_indexing " ] ||
      fail "--dry-run wrote into the tree, which now holds: $listing"
    cmp -s "$root/CMakePresets.json" "$tree/CMakePresets.json" || fail "--dry-run changed CMakePresets.json"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "PASS ($case_name)"
