# shellcheck shell=bash
# The leaderboard on a Slurm cluster: submitting a run, waiting for it, collecting its
# records into the history, running one job again. Sourced by scripts/leaderboard.sh, whose
# options and helpers (die, say, lb, here, out ...) it uses. What runs on the nodes is
# tools/leaderboard/slurm-job.sh; the bookkeeping is leaderboard.py (run-file, add-job,
# jobs, collect). docs/leaderboard.md, section "Running on a cluster".

slurm_need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" > /dev/null 2>&1 ||
      die "'$tool' is needed and was not found on PATH (run this where Slurm's commands work, e.g. a login node)"
  done
}

# The shared folder of the runs (made if needed) and the output folder, as absolute paths.
slurm_folders() {
  : "${shared:=$out/cluster}"
  sources_guard
  mkdir -p -- "$out" || die "cannot create the output folder '$out'"
  out=$(cd -- "$out" && pwd -P)
  mkdir -p -- "$shared" || die "cannot create the shared folder '$shared'"
  shared=$(cd -- "$shared" && pwd -P)
}

# The history's key, as a local run finds it; never inside a folder the jobs can reach.
slurm_key() {
  key_file=${key_file:-${XDG_CONFIG_HOME:-$HOME/.config}/kernel-workbook/leaderboard.key}
  local key_dir p
  key_dir=$(mkdir -p -m 700 -- "$(dirname -- "$key_file")" && cd -- "$(dirname -- "$key_file")" && pwd -P) ||
    die "cannot create the folder of the history key '$key_file'"
  key_file="$key_dir/$(basename -- "$key_file")"
  for p in "$shared" "$out" "$here"; do
    case "$key_dir/" in "$p"/*) die "--key: the history key must live outside '$p'" ;; esac
  done
}

# sbatch's options for every job of a run (kept in the run folder, so that a rerun asks for
# the same resources); the options given now are added after them, so they win.
slurm_options() {
  local exports=PATH,HOME v
  for v in LD_LIBRARY_PATH CUDAARCHS CUDA_HOME CUDA_PATH CCACHE_DIR; do
    [ -n "${!v:-}" ] && exports+=",$v"
  done
  # The environment of a job is these names only: nothing else of the caller's reaches the
  # node (and no seed is in any of them: the harness draws it there, after main starts).
  printf '%s\n' --job-name "kwb-$run_id" --no-requeue --export "$exports" --chdir "$run" \
    --output "$run/slurm/%A_%a.out" --cpus-per-task "$cpus_per_task"
  slurm_resource_options
}
slurm_resource_options() {
  [ -n "$partition" ] && printf '%s\n' --partition "$partition"
  [ -n "$account" ] && printf '%s\n' --account "$account"
  [ -n "$time_limit" ] && printf '%s\n' --time "$time_limit"
  if [ -n "$gres" ] && [ "$gres" != none ]; then printf '%s\n' --gres "$gres"; fi
  return 0
}

# slurm_submit TASKS: one array of jobs for those tasks of the run in $run; prints its id.
slurm_submit() {
  local saved=() extra=() reply array
  mapfile -t saved < "$run/sbatch.args"
  mapfile -t extra < <(slurm_resource_options)
  reply=$(sbatch --parsable "${saved[@]}" "${extra[@]}" --array "$1" "$here/tools/leaderboard/slurm-job.sh" "$run" 2>&1) ||
    die "sbatch refused the jobs: $reply"
  array=${reply%%;*}
  [[ $array =~ ^[0-9]+$ ]] || die "sbatch answered '$reply', not a job id"
  python3 "$lb" add-job --run-dir "$run" --array-job "$array" --tasks "$1" || die "cannot note job $array in $run/run.json"
  printf '%s\n' "$array"
}

# Waits until no job of the run is queued or running, looking every LEADERBOARD_POLL_S
# seconds (default 10).
slurm_wait() {
  local lines busy last="" n
  say "waiting for the jobs of run $run_id (squeue shows them as kwb-$run_id) ..."
  while :; do
    lines=$(python3 "$lb" jobs --run-dir "$run") || die "cannot read the state of run $run_id"
    busy=$(awk -F'\t' '$3 ~ /^(PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|RESIZING|SUSPENDED|REQUEUE_HOLD|REQUEUE_FED|SIGNALING|STAGE_OUT|STOPPED)$/' <<< "$lines")
    n=$(printf '%s' "$busy" | grep -c . || true)
    if [ "$n" = 0 ]; then
      say "  every job of the run has ended"
      return 0
    fi
    if [ "$busy" != "$last" ]; then
      say "  $n job(s) queued or running: $(awk -F'\t' '{ printf "%s %s; ", $2, $3 }' <<< "$busy")"
      last=$busy
    fi
    sleep "${LEADERBOARD_POLL_S:-10}"
  done
}

slurm_collect() {
  local status=0
  slurm_key
  python3 "$lb" collect --run-dir "$run" --history "$out/history.jsonl" --key "$key_file" --out "$out" ||
    die "collecting run $run_id failed"
  say ""
  python3 "$lb" report --history "$out/history.jsonl" --key "$key_file" --out "$out" --run-id "$run_id"
  if [ -n "$expect" ]; then
    say ""
    say "checking run $run_id against $expect:"
    python3 "$lb" check --history "$out/history.jsonl" --key "$key_file" --run-id "$run_id" --expect "$expect" ||
      status=1
  fi
  return "$status"
}

slurm_submit_mode() {
  slurm_need sbatch squeue scontrol python3 tar od
  slurm_folders
  subs=$(cd -- "$subs" && pwd -P)
  case "$shared/" in "$subs"/*) die "--shared must be outside the submissions folder" ;; esac
  case "$subs/" in "$shared"/*) die "the submissions folder must be outside --shared" ;; esac
  if [ ${#wanted[@]} -eq 0 ]; then
    local found=() ch
    read -ra found <<< "$(python3 "$lb" chapters --repo "$here" --submissions "$subs")"
    for ch in "${found[@]}"; do
      if chapter_ready "$ch" && python3 "$lb" runner --repo "$here" --chapter "$ch" > /dev/null; then
        wanted+=("$ch")
      else
        say "note: $ch is skipped: the chapter cannot be ranked yet"
      fi
    done
    [ ${#wanted[@]} -gt 0 ] || die "no student folder holds a chNN folder of a chapter that can be ranked; see docs/leaderboard.md"
  fi
  run_id="$(date -u +%Y%m%d-%H%M%S)-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')"
  run="$shared/$run_id"
  local commit rand n array plan_args=() items=() ch
  commit=$(git -C "$here" rev-parse --short=12 HEAD 2> /dev/null || echo unknown)
  (umask 077 && mkdir -p "$run/records" "$run/slurm" "$run/entries") || die "cannot create the run folder $run"
  mapfile -t items < <(source_items)
  tar -C "$here" -cf "$run/src.tar" -- "${items[@]}" || die "cannot pack the repository's sources into $run/src.tar"
  # The students' files wait in a folder whose name nobody can guess.
  rand=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
  for ch in "${wanted[@]}"; do plan_args+=(--chapter "$ch"); done
  python3 "$lb" plan --repo "$here" --submissions "$subs" --work "$run/entries/$rand" "${plan_args[@]}" \
    > "$run/plan.tsv" || die "could not read the submissions in '$subs'"
  [ -s "$run/plan.tsv" ] || die "no student folders in '$subs'"
  local unsafe_flag=()
  [ "$unsafe" = 1 ] && unsafe_flag=(--unsafe-no-sandbox)
  n=$(python3 "$lb" run-file --run-dir "$run" --run-id "$run_id" --plan "$run/plan.tsv" \
        --entries "entries/$rand/entries" --commit "$commit" "${unsafe_flag[@]}") || die "cannot write $run/run.json"
  {
    printf 'timeout\t%s\n' "$timeout_s"
    printf 'kernel_timeout\t%s\n' "$kernel_timeout"
    printf 'arch\t%s\n' "$arch"
    printf 'ncu\t%s\n' "$use_ncu"
    printf 'unsafe\t%s\n' "$unsafe"
    printf 'bwrap\t%s\n' "$bwrap_arg"
    printf 'commit\t%s\n' "$commit"
  } > "$run/settings.tsv"
  : "${gres:=gpu:1}"
  slurm_options > "$run/sbatch.args"

  say "kernel-workbook leaderboard on Slurm, run $run_id (commit $commit)"
  say "  submissions: $subs ($(wc -l < "$run/plan.tsv") entries; chapters ${wanted[*]}); $n job(s) to run"
  say "  run folder (must be visible to the nodes at this path): $run"
  say "  each job: --cpus-per-task $cpus_per_task${partition:+ --partition $partition}${account:+ --account $account}${time_limit:+ --time $time_limit}$([ "$gres" != none ] && echo " --gres $gres")"
  say "  time limits per step: ${timeout_s} s, per kernel: ${kernel_timeout} s"
  if [ "$n" -gt 0 ]; then
    array=$(slurm_submit "0-$((n - 1))") || exit 1
    say "  submitted: job array $array (tasks 0-$((n - 1))); squeue -j $array shows them"
  fi
  say ""
  if [ "$wait_jobs" = 1 ] || [ "$n" = 0 ]; then
    [ "$n" = 0 ] || slurm_wait
    slurm_collect
    return $?
  fi
  say "when the jobs have ended (or at any time, for those that have):"
  say "  scripts/leaderboard.sh --collect $run_id --out $out --shared $shared"
  return 0
}

slurm_collect_mode() {
  slurm_need python3
  slurm_folders
  run_id=$collect_id
  run="$shared/$run_id"
  if [ ! -f "$run/run.json" ]; then
    die "no cluster run '$run_id' in $shared (runs there: $(cd "$shared" && ls -d -- */ 2> /dev/null | tr -d / | tr '\n' ' '))"
  fi
  [ "$wait_jobs" = 0 ] || slurm_wait
  slurm_collect
}

slurm_rerun_mode() {
  slurm_need sbatch squeue scontrol python3
  slurm_folders
  local j array task runs=() f found lines state
  declare -A tasks_of=()
  for j in "${rerun_ids[@]}"; do
    array=${j%_*} task=${j#*_}
    found=""
    for f in "$shared"/*/run.json; do
      [ -f "$f" ] || continue
      if grep -q "\"array_job\": \"$array\"" "$f"; then found=${f%/run.json}; fi
    done
    [ -n "$found" ] || die "--rerun: no run in $shared submitted job array $array"
    lines=$(python3 "$lb" jobs --run-dir "$found") || die "cannot read $found/run.json"
    state=$(awk -F'\t' -v t="$task" '$1 == t { print $3 }' <<< "$lines")
    [ -n "$state" ] || die "--rerun: run ${found##*/} has no task $task"
    case "$state" in
      PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|RESIZING|SUSPENDED)
        die "--rerun: the latest job of task $task is still $state ($(awk -F'\t' -v t="$task" '$1 == t { print $2 }' <<< "$lines")); wait for it or scancel it first" ;;
    esac
    [ -n "${tasks_of[$found]:-}" ] || runs+=("$found")
    tasks_of[$found]="${tasks_of[$found]:+${tasks_of[$found]},}$task"
  done
  for run in "${runs[@]}"; do
    run_id=${run##*/}
    array=$(slurm_submit "${tasks_of[$run]}") || exit 1
    say "run $run_id: task(s) ${tasks_of[$run]} submitted again as job array $array"
    if [ "$wait_jobs" = 1 ]; then
      slurm_wait
      slurm_collect || return 1
    else
      say "  then: scripts/leaderboard.sh --collect $run_id --out $out --shared $shared"
    fi
  done
}
