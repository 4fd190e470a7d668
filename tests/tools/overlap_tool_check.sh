#!/usr/bin/env bash
# Host test of ch11_overlap's command line (ctest ch11.overlap_bad_input, label `host`;
# chapters/ch11_streams/extra.cmake registers it): bad input is refused with a message naming
# it and exit status 2 before the GPU is looked for; without a GPU a good line says so and
# exits with 77 (skipped).
#
# usage: overlap_tool_check.sh CH11_OVERLAP
source "$(dirname "$0")/lib/expect.sh"  # expect, nothing_left, fresh_dir, ...; set -uo pipefail
tool=${1:?usage: overlap_tool_check.sh CH11_OVERLAP}

expect 0 "--n.*--steps.*--chain-n.*--strict" -- "$tool" --help
expect 2 "^ch11_overlap: --steps: 'abc' is not a whole number" -- "$tool" --steps=abc
expect 2 "^ch11_overlap: --m: '12x' is not a whole number" -- "$tool" --m=12x
expect 2 "^ch11_overlap: --n: 0 is out of range" -- "$tool" --n=0
expect 2 "^ch11_overlap: unknown option '--stesp=3'; did you mean --steps\\?" -- "$tool" --stesp=3
expect 2 "^ch11_overlap: --strict is a switch and takes no value" -- "$tool" --strict=maybe
expect 2 "^ch11_overlap: unexpected argument '100'" -- "$tool" 100
if ! has_gpu; then
  expect 77 "^ch11_overlap: skipped: .*(GPU|driver)" -- "$tool" --steps=10
fi
echo "ch11_overlap: every bad input refused"
