#!/usr/bin/env bash
# Profiles your kernel and the solution's best step on one shape with Nsight Compute, and
# prints them side by side: DRAM and SM throughput, occupancy, registers and spills, shared
# memory, L1/L2 hit rates, sectors per request, bank conflicts, tensor pipes; with a hint
# wherever your number is far from the solution's. If your kernel is not written yet, it
# shows the solution ladder's first step beside its last instead, and says so.
#
# usage: scripts/profile.sh chNN [options]
#
#   --op OP              which op (default: the one with the longest solution ladder)
#   --shape SHAPE        which shape, as the benchmark names it, or a unique part of the name
#                        (default: the largest; e.g. --shape 8192x8192, --shape n=67108864)
#   --student IMPL       your case to profile (default: student)
#   --solution IMPL      the case to compare with (default: the last ladder step for the op)
#   --ladder             compare the ladder's first and last steps, whatever your kernel does
#   --clock-control C    none (default): the GPU keeps its own clocks, as in the benchmark;
#                        base: ncu locks them at base clock (its own default; steadier
#                        counters, longer times)
#   --preset NAME        configure preset to build with (default: profile, -lineinfo)
#   --build-dir DIR      where to build (default: build/profile-chNN)
#   --no-build           use what DIR already holds
#   --out DIR            where the .ncu-rep reports go (default: results/profile); open them
#                        with `ncu-ui` or `ncu --import FILE --page details`
#   --skip-code N        exit with N (instead of 1) when no GPU or no ncu is found
#
# Profiling needs access to the GPU's counters: as root, or with the driver option
# NVreg_RestrictProfilingToAdminUsers=0 (ncu says ERR_NVGPUCTRPERM otherwise).
set -uo pipefail
wb_prog=profile.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }

chapter="" op="" shape="" student_impl="" solution_impl="" ladder=0 clock=none preset=profile
build_dir="" no_build=0 out_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --ladder) ladder=1; shift ;;
    --no-build) no_build=1; shift ;;
    --op|--shape|--student|--solution|--clock-control|--preset|--build-dir|--out|--skip-code)
      [ $# -ge 2 ] || wb_usage_error "$1 needs a value"
      case "$1" in
        --op) op=$2 ;;
        --shape) shape=$2 ;;
        --student) student_impl=$2 ;;
        --solution) solution_impl=$2 ;;
        --clock-control) clock=$2 ;;
        --preset) preset=$2 ;;
        --build-dir) build_dir=$2 ;;
        --out) out_dir=$2 ;;
        --skip-code) wb_missing_code=$2 ;;
      esac
      shift 2 ;;
    --*=*)
      key=${1%%=*} value=${1#*=}
      set -- "$key" "$value" "${@:2}"
      ;;
    -*) wb_usage_error "unknown option '$1'" ;;
    *) chapter=$(wb_the_chapter "$chapter" "$1") || exit $?; shift ;;
  esac
done
[ -n "$chapter" ] || wb_usage_error "which chapter? e.g. $wb_prog ch02   (chapters here: $(wb_chapters))"
case "$clock" in none|base) ;; *) wb_usage_error "--clock-control is none or base, not '$clock'" ;; esac

# --- can this machine run it? ------------------------------------------------------------
ncu=$(wb_find_cuda_tool ncu) ||
  wb_cannot_run "Nsight Compute (ncu) not found (looked on PATH, in \$CUDA_HOME/bin, /usr/local/cuda/bin" \
    "and /opt/nvidia/nsight-compute). It ships with the CUDA toolkit (package nsight-compute-<version>)."
python=$(command -v python3) || wb_die "python3 is needed to read ncu's CSV export; install python3"
reason=$(wb_gpu_missing_reason)
[ -z "$reason" ] || wb_cannot_run "cannot profile: $reason."

# --- build and list the benchmark's cases -------------------------------------------------
build_dir=${build_dir:-$wb_root/build/profile-$chapter}
build_dir=$(mkdir -p "$build_dir" && cd "$build_dir" && pwd) || wb_die "cannot use the build folder '$build_dir'"
[ "$no_build" = 1 ] || wb_build "$preset" "$build_dir" "$chapter" "${chapter}_bench"
bench=$build_dir/bin/${chapter}_bench
[ -x "$bench" ] || wb_die "$bench is not built (build it, or drop --no-build)"
out_dir=${out_dir:-$wb_root/results/profile}
mkdir -p "$out_dir" || wb_die "cannot create $out_dir"
wb_tmpdir
tool="$wb_root/scripts/lib/profile_tool.py"

# Listing runs no kernel of the chapter; it writes every case, with its role, to a JSON file.
if ! WORKBOOK_PROFILE_RANGE='' "$bench" --benchmark_list_tests=true --benchmark_out="$wb_tmp/list.json" >"$wb_tmp/list.log" 2>&1 &&
   [ ! -s "$wb_tmp/list.json" ]; then
  tail -n 5 "$wb_tmp/list.log" >&2
  wb_die "${chapter}_bench could not list its cases"
fi
[ -s "$wb_tmp/list.json" ] || { tail -n 5 "$wb_tmp/list.log" >&2; wb_die "${chapter}_bench wrote no case list"; }
plan_args=()
[ -n "$op" ] && plan_args+=(--op "$op")
[ -n "$shape" ] && plan_args+=(--shape "$shape")
[ -n "$student_impl" ] && plan_args+=(--student "$student_impl")
[ -n "$solution_impl" ] && plan_args+=(--solution "$solution_impl")
plan=$("$python" "$tool" plan "$wb_tmp/list.json" "${plan_args[@]}") || exit 2
eval "$plan"

metrics_full=$("$python" "$tool" metrics)
metrics_core=$("$python" "$tool" metrics --core)

# profile_case IMPL: one ncu run of one benchmark case (the plan's op and shape, this variant). Sets `csv` (the export) and
# `verdict` (the benchmark's verdict for the case: pass, not implemented, wrong ...).
profile_case() {
  local impl=$1 tag
  tag=$(printf '%s-%s-%s-%s' "$chapter" "$plan_op" "$plan_shape" "$impl" | tr -c 'A-Za-z0-9_.=-' '_')
  local rep=$out_dir/$tag log=$wb_tmp/$tag.log
  csv=$wb_tmp/$tag.csv
  local metrics=$metrics_full attempt
  for attempt in 1 2; do
    rm -f "$rep.ncu-rep"
    WORKBOOK_PROFILE_RANGE=1 "$ncu" --profile-from-start off --clock-control "$clock" --metrics "$metrics" \
      --export "$rep" --force-overwrite \
      "$bench" --op="$plan_op" --shape="$plan_shape" --impl="$impl" --benchmark_repetitions=1 --benchmark_min_time=0 \
      --benchmark_out="$wb_tmp/$tag.json" >"$log" 2>&1
    [ -s "$rep.ncu-rep" ] && break
    # Some metrics exist only on some GPUs: retry once with the core list.
    if [ "$attempt" = 1 ] && grep -qi 'metric' "$log" && ! grep -q 'ERR_NVGPUCTRPERM' "$log"; then
      metrics=$metrics_core
      echo "$wb_prog: this ncu refused an optional metric; profiling again without the tensor-pipe and sector-use metrics"
      continue
    fi
    break
  done
  verdict=$("$python" "$tool" verdict "$wb_tmp/$tag.json" "$impl" 2>/dev/null || echo "unknown")
  if grep -q 'ERR_NVGPUCTRPERM' "$log"; then
    wb_cannot_run "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM). Run as root, or set the" \
      "driver option NVreg_RestrictProfilingToAdminUsers=0 (see NVIDIA's ERR_NVGPUCTRPERM page)."
  fi
  if [ ! -s "$rep.ncu-rep" ]; then
    cp "$log" "$out_dir/$tag.log"
    csv=""
    return 1
  fi
  "$ncu" --import "$rep.ncu-rep" --csv --page raw --print-units base >"$csv" 2>"$wb_tmp/$tag.import.log" || {
    cat "$wb_tmp/$tag.import.log" >&2
    wb_die "ncu could not export $rep.ncu-rep"
  }
  reports+=("${rep#"$wb_root"/}.ncu-rep")
  return 0
}

ncu_version=$("$ncu" --version 2>/dev/null | sed -n 's/.*Version \([^ ]*\).*/\1/p' | head -n 1)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "$wb_prog: $chapter $plan_op $plan_shape on ${gpu:-the GPU}, Nsight Compute ${ncu_version:-?}," \
     "--clock-control $clock$([ "$clock" = none ] && echo " (clocks left alone; --clock-control base locks them)")"
echo "  ops: $plan_ops"
echo "  shapes of $plan_op: $plan_shapes"

reports=()
sides=()
note=""
if [ "$ladder" = 0 ] && [ -n "$plan_student" ]; then
  if profile_case "$plan_student"; then
    sides+=(--side "$plan_student (yours)=$csv")
  else
    case "$verdict" in
      "not implemented")
        note="Your $plan_op is not implemented yet, so here is the solution ladder's first step beside its last instead." ;;
      wrong|fault|"launch error")
        note="Your $plan_op fails its check on $plan_shape ($verdict), so it was not profiled: run ctest --preset $chapter first. Here is the ladder's first step beside its last instead." ;;
      *)
        echo "$wb_prog: profiling $plan_student produced no report; the end of ncu's log:" >&2
        tail -n 15 "$out_dir"/*"$plan_student"*.log 2>/dev/null | tail -n 15 >&2
        wb_die "no report for $plan_student (verdict: $verdict)" ;;
    esac
  fi
elif [ "$ladder" = 0 ]; then
  note="This op has no exercise of yours; showing the solution ladder's first step beside its last."
fi
if [ ${#sides[@]} = 0 ]; then
  # The ladder's first step beside its best: the chapter's lesson in numbers.
  if [ -n "$plan_first" ] && [ "$plan_first" != "$plan_best" ]; then
    profile_case "$plan_first" || wb_die "no report for $plan_first (verdict: $verdict; log in $out_dir)"
    sides+=(--side "$plan_first (ladder's first)=$csv")
  fi
  best_label="$plan_best (ladder's best)"
else
  best_label="$plan_best (solution)"
fi
profile_case "$plan_best" || wb_die "no report for $plan_best (verdict: $verdict; log in $out_dir)"
sides+=(--side "$best_label=$csv")

echo
[ -z "$note" ] || echo "$note"
"$python" "$tool" table "${sides[@]}" || exit 1
echo
echo "reports (open with ncu-ui, or: ncu --import FILE --page details):"
printf '  %s\n' "${reports[@]}"
