#!/usr/bin/env bash
# Host test of gpt2_quantize (ctest: gpt2.quantize_tool, label `host`): a good run writes the
# quantized file (and says so in its metadata); bad flags, a file that is not GPT-2, one already
# quantized, a model whose K is not a multiple of 32, and output paths it must not write are
# refused with exit status 2 and a message saying what to do, before any work, and leave no
# file (nor a temporary) behind; an existing --out is left as it was.
#
# usage: quantize_tool_check.sh GPT2_QUANTIZE GPT2_RANDOM_WEIGHTS WORK_DIR
source "$(dirname "$0")/../../../tests/tools/lib/expect.sh"  # expect, nothing_left, fresh_dir, ...; set -uo pipefail
tool=${1:?usage: quantize_tool_check.sh GPT2_QUANTIZE GPT2_RANDOM_WEIGHTS WORK_DIR}
gen=${2:?usage}
work=$(fresh_dir "${3:?usage}") || exit 1

tiny=$work/tiny.safetensors
"$gen" --config=tiny --seed=5 --dtype=bf16 --out="$tiny" >/dev/null || fail "gpt2_random_weights could not write $tiny"
"$gen" --config=L=1,C=48,H=4,V=64,P=16 --out="$work/c48.safetensors" >/dev/null || fail "could not write c48"
q=$work/tiny-int4.safetensors

# A good run, and its output refused as an input.
expect 0 "wrote .*tiny-int4.safetensors.*8 matrices quantized" -- "$tool" --weights="$tiny" --out="$q"
grep -a -q '"quantized":"int4"' "$q" || fail "$q does not say it is quantized"
grep -a -q 'h.0.attn.c_attn.weight.qweight' "$q" || fail "$q has no .qweight tensor"
grep -a -q 'h.1.mlp.c_proj.weight.zeros' "$q" || fail "$q has no .zeros tensor"
expect 2 "already quantized.*quantize the original" -- "$tool" --weights="$q" --out="$work/again.safetensors"

# Refusals before any work: nothing written.
x=$work/never.safetensors
expect 2 "--weights is required" -- "$tool" --out="$x"
expect 2 "--out is required" -- "$tool" --weights="$tiny"
expect 2 "--weights=$work/missing.safetensors: no such file" -- "$tool" --weights="$work/missing.safetensors" --out="$x"
expect 2 "--format" -- "$tool" --weights="$tiny" --out="$x" --format=int3
expect 2 "unknown option|frobnicate" -- "$tool" --weights="$tiny" --out="$x" --frobnicate
expect 2 "K = 48 is not a multiple of 32.*(--int8|BF16)" -- "$tool" --weights="$work/c48.safetensors" --out="$x"
printf 'not a safetensors file, but long enough to have a header length\n' > "$work/text.safetensors"
expect 2 "--weights: .*text.safetensors" -- "$tool" --weights="$work/text.safetensors" --out="$x"
expect 2 "--out=$work/no-such-folder/q.safetensors: the folder .* does not exist" -- \
  "$tool" --weights="$tiny" --out="$work/no-such-folder/q.safetensors"
expect 2 "--out is --weights" -- "$tool" --weights="$tiny" --out="$tiny"
nothing_left "$x" "$work/again.safetensors" "$work/no-such-folder"

# An existing --out is kept unless --force.
cp "$q" "$work/q.copy"
expect 2 "--out: .*tiny-int4.safetensors already exists; add --force" -- "$tool" --weights="$tiny" --out="$q"
cmp -s "$q" "$work/q.copy" || fail "a refused run changed the existing file"
expect 0 "wrote" -- "$tool" --weights="$tiny" --out="$q" --force
cmp -s "$q" "$work/q.copy" || fail "the same input did not give the same file"
no_temporaries "$work"
echo "all gpt2_quantize checks passed"
