#!/usr/bin/env bash
# On a machine with a GPU: runs every learner tool once and keeps what each printed.
#
#   1. scripts/sanitize.sh --planted            the planted bugs must be caught
#   2. ctest -L sanitize                         every chapter's solutions must be clean
#   3. scripts/profile.sh chNN                   each chapter: yours (or the ladder's first) beside the best
#   4. scripts/resources.sh chNN                 registers, shared memory, spills
#   5. scripts/plot_roofline.py, plot_progress.py on the benchmark results (the benchmarks run
#      when --results-dir does not hold them)
#
# usage: scripts/tools-gpu-check.sh [--build-dir DIR] [--results-dir DIR] [--out DIR] [--chapters "ch01 ch02"]
#   --build-dir    a configured build of every chapter (default: build/all-solutions, as
#                  scripts/gpu-suite.sh leaves it; built here if missing)
#   --results-dir  where chNN-bench.json files are (e.g. a gpu-suite output folder)
#   --out          where the logs and pictures go (default: results/tools-<date>)
set -uo pipefail
wb_prog=tools-gpu-check.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

build_dir=$wb_root/build/all-solutions results_dir="" out="" chapters=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --build-dir|--results-dir|--out|--chapters)
      [ $# -ge 2 ] || wb_usage_error "$1 needs a value"
      case "$1" in
        --build-dir) build_dir=$2 ;;
        --results-dir) results_dir=$2 ;;
        --out) out=$2 ;;
        --chapters) chapters=$2 ;;
      esac
      shift 2 ;;
    *) wb_usage_error "unknown argument '$1'" ;;
  esac
done
reason=$(wb_gpu_missing_reason)
[ -z "$reason" ] || wb_cannot_run "$reason; this script runs the GPU tools"
chapters=${chapters:-$(wb_chapters)}
out=${out:-$wb_root/results/tools-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" && out=$(cd "$out" && pwd) || wb_die "cannot create $out"
cd "$wb_root" || exit 1
summary=$out/summary.txt
: >"$summary"
note() { printf '%s\n' "$*" | tee -a "$summary"; }
run() {  # run NAME COMMAND...: output to NAME.log, one line in the summary
  local name=$1
  shift
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  note "$name: exit $rc  ($*)"
  return $rc
}

if [ ! -x "$build_dir/bin/planted_bugs" ]; then
  run build bash -c "cmake --preset all-solutions -B '$build_dir' && cmake --build '$build_dir' -j $(nproc)"
fi
run sanitize-planted scripts/sanitize.sh --planted --no-build --build-dir "$build_dir"
run sanitize-label ctest --test-dir "$build_dir" -L sanitize --output-on-failure -j 4
for ch in $chapters; do
  [ -x "$build_dir/bin/${ch}_bench" ] || { note "$ch: no ${ch}_bench in $build_dir"; continue; }
  run "profile-$ch" scripts/profile.sh "$ch" --no-build --build-dir "$build_dir" --out "$out/ncu"
  run "resources-$ch" scripts/resources.sh "$ch" --no-build --build-dir "$build_dir"
  json=""
  for candidate in "${results_dir:-/nonexistent}/$ch-bench.json" "$out/$ch-bench.json"; do
    [ -s "$candidate" ] && json=$candidate && break
  done
  if [ -z "$json" ]; then
    run "bench-$ch" "$build_dir/bin/${ch}_bench" --benchmark_out="$out/$ch-bench.json"
    json=$out/$ch-bench.json
  fi
  [ -s "$json" ] && run "roofline-$ch" python3 scripts/plot_roofline.py "$json" --out "$out/plots"
done
mapfile -t jsons < <(for ch in $chapters; do
  for c in "${results_dir:-/nonexistent}/$ch-bench.json" "$out/$ch-bench.json"; do [ -s "$c" ] && echo "$c" && break; done
done)
[ ${#jsons[@]} -gt 0 ] && run progress python3 scripts/plot_progress.py "${jsons[@]}" --out "$out/plots"

echo
echo "================ what each tool printed ================"
for f in "$out"/sanitize-planted.log "$out"/profile-*.log "$out"/resources-*.log; do
  [ -f "$f" ] || continue
  echo "--- ${f##*/}"
  cat "$f"
done
echo "--- sanitize-label.log (end)"
tail -n 25 "$out/sanitize-label.log" 2>/dev/null
echo
cat "$summary"
echo "logs, reports and pictures: $out"
