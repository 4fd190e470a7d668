#!/usr/bin/env bash
# Times the learner's run of each chapter on a GPU machine, as `ctest --preset chNN` runs it
# (one test per exercise, eight at a time), in a build folder that already holds the test
# programs; prints one row per chapter: seconds, ctest's verdict, the summary's first line.
#
# usage: scripts/gpu-learner-times.sh BUILD_DIR [--chapters "ch01 ch02"] [--jobs N] [--out DIR]
#   --out DIR   keep each chapter's whole output there (learner-chNN.log) and a JSON table
set -uo pipefail
wb_prog=gpu-learner-times.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

build="" chapters="" jobs=8 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --chapters) [ $# -ge 2 ] || wb_usage_error "--chapters needs a list"; chapters=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || wb_usage_error "--jobs needs a number"; jobs=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || wb_usage_error "--out needs a folder"; out=$2; shift 2 ;;
    -*) wb_usage_error "unknown option '$1'" ;;
    *) [ -z "$build" ] || wb_usage_error "one build folder ('$build' and '$1')"; build=$1; shift ;;
  esac
done
[ -n "$build" ] || wb_usage_error "which build folder? e.g. $wb_prog build/all"
[ -f "$build/CTestTestfile.cmake" ] || wb_die "$build is not a configured build folder"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || wb_usage_error "--jobs takes a positive number, not '$jobs'"
chapters=${chapters:-$(wb_chapters)}
out=${out:-$(mktemp -d)}
mkdir -p "$out" || wb_die "cannot create $out"

printf '%-6s %8s %-8s %s\n' chapter seconds ctest summary
json="["
for ch in $chapters; do
  log=$out/learner-$ch.log
  start=$(date +%s.%N)
  ctest --test-dir "$build" -L "^$ch-student\$" -j "$jobs" --output-on-failure >"$log" 2>&1
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  line=$(grep -m1 "^$ch, your kernels:" "$log" || echo "(no summary line)")
  verdict=$([ "$rc" = 0 ] && echo passed || echo "rc=$rc")
  printf '%-6s %8s %-8s %s\n' "$ch" "$secs" "$verdict" "$line"
  json+="$([ "$json" = "[" ] || echo ,){\"chapter\":\"$ch\",\"seconds\":$secs,\"rc\":$rc}"
done
echo "$json]" >"$out/learner-times.json"
