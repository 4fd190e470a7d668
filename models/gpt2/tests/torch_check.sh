#!/usr/bin/env bash
# Host test (ctest: gpt2.torch_reference): the float64 CPU forward against Hugging Face
# transformers' own GPT2LMHeadModel, on files scripts/gpt2_torch_reference.py writes.
# Exit 77 (skipped) when PyTorch or transformers is not installed.
#
# usage: torch_check.sh GPT2_TORCH_REFERENCE_PY GPT2_CPU_CHECK WORK_DIR
set -uo pipefail
script=${1:?usage: torch_check.sh GPT2_TORCH_REFERENCE_PY GPT2_CPU_CHECK WORK_DIR}
check=${2:?usage}
work=${3:?usage}
python=${PYTHON:-python3}
rm -rf "$work" && mkdir -p "$work" || exit 1

run_case() {  # NAME, then the script's arguments
  local name=$1
  shift
  "$python" "$script" --out-dir="$work/$name" "$@"
  local rc=$?
  [ "$rc" = 77 ] && exit 77  # the script said what is missing
  [ "$rc" = 0 ] || { echo "FAIL: gpt2_torch_reference.py $* exited $rc" >&2; exit 1; }
  "$check" --weights="$work/$name/model.safetensors" --expect="$work/$name/reference.json" ||
    { echo "FAIL: the CPU forward disagrees with transformers ($name)" >&2; exit 1; }
}
run_case tiny --config=tiny --seed=1
run_case odd-bf16 --config=L=3,C=96,H=6,V=307,P=40 --seed=2 --weights-dtype=bf16 --prompt-len=40
echo "gpt2 against transformers: all cases passed"
