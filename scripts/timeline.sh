#!/usr/bin/env bash
# Runs a chapter program under Nsight Systems and draws its per-stream timeline as a PNG:
# one row per CUDA stream, one bar per copy or kernel, so a pipeline's overlap (or its
# absence) shows at a glance. Prints `nsys stats`' GPU trace summary and, per stream, the
# busy time and the overlap (scripts/lib/timeline_plot.py).
# Without nsys, a program that records itself (ch11_overlap --trace=FILE: CUPTI's activity
# API, one call of each form) is run that way instead, and its trace drawn one panel per
# form (--section picks them; the default is every form: serial vs pipelined, launches vs
# a graph replay, serial vs forked).
#
# usage: scripts/timeline.sh [options] [-- PROGRAM [ARGS...]]
#
#   PROGRAM      what to profile (default: build/ch11/bin/ch11_overlap --n=67108864, the
#                chapter's ratios at 256 MiB, which is quick under the profiler)
#   --out DIR    where timeline.nsys-rep, timeline.sqlite and timeline.png go
#                (default: results/timeline)
#   --last-ms MS draw only the last MS milliseconds of the run (default: all of it)
#   --title T    the picture's title
#   --section S  (self-recorded traces) draw this form, or every form whose name starts so
#                (e.g. "pipeline:"); repeat for more panels
#
# Exit 77 (skipped) where nsys or matplotlib is missing, with the reason; 1 if the program
# or nsys fails.
set -uo pipefail
wb_prog=timeline.sh
wb_missing_code=77
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

out=$wb_root/results/timeline last_ms="" title="" sections=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out|--last-ms|--title|--section)
      [ $# -ge 2 ] || wb_usage_error "$1 needs a value"
      case "$1" in --out) out=$2 ;; --last-ms) last_ms=$2 ;; --title) title=$2 ;; --section) sections+=(--section "$2") ;; esac
      shift 2 ;;
    --) shift; break ;;
    *) wb_usage_error "unknown option '$1' (the program goes after --)" ;;
  esac
done
if [ $# -eq 0 ]; then
  set -- "$wb_root/build/ch11/bin/ch11_overlap" --n=67108864
fi
[ -x "$1" ] || wb_usage_error "'$1' is not a program; build it first (cmake --preset ch11 && cmake --build build/ch11)"

nsys=$(command -v nsys || true)
if [ -z "$nsys" ]; then
  for d in /usr/local/cuda/bin /opt/nvidia/nsight-systems/*/bin; do
    [ -x "$d/nsys" ] && nsys=$d/nsys && break
  done
fi
python3 -c 'import matplotlib' 2>/dev/null ||
  wb_cannot_run "skipped: matplotlib is missing (scripts/install-deps.sh installs python3-matplotlib)"
mkdir -p "$out" || wb_die "cannot create $out"
if [ -z "$nsys" ]; then
  "$1" --help 2>/dev/null | grep -q -- '--trace' ||
    wb_cannot_run "skipped: nsys (Nsight Systems) is not installed or not on PATH, and $(basename "$1") cannot record itself (no --trace)"
  echo "$wb_prog: no nsys here; the program records itself: $* --trace=$out/timeline.json"
  "$@" --trace="$out/timeline.json"
  rc=$?
  [ $rc = 77 ] && wb_cannot_run "skipped: $(basename "$1") did not run (exit 77: no GPU, above)"
  [ $rc = 0 ] || wb_die "$(basename "$1") failed (exit $rc, above)"
  args=("$out/timeline.json" --out "$out/timeline.png" "${sections[@]}")
  [ -n "$title" ] && args+=(--title "$title")
  exec python3 "$wb_root/scripts/lib/timeline_plot.py" "${args[@]}"
fi

rep=$out/timeline
echo "$wb_prog: nsys profile --trace=cuda $*"
"$nsys" profile --trace=cuda --force-overwrite=true --output="$rep" "$@" || wb_die "nsys profile failed (above)"
"$nsys" stats --report cuda_gpu_kern_sum,cuda_gpu_mem_time_sum "$rep.nsys-rep" ||
  echo "$wb_prog: nsys stats failed; going on with the export" >&2
"$nsys" export --type sqlite --force-overwrite=true --output "$rep.sqlite" "$rep.nsys-rep" ||
  wb_die "nsys export failed (above)"
args=("$rep.sqlite" --out "$rep.png")
[ -n "$last_ms" ] && args+=(--last-ms "$last_ms")
[ -n "$title" ] && args+=(--title "$title")
python3 "$wb_root/scripts/lib/timeline_plot.py" "${args[@]}"
