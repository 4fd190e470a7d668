#!/usr/bin/env bash
# The class leaderboard: builds each student's kernels in a fresh copy of the repository, runs
# the chapter's full tests with a secret seed, then the chapter's benchmark, each step sandboxed
# and under its own time limit, cross-checks the numbers, and ranks the correct submissions per
# chapter and per GPU; on one machine or on a Slurm cluster. The work is done by the package
# tools/leaderboard/wb_leaderboard (standard-library Python, one module per role).
#
#   scripts/leaderboard.sh --help              every option
#   scripts/leaderboard.sh SUBMISSIONS_DIR     docs/leaderboard.md says the rest
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
command -v python3 > /dev/null 2>&1 || { echo "leaderboard: python3 is needed and was not found on PATH" >&2; exit 1; }
PYTHONPATH="$here/tools/leaderboard${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m wb_leaderboard "$@"
