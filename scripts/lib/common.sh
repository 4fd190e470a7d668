# Shared by scripts/sanitize.sh, scripts/profile.sh and scripts/resources.sh (sourced, not run).
#
# The caller sets `wb_prog` (its name, for messages) before sourcing. Exit codes:
#   1  something went wrong, or this machine cannot run the tool (no GPU, tool missing)
#   2  bad usage (unknown chapter, unknown option)
#   wb_missing_code (default 1) when a GPU or a CUDA tool is missing: ctest sets it to 77
#   (--skip-code 77) so that the test is counted as skipped, not passed.

wb_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
wb_missing_code=${wb_missing_code:-1}

wb_die() {
  echo "$wb_prog: $*" >&2
  exit 1
}
wb_usage_error() {
  echo "$wb_prog: $*" >&2
  echo "$wb_prog: see $wb_prog --help" >&2
  exit 2
}
# A GPU or a tool is missing: not the learner's fault, and not a pass either.
wb_cannot_run() {
  echo "$wb_prog: $*" >&2
  exit "$wb_missing_code"
}

# The chapters in the tree ("ch01 ch02 ...").
wb_chapters() {
  local d
  for d in "$wb_root"/chapters/ch[0-9][0-9]_*/; do
    [ -d "$d" ] || continue
    d=${d%/}
    d=${d##*/}
    printf '%s ' "${d:0:4}"
  done
}

# wb_chapter ARG: accepts ch01, 01 or 1; prints "ch01", or stops with the list of chapters.
wb_chapter() {
  local arg=$1 id
  case "$arg" in
    ch[0-9][0-9]) id=$arg ;;
    [0-9][0-9]) id=ch$arg ;;
    [0-9]) id=ch0$arg ;;
    *) wb_usage_error "'$arg' is not a chapter; write it as chNN (e.g. ch01). Chapters here: $(wb_chapters)" ;;
  esac
  local found=("$wb_root"/chapters/"$id"_*)
  if [ ! -d "${found[0]}" ]; then
    wb_usage_error "there is no chapter $id (no chapters/${id}_* folder). Chapters here: $(wb_chapters)"
  fi
  echo "$id"
}

# wb_the_chapter CURRENT ARG: a script's one chapter, ARG as wb_chapter reads it, or a stop
# when CURRENT already names one:   chapter=$(wb_the_chapter "$chapter" "$1") || exit $?
wb_the_chapter() {
  [ -z "$1" ] || wb_usage_error "one chapter at a time ('$1' and '$2')"
  wb_chapter "$2"
}

# wb_find_cuda_tool NAME: the path of a CUDA tool (compute-sanitizer, ncu, cuobjdump ...),
# or nothing. An environment variable named after the tool (COMPUTE_SANITIZER, NCU,
# CUOBJDUMP) picks one explicitly; otherwise looks on PATH, then in the CUDA toolkit folders
# and next to nvcc.
wb_find_cuda_tool() {
  local name=$1 dir candidate override
  override=$(echo "$name" | tr 'a-z+-' 'A-ZP_')
  if [ -n "${!override:-}" ]; then
    if [ -x "${!override}" ]; then
      echo "${!override}"
      return 0
    fi
    echo "$wb_prog: $override=${!override} is not an executable" >&2
    return 1
  fi
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
    return 0
  fi
  local dirs=()
  [ -n "${CUDA_HOME:-}" ] && dirs+=("$CUDA_HOME/bin")
  [ -n "${CUDA_PATH:-}" ] && dirs+=("$CUDA_PATH/bin")
  dirs+=(/usr/local/cuda/bin)
  if command -v nvcc >/dev/null 2>&1; then dirs+=("$(dirname "$(command -v nvcc)")"); fi
  for dir in "${dirs[@]}"; do
    if [ -x "$dir/$name" ]; then
      echo "$dir/$name"
      return 0
    fi
  done
  if [ "$name" = ncu ]; then  # Nsight Compute also installs on its own
    for candidate in /usr/local/cuda/nsight-compute*/ncu /opt/nvidia/nsight-compute/*/ncu; do
      if [ -x "$candidate" ]; then
        echo "$candidate"
        return 0
      fi
    done
  fi
  return 1
}

# Prints why no GPU can be used here, or nothing when one is visible.
# (WORKBOOK_GPU_FAKE=none or =present overrides the answer, for the scripts' own tests.)
wb_gpu_missing_reason() {
  case "${WORKBOOK_GPU_FAKE:-}" in
    none) echo "no NVIDIA GPU is visible (WORKBOOK_GPU_FAKE=none)"; return 0 ;;
    present) return 0 ;;
  esac
  if command -v nvidia-smi >/dev/null 2>&1; then
    if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then return 0; fi
    echo "no NVIDIA GPU is visible (nvidia-smi -L lists none)"
    return 0
  fi
  if ls /dev/nvidia[0-9]* >/dev/null 2>&1; then return 0; fi
  echo "no NVIDIA GPU is visible (no nvidia-smi, no /dev/nvidia0)"
}

# wb_build PRESET BUILD_DIR CHAPTERS TARGET...: configure with the preset's settings into
# BUILD_DIR, restricted to CHAPTERS, and build only TARGETs. Quiet unless it fails.
wb_build() {
  local preset=$1 dir=$2 chapters=$3
  shift 3
  local log="$dir.build.log"
  mkdir -p "$(dirname "$dir")"
  echo "$wb_prog: building $* in ${dir#"$wb_root"/} (preset $preset, WORKBOOK_CHAPTERS=$chapters) ..."
  if ! (cd "$wb_root" && cmake --preset "$preset" -B "$dir" -DWORKBOOK_CHAPTERS="$chapters") >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    wb_die "configuring failed (full log: $log)"
  fi
  if ! cmake --build "$dir" --target "$@" >>"$log" 2>&1; then
    grep -E -A3 'error|Error' "$log" | head -n 40 >&2
    wb_die "the build failed (full log: $log)"
  fi
}

# A throwaway folder, removed when the script exits.
wb_tmpdir() {
  wb_tmp=$(mktemp -d "${TMPDIR:-/tmp}/${wb_prog}.XXXXXX")
  trap 'rm -rf "$wb_tmp"' EXIT
}
