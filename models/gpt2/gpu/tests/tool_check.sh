#!/usr/bin/env bash
# Host test of build/ch09/bin/gpt2's command line (ctest ch09.gpt2_tool, label `host`): bad
# arguments, impossible combinations and bad weights files (missing, truncated, not
# safetensors, a prompt the model cannot hold) are refused with a message naming them and
# exit status 2, before any GPU work, and leave no --json file; without a GPU a good line
# ends with a message saying so (status 1) and writes no --json file either; with one, a
# short run on a tiny random model works and --json writes the leaderboard's fields.
#
# usage: tool_check.sh GPT2 GPT2_RANDOM_WEIGHTS WORK_DIR
set -uo pipefail
source "$(cd "$(dirname "$0")/../../../.." && pwd)/tests/tools/lib/expect.sh"  # expect, nothing_left, has_gpu
tool=${1:?usage: tool_check.sh GPT2 GPT2_RANDOM_WEIGHTS WORK_DIR}
gen=${2:?usage}
work=${3:?usage}
rm -rf "$work" && mkdir -p "$work" || exit 1

tiny=$work/tiny.safetensors
"$gen" --config=tiny --seed=2 --out="$tiny" >/dev/null || fail "gpt2_random_weights could not write $tiny"

expect 2 "--weights is missing" -- "$tool" --prompt-len=4
expect 2 "one way" -- "$tool" --weights="$tiny"
expect 2 "one way" -- "$tool" --weights="$tiny" --tokens=1,2 --prompt-len=3
expect 2 "--tokens.*empty id" -- "$tool" --weights="$tiny" --tokens=1,,2
expect 2 "--tokens" -- "$tool" --weights="$tiny" --tokens=1,two
expect 2 "--dtype=fp16" -- "$tool" --weights="$tiny" --tokens=1 --dtype=fp16
expect 2 "--kernels: 'mine'" -- "$tool" --weights="$tiny" --tokens=1 --kernels=mine
expect 2 "--use: 'softmax' is not an op" -- "$tool" --weights="$tiny" --tokens=1 --use=softmax:student
expect 2 "--new" -- "$tool" --weights="$tiny" --tokens=1 --new=0
expect 2 "--weights=$work/missing.safetensors: cannot open" -- "$tool" --weights="$work/missing.safetensors" --tokens=1
expect 2 "unknown|frobnicate" -- "$tool" --weights="$tiny" --tokens=1 --frobnicate
expect 2 "--upload=fast" -- "$tool" --weights="$tiny" --tokens=1 --upload=fast
expect 2 "--int8 with --dtype=f32.*--dtype=bf16" -- "$tool" --weights="$tiny" --tokens=1 --int8 --dtype=f32
expect 2 "--int8 with --kernels=library.*--use=gemv:solution" -- "$tool" --weights="$tiny" --tokens=1 --int8 --kernels=library
expect 2 "--int8 with --int4.*give one of the two" -- "$tool" --weights="$tiny" --tokens=1 --int4 --int8
expect 2 "--int4 with --dtype=f32.*--dtype=bf16" -- "$tool" --weights="$tiny" --tokens=1 --int4 --dtype=f32
expect 2 "--int4 with --kernels=library.*--use=gemv:solution" -- "$tool" --weights="$tiny" --tokens=1 --int4 --kernels=library
expect 2 "--decode=persistent runs on BF16 weights without --int8 or --int4.*INT4 weights \\(--int4\\)" -- \
  "$tool" --weights="$tiny" --tokens=1 --decode=persistent --int4
expect 2 "--batch with --int4" -- "$tool" --weights="$tiny" --tokens=1 --batch=4 --int4
"$gen" --config=L=1,C=48,H=4,V=64,P=16 --out="$work/c48.safetensors" >/dev/null || fail "could not write c48"
expect 2 "^gpt2: --int4 on .*c48.safetensors: .*K = 48 is not a multiple of 32" -- \
  "$tool" --weights="$work/c48.safetensors" --tokens=1 --new=2 --int4
expect 2 "--decode=fast" -- "$tool" --weights="$tiny" --tokens=1 --decode=fast
expect 2 "--batch.*from 1 to 1024" -- "$tool" --weights="$tiny" --tokens=1 --batch=0,x
expect 2 "--batch.*'x' is not a whole number" -- "$tool" --weights="$tiny" --tokens=1 --batch=4,x
expect 2 "--batch.*1 to 1024" -- "$tool" --weights="$tiny" --tokens=1 --batch=5000
expect 2 "--batch with --decode=fused" -- "$tool" --weights="$tiny" --tokens=1 --batch=4 --decode=fused
expect 2 "--batch with --int8" -- "$tool" --weights="$tiny" --tokens=1 --batch=4 --int8
expect 2 "--overlap with --decode=persistent.*--decode=fused" -- "$tool" --weights="$tiny" --prompt-len=4 --overlap --decode=persistent
expect 2 "--overlap with --new=1.*--new=2 or more" -- "$tool" --weights="$tiny" --prompt-len=4 --new=1 --overlap
expect 2 "--decode=persistent runs on BF16 weights without --int8" -- "$tool" --weights="$tiny" --tokens=1 --decode=persistent --int8
expect 2 "--decode=persistent runs on BF16 weights without --int8" -- \
  "$tool" --weights="$tiny" --tokens=1 --decode=persistent --dtype=f32
expect 2 "--use=gemm:student.*--dtype=bf16" -- "$tool" --weights="$tiny" --tokens=1 --dtype=f32 --kernels=student

# Numbers, unknown options, missing values.
expect 2 "^gpt2: --new: 'ten' is not a whole number" -- "$tool" --weights="$tiny" --tokens=1 --new=ten
expect 2 "^gpt2: --prompt-len: -4 is out of range" -- "$tool" --weights="$tiny" --prompt-len=-4
expect 2 "^gpt2: --device: 'gpu0' is not a whole number" -- "$tool" --weights="$tiny" --tokens=1 --device=gpu0
expect 2 "^gpt2: unknown option '--promt-len=8'; did you mean --prompt-len\\?" -- "$tool" --weights="$tiny" --promt-len=8
expect 2 "^gpt2: --weights needs a value" -- "$tool" --tokens=1 --weights
expect 2 "^gpt2: unexpected argument 'tiny.safetensors'" -- "$tool" tiny.safetensors --tokens=1

# Bad weights files are named before the GPU is looked for.
head -c 3000 "$tiny" > "$work/truncated.safetensors"
expect 2 "^gpt2: --weights: .*truncated.safetensors: .*past the end.*gpt2_random_weights" -- \
  "$tool" --weights="$work/truncated.safetensors" --tokens=1
head -c 5 "$tiny" > "$work/five-bytes.safetensors"
expect 2 "^gpt2: --weights: .*five-bytes.safetensors" -- "$tool" --weights="$work/five-bytes.safetensors" --tokens=1
printf 'not a safetensors file, but long enough to have a header length\n' > "$work/text.safetensors"
expect 2 "^gpt2: --weights: .*text.safetensors" -- "$tool" --weights="$work/text.safetensors" --tokens=1
expect 2 "^gpt2: --weights: .*$work: " -- "$tool" --weights="$work" --tokens=1
# The prompt against the model (vocabulary 251, 64 positions), before the GPU too.
expect 2 "^gpt2: --tokens: id 1 is 251, but the vocabulary is 0..250" -- "$tool" --weights="$tiny" --tokens=1,251 --new=4
expect 2 "^gpt2: the prompt \\(60\\) plus --new=10 is 70 positions; this model holds 64 \\(n_ctx\\)" -- \
  "$tool" --weights="$tiny" --prompt-len=60 --new=10

# --json: a folder that does not exist, a folder; a refused or failed run leaves no file.
json_missing=$work/no-such-folder/run.json
expect 2 "^gpt2: --json=$json_missing: the folder $work/no-such-folder does not exist" -- \
  "$tool" --weights="$tiny" --tokens=1 --new=4 --json="$json_missing"
expect 2 "^gpt2: --json=$work: it is a folder" -- "$tool" --weights="$tiny" --tokens=1 --new=4 --json="$work"
json_refused=$work/refused.json
expect 2 "--int8 with --dtype=f32" -- "$tool" --weights="$tiny" --tokens=1 --int8 --dtype=f32 --json="$json_refused"
expect 2 "--int8 with --int4" -- "$tool" --weights="$tiny" --tokens=1 --int8 --int4 --json="$json_refused"
expect 2 "--weights: .*truncated" -- "$tool" --weights="$work/truncated.safetensors" --tokens=1 --new=4 --json="$json_refused"
expect 2 "--tokens: id 0 is 300" -- "$tool" --weights="$tiny" --tokens=300 --new=4 --json="$json_refused"
nothing_left "$json_missing" "$json_refused" "$work/no-such-folder"

if ! has_gpu; then
  json_failed=$work/failed.json
  expect 1 "gpt2: .*(device|GPU|driver)" -- "$tool" --weights="$tiny" --tokens=1,2,3 --new=4 --json="$json_failed"
  nothing_left "$json_failed"
  no_temporaries "$work"
  echo "no GPU: the argument checks passed; the run itself needs a GPU"
  exit 0
fi

json=$work/run.json
expect 0 "TTFT: .*tokens/s.*kernels per token.*attn_qkv" -- "$tool" --weights="$tiny" --prompt-len=8 --new=16 \
  --kernels=library,solution --json="$json"
grep -q '"schema_version": 3' "$json" || fail "$json has no schema_version 3 (harness/report/results.schema.json)"
grep -q '"tool": "gpt2"' "$json" || fail "$json does not name the tool"
[ "$(grep -c '"decode_tok_s"' "$json")" = 2 ] || fail "$json should hold two runs"
expect 0 "check: .* all within tolerance.*float64 CPU forward.*ok.*recompute.*ok.*bit for bit" -- \
  "$tool" --weights="$tiny" --prompt-len=8 --new=4 --check --dtype=f32
expect 0 "graph: off" -- "$tool" --weights="$tiny" --prompt-len=8 --new=4 --no-graph
expect 0 "weights uploaded: .*GB/s .*--upload=plain" -- "$tool" --weights="$tiny" --prompt-len=8 --new=4 --upload=plain
expect 0 "int8 weights: .*MB.*and a decode step \\(INT8 GEMVs\\).* all within tolerance.*recompute.*ok.*bit for bit.*solution w8a16" -- \
  "$tool" --weights="$tiny" --prompt-len=8 --new=4 --check --int8
expect 0 "decode step: fused.*recompute.*ok.*bit for bit.*fused decode step vs op-by-op step: .* ok.*kernels per token.*ln_2\\+mlp_fc" -- \
  "$tool" --weights="$tiny" --prompt-len=8 --new=4 --check --decode=fused
expect 0 "decode step: fused.*on the INT8 weights.*and a decode step \\(INT8 GEMVs\\).* all within tolerance.*recompute.*ok.*fused decode step vs op-by-op step: .* ok.*solution v6 w8a16" -- \
  "$tool" --weights="$tiny" --prompt-len=8 --new=4 --check --int8 --decode=fused
expect 0 "int4 weights: .*MB.*and a decode step \\(INT4 GEMVs\\).* all within tolerance.*INT4 decode vs BF16 prefill\\) ok.*bit for bit.*solution w4a16" -- \
  "$tool" --weights="$tiny" --prompt-len=8 --new=4 --check --int4
expect 0 "decode step: fused.*v14 kernels on the INT4 weights.*\\(INT4 GEMVs\\).* all within tolerance.*recompute.*ok.*fused decode step vs op-by-op step: .* ok.*solution v14 w4a16" -- \
  "$tool" --weights="$tiny" --prompt-len=8 --new=4 --check --int4 --decode=fused
json_4=$work/int4.json
expect 0 "decode: .*tokens/s" -- "$tool" --weights="$tiny" --prompt-len=8 --new=8 --int4 --decode=fused --json="$json_4"
grep -q '"int4": true' "$json_4" || fail "$json_4 does not mark the run as INT4"
expect 0 "check: batched step \\(4 sequences.*ok.*batched decode.*tokens/s per seq.*bound" -- \
  "$tool" --weights="$tiny" --prompt-len=12 --new=8 --check --dtype=f32 --batch=1,4,16
json_b=$work/batch.json
expect 0 "batched decode.*tokens/s per seq" -- "$tool" --weights="$tiny" --prompt-len=8 --new=8 --batch=1,3 --json="$json_b"
[ "$(grep -c '"tok_s_per_seq"' "$json_b")" = 2 ] || fail "$json_b should hold two batch rows"
no_temporaries "$work"
echo "all gpt2 tool checks passed"
