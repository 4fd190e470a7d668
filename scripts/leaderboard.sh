#!/usr/bin/env bash
# The class leaderboard: builds each student's kernels in a fresh copy of the repository,
# runs the chapter's full tests with a secret seed, then the chapter's benchmark, each step
# sandboxed and under its own time limit, cross-checks the numbers, and ranks the correct
# submissions per chapter and per GPU. See docs/leaderboard.md for the submission layout,
# the ranking, the sandbox and the fairness rules.
#
# usage: scripts/leaderboard.sh [options] SUBMISSIONS_DIR
#        scripts/leaderboard.sh --fixture [options]   the repository's fixture class, chapters 1-9 (needs a GPU)
#        scripts/leaderboard.sh --hostile [options]   the repository's hostile class (needs a GPU)
#
#   --chapter chNN       a chapter to run (repeat it, or give a comma-separated list);
#                        default: every chapter some student has a chNN folder for
#   --timeout S          time limit of each step of one submission (build, tests, benchmark),
#                        in seconds (default 900; fixture 300)
#   --kernel-timeout S   one kernel running longer than this counts as hung (default 60; fixture 5)
#   --out DIR            history and reports (default results/leaderboard;
#                        fixture results/leaderboard-fixture)
#   --arch LIST          CUDA architectures to build for, e.g. "90" or "80;90"
#                        (default: CUDAARCHS if set, else those of the GPUs used)
#   --gpus LIST          GPUs to use, nvidia-smi indices or UUIDs, comma-separated (default: all,
#                        or those in CUDA_VISIBLE_DEVICES); one submission runs per GPU at a time
#   --build-jobs N       submissions built at the same time (default: one per 8 CPU cores)
#   --bwrap PATH         the bubblewrap program to use (default: bwrap on PATH); see
#                        scripts/fetch-bwrap.sh for machines where it is not installed
#   --unsafe-no-sandbox  rank even without a working sandbox: submissions then run with your
#                        rights and can read each other's files; every report says so
#   --key FILE           the key that signs the history (default
#                        ~/.config/kernel-workbook/leaderboard.key, made on first use);
#                        keep it outside the submissions, output and repository folders
#   --expect FILE        after the run, compare it with an expected outcome (JSON, as
#                        tests/leaderboard/*-expected.json); exit code 1 on a difference
#   --no-ncu             skip the Nsight Compute re-measurement even where ncu is installed
#   --keep-work          keep the work folder (build trees, binaries) after the run
#   -h, --help           this text
#
# On a Slurm cluster (docs/leaderboard.md, "Running on a cluster"):
#   scripts/leaderboard.sh --slurm [options] SUBMISSIONS_DIR   one job per student and chapter
#   scripts/leaderboard.sh --collect RUN_ID [--wait]           merge the finished jobs, report
#   scripts/leaderboard.sh --rerun JOB [--wait]                run one job again (JOB as 57_3)
#
#   --shared DIR         the run folders, on a file system every node sees at the same path
#                        (default: OUT/cluster)
#   --partition P        passed to sbatch, as are --account A, --time T (Slurm's formats, e.g.
#   --account A          30 or 1:00:00; a job that runs longer is listed as "job time limit")
#   --time T             and --cpus-per-task N (default 4: the build's parallelism)
#   --gres G             the GPU each job asks for (default gpu:1; "none": ask for none)
#   --cpus-per-task N
#   --wait               after submitting, wait for the jobs, then collect
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
lb="$here/tools/leaderboard/leaderboard.py"
me="leaderboard"
# shellcheck source=../tools/leaderboard/sandbox.sh
. "$here/tools/leaderboard/sandbox.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die_usage() {
  printf '%s: %s\n' "$me" "$1" >&2
  printf "run 'scripts/leaderboard.sh --help' for the options\n" >&2
  exit 2
}
die() { printf '%s: %s\n' "$me" "$1" >&2; exit 1; }
say() { printf '%s\n' "$*"; }
is_positive() { [[ $1 =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ ]] && awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }
is_count() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; }

# --- command line ------------------------------------------------------------------------
chapters=()
timeout_s=""
kernel_timeout=""
out=""
arch=""
gpus_arg=""
build_jobs=""
bwrap_arg=""
unsafe=0
key_file=""
expect=""
use_ncu=1
keep_work=0
fixture=0
hostile=0
subs=""
slurm=0
collect_id=""
rerun_ids=()
shared=""
partition=""
account=""
time_limit=""
gres=""
cpus_per_task=4
wait_jobs=0
set_subs() {
  [ -z "$subs" ] || die_usage "one SUBMISSIONS_DIR only (got '$subs' and '$1')"
  [ -n "$1" ] || die_usage "SUBMISSIONS_DIR is empty"
  subs=$1
}
value() {  # option, next argument
  [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --chapter) value "$@"; chapters+=("$2"); shift 2 ;;
    --chapter=*) chapters+=("${1#*=}"); shift ;;
    --timeout) value "$@"; timeout_s=$2; shift 2 ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --kernel-timeout) value "$@"; kernel_timeout=$2; shift 2 ;;
    --kernel-timeout=*) kernel_timeout=${1#*=}; shift ;;
    --out) value "$@"; out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --arch) value "$@"; arch=$2; shift 2 ;;
    --arch=*) arch=${1#*=}; shift ;;
    --gpus) value "$@"; gpus_arg=$2; shift 2 ;;
    --gpus=*) gpus_arg=${1#*=}; shift ;;
    --build-jobs) value "$@"; build_jobs=$2; shift 2 ;;
    --build-jobs=*) build_jobs=${1#*=}; shift ;;
    --bwrap) value "$@"; bwrap_arg=$2; shift 2 ;;
    --bwrap=*) bwrap_arg=${1#*=}; shift ;;
    --unsafe-no-sandbox) unsafe=1; shift ;;
    --no-sandbox) die_usage "--no-sandbox is now --unsafe-no-sandbox (docs/leaderboard.md, section Sandbox)" ;;
    --key) value "$@"; key_file=$2; shift 2 ;;
    --key=*) key_file=${1#*=}; shift ;;
    --expect) value "$@"; expect=$2; shift 2 ;;
    --expect=*) expect=${1#*=}; shift ;;
    --no-ncu) use_ncu=0; shift ;;
    --keep-work) keep_work=1; shift ;;
    --slurm) slurm=1; shift ;;
    --collect) value "$@"; collect_id=$2; shift 2 ;;
    --collect=*) collect_id=${1#*=}; shift ;;
    --rerun) value "$@"; rerun_ids+=("$2"); shift 2 ;;
    --rerun=*) rerun_ids+=("${1#*=}"); shift ;;
    --shared) value "$@"; shared=$2; shift 2 ;;
    --shared=*) shared=${1#*=}; shift ;;
    --partition) value "$@"; partition=$2; shift 2 ;;
    --partition=*) partition=${1#*=}; shift ;;
    --account) value "$@"; account=$2; shift 2 ;;
    --account=*) account=${1#*=}; shift ;;
    --time) value "$@"; time_limit=$2; shift 2 ;;
    --time=*) time_limit=${1#*=}; shift ;;
    --gres) value "$@"; gres=$2; shift 2 ;;
    --gres=*) gres=${1#*=}; shift ;;
    --cpus-per-task) value "$@"; cpus_per_task=$2; shift 2 ;;
    --cpus-per-task=*) cpus_per_task=${1#*=}; shift ;;
    --wait) wait_jobs=1; shift ;;
    --fixture) fixture=1; shift ;;
    --hostile) hostile=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; while [ $# -gt 0 ]; do set_subs "$1"; shift; done ;;
    -*) die_usage "unknown option '$1'" ;;
    *) set_subs "$1"; shift ;;
  esac
done

[ $((fixture + hostile)) -le 1 ] || die_usage "--fixture and --hostile: one class at a time"
modes=$(( slurm + (${#collect_id} > 0) + (${#rerun_ids[@]} > 0) ))
[ "$modes" -le 1 ] || die_usage "--slurm, --collect and --rerun: one at a time"
if [ "$slurm" = 0 ]; then
  for v in shared partition account time_limit gres; do
    [ -z "${!v}" ] || [ "$modes" = 1 ] || die_usage "--${v/_limit/} is an option of --slurm, --collect and --rerun"
  done
  [ "$wait_jobs" = 0 ] || [ "$modes" = 1 ] || die_usage "--wait is an option of --slurm, --collect and --rerun"
fi
name_re='^[A-Za-z0-9][A-Za-z0-9_.,-]*$'
[ -z "$partition" ] || [[ $partition =~ $name_re ]] || die_usage "--partition: '$partition' is not a partition name"
[ -z "$account" ] || [[ $account =~ $name_re ]] || die_usage "--account: '$account' is not an account name"
time_re='^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$'
[ -z "$time_limit" ] || [[ $time_limit =~ $time_re ]] ||
  die_usage "--time: '$time_limit' is not a Slurm time (minutes, MM:SS, HH:MM:SS or D-HH:MM:SS)"
gres_re='^(none|[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*(,[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*)*)$'
[ -z "$gres" ] || [[ $gres =~ $gres_re ]] || die_usage "--gres: '$gres' is not a generic resource such as gpu:1 or gpu:h100:1 (or none)"
is_count "$cpus_per_task" || die_usage "--cpus-per-task must be a whole number above 0, not '$cpus_per_task'"
if [ -n "$collect_id" ]; then
  [[ $collect_id =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ ]] || die_usage "--collect: '$collect_id' is not a run id"
fi
for j in "${rerun_ids[@]}"; do
  [[ $j =~ ^[0-9]+_[0-9]+$ ]] || die_usage "--rerun: '$j' is not a job of an array, such as 57_3 (see --collect's list)"
done
if [ "$fixture" = 1 ] || [ "$hostile" = 1 ]; then
  class=fixture
  [ "$hostile" = 1 ] && class=hostile
  [ -z "$subs" ] || die_usage "--$class runs the repository's $class class: give no SUBMISSIONS_DIR"
  # The class is made from its base kernels and table of changes (tests/leaderboard/classes/)
  # into a temporary folder, removed at the end.
  class_tmp=$(mktemp -d "${TMPDIR:-/tmp}/kernel-workbook-class.XXXXXX") || die "cannot create a temporary folder"
  trap 'rm -rf -- "$class_tmp"' EXIT
  PYTHONPATH="$here/tools/leaderboard" python3 -m wb_leaderboard.classes "$class" "$class_tmp/$class-class" ||
    die "cannot make the repository's $class class (tests/leaderboard/classes/)"
  subs="$class_tmp/$class-class"
  # Without --chapter: every chapter that some student of the class has a folder for (chapters 1 to 9
  # of the fixture class, chapter 1 of the hostile one).
  : "${timeout_s:=300}" "${kernel_timeout:=5}" "${out:=$here/results/leaderboard-$class}"
  : "${expect:=$here/tests/leaderboard/$class-expected.json}"
fi
: "${timeout_s:=900}" "${out:=$here/results/leaderboard}"
is_positive "$timeout_s" || die_usage "--timeout must be a positive number of seconds, not '$timeout_s'"
if [ -z "$kernel_timeout" ]; then
  kernel_timeout=$(awk -v t="$timeout_s" 'BEGIN { k = t / 3; if (k > 60) k = 60; if (k < 1) k = 1; print k }')
fi
is_positive "$kernel_timeout" || die_usage "--kernel-timeout must be a positive number of seconds, not '$kernel_timeout'"
[ -z "$build_jobs" ] || is_count "$build_jobs" || die_usage "--build-jobs must be a whole number above 0, not '$build_jobs'"
arch_re='^[0-9a-z;, -]+$'
[[ -z "$arch" || $arch =~ $arch_re ]] || die_usage "--arch: '$arch' is not a list of CUDA architectures"
arch=${arch//,/;}
[ -z "$expect" ] || [ -f "$expect" ] || die_usage "--expect: '$expect' is not a file"

# Refuses a submissions, output or shared folder inside a folder of sources: it would either
# be copied into every build, or leave the build without that folder.
sources_guard() {
  local item p d
  for item in "$here"/*/; do
    item=${item%/}
    item=${item##*/}
    case "$item" in build|build-*|results|tests|docs|site|Testing) continue ;; esac
    d=$(cd -- "$here/$item" && pwd -P) || continue
    for p in "$subs" "$out" "${shared:-}"; do
      [ -n "$p" ] && p=$(realpath -m -- "$p") || continue
      case "$p/" in "$d"/*/) die "'$p' is inside the repository's $item/, which every build copies: put it elsewhere" ;; esac
    done
  done
}

if [ -n "$collect_id" ] || [ ${#rerun_ids[@]} -gt 0 ]; then
  [ -z "$subs" ] || die_usage "--collect and --rerun work on a submitted run: give no SUBMISSIONS_DIR"
  # shellcheck source=lib/slurm-leaderboard.sh
  . "$here/scripts/lib/slurm-leaderboard.sh"
  if [ -n "$collect_id" ]; then slurm_collect_mode; else slurm_rerun_mode; fi
  exit $?
fi
[ -n "$subs" ] || die_usage "give the SUBMISSIONS_DIR: a folder with one folder per student (see docs/leaderboard.md)"
[ -d "$subs" ] || die_usage "SUBMISSIONS_DIR '$subs' is not a folder"

# Chapters: each must exist, with its tests and benchmark.
declare -A chapter_dir=()
for d in "$here"/chapters/ch[0-9][0-9]_*/; do
  d=${d%/}
  name=${d##*/}
  chapter_dir[${name:0:4}]=$name
done
# A chapter can be ranked once it declares its tests and benchmark: spec.cu (or, in the older
# layout, tests.cu and bench.cu).
chapter_ready() {
  local d="$here/chapters/${chapter_dir[$1]}"
  [ -f "$d/spec.cu" ] || { [ -f "$d/tests.cu" ] && [ -f "$d/bench.cu" ]; }
}
wanted=()
for c in "${chapters[@]}"; do
  IFS=, read -ra parts <<< "$c"
  for ch in "${parts[@]}"; do
    [[ $ch =~ ^ch[0-9][0-9]$ ]] || die_usage "unknown chapter '$ch' (chapters present: ${!chapter_dir[*]})"
    [ -n "${chapter_dir[$ch]:-}" ] || die_usage "unknown chapter '$ch' (chapters present: $(printf '%s\n' "${!chapter_dir[@]}" | sort | tr '\n' ' '))"
    chapter_ready "$ch" || die_usage "chapter $ch has no spec.cu (nor tests.cu and bench.cu) yet, so it cannot be ranked"
    wanted+=("$ch")
  done
done

for ch in "${wanted[@]}"; do
  err=$(python3 "$lb" runner --repo "$here" --chapter "$ch" 2>&1 > /dev/null) || die "$ch cannot be ranked: ${err#leaderboard: }"
done

# The repository's sources that a build needs: every top-level item but the history, the
# build folders, the tests (the fixture classes), the book and hidden ones, and any that
# holds the submissions, the output or the shared folder (were they put in the repository).
source_items() {
  local item p d skip
  for item in "$here"/*; do
    item=${item##*/}
    case "$item" in build|build-*|results|tests|docs|site|Testing) continue ;; esac
    skip=0
    if [ -d "$here/$item" ]; then
      d=$(cd -- "$here/$item" && pwd -P)
      for p in "$subs" "$out" "${shared:-}"; do
        [ -n "$p" ] && p=$(cd -- "$p" 2> /dev/null && pwd -P) || continue
        case "$p/" in "$d"/*) skip=1 ;; esac
      done
    fi
    [ "$skip" = 1 ] || printf '%s\n' "$item"
  done
}

sources_guard

if [ "$slurm" = 1 ]; then
  # shellcheck source=lib/slurm-leaderboard.sh
  . "$here/scripts/lib/slurm-leaderboard.sh"
  slurm_submit_mode
  exit $?
fi

for tool in python3 cmake ninja timeout od awk mkfifo head; do
  command -v "$tool" > /dev/null 2>&1 || die "'$tool' is needed and was not found on PATH"
done

# --- the sandbox ---------------------------------------------------------------------------
# Without a working bubblewrap the leaderboard refuses to rank, unless --unsafe-no-sandbox.
sb_check "$bwrap_arg"
if [ "$sandbox" = none ]; then
  if [ "$unsafe" = 1 ]; then
    say "WARNING: $sandbox_problem; running UNSANDBOXED (--unsafe-no-sandbox): every report of this run says so"
  else
    die "refusing to rank without a sandbox: $sandbox_problem.
  Install bubblewrap (sudo apt-get install bubblewrap), or unpack it with scripts/fetch-bwrap.sh and pass
  --bwrap PATH; or pass --unsafe-no-sandbox to run the submissions with your rights (docs/leaderboard.md)."
  fi
fi

# --- the GPUs ------------------------------------------------------------------------------
gpu_lines=""
if command -v nvidia-smi > /dev/null 2>&1; then
  gpu_lines=$(nvidia-smi --query-gpu=index,uuid,compute_cap,name --format=csv,noheader 2> /dev/null) || gpu_lines=""
fi
if [ -z "$gpu_lines" ]; then
  die "no NVIDIA GPU is visible (nvidia-smi lists none): the leaderboard tests and times kernels on a GPU, so
  it needs one. Without a GPU, the ranking and report code can still be checked: ctest -L host -R leaderboard"
fi
all_idx=(); all_uuid=(); all_cap=(); all_name=()
while IFS=, read -r idx uuid cap name; do
  all_idx+=("${idx// /}"); all_uuid+=("${uuid// /}"); all_cap+=("${cap// /}"); all_name+=("${name# }")
done <<< "$gpu_lines"
pick="$gpus_arg"
if [ -z "$pick" ] && [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  pick=$CUDA_VISIBLE_DEVICES
  say "note: using the GPUs in CUDA_VISIBLE_DEVICES ($pick)"
fi
gpu_uuid=(); gpu_name=(); gpu_label=(); caps=()
if [ -z "$pick" ]; then
  sel=("${!all_idx[@]}")
else
  sel=()
  IFS=, read -ra want_gpus <<< "$pick"
  for w in "${want_gpus[@]}"; do
    w=${w// /}
    found=""
    for i in "${!all_idx[@]}"; do
      if [ "$w" = "${all_idx[$i]}" ] || [ "$w" = "${all_uuid[$i]}" ]; then found=$i; fi
    done
    [ -n "$found" ] || die_usage "--gpus: no GPU '$w' (nvidia-smi lists: ${all_idx[*]})"
    sel+=("$found")
  done
fi
for i in "${sel[@]}"; do
  gpu_uuid+=("${all_uuid[$i]}"); gpu_name+=("${all_name[$i]}"); gpu_label+=("GPU${all_idx[$i]}")
  caps+=("${all_cap[$i]//./}")
done
arch_def=()
if [ -n "$arch" ]; then
  arch_def=("-DCMAKE_CUDA_ARCHITECTURES=$arch")
elif [ -z "${CUDAARCHS:-}" ]; then
  arch=$(printf '%s\n' "${caps[@]}" | sort -u | paste -sd ';')
  arch_def=("-DCMAKE_CUDA_ARCHITECTURES=$arch")
else
  arch="$CUDAARCHS (CUDAARCHS)"
fi

# --- work folder, output, plan ------------------------------------------------------------
mkdir -p -- "$out" || die "cannot create the output folder '$out'"
out=$(cd -- "$out" && pwd -P)
subs=$(cd -- "$subs" && pwd -P)
history="$out/history.jsonl"
run_id="$(date -u +%Y%m%d-%H%M%S)-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')"
commit=$(git -C "$here" rev-parse --short=12 HEAD 2> /dev/null || echo unknown)
work=$(mktemp -d "${TMPDIR:-/tmp}/kernel-workbook-leaderboard.XXXXXX") || die "cannot create a work folder"
work=$(cd -- "$work" && pwd -P)
# The students' files wait in a folder whose name nobody can guess (no build sees it anyway).
ents="$work/$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')/entries"
# The history's key: a teacher-only file, outside every folder a submission's steps touch.
key_file=${key_file:-${XDG_CONFIG_HOME:-$HOME/.config}/kernel-workbook/leaderboard.key}
key_dir=$(mkdir -p -m 700 -- "$(dirname -- "$key_file")" && cd -- "$(dirname -- "$key_file")" && pwd -P) ||
  die "cannot create the folder of the history key '$key_file'"
key_file="$key_dir/$(basename -- "$key_file")"
for p in "$subs" "$out" "$here" "$work"; do
  case "$key_dir/" in "$p"/*) die "--key: the history key must live outside '$p'" ;; esac
done
ncpu=$(nproc 2> /dev/null || echo 4)
started=$(date +%s)
worker_pids=()

cleanup() {
  if [ "$keep_work" = 0 ] && [ -n "${work:-}" ] && [ -d "$work" ]; then
    chmod -R u+w -- "$work" 2> /dev/null
    rm -rf -- "$work"
  fi
  [ -z "${class_tmp:-}" ] || rm -rf -- "$class_tmp"
}
interrupted() {
  say ""
  say "$me: interrupted; stopping the submissions in flight"
  for p in "${worker_pids[@]}"; do kill "$p" 2> /dev/null; done
  wait 2> /dev/null
  python3 "$lb" report --history "$history" --key "$key_file" --out "$out" --run-id "$run_id" 2> /dev/null
  say "$me: the results recorded so far are kept in $history"
  cleanup
  exit 130
}
trap cleanup EXIT
trap interrupted INT TERM

mkdir -p "$work/src" "$work/cache" "$work/slots" "$work/bases" "$work/boxes" "$work/fifos" "$work/data" "$ents"
while IFS= read -r item; do
  cp -a -- "$here/$item" "$work/src/"
done < <(source_items)

if [ ${#wanted[@]} -eq 0 ]; then
  read -ra wanted <<< "$(python3 "$lb" chapters --repo "$work/src" --submissions "$subs")"
  ready=()
  for ch in "${wanted[@]}"; do
    if chapter_ready "$ch"; then
      ready+=("$ch")
    else
      say "note: $ch is skipped: the chapter has no spec.cu yet"
    fi
  done
  wanted=("${ready[@]}")
  [ ${#wanted[@]} -gt 0 ] || die "no student folder holds a chNN folder of a chapter that can be ranked; see docs/leaderboard.md"
fi
# What each chapter builds and runs (chapters/chNN_*/leaderboard.json, or chNN_bench).
declare -A run_build=() run_prepare=() run_bench=() run_baseline=()
for ch in "${wanted[@]}"; do
  lines=$(python3 "$lb" runner --repo "$work/src" --chapter "$ch") || die "$ch cannot be ranked (see above)"
  while IFS=$'\t' read -r k rest; do
    case "$k" in
      build) run_build[$ch]=${rest//$'\t'/ } ;;
      prepare) run_prepare[$ch]=$rest ;;
      bench) run_bench[$ch]=$rest ;;
      baseline) run_baseline[$ch]=$rest ;;
    esac
  done <<< "$lines"
done

plan_args=()
for ch in "${wanted[@]}"; do plan_args+=(--chapter "$ch"); done
python3 "$lb" plan --repo "$work/src" --submissions "$subs" --work "${ents%/entries}" "${plan_args[@]}" > "$work/plan.tsv" ||
  die "could not read the submissions in '$subs'"
e_id=(); e_ch=(); e_state=(); e_name=()
while IFS=$'\t' read -r id ch state name; do
  [ -n "$id" ] || continue
  [[ $id =~ ^[A-Za-z0-9][A-Za-z0-9_-]*-[0-9a-f]{8}$ && $ch =~ ^ch[0-9][0-9]$ ]] || die "internal: bad plan line"
  e_id+=("$id"); e_ch+=("$ch"); e_state+=("$state"); e_name+=("$name")
done < "$work/plan.tsv"
n_entries=${#e_id[@]}
[ "$n_entries" -gt 0 ] || die "no student folders in '$subs'"
n_before=0
[ -f "$history" ] && n_before=$(wc -l < "$history")

to_build=()
for i in "${!e_id[@]}"; do [ "${e_state[$i]}" = build ] && to_build+=("$i"); done
if [ -z "$build_jobs" ]; then build_jobs=$(( ncpu / 8 )); fi
[ "$build_jobs" -ge 1 ] || build_jobs=1
[ "$build_jobs" -le ${#to_build[@]} ] || build_jobs=${#to_build[@]}
[ "$build_jobs" -ge 1 ] || build_jobs=1
jobs_each=$(( ncpu / build_jobs ))
[ "$jobs_each" -ge 1 ] || jobs_each=1

say "kernel-workbook leaderboard, run $run_id (commit $commit)"
say "  submissions: $subs ($n_entries entries: $(printf '%s\n' "${e_id[@]}" | sort -u | wc -l) students x chapters ${wanted[*]})"
for g in "${!gpu_uuid[@]}"; do say "  ${gpu_label[$g]}: ${gpu_name[$g]} (${gpu_uuid[$g]})"; done
say "  CUDA architectures: $arch; $build_jobs build(s) at a time, -j$jobs_each each"
say "  time limits: ${timeout_s} s per step, ${kernel_timeout} s per kernel"
if [ "$sandbox" = bubblewrap ]; then
  say "  sandbox: bubblewrap, $bwrap (no network; read-only system; the repository, the submissions, the"
  say "           output, the history key and the other work folders are not visible; results leave through a pipe)"
else
  say "  sandbox: NONE (--unsafe-no-sandbox) -- submissions run UNSANDBOXED, with your user's rights and network"
  say "           access; they can read each other's files and the history key. The reports say so."
fi
say "  history key: $key_file"
if [ "$use_ncu" = 1 ] && command -v ncu > /dev/null 2>&1; then
  ncu_bin=$(command -v ncu)
  say "  cross-check: ncu ($ncu_bin) re-measures each submission's fastest-claimed row"
else
  ncu_bin=""
  say "  cross-check: no ncu re-measurement ($([ "$use_ncu" = 1 ] && echo "ncu not found" || echo "--no-ncu"))"
fi
say "  results: $out (history: $n_before earlier results)"
say ""

# --- running one step, limited and (where possible) sandboxed ------------------------------
# tools/leaderboard/sandbox.sh: run_limited and run_captured. No step sees the repository, the
# submissions, the output, the work folder (but its own folder) or the history key.
sb_prepare "$here" "$subs" "$out" "$work" "$key_dir"
sb_fifos="$work/fifos"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
LOG_LIMIT=$((32 * 1024 * 1024))  # bytes of output kept per step

# --- phase 1: builds ------------------------------------------------------------------------
# A build tree per (build slot, chapter) is built once from the repository itself; each
# submission then gets a fresh copy of it at the same path, its files copied over the stubs,
# and an incremental build of the two programs it needs.
build_base() {  # slot chapter
  local live="$work/slots/$1-$2" snap="$work/bases/$1-$2"
  mkdir -p "$live"
  cp -a "$work/src" "$live/src"
  (
    # The compiler cache sees paths relative to the work folder, whose name changes every
    # run: the harness compiled by an earlier run is reused.
    export CCACHE_BASEDIR="$work" CCACHE_NOHASHDIR=1
    env WORKBOOK_GIT_COMMIT="$commit" cmake -S "$live/src" -B "$live/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DWORKBOOK_CHAPTERS="$2" -DWORKBOOK_BUILD_ON_TEST=OFF "${arch_def[@]}" &&
      env WORKBOOK_GIT_COMMIT="$commit" cmake --build "$live/build" -j "$ncpu" --target ${run_build[$2]} devicequery
  ) > "$work/base-$1-$2.log" 2>&1 || return 1
  cp -a "$live" "$snap"
}

for ch in "${wanted[@]}"; do
  for ((k = 0; k < build_jobs; ++k)); do
    t0=$(now)
    say "building the repository's $ch (build slot $k) ..."
    build_base "$k" "$ch" || {
      tail -20 "$work/base-$k-$ch.log" >&2
      keep_work=1
      die "the repository's own $ch does not build (log: $work/base-$k-$ch.log); nothing was ranked"
    }
    say "  done ($(since "$t0") s)"
  done
done

build_entry() {  # slot index
  local k=$1 i=$2
  local id=${e_id[$i]} ch=${e_ch[$i]}
  local e="$ents/$id/$ch" live="$work/slots/$k-$ch" snap="$work/bases/$k-$ch"
  local target="$live/src/chapters/${chapter_dir[$ch]}"
  chmod -R u+w -- "$live" 2> /dev/null
  # A fresh copy of the repository's tree, plus this submission's files and nothing else.
  rm -rf -- "$live" && cp -a -- "$snap" "$live" || return 1
  local f
  for f in "$e/submission"/*; do
    [ -f "$f" ] && cp -- "$f" "$target/${f##*/}"
  done
  local targets t
  read -ra targets <<< "${run_build[$ch]}"
  for t in "${targets[@]}"; do rm -f -- "$live/build/bin/$t"; done
  local t0 rc
  t0=$(now)
  RUN_ENV=()
  RO_EXTRA=("$work/cache")
  run_limited "$timeout_s" "$live" "" -- cmake --build "$live/build" -j "$jobs_each" --target "${targets[@]}" \
    2>&1 | head -c "$LOG_LIMIT" > "$e/build.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ]; then
    mkdir -p "$e/bin"
    for t in "${targets[@]}"; do
      if [ -x "$live/build/bin/$t" ]; then cp -- "$live/build/bin/$t" "$e/bin/"; else rc=1; fi
    done
  fi
  printf 'build\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
  if [ "$rc" = 0 ]; then
    say "[build $k] $ch ${e_name[$i]}: built ($(since "$t0") s)"
  else
    say "[build $k] $ch ${e_name[$i]}: did not build ($(since "$t0") s)"
  fi
}

build_slot() {  # slot: builds entries k, k + build_jobs, ...
  local k=$1 j
  for ((j = k; j < ${#to_build[@]}; j += build_jobs)); do
    build_entry "$k" "${to_build[$j]}"
  done
}

say ""
say "building ${#to_build[@]} submission(s) ..."
for ((k = 0; k < build_jobs; ++k)); do
  build_slot "$k" &
  worker_pids+=($!)
done
wait
worker_pids=()

# --- phase 2: tests and benchmarks, one submission per GPU at a time ----------------------
# The measured ceilings (copy bandwidth, GEMM rates) are measured once per GPU, by the
# repository's own devicequery, and shared read-only with every submission. The repository's
# own benchmark then times the library reference on each GPU: the baseline every
# submission's numbers are checked against (they never come from a submission's process).
for g in "${!gpu_uuid[@]}"; do
  env CUDA_VISIBLE_DEVICES="${gpu_uuid[$g]}" WORKBOOK_CACHE_DIR="$work/cache" \
    timeout 600 "$work/bases/0-${wanted[0]}/build/bin/devicequery" --measure > "$work/ceilings-$g.log" 2>&1 ||
    say "note: measuring the ceilings of ${gpu_label[$g]} failed (see the benchmark logs)"
done
mkdir -p "$work/trusted"
for ch in "${wanted[@]}"; do
  # Inputs a chapter's programs need (model weights ...), made once by the repository's own build.
  mkdir -p "$work/data/$ch"
  if [ -n "${run_prepare[$ch]}" ]; then
    expand_command "${run_prepare[$ch]}" "$work/bases/0-$ch/build/bin" "" "$work/data/$ch"
    (cd "$work/data/$ch" && timeout "$timeout_s" "${cmd[@]}") > "$work/prepare-$ch.log" 2>&1 ||
      say "note: preparing the inputs of $ch failed (log: $work/prepare-$ch.log)"
  fi
done
for g in "${!gpu_uuid[@]}"; do
  for ch in "${wanted[@]}"; do
    expand_command "${run_baseline[$ch]}" "$work/bases/0-$ch/build/bin" "$work/trusted/$g-$ch.json" "$work/data/$ch"
    (cd "$work/trusted" && env CUDA_VISIBLE_DEVICES="${gpu_uuid[$g]}" WORKBOOK_CACHE_DIR="$work/cache" \
      timeout "$timeout_s" "${cmd[@]}" > "$work/trusted/$g-$ch.log" 2>&1) ||
      say "note: the baseline run of $ch on ${gpu_label[$g]} failed: rows are checked against their own run's ceilings"
  done
done
chmod -R a-w "$work/cache" "$work/data"

record_entry() {  # index gpu
  local i=$1 g=$2 id=${e_id[$1]} ch=${e_ch[$1]}
  local e="$ents/$id/$ch" keep="$out/runs/$run_id/$id/$ch" verdict trusted=()
  mkdir -p "$keep"
  for f in meta.json steps.tsv build.log tests.log tests.json bench.log bench.json ncu.csv ncu-target.json; do
    [ -f "$e/$f" ] && cp -- "$e/$f" "$keep/"
  done
  [ -s "$work/trusted/$g-$ch.json" ] && trusted=(--trusted "$work/trusted/$g-$ch.json")
  verdict=$(python3 "$lb" record --history "$history" --key "$key_file" --entry "$e" --run-id "$run_id" \
    --gpu-name "${gpu_name[$g]}" --gpu-uuid "${gpu_uuid[$g]}" --sandbox "$sandbox" --commit "$commit" \
    --logs "runs/$run_id/$id/$ch" "${trusted[@]}" 2>&1) || verdict="could not record: $verdict"
  say "[${gpu_label[$g]}] $ch ${e_name[$i]}: $verdict"
}

run_entry() {  # index gpu
  local i=$1 g=$2 id=${e_id[$1]} ch=${e_ch[$1]}
  local e="$ents/$id/$ch" box="$work/boxes/$id-$ch" t0 rc selection select_args
  if [ ! -x "$e/bin/${ch}_tests" ]; then
    record_entry "$i" "$g"
    return
  fi
  mkdir -p "$box"
  # The seed is drawn by the harness itself after main starts (WORKBOOK_SEED_MODE=secret) and
  # printed at the end; nothing the process can read before main holds it.
  RUN_ENV=(CUDA_VISIBLE_DEVICES="${gpu_uuid[$g]}" CUDA_DEVICE_ORDER=PCI_BUS_ID WORKBOOK_CACHE_DIR="$work/cache"
           WORKBOOK_KERNEL_TIMEOUT="$kernel_timeout" WORKBOOK_SEED_MODE=secret)
  RO_EXTRA=("$work/cache" "$work/data/$ch")
  say "[${gpu_label[$g]}] $ch ${e_name[$i]}: tests ..."
  t0=$(now)
  run_captured "$timeout_s" "$box" "$e/bin" "$e/tests.json" -- "$e/bin/${ch}_tests" --gtest_color=no --gtest_fail_fast \
    --gtest_output=json:/dev/fd/3 2>&1 | head -c "$LOG_LIMIT" > "$e/tests.log"
  rc=${PIPESTATUS[0]}
  printf 'tests\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
  if [ "$rc" = 0 ]; then
    say "[${gpu_label[$g]}] $ch ${e_name[$i]}: tests finished (exit 0, $(since "$t0") s); benchmark ..."
    t0=$(now)
    expand_command "${run_bench[$ch]}" "$e/bin" /dev/fd/3 "$work/data/$ch"
    run_captured "$timeout_s" "$box" "$e/bin" "$e/bench.json" -- "${cmd[@]}" 2>&1 | head -c "$LOG_LIMIT" > "$e/bench.log"
    rc=${PIPESTATUS[0]}
    printf 'bench\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
    # Nsight Compute re-measures the kernels of the row that claims the most.
    if [ "$rc" = 0 ] && [ -n "$ncu_bin" ] && [ -x "$e/bin/${ch}_bench" ] &&
       selection=$(python3 "$lb" ncu-target --entry "$e"); then
      mapfile -t select_args <<< "$selection"
      say "[${gpu_label[$g]}] $ch ${e_name[$i]}: benchmark finished; ncu on ${select_args[*]} ..."
      t0=$(now)
      rm -f -- "$box/ncu.csv"
      run_limited "$timeout_s" "$box" "$e/bin" -- "$ncu_bin" --clock-control none --print-kernel-base mangled \
        --csv --page raw --metrics gpu__time_duration.sum --log-file "$box/ncu.csv" \
        "$e/bin/${ch}_bench" "${select_args[@]}" --samples=10 --json=/dev/null \
        > "$e/ncu.log" 2>&1
      rc=$?
      printf 'ncu\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
      [ -f "$box/ncu.csv" ] && head -c "$LOG_LIMIT" "$box/ncu.csv" > "$e/ncu.csv"
    fi
  fi
  chmod -R u+w -- "$box" 2> /dev/null
  rm -rf -- "$box"
  record_entry "$i" "$g"
}

echo 0 > "$work/queue.next"
next_entry() {
  local n
  until mkdir "$work/queue.lock" 2> /dev/null; do sleep 0.05; done
  n=$(cat "$work/queue.next")
  echo $((n + 1)) > "$work/queue.next"
  rmdir "$work/queue.lock"
  echo "$n"
}
gpu_worker() {  # gpu
  local n
  while n=$(next_entry) && [ "$n" -lt ${#to_build[@]} ]; do
    run_entry "${to_build[$n]}" "$1"
  done
}
say ""
say "testing and timing on ${#gpu_uuid[@]} GPU(s) ..."
# Missing submissions are recorded at once; the rest are handed to the GPU workers.
for i in "${!e_id[@]}"; do
  [ "${e_state[$i]}" = build ] || record_entry "$i" 0
done
for g in "${!gpu_uuid[@]}"; do
  gpu_worker "$g" &
  worker_pids+=($!)
done
wait
worker_pids=()

# --- the reports ----------------------------------------------------------------------------
say ""
python3 "$lb" report --history "$history" --key "$key_file" --out "$out" --run-id "$run_id"
n_after=$(wc -l < "$history")
say "this run: $n_entries result(s) added to the $n_before earlier ones (history: $n_after lines, never rewritten)"
say "logs of this run: $out/runs/$run_id/"
[ "$sandbox" = none ] && say "WARNING: the submissions ran UNSANDBOXED (--unsafe-no-sandbox): the reports say so"
say "wall time: $(( $(date +%s) - started )) s"

status=0
if [ -n "$expect" ]; then
  say ""
  say "checking this run against $expect:"
  # A run limited with --chapter is compared on those chapters only.
  only=()
  if [ ${#chapters[@]} -gt 0 ]; then
    for ch in "${wanted[@]}"; do only+=(--chapter "$ch"); done
  fi
  python3 "$lb" check --history "$history" --key "$key_file" --run-id "$run_id" --expect "$expect" "${only[@]}" ||
    status=1
  if [ $((n_after - n_before)) -lt "$n_entries" ]; then
    say "MISS the history grew by $((n_after - n_before)) lines, fewer than the $n_entries results of this run"
    status=1
  fi
fi
exit $status
