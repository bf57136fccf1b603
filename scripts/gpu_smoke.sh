#!/bin/bash
# The GPU paths once, on a machine with one CUDA device (the `device` tool; python3 there holds a CUDA torch):
# training on cuda with AMP bf16 and fp16, a checkpoint saved there and predicted with on the CPU, and torchrun with
# the nccl backend. Each step has its own time limit; the logs go to $OUT (or ./gpu_smoke_out).
# Usage: bash scripts/gpu_smoke.sh [STEP ...]   (default: every step)
set -u
ONLY=" $* "
OUT=${OUT:-gpu_smoke_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 TEXTCLS_HOME=/tmp/textcls-home TEXTCLS_CACHE=/tmp/textcls-cache
PY=${PY:-python3}
step() {   # name seconds command...
  local name=$1 limit=$2; shift 2
  [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $name "* ]] || return 0
  local t0=$(date +%s%N)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  printf '%-16s rc=%-3s %6d ms  %s\n' "$name" "$rc" $(( ($(date +%s%N) - t0) / 1000000 )) \
    "$(tail -c 400 "$OUT/$name.log" | tr '\n' ' ')"
}
nvidia-smi -L
$PY -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '', 'nccl', torch.distributed.is_nccl_available(), 'numpy', numpy.__version__)"
COMMON=(--data sst2 --embeddings random --no-arrow --quiet --json --overwrite)
step cuda-fp32      80 $PY -m textcls train --model kim_cnn --epochs 2 --device cuda --amp off --out /tmp/g-fp32 "${COMMON[@]}"
step cuda-bf16      80 $PY -m textcls train --model kim_cnn --epochs 2 --device cuda --amp bf16 --out /tmp/g-bf16 "${COMMON[@]}"
step cuda-fp16      80 $PY -m textcls train --model transformer --preset small --epochs 2 --device cuda --amp fp16 --out /tmp/g-fp16 "${COMMON[@]}"
step predict-cpu    40 $PY -c "import textcls; p = textcls.load_checkpoint('/tmp/g-fp16', device='cpu'); print(p.predict(['a warm and funny film .', 'dull and tedious .']))"
step predict-cuda   40 $PY -c "import textcls; p = textcls.load_checkpoint('/tmp/g-bf16', device='cuda'); print(p.predict(['a warm and funny film .', 'dull and tedious .']))"
step nccl-1rank     80 $PY -m torch.distributed.run --standalone --nproc_per_node=1 -m textcls train --model kim_cnn --epochs 1 --device cuda --out /tmp/g-nccl1 "${COMMON[@]}"
# two ranks (nccl): by default rank 1 asks for cuda:1, which one GPU does not have; on cuda:0 both, NCCL may refuse
# two ranks on one device. Either way this shows what the person is told.
step nccl-2-default  60 $PY -m torch.distributed.run --standalone --nproc_per_node=2 -m textcls train --model kim_cnn --epochs 1 --out /tmp/g-nccl2 "${COMMON[@]}"
step nccl-2-cuda0    60 $PY -m torch.distributed.run --standalone --nproc_per_node=2 -m textcls train --model kim_cnn --epochs 1 --device cuda:0 --out /tmp/g-nccl3 "${COMMON[@]}"
