#!/usr/bin/env bash
# What each kernel of a chapter costs the GPU, from the compiled program: registers per
# thread, static shared memory per block, local memory per thread (spills and arrays the
# compiler could not keep in registers) and stack. Optionally dumps a kernel's SASS.
#
# usage: scripts/resources.sh chNN [options]
#
#   --kernel REGEX    only kernels whose (demangled) name matches REGEX (grep -E)
#   --sass            also dump the SASS (machine code) of the selected kernels; without
#                     --kernel, writes all of it to results/sass/chNN-<arch>.sass instead
#   --arch SM         only this architecture (e.g. sm_90) when the program holds several
#   --preset NAME     configure preset to build with (default: profile)
#   --build-dir DIR   where to build (default: build/profile-chNN, shared with profile.sh)
#   --no-build        use what DIR already holds
#
# Needs cuobjdump (part of the CUDA toolkit); no GPU.
set -uo pipefail
wb_prog=resources.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }

chapter="" kernel_re="" sass=0 arch_want="" preset=profile build_dir="" no_build=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --sass) sass=1; shift ;;
    --no-build) no_build=1; shift ;;
    --kernel|--arch|--preset|--build-dir)
      [ $# -ge 2 ] || wb_usage_error "$1 needs a value"
      case "$1" in
        --kernel) kernel_re=$2 ;;
        --arch) arch_want=$2 ;;
        --preset) preset=$2 ;;
        --build-dir) build_dir=$2 ;;
      esac
      shift 2 ;;
    --*=*) key=${1%%=*} value=${1#*=}; set -- "$key" "$value" "${@:2}" ;;
    -*) wb_usage_error "unknown option '$1'" ;;
    *) chapter=$(wb_the_chapter "$chapter" "$1") || exit $?; shift ;;
  esac
done
[ -n "$chapter" ] || wb_usage_error "which chapter? e.g. $wb_prog ch01   (chapters here: $(wb_chapters))"

cuobjdump=$(wb_find_cuda_tool cuobjdump) ||
  wb_cannot_run "cuobjdump not found (looked on PATH, in \$CUDA_HOME/bin and /usr/local/cuda/bin). It ships" \
    "with the CUDA toolkit (package cuda-cuobjdump-<version>)."
demangle=$(wb_find_cuda_tool cu++filt || command -v c++filt || echo cat)

build_dir=${build_dir:-$wb_root/build/profile-$chapter}
build_dir=$(mkdir -p "$build_dir" && cd "$build_dir" && pwd) || wb_die "cannot use the build folder '$build_dir'"
[ "$no_build" = 1 ] || wb_build "$preset" "$build_dir" "$chapter" "${chapter}_bench"
program=$build_dir/bin/${chapter}_bench
[ -x "$program" ] || wb_die "$program is not built (build it, or drop --no-build)"

wb_tmpdir
"$cuobjdump" --dump-resource-usage "$program" >"$wb_tmp/res.txt" 2>"$wb_tmp/res.err" || {
  cat "$wb_tmp/res.err" >&2
  wb_die "cuobjdump could not read $program"
}
awk -f "$wb_root/scripts/lib/resource_usage.awk" "$wb_tmp/res.txt" >"$wb_tmp/res.tsv"
[ -s "$wb_tmp/res.tsv" ] || wb_die "cuobjdump reported no kernel in $program (was it built with device code?)"
cut -f6 "$wb_tmp/res.tsv" | "$demangle" >"$wb_tmp/names.txt"
paste "$wb_tmp/res.tsv" "$wb_tmp/names.txt" >"$wb_tmp/all.tsv"

# Columns: arch regs shared local stack mangled demangled. Who wrote it, from the namespace.
awk -F'\t' -v want="$arch_want" '
  want != "" && $1 != want { next }
  {
    name = $7
    gsub(/\(anonymous namespace\)::/, "", name)
    if (name ~ /^(void )?ch[0-9][0-9]::solution::/) part = "solution"
    else if (name ~ /^(void )?ch[0-9][0-9]::/) part = "yours"
    else if (name ~ /^(void )?wb::/) part = "harness"
    else part = "library"
    sub(/^void /, "", name)
    rank = (part == "yours" ? 1 : part == "solution" ? 2 : part == "harness" ? 3 : 4)
    print rank "\t" part "\t" $1 "\t" $2 "\t" $3 "\t" $4 "\t" $5 "\t" name "\t" $6
  }' "$wb_tmp/all.tsv" | sort -t$'\t' -k1,1n -k8,8 | cut -f2- >"$wb_tmp/table.tsv"
if [ -n "$kernel_re" ]; then
  awk -F'\t' -v re="$kernel_re" '$7 ~ re' "$wb_tmp/table.tsv" >"$wb_tmp/picked.tsv"
  [ -s "$wb_tmp/picked.tsv" ] || wb_die "no kernel matches '$kernel_re'; drop --kernel to list them all"
else
  cp "$wb_tmp/table.tsv" "$wb_tmp/picked.tsv"
fi

echo "$wb_prog: $chapter kernels in ${program#"$wb_root"/} (cuobjdump --dump-resource-usage)"
echo "  local = bytes of local memory per thread: register spills, or arrays indexed at run time"
printf '%-9s %-7s %5s %9s %7s %6s  %s\n' part arch regs "smem(B)" "local" stack kernel
awk -F'\t' '{
  flag = ($5 > 0 ? "  <- local memory" : "")
  printf "%-9s %-7s %5d %9d %7d %6d  %s%s\n", $1, $2, $3, $4, $5, $6, $7, flag }' "$wb_tmp/picked.tsv"
echo "  (static shared memory only: dynamic shared memory is set at launch; profile.sh shows both)"

[ "$sass" = 1 ] || exit 0
if [ -z "$kernel_re" ]; then
  mkdir -p "$wb_root/results/sass"
  for arch in $(cut -f2 "$wb_tmp/picked.tsv" | sort -u); do
    file=$wb_root/results/sass/$chapter-$arch.sass
    "$cuobjdump" --dump-sass --gpu-architecture "$arch" "$program" | "$demangle" >"$file" 2>/dev/null ||
      "$cuobjdump" --dump-sass "$program" >"$file"
    echo "SASS of every kernel ($arch): ${file#"$wb_root"/}"
  done
  exit 0
fi
# One architecture is enough to read: the newest in the program, unless --arch says otherwise.
sass_arch=${arch_want:-$(cut -f2 "$wb_tmp/picked.tsv" | sort -V | tail -n 1)}
while IFS=$'\t' read -r part arch regs smem local stack name mangled; do
  [ "$arch" = "$sass_arch" ] || continue
  echo
  echo "=== SASS of $name ($arch, $regs registers)"
  "$cuobjdump" --dump-sass --gpu-architecture "$arch" --function "$mangled" "$program" 2>/dev/null |
    "$demangle" | grep -v -E '^[[:space:]]*$' || echo "(cuobjdump printed no SASS for it)"
done <"$wb_tmp/picked.tsv"
