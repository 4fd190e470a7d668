#!/usr/bin/env bash
# Host test of a chapter's autotuner, chNN_tune (ctest chNN.tune_bad_input, label `host`;
# cmake/Workbook.cmake registers it with workbook_add_tuner): every kind of bad input is
# refused with a message naming it and exit status 2, before any GPU work; an existing file
# that is not a config file is reported (status 1) and left as it was; no config file,
# Markdown or temporary is ever left behind by a refused or failed run. Without a GPU, a
# good line ends with a message saying so (status 1) and writes nothing.
#
# usage: tuner_check.sh CHNN_TUNE CHAPTER WORK_DIR
source "$(dirname "$0")/lib/expect.sh"  # expect, nothing_left, fresh_dir, ...; set -uo pipefail
tool=${1:?usage: tuner_check.sh CHNN_TUNE CHAPTER WORK_DIR}
ch=${2:?usage}
work=$(fresh_dir "${3:?usage}") || exit 1
unset WORKBOOK_CONFIG_DIR

# An op, a tunable variant of it, and a variant of the chapter that is not tunable.
case "$ch" in
  ch04) op=sgemm/f32; impl=v8_double_buffering; plain=v7_warp_tiling ;;
  ch07) op=topk/f32; impl=v5_radix_select; plain=v1_three_pass ;;  # v5 tunes three ops: --op picks one
  *) echo "tuner_check.sh: no cases for $ch yet: add its op and variants here"; exit 1 ;;
esac
t="${ch}_tune"
one=(--op="$op" --impl="$impl")  # one space
out=$work/out.json md=$work/sweep.md

expect 0 "--shapes.*--out-dir.*--dry-run" -- "$tool" --help
expect 2 "^$t: unknown option '--frobnicate'" -- "$tool" --frobnicate
expect 2 "^$t: unknown option '--out-dri=x'; did you mean --out-dir\\?" -- "$tool" --out-dri=x
expect 2 "^$t: unexpected argument 'quick'" -- "$tool" quick
expect 2 "^$t: --op: no op 'nonexistent/f32' in this chapter; its ops: .*$op" -- "$tool" --op=nonexistent/f32
expect 2 "^$t: --impl: no tunable variant 'v9_nonexistent'; the tunable ones: .*$impl" -- "$tool" --impl=v9_nonexistent
expect 2 "^$t: --impl: no tunable variant '$plain'" -- "$tool" --impl=$plain
expect 2 "^$t: --out needs a value" -- "$tool" --out
expect 2 "^$t: --shapes \\(1024xabc.*'abc' is not a whole number" -- "$tool" "${one[@]}" --shapes=1024xabc --dry-run
expect 2 "^$t: --shapes \\(0\\): 0 is out of range" -- "$tool" "${one[@]}" --shapes=0 --dry-run
expect 2 "^$t: --shapes: '1x2x3x4x5' is neither one size" -- "$tool" "${one[@]}" --shapes=1x2x3x4x5 --dry-run
expect 2 "^$t: --out with --out-dir: give the file \\(--out\\) or the folder \\(--out-dir\\), not both" -- \
  "$tool" "${one[@]}" --out="$out" --out-dir="$work"
expect 2 "^$t: --dry-run with --out: a dry run writes no config file" -- "$tool" "${one[@]}" --dry-run --out="$out"
expect 2 "^$t: --out=$work/missing/x.json: the folder $work/missing does not exist" -- \
  "$tool" "${one[@]}" --out="$work/missing/x.json"
expect 2 "^$t: --out-dir=$work/missing: the folder $work/missing does not exist" -- "$tool" --out-dir="$work/missing"
expect 2 "^$t: --markdown=$work/missing/t.md: the folder $work/missing does not exist" -- \
  "$tool" "${one[@]}" --dry-run --markdown="$work/missing/t.md"
expect 2 "^$t: --json=$work/missing/r.json: the folder $work/missing does not exist" -- \
  "$tool" "${one[@]}" --dry-run --json="$work/missing/r.json"
expect 2 "^$t: --out=$work: it is a folder" -- "$tool" "${one[@]}" --out="$work"
expect 2 "^$t: WORKBOOK_CONFIG_DIR=$work/missing: the folder $work/missing does not exist" -- \
  env WORKBOOK_CONFIG_DIR="$work/missing" "$tool" "${one[@]}"
if [ "$ch" = ch07 ]; then  # several spaces: one --out file cannot hold them
  expect 2 "^$t: --out=$out names one config file, but [0-9]+ spaces would be tuned .*--op or --impl" -- \
    "$tool" --out="$out"
  expect 2 "^$t: --op: op softmax/f32 has no tunable variant; the ops that have one: " -- "$tool" --op=softmax/f32
fi
[ -e "$work/missing" ] && fail "a refused run created $work/missing"

# An existing file that is not a config file is reported before anything is measured, and kept.
printf '[1, 2, 3]\n' > "$work/other.json"
cp "$work/other.json" "$work/other.copy"
expect 1 "^$t: $work/other.json is not a config file .*move it away" -- "$tool" "${one[@]}" --out="$work/other.json"
printf '{ "gpus": ' > "$work/cut.json"
expect 1 "^$t: $work/cut.json is not JSON" -- "$tool" "${one[@]}" --out="$work/cut.json"
cmp -s "$work/other.json" "$work/other.copy" || fail "the refused run changed $work/other.json"

if ! has_gpu; then
  expect 1 "^$t: .*(GPU|driver).*the autotuner measures on a GPU and cannot run here" -- \
    "$tool" "${one[@]}" --out="$out" --markdown="$md" --json="$work/results.json"
fi
nothing_left "$out" "$md" "$work/results.json" "$work/missing"
no_temporaries "$work"
echo "$t: every bad input refused, nothing left behind"
