#!/usr/bin/env bash
# One job of the class leaderboard on a Slurm cluster: one student's files for one chapter.
# scripts/leaderboard.sh --slurm submits it as a job array (task = line of RUN/tasks.tsv):
#
#   sbatch --array=0-N ... tools/leaderboard/slurm-job.sh RUN_FOLDER
#
# On the node, in a fresh folder of its own: unpack the repository's sources, build the
# chapter from them (the repository only, with the compiler cache), copy the student's files
# over the stubs and rebuild the chapter's programs in the sandbox; then, with a GPU, the
# baseline (the repository's own programs), the tests and the benchmark in the sandbox;
# without one, the tests only (the host-side stage) and "no GPU on node". Last, one record
# file in RUN/records/, written whole or not at all. Nothing here holds a seed: the harness
# draws it inside the test and benchmark programs, after main starts (WORKBOOK_SEED_MODE).
set -uo pipefail

run=${1:?usage: slurm-job.sh RUN_FOLDER (submitted by scripts/leaderboard.sh --slurm)}
task=${SLURM_ARRAY_TASK_ID:?this is a Slurm array job: submit it with scripts/leaderboard.sh --slurm}
array=${SLURM_ARRAY_JOB_ID:?this is a Slurm array job}
job="${array}_${task}"
node=$(hostname -s 2> /dev/null || hostname)
say() { printf '[%s %s] %s\n' "$(date -u +%H:%M:%S)" "$job" "$*"; }
setting() { awk -F'\t' -v k="$1" '$1 == k { print substr($0, length(k) + 2) }' "$run/settings.tsv"; }

[ -f "$run/tasks.tsv" ] && [ -f "$run/settings.tsv" ] && [ -f "$run/src.tar" ] ||
  { say "the run folder $run is not readable from node $node (is it on a shared file system?)"; exit 1; }
IFS=$'\t' read -r _ sid ch entry_rel < <(awk -F'\t' -v t="$task" '$1 == t' "$run/tasks.tsv")
[ -n "${ch:-}" ] || { say "task $task is not in $run/tasks.tsv"; exit 1; }
timeout_s=$(setting timeout)
kernel_timeout=$(setting kernel_timeout)
arch=$(setting arch)
use_ncu=$(setting ncu)
unsafe=$(setting unsafe)
commit=$(setting commit)
record_file="$run/records/$task-$array.json"

umask 077
w=$(mktemp -d "${TMPDIR:-/tmp}/kernel-workbook-job.XXXXXX") || { say "cannot create a work folder on $node"; exit 1; }
w=$(cd "$w" && pwd -P)
cleanup() { chmod -R u+w -- "$w" 2> /dev/null; rm -rf -- "$w"; }
trap cleanup EXIT
trap 'say "stopped by a signal"; exit 143' TERM INT
mkdir -p "$w/src" "$w/cache" "$w/data" "$w/fifos" "$w/box"
tar -xf "$run/src.tar" -C "$w/src" || { say "cannot unpack $run/src.tar"; exit 1; }
# The bookkeeping and the sandbox, as the run's sources have them (with the results reader
# the bookkeeping imports).
cp -a "$w/src/tools/leaderboard" "$w/lb"
cp -a "$w/src/scripts/lib/wb_results.py" "$w/lb/"
lb="$w/lb/leaderboard.py"
# shellcheck source=sandbox.sh
. "$w/lb/sandbox.sh"
# The student's files wait in a folder whose name no build can guess.
e="$w/$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')/entry"
mkdir -p "$e"
cp -a -- "$run/$entry_rel/." "$e/" || { say "cannot read the entry $entry_rel"; exit 1; }
LOG_LIMIT=$((32 * 1024 * 1024))
sb_fifos="$w/fifos"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

gpu_name="" gpu_uuid="" no_gpu="" node_problem="" sandbox=none
write_record() {
  python3 "$lb" job-record --entry "$e" --out "$record_file" --run-id "${run##*/}" --task "$task" --job-id "$job" \
    --student-id "$sid" --chapter "$ch" --node "$node" --gpu-name "$gpu_name" --gpu-uuid "$gpu_uuid" \
    --no-gpu "$no_gpu" --node-problem "$node_problem" --sandbox "$sandbox" ||
    { say "could not write the record $record_file"; exit 1; }
  say "record written: $record_file"
}
# The node cannot run the job: recorded as such. No code of the student's has run then, so
# the record says the run's own rule (sandboxed unless --unsafe-no-sandbox).
problem() {
  node_problem="$1 (node $node)"
  say "$node_problem"
  [ "$unsafe" = 1 ] || sandbox=bubblewrap
  write_record
  exit 0
}

say "$ch, student $sid, on node $node"
# --- the sandbox ------------------------------------------------------------------------
sb_check "$(setting bwrap)"
if [ "$sandbox" = none ] && [ "$unsafe" != 1 ]; then
  problem "refusing to run without a sandbox: $sandbox_problem"
fi
# No step sees the shared folder (every run, every student's files, the records), the
# folder holding the jobs' work folders (other jobs on this node, other students) or this
# job's own, but for the step's own folder.
tmp_parent=$(dirname "$w")
[ "$tmp_parent" = / ] && tmp_parent=""
sb_prepare "$(dirname "$run")" "$tmp_parent" "$w"

# --- the GPU Slurm gave this job ----------------------------------------------------------
if command -v nvidia-smi > /dev/null 2>&1 &&
   gpus=$(nvidia-smi --query-gpu=index,uuid,compute_cap,name --format=csv,noheader 2> /dev/null) && [ -n "$gpus" ]; then
  want=${CUDA_VISIBLE_DEVICES:-}
  want=${want%%,*}
  while IFS=, read -r idx uuid cap name; do
    idx=${idx// /} uuid=${uuid// /} cap=${cap// /} name=${name# }
    if [ -z "$gpu_uuid" ] && { [ -z "$want" ] || [ "$want" = "$idx" ] || [ "$want" = "$uuid" ]; }; then
      gpu_name=$name gpu_uuid=$uuid gpu_cap=${cap//./}
    fi
  done <<< "$gpus"
fi
if [ -z "$gpu_uuid" ]; then
  no_gpu="node $node: nvidia-smi lists none$([ -n "${CUDA_VISIBLE_DEVICES:-}" ] && echo " for CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"); built and tested on the host only"
  say "no GPU: the build and the host-side tests run, nothing is timed"
else
  say "GPU: $gpu_name ($gpu_uuid)"
fi
arch_def=()
if [ -n "$arch" ]; then
  arch_def=("-DCMAKE_CUDA_ARCHITECTURES=$arch")
elif [ -z "${CUDAARCHS:-}" ] && [ -n "$gpu_uuid" ]; then
  arch_def=("-DCMAKE_CUDA_ARCHITECTURES=$gpu_cap")
fi

# --- what the chapter builds and runs -------------------------------------------------------
lines=$(python3 "$lb" runner --repo "$w/src" --chapter "$ch" 2>&1) || problem "$ch cannot be ranked: $lines"
targets=() prepare="" bench="" baseline=""
while IFS=$'\t' read -r k rest; do
  case "$k" in
    build) read -ra targets <<< "${rest//$'\t'/ }" ;;
    prepare) prepare=$rest ;;
    bench) bench=$rest ;;
    baseline) baseline=$rest ;;
  esac
done <<< "$lines"

# --- the repository's own build (trusted: not sandboxed; the compiler cache is shared) -----
tree="$w/tree"
mkdir -p "$tree"
mv "$w/src" "$tree/src"
t0=$(now)
say "building the repository's $ch ..."
(
  # Paths relative to the job's folder for the compiler cache: every job's names differ.
  export CCACHE_BASEDIR="$w" CCACHE_NOHASHDIR=1
  env WORKBOOK_GIT_COMMIT="$commit" cmake -S "$tree/src" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DWORKBOOK_CHAPTERS="$ch" -DWORKBOOK_BUILD_ON_TEST=OFF "${arch_def[@]}" &&
    env WORKBOOK_GIT_COMMIT="$commit" cmake --build "$tree/build" -j "${SLURM_CPUS_PER_TASK:-2}" \
      --target "${targets[@]}" devicequery
) > "$w/base.log" 2>&1 || problem "the repository's own $ch does not build here: $(grep -m1 -i 'error' "$w/base.log" | cut -c1-200)"
mkdir -p "$w/trusted-bin"
cp -- "$tree/build/bin/devicequery" "${targets[@]/#/$tree/build/bin/}" "$w/trusted-bin/" ||
  problem "the repository's own $ch build has no ${targets[*]}"
say "  done ($(since "$t0") s)"

# --- the student's build, in the sandbox ---------------------------------------------------
chapter_dir=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["chapter_dir"])' "$e/meta.json")
for f in "$e/submission"/*; do
  [ -f "$f" ] && cp -- "$f" "$tree/src/chapters/$chapter_dir/${f##*/}"
done
for t in "${targets[@]}"; do rm -f -- "$tree/build/bin/$t"; done
t0=$(now)
RUN_ENV=() RO_EXTRA=()
run_limited "$timeout_s" "$tree" "" -- cmake --build "$tree/build" -j "${SLURM_CPUS_PER_TASK:-2}" \
  --target "${targets[@]}" 2>&1 | head -c "$LOG_LIMIT" > "$e/build.log"
rc=${PIPESTATUS[0]}
if [ "$rc" = 0 ]; then
  mkdir -p "$e/bin"
  for t in "${targets[@]}"; do
    if [ -x "$tree/build/bin/$t" ]; then cp -- "$tree/build/bin/$t" "$e/bin/"; else rc=1; fi
  done
fi
printf 'build\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
say "student build: exit $rc ($(since "$t0") s)"
chmod -R u+w -- "$tree" 2> /dev/null
rm -rf -- "$tree"
if [ "$rc" != 0 ]; then write_record; exit 0; fi

# --- baseline: the repository's own programs on this GPU -------------------------------------
if [ -n "$gpu_uuid" ]; then
  export CUDA_VISIBLE_DEVICES="$gpu_uuid"
  if [ -n "$prepare" ]; then
    expand_command "$prepare" "$w/trusted-bin" "" "$w/data"
    (cd "$w/data" && timeout "$timeout_s" "${cmd[@]}") > "$w/prepare.log" 2>&1 || say "note: preparing the inputs failed"
  fi
  WORKBOOK_CACHE_DIR="$w/cache" timeout 600 "$w/trusted-bin/devicequery" --measure > "$w/ceilings.log" 2>&1 ||
    say "note: measuring the ceilings failed"
  expand_command "$baseline" "$w/trusted-bin" "$w/trusted.json" "$w/data"
  (cd "$w/box" && WORKBOOK_CACHE_DIR="$w/cache" timeout "$timeout_s" "${cmd[@]}") > "$w/baseline.log" 2>&1 ||
    say "note: the baseline run failed: rows are checked against their own run's ceilings"
  [ -s "$w/trusted.json" ] && cp -- "$w/trusted.json" "$e/trusted.json"
  chmod -R a-w "$w/cache" "$w/data"
fi

# --- tests (and, with a GPU, the benchmark) in the sandbox -------------------------------------
RUN_ENV=(CUDA_DEVICE_ORDER=PCI_BUS_ID WORKBOOK_CACHE_DIR="$w/cache" WORKBOOK_KERNEL_TIMEOUT="$kernel_timeout"
         WORKBOOK_SEED_MODE=secret)
[ -n "$gpu_uuid" ] && RUN_ENV+=(CUDA_VISIBLE_DEVICES="$gpu_uuid")
RO_EXTRA=("$w/cache" "$w/data")
t0=$(now)
run_captured "$timeout_s" "$w/box" "$e/bin" "$e/tests.json" -- "$e/bin/${ch}_tests" --gtest_color=no --gtest_fail_fast \
  --gtest_output=json:/dev/fd/3 2>&1 | head -c "$LOG_LIMIT" > "$e/tests.log"
rc=${PIPESTATUS[0]}
printf 'tests\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
say "tests: exit $rc ($(since "$t0") s)"
if [ "$rc" = 0 ] && [ -n "$gpu_uuid" ]; then
  t0=$(now)
  expand_command "$bench" "$e/bin" /dev/fd/3 "$w/data"
  run_captured "$timeout_s" "$w/box" "$e/bin" "$e/bench.json" -- "${cmd[@]}" 2>&1 | head -c "$LOG_LIMIT" > "$e/bench.log"
  rc=${PIPESTATUS[0]}
  printf 'bench\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
  say "benchmark: exit $rc ($(since "$t0") s)"
  ncu_bin=$(command -v ncu 2> /dev/null || true)
  if [ "$rc" = 0 ] && [ "$use_ncu" = 1 ] && [ -n "$ncu_bin" ] && [ -x "$e/bin/${ch}_bench" ] &&
     selection=$(python3 "$lb" ncu-target --entry "$e"); then
    mapfile -t select_args <<< "$selection"
    t0=$(now)
    run_limited "$timeout_s" "$w/box" "$e/bin" -- "$ncu_bin" --clock-control none --print-kernel-base mangled \
      --csv --page raw --metrics gpu__time_duration.sum --log-file "$w/box/ncu.csv" \
      "$e/bin/${ch}_bench" "${select_args[@]}" --samples=10 --json=/dev/null > /dev/null 2>&1
    rc=$?
    printf 'ncu\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
    [ -f "$w/box/ncu.csv" ] && head -c "$LOG_LIMIT" "$w/box/ncu.csv" > "$e/ncu.csv"
  fi
fi
write_record
