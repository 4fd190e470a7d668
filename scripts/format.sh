#!/usr/bin/env bash
# The repository's one layout: clang-format (.clang-format) for C++ and CUDA, black and
# flake8 (pyproject.toml, .flake8) for Python.
#
# usage: scripts/format.sh            format every tracked source file in place
#        scripts/format.sh --check    change nothing; list what is off and exit 1 (CI)
# Needs clang-format, black and flake8 (scripts/install-deps.sh installs them).
set -uo pipefail
wb_prog=format.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) wb_usage_error "unknown argument '$1' (use --check, or nothing to format in place)" ;;
esac
for tool in clang-format black flake8; do
  command -v "$tool" >/dev/null 2>&1 || wb_die "$tool is not installed (scripts/install-deps.sh installs it)"
done
cd "$wb_root" || exit 1
mapfile -t cpp < <(git ls-files '*.cu' '*.cuh' '*.cpp' '*.h' | grep -v '^tests/leaderboard/')
mapfile -t py < <(git ls-files '*.py')
status=0
if [ "$check" = 1 ]; then
  off=()
  for f in "${cpp[@]}"; do
    clang-format --style=file "$f" | cmp -s - "$f" || off+=("$f")
  done
  if [ ${#off[@]} -gt 0 ]; then
    echo "$wb_prog: ${#off[@]} C++/CUDA files are not in the layout of .clang-format:" >&2
    printf '  %s\n' "${off[@]}" >&2
    status=1
  fi
  black --quiet --check "${py[@]}" || { echo "$wb_prog: black would reformat the files above" >&2; status=1; }
else
  for f in "${cpp[@]}"; do
    clang-format --style=file "$f" >"$f.fmt" && mv "$f.fmt" "$f"
  done
  black --quiet "${py[@]}"
fi
flake8 "${py[@]}" || { echo "$wb_prog: flake8 found the problems above" >&2; status=1; }
[ "$status" = 0 ] && echo "$wb_prog: $([ "$check" = 1 ] && echo checked || echo formatted) ${#cpp[@]} C++/CUDA and ${#py[@]} Python files"
exit $status
