#!/usr/bin/env bash
# One job of the class leaderboard on a Slurm cluster node: one student's files for one chapter.
# scripts/leaderboard.sh --slurm submits it as a job array (task = line of RUN/tasks.tsv):
#
#   sbatch --array=0-N ... tools/leaderboard/slurm-job.sh RUN_FOLDER
#
# This script only does what must happen on the node before Python runs: a fresh work folder
# in the node's TMPDIR with the run's own sources unpacked into it. The job itself (the build,
# the sandbox, the tests, its record) is wb_leaderboard/node.py, from those sources; it removes
# the work folder when it ends.
set -uo pipefail

run=${1:?usage: slurm-job.sh RUN_FOLDER (submitted by scripts/leaderboard.sh --slurm)}
: "${SLURM_ARRAY_TASK_ID:?this is a Slurm array job: submit it with scripts/leaderboard.sh --slurm}"
: "${SLURM_ARRAY_JOB_ID:?this is a Slurm array job}"
job="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
node=$(hostname -s 2> /dev/null || hostname)
say() { printf '[%s %s] %s\n' "$(date -u +%H:%M:%S)" "$job" "$*"; }

[ -f "$run/tasks.tsv" ] && [ -f "$run/settings.tsv" ] && [ -f "$run/src.tar" ] ||
  { say "the run folder $run is not readable from node $node (is it on a shared file system?)"; exit 1; }
umask 077
w=$(mktemp -d "${TMPDIR:-/tmp}/kernel-workbook-job.XXXXXX") || { say "cannot create a work folder on $node"; exit 1; }
mkdir -p "$w/src" && tar -xf "$run/src.tar" -C "$w/src" ||
  { say "cannot unpack $run/src.tar"; rm -rf -- "$w"; exit 1; }
PYTHONPATH="$w/src/tools/leaderboard" exec python3 -m wb_leaderboard.node "$run" "$w"
