#!/usr/bin/env bash
# Host test of devicequery and instpeak's command lines (ctest devicequery.bad_input and
# instpeak.bad_input, label `host`; tools/CMakeLists.txt registers them): bad input is
# refused with a message naming it and exit status 2 before the GPU is looked for; without
# a GPU a good line says so and exits with status 1.
#
# usage: device_tool_check.sh TOOL NAME
source "$(dirname "$0")/lib/expect.sh"  # expect, nothing_left, fresh_dir, ...; set -uo pipefail
tool=${1:?usage: device_tool_check.sh TOOL NAME}
name=${2:?usage}

expect 0 "--device.*--json" -- "$tool" --help
expect 2 "^$name: --device: 'abc' is not a whole number" -- "$tool" --device=abc
expect 2 "^$name: --device: -1 is out of range; give a number from 0 to 1024" -- "$tool" --device=-1
expect 2 "^$name: --device: 1\\.5 is|^$name: --device: '1\\.5' is not a whole number" -- "$tool" --device 1.5
expect 2 "^$name: --device needs a value" -- "$tool" --device
expect 2 "^$name: unknown option '--frobnicate'[[:space:]]\\($name --help lists the options\\)" -- "$tool" --frobnicate
expect 2 "^$name: unknown option '--jsn'; did you mean --json\\?" -- "$tool" --jsn
expect 2 "^$name: unexpected argument '0': options start with --" -- "$tool" 0
if ! has_gpu; then
  expect 1 "^$name: .*(GPU|driver)" -- "$tool" --json
fi
echo "$name: every bad input refused"
