#!/usr/bin/env bash
# Host test of ch10_lessons' command line (ctest ch10.lessons_bad_input, label `host`;
# chapters/ch10_conv/extra.cmake registers it): bad input is refused with a message naming
# it and exit status 2 before the GPU is looked for; without a GPU a good line says so and
# exits with 77 (skipped).
#
# usage: lessons_tool_check.sh CH10_LESSONS
source "$(dirname "$0")/lib/expect.sh"  # expect, nothing_left, fresh_dir, ...; set -uo pipefail
tool=${1:?usage: lessons_tool_check.sh CH10_LESSONS}

expect 0 "--samples.*--only" -- "$tool" --help
expect 2 "^ch10_lessons: --samples: 'abc' is not a whole number" -- "$tool" --samples=abc
expect 2 "^ch10_lessons: --samples: 0 is out of range" -- "$tool" --samples=0
expect 2 "^ch10_lessons: --only: 'foo' is not one of all, fusion, streams" -- "$tool" --only=foo
expect 2 "^ch10_lessons: unknown option '--sampels=3'; did you mean --samples\\?" -- "$tool" --sampels=3
expect 2 "^ch10_lessons: unexpected argument '100'" -- "$tool" 100
if ! has_gpu; then
  expect 77 "^ch10_lessons: skipped: .*(GPU|driver)" -- "$tool" --only=streams
fi
echo "ch10_lessons: every bad input refused"
