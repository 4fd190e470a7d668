#!/usr/bin/env bash
# The class leaderboard: builds each student's kernels in a tree of its own, runs the
# chapter's full tests with a fresh secret seed, then the chapter's benchmark, each step
# under its own time limit, and ranks the correct submissions per chapter and per GPU.
# See docs/leaderboard.md for the submission layout, the ranking and the fairness rules.
#
# usage: scripts/leaderboard.sh [options] SUBMISSIONS_DIR
#        scripts/leaderboard.sh --fixture [options]   the repository's fixture class (needs a GPU)
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
#   --no-sandbox         run without bubblewrap even where it is installed
#   --keep-work          keep the work folder (build trees, binaries) after the run
#   -h, --help           this text
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
lb="$here/tools/leaderboard/leaderboard.py"
me="leaderboard"

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
use_sandbox=1
keep_work=0
fixture=0
subs=""
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
    --no-sandbox) use_sandbox=0; shift ;;
    --keep-work) keep_work=1; shift ;;
    --fixture) fixture=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; while [ $# -gt 0 ]; do set_subs "$1"; shift; done ;;
    -*) die_usage "unknown option '$1'" ;;
    *) set_subs "$1"; shift ;;
  esac
done

if [ "$fixture" = 1 ]; then
  [ -z "$subs" ] || die_usage "--fixture runs the repository's fixture class: give no SUBMISSIONS_DIR"
  subs="$here/tests/leaderboard/fixture-class"
  [ ${#chapters[@]} -gt 0 ] || chapters=(ch01)
  : "${timeout_s:=300}" "${kernel_timeout:=5}" "${out:=$here/results/leaderboard-fixture}"
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
[ -n "$subs" ] || die_usage "give the SUBMISSIONS_DIR: a folder with one folder per student (see docs/leaderboard.md)"
[ -d "$subs" ] || die_usage "SUBMISSIONS_DIR '$subs' is not a folder"

# Chapters: each must exist, with its tests and benchmark.
declare -A chapter_dir=()
for d in "$here"/chapters/ch[0-9][0-9]_*/; do
  d=${d%/}
  name=${d##*/}
  chapter_dir[${name:0:4}]=$name
done
wanted=()
for c in "${chapters[@]}"; do
  IFS=, read -ra parts <<< "$c"
  for ch in "${parts[@]}"; do
    [[ $ch =~ ^ch[0-9][0-9]$ ]] || die_usage "unknown chapter '$ch' (chapters present: ${!chapter_dir[*]})"
    [ -n "${chapter_dir[$ch]:-}" ] || die_usage "unknown chapter '$ch' (chapters present: $(printf '%s\n' "${!chapter_dir[@]}" | sort | tr '\n' ' '))"
    for f in tests.cu bench.cu; do
      [ -f "$here/chapters/${chapter_dir[$ch]}/$f" ] ||
        die_usage "chapter $ch has no $f yet, so it cannot be ranked"
    done
    wanted+=("$ch")
  done
done

for tool in python3 cmake ninja timeout od awk; do
  command -v "$tool" > /dev/null 2>&1 || die "'$tool' is needed and was not found on PATH"
done

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

# --- the sandbox ---------------------------------------------------------------------------
sandbox=none
if [ "$use_sandbox" = 1 ] && command -v bwrap > /dev/null 2>&1; then
  if err=$(bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc true 2>&1); then
    sandbox=bubblewrap
  else
    die "bubblewrap is installed but cannot start a sandbox here: $err
  Fix that (docs/leaderboard.md, section Sandbox), or pass --no-sandbox to run the submissions unsandboxed."
  fi
fi

# --- work folder, output, plan ------------------------------------------------------------
mkdir -p -- "$out" || die "cannot create the output folder '$out'"
out=$(cd -- "$out" && pwd -P)
subs=$(cd -- "$subs" && pwd -P)
history="$out/history.jsonl"
run_id="$(date -u +%Y%m%d-%H%M%S)-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')"
commit=$(git -C "$here" rev-parse --short=12 HEAD 2> /dev/null || echo unknown)
work=$(mktemp -d "${TMPDIR:-/tmp}/kernel-workbook-leaderboard.XXXXXX") || die "cannot create a work folder"
ncpu=$(nproc 2> /dev/null || echo 4)
started=$(date +%s)
worker_pids=()

cleanup() {
  if [ "$keep_work" = 0 ] && [ -n "${work:-}" ] && [ -d "$work" ]; then
    chmod -R u+w -- "$work" 2> /dev/null
    rm -rf -- "$work"
  fi
}
interrupted() {
  say ""
  say "$me: interrupted; stopping the submissions in flight"
  for p in "${worker_pids[@]}"; do kill "$p" 2> /dev/null; done
  wait 2> /dev/null
  python3 "$lb" report --history "$history" --out "$out" --run-id "$run_id" 2> /dev/null
  say "$me: the results recorded so far are kept in $history"
  cleanup
  exit 130
}
trap cleanup EXIT
trap interrupted INT TERM

mkdir -p "$work/src" "$work/cache" "$work/slots" "$work/bases"
for item in chapters reference solutions harness cmake tools CMakeLists.txt CMakePresets.json; do
  [ -e "$here/$item" ] && cp -a -- "$here/$item" "$work/src/"
done

if [ ${#wanted[@]} -eq 0 ]; then
  read -ra wanted <<< "$(python3 "$lb" chapters --repo "$work/src" --submissions "$subs")"
  ready=()
  for ch in "${wanted[@]}"; do
    if [ -f "$here/chapters/${chapter_dir[$ch]}/tests.cu" ] && [ -f "$here/chapters/${chapter_dir[$ch]}/bench.cu" ]; then
      ready+=("$ch")
    else
      say "note: $ch is skipped: the chapter has no tests.cu or bench.cu yet"
    fi
  done
  wanted=("${ready[@]}")
  [ ${#wanted[@]} -gt 0 ] || die "no student folder holds a chNN folder of a chapter that can be ranked; see docs/leaderboard.md"
fi

plan_args=()
for ch in "${wanted[@]}"; do plan_args+=(--chapter "$ch"); done
python3 "$lb" plan --repo "$work/src" --submissions "$subs" --work "$work" "${plan_args[@]}" > "$work/plan.tsv" ||
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
  say "  sandbox: bubblewrap (no network; read-only system; each submission writes only its own folder)"
else
  say "  sandbox: NONE -- submissions run UNSANDBOXED, with your user's rights and network access"
  say "           (install bubblewrap: sudo apt-get install bubblewrap; see docs/leaderboard.md)"
fi
say "  results: $out (history: $n_before earlier results)"
say ""

# --- running one step, limited and (where possible) sandboxed ------------------------------
# run_limited LIMIT RW_DIR RO_DIR -- command...: the command runs in RW_DIR, may write only
# there (sandboxed), sees RO_DIR read-only, and has a clean environment plus RUN_ENV.
hide=()
for p in "$here" "$subs" "$out" "$work"; do hide+=(--tmpfs "$p"); done
if [ -n "${HOME:-}" ] && [ "$HOME" != / ]; then
  for s in .ssh .gnupg .aws .azure .config/gcloud .kube .docker .password-store; do
    [ -d "$HOME/$s" ] && hide+=(--tmpfs "$HOME/$s")
  done
  for s in .netrc .git-credentials .pgpass; do
    [ -f "$HOME/$s" ] && hide+=(--ro-bind /dev/null "$HOME/$s")
  done
fi
gpu_nodes=()
for d in /dev/nvidia*; do [ -e "$d" ] && gpu_nodes+=(--dev-bind "$d" "$d"); done
RUN_ENV=()
run_limited() {
  local limit=$1 rw=$2 ro=$3
  shift 4
  mkdir -p "$rw/home" "$rw/tmp"
  local envs=(PATH="$PATH" HOME="$rw/home" TMPDIR="$rw/tmp" LANG=C.UTF-8 LC_ALL=C.UTF-8
              WORKBOOK_GIT_COMMIT="$commit" "${RUN_ENV[@]}")
  [ -n "${LD_LIBRARY_PATH:-}" ] && envs+=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH")
  [ -n "${CUDAARCHS:-}" ] && envs+=(CUDAARCHS="$CUDAARCHS")
  if [ "$sandbox" = bubblewrap ]; then
    local ro_bind=()
    [ -n "$ro" ] && ro_bind=(--ro-bind "$ro" "$ro")
    timeout -k 10 "$limit" env -i "${envs[@]}" \
      bwrap --unshare-all --die-with-parent --new-session \
      --ro-bind / / --dev /dev --tmpfs /dev/shm "${gpu_nodes[@]}" --proc /proc --tmpfs /tmp \
      "${hide[@]}" --bind "$rw" "$rw" "${ro_bind[@]}" --ro-bind "$work/cache" "$work/cache" \
      --chdir "$rw" -- "$@"
  else
    (cd -- "$rw" && exec timeout -k 10 "$limit" env -i "${envs[@]}" "$@")
  fi
}

# A program run with a secret seed: the seed travels in a file that the wrapper reads and
# deletes, so that it is in the environment of the test program only (the harness removes it
# from there before main). Neither the sandbox nor `timeout` carry it.
seeded=(/bin/sh -c 'IFS= read -r s < "$1"; rm -f -- "$1"; [ -n "$s" ] || exit 125; WORKBOOK_SEED=$s; export WORKBOOK_SEED; shift; exec "$@"' seeded)
new_seed() { od -An -N8 -tu8 /dev/urandom | tr -d ' \n'; echo; }
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
  {
    env WORKBOOK_GIT_COMMIT="$commit" cmake -S "$live/src" -B "$live/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DWORKBOOK_CHAPTERS="$2" -DWORKBOOK_BUILD_ON_TEST=OFF "${arch_def[@]}" &&
      env WORKBOOK_GIT_COMMIT="$commit" cmake --build "$live/build" -j "$ncpu" --target "$2_tests" "$2_bench" devicequery
  } > "$work/base-$1-$2.log" 2>&1 || return 1
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
  local e="$work/entries/$id/$ch" live="$work/slots/$k-$ch" snap="$work/bases/$k-$ch"
  local target="$live/src/chapters/${chapter_dir[$ch]}"
  chmod -R u+w -- "$live" 2> /dev/null
  rm -rf -- "$live" && cp -a -- "$snap" "$live" || return 1
  local f
  for f in "$e/submission"/*; do
    [ -f "$f" ] && cp -- "$f" "$target/${f##*/}"
  done
  rm -f -- "$live/build/bin/${ch}_tests" "$live/build/bin/${ch}_bench"
  local t0 rc
  t0=$(now)
  RUN_ENV=()
  run_limited "$timeout_s" "$live" "" -- cmake --build "$live/build" -j "$jobs_each" --target "${ch}_tests" "${ch}_bench" \
    2>&1 | head -c "$LOG_LIMIT" > "$e/build.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ] && [ -x "$live/build/bin/${ch}_tests" ] && [ -x "$live/build/bin/${ch}_bench" ]; then
    mkdir -p "$e/bin"
    cp -- "$live/build/bin/${ch}_tests" "$live/build/bin/${ch}_bench" "$e/bin/"
  elif [ "$rc" = 0 ]; then
    rc=1
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
# repository's own devicequery, and shared read-only with every submission.
for g in "${!gpu_uuid[@]}"; do
  env CUDA_VISIBLE_DEVICES="${gpu_uuid[$g]}" WORKBOOK_CACHE_DIR="$work/cache" \
    timeout 600 "$work/bases/0-${wanted[0]}/build/bin/devicequery" --measure > "$work/ceilings-$g.log" 2>&1 ||
    say "note: measuring the ceilings of ${gpu_label[$g]} failed (see the benchmark logs)"
done
chmod -R a-w "$work/cache"

record_entry() {  # index gpu
  local i=$1 g=$2 id=${e_id[$1]} ch=${e_ch[$1]}
  local e="$work/entries/$id/$ch" keep="$out/runs/$run_id/$id/$ch" verdict
  mkdir -p "$keep"
  for f in meta.json steps.tsv build.log tests.log bench.log bench.json; do
    [ -f "$e/$f" ] && cp -- "$e/$f" "$keep/"
  done
  verdict=$(python3 "$lb" record --history "$history" --entry "$e" --run-id "$run_id" \
    --gpu-name "${gpu_name[$g]}" --gpu-uuid "${gpu_uuid[$g]}" --sandbox "$sandbox" --commit "$commit" \
    --logs "runs/$run_id/$id/$ch" 2>&1) || verdict="could not record: $verdict"
  say "[${gpu_label[$g]}] $ch ${e_name[$i]}: $verdict"
}

run_entry() {  # index gpu
  local i=$1 g=$2 id=${e_id[$1]} ch=${e_ch[$1]}
  local e="$work/entries/$id/$ch" box="$work/entries/$id/$ch/sandbox" t0 rc
  if [ ! -x "$e/bin/${ch}_tests" ]; then
    record_entry "$i" "$g"
    return
  fi
  mkdir -p "$box"
  RUN_ENV=(CUDA_VISIBLE_DEVICES="${gpu_uuid[$g]}" CUDA_DEVICE_ORDER=PCI_BUS_ID WORKBOOK_CACHE_DIR="$work/cache"
           WORKBOOK_KERNEL_TIMEOUT="$kernel_timeout")
  say "[${gpu_label[$g]}] $ch ${e_name[$i]}: tests ..."
  (umask 077 && new_seed > "$box/.seed")
  t0=$(now)
  run_limited "$timeout_s" "$box" "$e/bin" -- "${seeded[@]}" "$box/.seed" "$e/bin/${ch}_tests" --gtest_color=no \
    2>&1 | head -c "$LOG_LIMIT" > "$e/tests.log"
  rc=${PIPESTATUS[0]}
  printf 'tests\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
  if [ "$rc" = 0 ]; then
    say "[${gpu_label[$g]}] $ch ${e_name[$i]}: tests finished (exit 0, $(since "$t0") s); benchmark ..."
    (umask 077 && new_seed > "$box/.seed")
    t0=$(now)
    run_limited "$timeout_s" "$box" "$e/bin" -- "${seeded[@]}" "$box/.seed" "$e/bin/${ch}_bench" \
      --impl=student,reference --json "$box/bench.json" 2>&1 | head -c "$LOG_LIMIT" > "$e/bench.log"
    rc=${PIPESTATUS[0]}
    printf 'bench\t%s\t%s\n' "$rc" "$(since "$t0")" >> "$e/steps.tsv"
    [ -f "$box/bench.json" ] && head -c "$LOG_LIMIT" "$box/bench.json" > "$e/bench.json"
  fi
  rm -f -- "$box/.seed"
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
python3 "$lb" report --history "$history" --out "$out" --run-id "$run_id"
n_after=$(wc -l < "$history")
say "this run: $n_entries result(s) added to the $n_before earlier ones (history: $n_after lines, never rewritten)"
say "logs of this run: $out/runs/$run_id/"
[ "$sandbox" = none ] && say "note: the submissions ran UNSANDBOXED (bubblewrap not installed or --no-sandbox)"
say "wall time: $(( $(date +%s) - started )) s"

status=0
if [ "$fixture" = 1 ]; then
  say ""
  say "checking the fixture class against tests/leaderboard/fixture-expected.json:"
  python3 "$lb" check-fixture --history "$history" --run-id "$run_id" --expect "$here/tests/leaderboard/fixture-expected.json" ||
    status=1
  if [ $((n_after - n_before)) -ne "$n_entries" ]; then
    say "MISS the history grew by $((n_after - n_before)) lines, not by $n_entries"
    status=1
  fi
fi
exit $status
