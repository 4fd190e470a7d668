#!/usr/bin/env bash
# Host test of gpt2_random_weights and gpt2_cpu_check (ctest: gpt2.tools, label `host`):
# good runs do what they say; bad arguments and bad files are refused with a message naming
# them and a non-zero exit (2 for the command line, 1 for a bad file or a failed check),
# nothing is overwritten, and no output or temporary file is left behind.
#
# usage: tools_check.sh GPT2_RANDOM_WEIGHTS GPT2_CPU_CHECK WORK_DIR
source "$(dirname "$0")/../../../tests/tools/lib/expect.sh"  # expect, nothing_left, fresh_dir, ...; set -uo pipefail
gen=${1:?usage: tools_check.sh GPT2_RANDOM_WEIGHTS GPT2_CPU_CHECK WORK_DIR}
check=${2:?usage}
work=$(fresh_dir "${3:?usage}") || exit 1

tiny=$work/tiny.safetensors
# --- gpt2_random_weights ---------------------------------------------------------------------
expect 0 "wrote .*tiny.safetensors" -- "$gen" --config=tiny --seed=3 --out="$tiny"
cp "$tiny" "$work/tiny.copy"
expect 2 "--out: .*tiny.safetensors already exists; add --force to replace it" -- "$gen" --config=tiny --seed=4 --out="$tiny"
cmp -s "$tiny" "$work/tiny.copy" || fail "a refused run changed the existing file"
expect 0 "wrote" -- "$gen" --config=tiny --seed=4 --out="$tiny" --force
cmp -s "$tiny" "$work/tiny.copy" && fail "--force with another seed left the file as it was"
expect 0 "wrote" -- "$gen" --config=tiny --seed=3 --out="$tiny" --force
cmp -s "$tiny" "$work/tiny.copy" || fail "the same seed did not give the same file"
expect 0 "L=1 C=32 H=2 V=50 P=16" -- "$gen" --config=L=1,C=32,H=2,V=50,P=16 --dtype=bf16 --no-prefix --untied --gpt2-affine --out="$work/small.safetensors"
grep -a -q '"lm_head.weight"' "$work/small.safetensors" || fail "--untied wrote no lm_head.weight"
grep -a -q '"transformer\.' "$work/small.safetensors" && fail "--no-prefix wrote a 'transformer.' name"
grep -a -q '"dtype":"BF16"' "$work/small.safetensors" || fail "--dtype=bf16 wrote no BF16 tensor"

x=$work/never.safetensors
expect 2 "--config: unknown GPT-2 config 'huge'" -- "$gen" --config=huge --out="$x"
expect 2 "--config: .*65 is not a multiple of n_head" -- "$gen" --config=L=2,C=65,H=4,V=10,P=8 --out="$x"
expect 2 "--config: .*P= is missing" -- "$gen" --config=L=2,C=64,H=4,V=10 --out="$x"
expect 2 "--dtype: 'f64' is not one of f32, bf16, f16" -- "$gen" --config=tiny --dtype=f64 --out="$x"
expect 2 "--seed: 'abc' is not a whole number" -- "$gen" --config=tiny --seed=abc --out="$x"
expect 2 "--seed: -1 is out of range" -- "$gen" --config=tiny --seed=-1 --out="$x"
expect 2 "--out is required" -- "$gen" --config=tiny
expect 2 "--config is required" -- "$gen" --out="$x"
expect 2 "unknown option '--frobnicate'" -- "$gen" --config=tiny --out="$x" --frobnicate
expect 2 "unknown option '--sed=3'; did you mean --seed\\?" -- "$gen" --config=tiny --out="$x" --sed=3
expect 2 "--out needs a value" -- "$gen" --config=tiny --out
expect 2 "--out: the folder .*no-such-folder does not exist" -- "$gen" --config=tiny --out="$work/no-such-folder/x"
expect 2 "--out: it is a folder" -- "$gen" --config=tiny --out="$work" --force
nothing_left "$x" "$work/no-such-folder"

# --- gpt2_cpu_check ----------------------------------------------------------------------------
mkdir -p "$work/ref"
expect 0 "wrote .*reference.json and logits.f32: 12 positions x 251 logits" -- "$check" --weights="$tiny" --write-expect="$work/ref" --prompt-len=12
cp "$work/ref/reference.json" "$work/reference.copy"
expect 2 "--write-expect=$work/ref: $work/ref/reference.json already exists; add --force to replace it" -- \
  "$check" --weights="$tiny" --write-expect="$work/ref"
cmp -s "$work/ref/reference.json" "$work/reference.copy" || fail "a refused run changed reference.json"
expect 0 "relative L2 error +[0-9.e-]+ .*PASS" -- "$check" --weights="$tiny" --expect="$work/ref/reference.json"
# Other weights, same shapes: the check must fail.
"$gen" --config=tiny --seed=99 --out="$work/other.safetensors" >/dev/null || fail "could not write other weights"
expect 1 "FAIL: the error is above --tol" -- "$check" --weights="$work/other.safetensors" --expect="$work/ref/reference.json"
expect 1 "251 logits per position, but the weights have a vocabulary of 50" -- "$check" --weights="$work/small.safetensors" --expect="$work/ref/reference.json"
mkdir -p "$work/cut" && cp "$work/ref/"* "$work/cut/" && truncate -s 100 "$work/cut/logits.f32"
expect 1 "logits.f32: 100 bytes, but 12 positions x 251 logits x 4 bytes = 12048 expected" -- "$check" --weights="$tiny" --expect="$work/cut/reference.json"
expect 2 "--weights=$work/missing.safetensors: no such file \\(gpt2_random_weights writes one\\)" -- \
  "$check" --weights="$work/missing.safetensors" --expect="$work/ref/reference.json"
expect 2 "--expect=$work/missing.json: no such file" -- "$check" --weights="$tiny" --expect="$work/missing.json"
head -c 1000 "$tiny" > "$work/truncated.safetensors"
expect 1 "truncated.safetensors: .*past the end" -- "$check" --weights="$work/truncated.safetensors" --expect="$work/ref/reference.json"
expect 2 "give one of --expect=FILE or --write-expect=DIR" -- "$check" --weights="$tiny"
expect 2 "give one of --expect=FILE or --write-expect=DIR" -- "$check" --weights="$tiny" --expect="$work/ref/reference.json" --write-expect="$work/ref"
expect 2 "--weights is required" -- "$check" --expect="$work/ref/reference.json"
expect 2 "--tol: 'x' is not a positive number" -- "$check" --weights="$tiny" --expect="$work/ref/reference.json" --tol=x
expect 2 "--tol: '-1' is not a positive number" -- "$check" --weights="$tiny" --expect="$work/ref/reference.json" --tol=-1
expect 2 "--prompt-len: 0 is out of range" -- "$check" --weights="$tiny" --write-expect="$work/ref" --prompt-len=0 --force
expect 2 "--tokens: 'a' is not a whole number" -- "$check" --weights="$tiny" --write-expect="$work/ref" --tokens=1,a --force
expect 2 "--tokens goes with --write-expect" -- "$check" --weights="$tiny" --expect="$work/ref/reference.json" --tokens=1,2
expect 2 "--prompt-len goes with --write-expect" -- "$check" --weights="$tiny" --expect="$work/ref/reference.json" --prompt-len=4
expect 2 "--force goes with --write-expect" -- "$check" --weights="$tiny" --expect="$work/ref/reference.json" --force
expect 2 "give the prompt one way" -- "$check" --weights="$tiny" --write-expect="$work/ref" --tokens=1,2 --prompt-len=4 --force
expect 2 "--write-expect=$work/no-such-folder: no such folder; create it first" -- \
  "$check" --weights="$tiny" --write-expect="$work/no-such-folder"
expect 1 "token 300 at position 1 is outside the vocabulary" -- "$check" --weights="$tiny" --write-expect="$work/ref" --tokens=1,300 --force
cmp -s "$work/ref/reference.json" "$work/reference.copy" || fail "a failed run changed reference.json"
nothing_left "$work/no-such-folder"
no_temporaries "$work"
echo "gpt2 tools: all cases passed"
