#!/usr/bin/env bash
# Runs a chapter's tests on a few small shapes under compute-sanitizer (memcheck, racecheck,
# synccheck, initcheck) and prints a short summary: tool, findings, kernel, source line.
#
# usage: scripts/sanitize.sh chNN [--solution] [options]     your kernels, or the solutions
#        scripts/sanitize.sh --planted [options]              shows the tools catching planted bugs
#
#   --solution          the solution ladder (v1 ... vN) instead of your kernels
#   --with-reference    with --solution: the library reference too (cuBLAS/CUB kernels)
#   --tools LIST        comma-separated subset of memcheck,racecheck,synccheck,initcheck
#   --filter PATTERN    your own --gtest_filter instead of the small shapes picked for you
#   --preset NAME       configure preset to build with (default: profile, which adds -lineinfo
#                       so findings name the source line; `debug` adds -G: slower, exact lines)
#   --build-dir DIR     where to build (default: build/sanitize-chNN)
#   --no-build          use what DIR already holds
#   --log-dir DIR       keep the full sanitizer logs there (default: DIR/sanitize-logs)
#   --skip-code N       exit with N (instead of 1) when no GPU or no compute-sanitizer is found
#
# Exit status: 0 clean, 1 findings or failure, 2 bad usage. The sanitizer makes kernels 10 to
# 100 times slower, so only small shapes run (n1025, rows33_cols65, M129_N129_K129 ...).
set -uo pipefail
wb_prog=sanitize.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

all_tools="memcheck racecheck synccheck initcheck"
chapter="" solution=0 with_reference=0 tools="$all_tools" filter="" preset=profile
build_dir="" no_build=0 log_dir="" planted=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --solution) solution=1; shift ;;
    --with-reference) with_reference=1; shift ;;
    --planted) planted=1; shift ;;
    --no-build) no_build=1; shift ;;
    --tools|--filter|--preset|--build-dir|--log-dir|--skip-code)
      [ $# -ge 2 ] || wb_usage_error "$1 needs a value"
      case "$1" in
        --tools) tools=${2//,/ } ;;
        --filter) filter=$2 ;;
        --preset) preset=$2 ;;
        --build-dir) build_dir=$2 ;;
        --log-dir) log_dir=$2 ;;
        --skip-code) wb_missing_code=$2 ;;
      esac
      shift 2 ;;
    --tools=*) tools=${1#--tools=}; tools=${tools//,/ }; shift ;;
    --filter=*) filter=${1#--filter=}; shift ;;
    --preset=*) preset=${1#--preset=}; shift ;;
    --build-dir=*) build_dir=${1#--build-dir=}; shift ;;
    --log-dir=*) log_dir=${1#--log-dir=}; shift ;;
    --skip-code=*) wb_missing_code=${1#--skip-code=}; shift ;;
    -*) wb_usage_error "unknown option '$1'" ;;
    *) chapter=$(wb_the_chapter "$chapter" "$1") || exit $?; shift ;;
  esac
done
for t in $tools; do
  case " $all_tools " in
    *" $t "*) ;;
    *) wb_usage_error "unknown tool '$t'; the tools are: ${all_tools// /, }" ;;
  esac
done
if [ "$planted" = 1 ]; then
  [ -z "$chapter" ] || wb_usage_error "--planted runs the planted bugs, not a chapter"
elif [ -z "$chapter" ]; then
  wb_usage_error "which chapter? e.g. $wb_prog ch01   (chapters here: $(wb_chapters))"
fi
[ "$with_reference" = 0 ] || [ "$solution" = 1 ] || wb_usage_error "--with-reference goes with --solution"

# --- can this machine run it? ------------------------------------------------------------
sanitizer=$(wb_find_cuda_tool compute-sanitizer) ||
  wb_cannot_run "compute-sanitizer not found (looked on PATH, in \$CUDA_HOME/bin and /usr/local/cuda/bin)." \
    "It ships with the CUDA toolkit (Debian/Ubuntu package cuda-sanitizer-<version>); put its bin folder on PATH."
reason=$(wb_gpu_missing_reason)
[ -z "$reason" ] || wb_cannot_run "cannot sanitize: $reason. The sanitizer runs kernels, so it needs a GPU."

# --- build --------------------------------------------------------------------------------
if [ "$planted" = 1 ]; then
  first_chapter=$(wb_chapters | awk '{print $1}')
  build_dir=${build_dir:-$wb_root/build/sanitize-planted}
  exe_name=planted_bugs
  build_chapters=$first_chapter
else
  build_dir=${build_dir:-$wb_root/build/sanitize-$chapter}
  exe_name=${chapter}_tests
  [ "$solution" = 0 ] || exe_name=${chapter}_solution_tests
  build_chapters=$chapter
fi
build_dir=$(mkdir -p "$build_dir" && cd "$build_dir" && pwd) || wb_die "cannot use the build folder '$build_dir'"
if [ "$no_build" = 0 ]; then
  wb_build "$preset" "$build_dir" "$build_chapters" "$exe_name"
fi
exe=$build_dir/bin/$exe_name
[ -x "$exe" ] || wb_die "$exe is not built (build it, or drop --no-build)"
log_dir=${log_dir:-$build_dir/sanitize-logs}
mkdir -p "$log_dir" || wb_die "cannot create the log folder $log_dir"
lineinfo=$(grep -s -E '^CMAKE_CUDA_FLAGS:STRING=.*(-lineinfo|-G)' "$build_dir/CMakeCache.txt" >/dev/null && echo yes || echo no)
[ "$solution" = 1 ] || lineinfo=yes  # the learner's files are always built with -lineinfo

# Kernels under the sanitizer are slow: give each sync more time than the usual 60 s.
export WORKBOOK_KERNEL_TIMEOUT=${WORKBOOK_KERNEL_TIMEOUT:-900}

# run_tool TOOL LOG ARGS...: one compute-sanitizer run; the summary lines go to LOG.summary.
run_tool() {
  local tool=$1 log=$2
  shift 2
  "$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 200 "$@" >"$log" 2>&1
  local rc=$?
  awk -v root="$wb_root" -f "$wb_root/scripts/lib/sanitizer_summary.awk" "$log" >"$log.summary"
  return $rc
}

# field KIND N FILE: the Nth tab-separated field of the KIND line of a summary.
field() { awk -F'\t' -v k="$1" -v n="$2" '$1 == k { print $n; exit }' "$3"; }

print_findings() {  # TOOL SUMMARY_FILE
  awk -F'\t' -v tool="$1" '$1 == "FINDING" {
    printf "  %-9s %4sx  %s\n             in %s  at %s\n", tool, $2, $3, $4, $5 }' "$2"
}

# --- planted bugs ------------------------------------------------------------------------
if [ "$planted" = 1 ]; then
  echo "$wb_prog: planted bugs (harness/tests/sanitize_planted.cu), compute-sanitizer $("$sanitizer" --version 2>/dev/null | sed -n 's/.*Version //p' | head -n 1)"
  printf '%-8s %-10s %-10s %-9s %s\n' case tool expected findings verdict
  ok=1
  for spec in "--oob memcheck caught planted_oob_write" "--race racecheck caught neighbour_sum" \
              "--uninit initcheck caught copy_kernel" "--clean memcheck clean -" "--clean racecheck clean -" \
              "--clean synccheck clean -" "--clean initcheck clean -"; do
    set -- $spec
    switch=$1 tool=$2 expect=$3 kernel=$4
    log=$log_dir/planted${switch#-}-$tool.log
    run_tool "$tool" "$log" "$exe" "$switch"
    rc=$?
    n=$(field SUMMARY 2 "$log.summary")
    if [ "$rc" = 77 ] && grep -q 'planted_bugs: cannot run' "$log"; then
      grep 'planted_bugs: cannot run' "$log" >&2
      wb_cannot_run "the planted bugs cannot run on this machine"
    fi
    if [ "$expect" = caught ]; then
      if [ "${n:--1}" -gt 0 ] && grep -q "FINDING.*$kernel" "$log.summary"; then verdict=caught; else verdict=MISSED; ok=0; fi
    else
      if [ "${n:--1}" = 0 ]; then verdict=clean; else verdict="FALSE ALARM"; ok=0; fi
    fi
    printf '%-8s %-10s %-10s %-9s %s\n' "${switch#--}" "$tool" "$expect" "${n/#-1/?}" "$verdict"
    [ "$expect" = caught ] && print_findings "$tool" "$log.summary" | head -n 4
  done
  echo "logs: $log_dir"
  if [ "$ok" = 1 ]; then
    echo "$wb_prog: every planted bug was caught by its tool, and the fixed kernels are clean."
    exit 0
  fi
  echo "$wb_prog: a planted bug went unnoticed or a fixed kernel was flagged: see the logs above." >&2
  exit 1
fi

# --- pick the tests: small shapes only ----------------------------------------------------
# Tests are named <op>/<dtype>/<variant>.<shape> and listed smallest shape first. Per kernel,
# two are picked: the largest whose sizes multiply to at most 70000 (a ragged tail after full
# blocks, rows of a few hundred) and the one before it; the refusal tests and the broken
# kernels of the self-tests are left out.
if [ -z "$filter" ]; then
  if ! list=$("$exe" --gtest_list_tests 2>&1); then
    echo "$list" | tail -n 5 >&2
    wb_die "$exe --gtest_list_tests failed"
  fi
  role=student
  if [ "$solution" = 1 ]; then role=solution; [ "$with_reference" = 1 ] && role='solution+reference'; fi
  filter=$(echo "$list" | awk -v role="$role" '
    /^[^ ]/ {
      suite = $1; v = suite; sub(/\.$/, "", v); n = split(v, parts, "/"); variant = parts[n]
      if (variant ~ /^ex[0-9]/) r = "student"; else if (variant ~ /^v[0-9]+_/) r = "solution"; else r = "reference"
      if (suite ~ /\/broken\.$/) r = "broken"
      next
    }
    /^  [^ ]/ {
      name = $1
      if (index(role, r) == 0 || name ~ /^(refuses_|seeded_random)/) next
      prod = 1; rest = name
      while (match(rest, /[0-9]+/)) { x = substr(rest, RSTART, RLENGTH) + 0; prod *= (x > 0 ? x : 1); rest = substr(rest, RSTART + RLENGTH) }
      if (prod > 70000) next
      if (!(suite in best) || prod > best_prod[suite]) { second[suite] = best[suite]; best[suite] = suite name; best_prod[suite] = prod }
    }
    END {
      out = ""
      for (k in best) {
        out = out (out == "" ? "" : ":") best[k]
        if (second[k] != "") out = out ":" second[k]
      }
      print out
    }')
  if [ -z "$filter" ]; then
    wb_die "found no small-shape tests of the $role kernels in $exe_name; pass --filter 'op/dtype/variant.*' yourself"
  fi
fi
count=$(echo "$filter" | tr ':' '\n' | grep -c . )
echo "$wb_prog: $chapter, $([ "$solution" = 1 ] && echo "the solutions" || echo "your kernels"): $count tests on small shapes" \
     "(source lines: $([ "$lineinfo" = yes ] && echo "yes, -lineinfo" || echo "no; use the profile or debug preset"))"
echo "$filter" | tr ':' '\n' | sed 's/^/  /' | sort | head -n 12
[ "$count" -le 12 ] || echo "  ... and $((count - 12)) more"

# --- run each tool ------------------------------------------------------------------------
status=0
printf '\n%-10s %-9s %-22s %s\n' tool findings "tests pass/fail/skip" "log"
for tool in $tools; do
  log=$log_dir/$chapter$([ "$solution" = 1 ] && echo -solution)-$tool.log
  run_tool "$tool" "$log" "$exe" --gtest_filter="$filter" --gtest_brief=1
  rc=$?
  n=$(field SUMMARY 2 "$log.summary")
  # No summary line (another compute-sanitizer version?): its exit status still tells, as
  # --error-exitcode 86 is returned only when the tool found something.
  if [ "$n" = -1 ] && [ "$rc" != 86 ] && ! grep -q '^FINDING' "$log.summary" &&
     [ "$(field TESTS 2 "$log.summary")" != -1 ]; then
    n=0
  fi
  p=$(field TESTS 2 "$log.summary") f=$(field TESTS 3 "$log.summary") s=$(field TESTS 4 "$log.summary")
  [ "$p" = -1 ] && p='?' ; [ "$f" = -1 ] && f=0 ; [ "$s" = -1 ] && s=0
  printf '%-10s %-9s %-22s %s\n' "$tool" "${n/#-1/?}" "$p/$f/$s" "${log#"$wb_root"/}"
  if [ "$p" = 0 ] && [ "$s" != 0 ] && [ "$f" = 0 ]; then
    grep -m 1 -A 1 ': Skipped$' "$log" | tail -n 1 >&2
    wb_cannot_run "every test was skipped under $tool (see the reason above), so nothing was checked"
  fi
  [ "$n" = 0 ] && [ "$f" = 0 ] || status=1
  [ "$n" = -1 ] && echo "  $tool printed no summary: did it run? see the log" && tail -n 3 "$log" | sed 's/^/  /'
  if [ "$f" != 0 ] && [ "$p" = 0 ] && grep -q "not implemented yet" "$log" && [ "${n:-0}" -le 0 ]; then
    wb_cannot_run "nothing to check under $tool yet: every picked test is not implemented (write your kernels first)"
  elif [ "$f" != 0 ] && grep -q "not implemented yet" "$log"; then
    echo "  $f tests failed under $tool: your kernels are not implemented yet (write them first)"
  elif [ "$f" != 0 ]; then
    echo "  $f tests failed under $tool (a fault or wrong values): see the log"
  fi
done

findings=$(for tool in $tools; do
  log=$log_dir/$chapter$([ "$solution" = 1 ] && echo -solution)-$tool.log
  print_findings "$tool" "$log.summary"
done)
if [ -n "$findings" ]; then
  echo
  echo "findings (identical ones grouped):"
  echo "$findings" | head -n 40
fi
echo
if [ "$status" = 0 ]; then
  echo "$wb_prog: clean: no tool found anything."
else
  echo "$wb_prog: see the findings above; the full reports are in $log_dir" >&2
fi
exit $status
