# shellcheck shell=bash
# The leaderboard's sandbox, sourced by scripts/leaderboard.sh (one machine) and by
# tools/leaderboard/slurm-job.sh (one job on a cluster node). docs/leaderboard.md, section
# "Sandbox", says what a step can and cannot see.
#
#   sb_check BWRAP_ARG      sets sandbox (bubblewrap | none), bwrap and sandbox_problem
#   sb_prepare FOLDER...    the folders no step may see (plus the usual secret places of the
#                           home and the GPU device nodes a step may use)
#   run_limited LIMIT RW RO -- command...
#   run_captured LIMIT RW RO RESULT -- command...
#
# The caller sets: commit (the repository's commit), sb_fifos (a folder for the pipes),
# LOG_LIMIT (bytes kept of a step's output); per step, RUN_ENV (extra environment) and
# RO_EXTRA (extra folders the step sees read-only).

sb_check() {  # BWRAP_ARG (may be empty: bwrap on PATH)
  sandbox=none
  bwrap=""
  sandbox_problem=""
  if [ -n "$1" ]; then
    if [ -x "$1" ] && [ -f "$1" ]; then
      bwrap=$(cd -- "$(dirname -- "$1")" && pwd -P)/$(basename -- "$1")
    else
      sandbox_problem="--bwrap: '$1' is not an executable file"
    fi
  elif command -v bwrap > /dev/null 2>&1; then
    bwrap=$(command -v bwrap)
  else
    sandbox_problem="bubblewrap (bwrap) is not installed"
  fi
  if [ -n "$bwrap" ]; then
    local err
    if err=$("$bwrap" --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp true 2>&1); then
      sandbox=bubblewrap
    else
      sandbox_problem="$bwrap cannot start a sandbox here: ${err:-no message}"
    fi
  fi
}

sb_prepare() {  # FOLDER...: hidden from every step (an empty folder in their place)
  hide=()
  local p s
  for p in "$@"; do [ -n "$p" ] && [ -d "$p" ] && hide+=(--tmpfs "$p"); done
  if [ -n "${HOME:-}" ] && [ "$HOME" != / ]; then
    for s in .ssh .gnupg .aws .azure .config/gcloud .config/kernel-workbook .kube .docker .password-store; do
      [ -d "$HOME/$s" ] && hide+=(--tmpfs "$HOME/$s")
    done
    for s in .netrc .git-credentials .pgpass; do
      [ -f "$HOME/$s" ] && hide+=(--ro-bind /dev/null "$HOME/$s")
    done
  fi
  gpu_nodes=()
  for p in /dev/nvidia*; do [ -e "$p" ] && gpu_nodes+=(--dev-bind "$p" "$p"); done
  RUN_ENV=()
  RO_EXTRA=()
}

# run_limited LIMIT RW_DIR RO_DIR -- command...: the command runs in RW_DIR, may write only
# there (sandboxed), sees RO_DIR and RO_EXTRA read-only, and has a clean environment plus
# RUN_ENV.
run_limited() {
  local limit=$1 rw=$2 ro=$3
  shift 4
  mkdir -p "$rw/home" "$rw/tmp"
  local envs=(PATH="$PATH" HOME="$rw/home" TMPDIR="$rw/tmp" LANG=C.UTF-8 LC_ALL=C.UTF-8
              WORKBOOK_GIT_COMMIT="$commit" "${RUN_ENV[@]}")
  [ -n "${LD_LIBRARY_PATH:-}" ] && envs+=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH")
  [ -n "${CUDAARCHS:-}" ] && envs+=(CUDAARCHS="$CUDAARCHS")
  if [ "$sandbox" = bubblewrap ]; then
    local ro_bind=() d
    [ -n "$ro" ] && ro_bind=(--ro-bind "$ro" "$ro")
    for d in "${RO_EXTRA[@]}"; do ro_bind+=(--ro-bind "$d" "$d"); done
    timeout -k 10 "$limit" env -i "${envs[@]}" \
      "$bwrap" --unshare-all --die-with-parent --new-session \
      --ro-bind / / --dev /dev --tmpfs /dev/shm "${gpu_nodes[@]}" --proc /proc --tmpfs /tmp \
      "${hide[@]}" --bind "$rw" "$rw" "${ro_bind[@]}" --chdir "$rw" -- "$@"
  else
    (cd -- "$rw" && exec timeout -k 10 "$limit" env -i "${envs[@]}" "$@")
  fi
}

# run_captured LIMIT RW_DIR RO_DIR RESULT_FILE -- command...: as run_limited, with the
# command's file descriptor 3 the write end of a pipe whose contents land in RESULT_FILE, a
# file in a folder the command cannot see. The programs are told to write their JSON to
# /dev/fd/3: nothing the submission does after the harness has written can change what was
# written, and anything it adds makes the file hold a second document, which the
# leaderboard rejects.
run_captured() {
  local limit=$1 rw=$2 ro=$3 result=$4 fifo rp rc hold
  shift 5
  fifo="$sb_fifos/$BASHPID.$RANDOM"
  mkfifo -m 600 -- "$fifo" || return 125
  hold=$(awk -v t="$limit" 'BEGIN { printf "%d", t + 60 }')
  timeout -k 5 "$hold" head -c "$LOG_LIMIT" < "$fifo" > "$result" &
  rp=$!
  run_limited "$limit" "$rw" "$ro" -- "$@" 3> "$fifo"
  rc=$?
  wait "$rp"
  rm -f -- "$fifo"
  return "$rc"
}

# expand_command "WORD<tab>WORD..." BIN JSON DATA: the words of a chapter's command (from
# `leaderboard.py runner`) with {bin}, {json} and {data} put in, into the array `cmd`.
expand_command() {
  local words=() w
  IFS=$'\t' read -ra words <<< "$1"
  cmd=()
  for w in "${words[@]}"; do
    w=${w//\{bin\}/$2}
    w=${w//\{json\}/$3}
    w=${w//\{data\}/$4}
    cmd+=("$w")
  done
}
