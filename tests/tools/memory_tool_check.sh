#!/usr/bin/env bash
# Host test of ch08_memory's command line (ctest ch08.memory_bad_input, label `host`;
# chapters/ch08_flash_attention/extra.cmake registers it): bad input is refused with a
# message naming it and exit status 2 before the GPU is looked for, and no --json file is
# left behind; without a GPU a good line says so and exits with 77 (nothing to measure).
#
# usage: memory_tool_check.sh CH08_MEMORY WORK_DIR
source "$(dirname "$0")/lib/expect.sh"  # expect, nothing_left, fresh_dir, ...; set -uo pipefail
tool=${1:?usage: memory_tool_check.sh CH08_MEMORY WORK_DIR}
work=$(fresh_dir "${2:?usage}") || exit 1
json=$work/memory.json

expect 0 "--batch.*--heads.*--max-s.*--json" -- "$tool" --help
expect 2 "^ch08_memory: --d: 100 is not a multiple of 8" -- "$tool" --d=100 --json="$json"
expect 2 "^ch08_memory: --d: 256 is out of range; give a number from 8 to 128" -- "$tool" --d=256
expect 2 "^ch08_memory: --heads: 'many' is not a whole number" -- "$tool" --heads=many
expect 2 "^ch08_memory: --batch: 0 is out of range" -- "$tool" --batch=0
expect 2 "^ch08_memory: --max-s: 512 is out of range; give a number from 1024" -- "$tool" --max-s=512
expect 2 "^ch08_memory: unknown option '--seq=4096'" -- "$tool" --seq=4096
expect 2 "^ch08_memory: --json=$work/missing/m.json: the folder $work/missing does not exist" -- \
  "$tool" --json="$work/missing/m.json"
if ! has_gpu; then
  expect 77 "^ch08_memory: .*(GPU|driver).*nothing to measure" -- "$tool" --max-s=1024 --json="$json"
fi
nothing_left "$json" "$work/missing"
no_temporaries "$work"
echo "ch08_memory: every bad input refused, nothing left behind"
