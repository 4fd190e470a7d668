#!/usr/bin/env bash
# Scaffolds a new chapter from templates/chapter/: the chapter folder (interface, stub,
# checks, tests, benchmark), a reference and a one-step solution ladder, a harness self-test,
# a docs page, and the chNN / chNN-solution presets. CMake picks the chapter up by its folder
# name, so it configures and builds at once; its learner test fails with "not implemented
# yet" and its solution tests pass, until you replace the placeholder exercise (SAXPY).
#
# usage: scripts/new-chapter.sh NN name [--title "human title"] [--dry-run]
#
#   NN        two digits, 01 to 99, not used by a chapter yet (e.g. 05)
#   name      lower case letters, digits and single underscores, starting with a letter
#             (e.g. wmma, layer_norm); the folder becomes chapters/chNN_name
#   --title   the chapter's title in the docs and presets (default: the name, spaced)
#   --dry-run check the input and list what would be created, without writing anything
#   --root D  scaffold in another copy of the repository (default: this one)
set -uo pipefail
wb_prog=new-chapter.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }

num="" name="" title="" dry_run=0 root=$wb_root
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
    --title|--root)
      [ $# -ge 2 ] || wb_usage_error "$1 needs a value"
      if [ "$1" = --title ]; then title=$2; else root=$2; fi
      shift 2 ;;
    --title=*) title=${1#--title=}; shift ;;
    --root=*) root=${1#--root=}; shift ;;
    -*) wb_usage_error "unknown option '$1'" ;;
    *)
      if [ -z "$num" ]; then num=$1
      elif [ -z "$name" ]; then name=$1
      else wb_usage_error "too many arguments ('$1'); usage: $wb_prog NN name [--title T]"
      fi
      shift ;;
  esac
done
[ -n "$num" ] && [ -n "$name" ] || wb_usage_error "usage: $wb_prog NN name [--title \"human title\"]  (e.g. $wb_prog 05 wmma)"

# --- refuse bad input before touching anything --------------------------------------------
[[ "$num" =~ ^[0-9][0-9]$ ]] || wb_usage_error "NN must be exactly two digits (e.g. 05), not '$num'"
[ "$num" != 00 ] || wb_usage_error "NN must be 01 to 99; chapter 00 is the setup page"
[[ "$name" =~ ^[a-z][a-z0-9_]*$ ]] ||
  wb_usage_error "name '$name' must be lower case letters, digits and underscores, starting with a letter (e.g. layer_norm)"
[[ "$name" != *__* && "$name" != *_ ]] || wb_usage_error "name '$name' must not hold '__' or end with '_'"
[ ${#name} -le 32 ] || wb_usage_error "name '$name' is longer than 32 characters"
case "$title" in *$'\n'*|*'"'*|*'\'*) wb_usage_error "the title must be one line without quotes or backslashes" ;; esac
[ -d "$root/chapters" ] && [ -f "$root/CMakePresets.json" ] || wb_usage_error "'$root' is not a kernel-workbook tree"
root=$(cd "$root" && pwd)
python=$(command -v python3) || wb_die "python3 is needed to edit CMakePresets.json"
templates=$wb_root/templates/chapter
[ -d "$templates" ] || wb_die "no templates in $templates"

id=ch$num
dir=${id}_$name
doc=$id-${name//_/-}
title=${title:-${name//_/ }}
for taken in "$root"/chapters/"$id"_* "$root"/reference/"$id"_* "$root"/solutions/"$id"_* \
             "$root"/docs/"$id"-*.md; do
  if [ -e "$taken" ]; then
    wb_usage_error "chapter $num exists already (${taken#"$root"/}); pick another number. Chapters here: $(wb_root=$root wb_chapters)"
  fi
done
"$python" "$wb_root/scripts/lib/add_presets.py" "$root/CMakePresets.json" "$id" "$title" --check >/dev/null
case $? in
  0) presets=add ;;
  1) presets=keep ;;
  *) wb_die "cannot read $root/CMakePresets.json" ;;
esac

# template -> destination, relative to the root
files=(
  "chapter/chNN.cuh.in:chapters/$dir/$id.cuh"
  "chapter/ex1_saxpy.cu.in:chapters/$dir/ex1_saxpy.cu"
  "chapter/variants.cu.in:chapters/$dir/variants.cu"
  "chapter/spec.cu.in:chapters/$dir/spec.cu"
  "reference/cublas_saxpy.cu.in:reference/$dir/cublas_saxpy.cu"
  "solutions/ladder.cuh.in:solutions/$dir/ladder.cuh"
  "solutions/variants.cu.in:solutions/$dir/variants.cu"
  "solutions/v1_one_per_thread.cu.in:solutions/$dir/v1_one_per_thread.cu"
  "chapter/broken.cu.in:chapters/$dir/broken.cu"
  "docs/chapter.md.in:docs/$doc.md"
)
if [ "$dry_run" = 1 ]; then
  echo "$wb_prog: would create chapter $num ($title) in $root:"
  for pair in "${files[@]}"; do echo "  ${pair#*:}"; done
  [ "$presets" = add ] && echo "  CMakePresets.json: presets $id and $id-solution" ||
    echo "  CMakePresets.json: presets $id and $id-solution exist already, kept"
  exit 0
fi

# --- write --------------------------------------------------------------------------------
created=()
cleanup() {  # a half-made chapter is worse than none
  local f
  for f in "${created[@]}"; do rm -f "$root/$f"; done
  rmdir "$root/chapters/$dir" "$root/reference/$dir" "$root/solutions/$dir" 2>/dev/null
}
for pair in "${files[@]}"; do
  src=$templates/${pair%%:*} dst=${pair#*:}
  mkdir -p "$root/$(dirname "$dst")" || { cleanup; wb_die "cannot create $(dirname "$dst")"; }
  if ! ID=$id NUM=$((10#$num)) NAME=$name DIR=$dir DOC=$doc SUITE=Ch$num TITLE=$title "$python" -c '
import os, sys
text = open(sys.argv[1]).read()
for key in ("ID", "NUM", "NAME", "DIR", "DOC", "SUITE", "TITLE"):
    text = text.replace("@" + key + "@", os.environ[key])
import re
leftover = re.search(r"@[A-Z]+@", text)
if leftover:
    sys.exit("unknown placeholder " + leftover.group(0) + " in " + sys.argv[1])
open(sys.argv[2], "w").write(text)
' "$src" "$root/$dst"; then
    cleanup
    wb_die "could not write $dst"
  fi
  created+=("$dst")
done
if [ "$presets" = add ]; then
  "$python" "$wb_root/scripts/lib/add_presets.py" "$root/CMakePresets.json" "$id" "$title" ||
    { cleanup; wb_die "could not add the presets; nothing was left behind"; }
fi

echo "$wb_prog: created chapter $num ($title):"
printf '  %s\n' "${created[@]}"
if [ "$presets" = add ]; then
  echo "  CMakePresets.json: presets $id (configure, build, test, workflow) and $id-solution (test, workflow, same build)"
else
  echo "  CMakePresets.json: presets $id and $id-solution were there already, kept as they were"
fi
cat <<EOF
next:
  cmake --preset $id && ctest --preset $id        # the stub: fails with "not implemented yet"
  cmake --workflow --preset $id-solution          # the v1 solution and the cuBLAS reference
  then replace the SAXPY placeholder with the chapter's own ops (templates/chapter/README.md),
  and add the chapter to docs/README.md.
EOF
