#!/usr/bin/env bash
# The leaderboard's --slurm mode, end to end, on a real one-node Slurm cluster on this
# machine (scripts/slurm-local-cluster.sh; root, Debian). No GPU is needed or used: each job
# builds its submission and runs the host-side tests, and lists "no GPU on node".
#
# A class of chapter 1 submissions, put together from the fixture class (made from
# tests/leaderboard/classes/):
#   correct           the fixture's fast kernels            -> no GPU on node
#   not-compiling     the fixture's                          -> did not build
#   no-files          no chapter files (the fixture's "-dash ..dots")  -> missing files (no job)
#   killed-mid-run    correct; its job is scancel'ed while it runs      -> job cancelled
#   record-corrupted  correct; its record is cut in half after the job  -> not merged
# Then: the report against tests/leaderboard/slurm-expected.json; a second collect adds
# nothing; --rerun of the two jobs, and the report against slurm-expected-rerun.json; the
# history only grew; and the seeds the harness drew in the jobs appear nowhere in what Slurm
# keeps or shows of the jobs (scontrol, sacct, the batch script, its state and spool folders).
#
# usage: tests/leaderboard/slurm-check.sh [--keep]   (--keep: leave the work folder)
# Exit code 0 when everything is as expected, 1 otherwise, 77 when it cannot run here (not
# root, or not Debian/Ubuntu).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
lb="$here/scripts/leaderboard.sh"
me=slurm-check
keep=0
[ "${1:-}" = --keep ] && keep=1
say() { printf '%s: %s\n' "$me" "$*"; }
fail() { printf '%s: FAIL %s\n' "$me" "$*" >&2; exit 1; }
skip() { printf '%s: cannot run here: %s\n' "$me" "$*" >&2; exit 77; }

[ "$(id -u)" = 0 ] || skip "it starts a Slurm cluster, which needs root"
command -v apt-get > /dev/null || skip "it installs Debian's Slurm packages, and there is no apt-get"
started=$(date +%s)

# --- the cluster ---------------------------------------------------------------------------
cluster_was_up=0
"$here/scripts/slurm-local-cluster.sh" status > /dev/null 2>&1 && cluster_was_up=1
"$here/scripts/slurm-local-cluster.sh" start
eval "$("$here/scripts/slurm-local-cluster.sh" env)"
work=$(mktemp -d /tmp/kernel-workbook-slurm-check.XXXXXX)
cleanup() {
  local rc=$?
  if [ "$cluster_was_up" = 0 ]; then "$here/scripts/slurm-local-cluster.sh" stop > /dev/null 2>&1 || true; fi
  if [ "$keep" = 0 ] && [ "$rc" = 0 ]; then rm -rf -- "$work"; else say "work folder kept: $work"; fi
}
trap cleanup EXIT

# --- the class -------------------------------------------------------------------------------
fixture="$work/fixture-class"
PYTHONPATH="$here/tools/leaderboard" python3 -m wb_leaderboard.classes fixture "$fixture" ||
  fail "cannot make the fixture class (tests/leaderboard/classes/)"
mkdir -p "$work/class" "$work/key"
chmod 700 "$work/key"
cp -a "$fixture/fast" "$work/class/correct"
cp -a "$fixture/not-compiling" "$work/class/not-compiling"
cp -a "$fixture/-dash ..dots" "$work/class/no-files"
cp -a "$fixture/fast" "$work/class/killed-mid-run"
cp -a "$fixture/fast" "$work/class/record-corrupted"
out="$work/out"
shared="$work/shared"
common=(--out "$out" --shared "$shared" --key "$work/key/leaderboard.key")
export LEADERBOARD_POLL_S=2

# --- submit --------------------------------------------------------------------------------
say "submitting the class ..."
"$lb" --slurm --chapter ch01 --partition debug --gres none --time 20 --cpus-per-task 2 \
  --timeout 300 "${common[@]}" "$work/class" | tee "$work/submit.log"
run_id=$(sed -n 's/^kernel-workbook leaderboard on Slurm, run \([^ ]*\) .*/\1/p' "$work/submit.log")
[ -n "$run_id" ] || fail "no run id in the submission's output"
run="$shared/$run_id"
task_of() { python3 -c 'import json, sys
print([t["task"] for t in json.load(open(sys.argv[1]))["tasks"] if t["student"] == sys.argv[2]][0])' "$run/run.json" "$1"; }
jobs() { "$lb" --status "$run_id" "${common[@]}"; }  # task, job, state, record, student
state_of() { jobs | awk -F'\t' -v t="$1" '$1 == t { print $3 }'; }
job_of() { jobs | awk -F'\t' -v t="$1" '$1 == t { print $2 }'; }
wait_until() {  # seconds, description, command...
  local limit=$1 what=$2 t0
  shift 2
  t0=$(date +%s)
  until "$@"; do
    [ $(( $(date +%s) - t0 )) -lt "$limit" ] || fail "waited ${limit} s for $what"
    sleep 1
  done
}
is_state() { [ "$(state_of "$1")" = "$2" ]; }
all_ended() { ! jobs | awk -F'\t' '{ print $3 }' | grep -qE '^(PENDING|RUNNING|CONFIGURING|COMPLETING)$'; }

# --- a job killed while it runs ----------------------------------------------------------
killed=$(task_of killed-mid-run)
wait_until 300 "the job of killed-mid-run to start" is_state "$killed" RUNNING
sleep 4
killed_job=$(job_of "$killed")
say "cancelling job $killed_job (killed-mid-run) while it runs"
scancel "$killed_job"

# --- every job ends; one record is cut in half ---------------------------------------------
wait_until 600 "every job to end" all_ended
corrupted=$(task_of record-corrupted)
corrupted_job=$(job_of "$corrupted")
rec="$run/records/$corrupted-${corrupted_job%_*}.json"
[ -s "$rec" ] || fail "the job of record-corrupted wrote no record ($rec)"
size=$(stat -c %s "$rec")
head -c $((size / 2)) "$rec" > "$rec.half" && mv "$rec.half" "$rec"
say "cut the record of job $corrupted_job in half"

# --- collect, twice --------------------------------------------------------------------------
say "collecting ..."
"$lb" --collect "$run_id" "${common[@]}" \
  --expect "$here/tests/leaderboard/slurm-expected.json" | tee "$work/collect1.log" ||
  fail "the first collect does not match tests/leaderboard/slurm-expected.json"
grep -q "Slurm state CANCELLED" "$out/leaderboard.md" || fail "the cancelled job's reason does not name Slurm's state"
grep -q "truncated or not valid JSON" "$work/collect1.log" || fail "the cut record is not reported as such"
cp "$out/history.jsonl" "$work/history.1"
"$lb" --collect "$run_id" "${common[@]}" > "$work/collect2.log" ||
  fail "the second collect failed"
cmp -s "$out/history.jsonl" "$work/history.1" || fail "a second collect of the same run changed the history"
grep -q "0 merged now" "$work/collect2.log" || fail "the second collect merged something again"
say "a second collect added nothing"

# --- rerun the two jobs alone ---------------------------------------------------------------
say "running jobs $killed_job and $corrupted_job again ..."
"$lb" --rerun "$killed_job" --rerun "$corrupted_job" --wait "${common[@]}" \
  --expect "$here/tests/leaderboard/slurm-expected-rerun.json" | tee "$work/rerun.log" ||
  fail "after the reruns, the report does not match tests/leaderboard/slurm-expected-rerun.json"
head -c "$(stat -c %s "$work/history.1")" "$out/history.jsonl" | cmp -s - "$work/history.1" ||
  fail "the reruns rewrote earlier lines of the history"
[ "$(wc -l < "$out/history.jsonl")" = $(( $(wc -l < "$work/history.1") + 2 )) ] ||
  fail "the reruns should add exactly two lines to the history"
"$lb" --verify --out "$out" --key "$work/key/leaderboard.key" || fail "the history does not verify"
python3 - "$out/leaderboard.json" <<'EOF' || fail "the final report still lists jobs without a result"
import json, sys
doc = json.load(open(sys.argv[1]))
sys.exit(1 if doc["jobs_without_result"] else 0)
EOF

# --- the seeds never show in what Slurm keeps or shows of the jobs ------------------------------
python3 - "$run" > "$work/seeds.txt" <<'EOF'
import glob, json, re, sys
seeds = set()
for path in glob.glob(sys.argv[1] + "/records/*.json"):
    try:
        rec = json.load(open(path))
    except ValueError:
        continue
    seeds.update(re.findall(r"kernel-workbook: seed (\d+)", rec["files"].get("tests.log", "")))
print("\n".join(sorted(seeds)))
EOF
n_seeds=$(grep -c . "$work/seeds.txt" || true)
[ "$n_seeds" -ge 3 ] || fail "expected the seeds of at least 3 test runs in the records, found $n_seeds"
fields=$(sacct --helpformat | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
{
  for array in $(python3 -c 'import json, sys; print(" ".join(j["array_job"] for j in json.load(open(sys.argv[1]))["jobs"]))' "$run/run.json"); do
    scontrol -dd show job "$array"
    sacct -j "$array" -P -a --format="$fields"
    for job in $(jobs | awk -F'\t' '{ print $2 }'); do
      scontrol write batch_script "$job" - 2> /dev/null || true
    done
  done
} > "$work/slurm-views.txt" 2>&1
[ -s "$work/slurm-views.txt" ] || fail "scontrol and sacct showed nothing of the jobs"
grep -q "slurm-job.sh" "$work/slurm-views.txt" || fail "the batch scripts could not be read back"
slurm_dir=$(dirname "$SLURM_CONF")
# The search must see the jobs' environment as Slurm stores it, or it proves nothing.
mapfile -t envs < <(find "$slurm_dir/state" -name environment)
[ ${#envs[@]} -gt 0 ] && grep -qa "HOME=" "${envs[@]}" ||
  fail "no job environment found in Slurm's state folder: the search for the seeds would be blind"
while read -r seed; do
  if grep -qw -- "$seed" "$work/slurm-views.txt"; then fail "seed $seed shows in scontrol/sacct/the batch script"; fi
  if grep -rqaw -- "$seed" "$slurm_dir/state" "$slurm_dir/spool" "$run/slurm"; then
    fail "seed $seed is in Slurm's state or spool folder or a job's output"
  fi
done < "$work/seeds.txt"
say "the $n_seeds seeds drawn in the jobs appear in none of: scontrol -dd show job, sacct (every field), the batch scripts, Slurm's state and spool folders, the jobs' output"
say "passed ($(( $(date +%s) - started )) s)"
