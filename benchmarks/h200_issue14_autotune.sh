#!/usr/bin/env bash
# The autotune through the roles on one GPU host, and the NET/Socket comparison, in one device call
# (docs/benchmarks.md, "Autotune through site.yml on the H200"):
#   1. site.yml, first run, with nccl_validate_autotune on: the node-local NET test, then the
#      autotune grid over it; the profile rewritten with the winner;
#   2. site.yml, second run: the kept result is current, nothing measured, changed=0;
#   3. benchmarks/h200_socket_compare.py: defaults, common values, the autotuned tuning the first
#      run kept, raw TCP at the same stream counts, interleaved.
# CUDA MPS runs throughout (two ranks share the one GPU, as in h200_socket_grid.sh).
#
#   benchmarks/h200_issue14_autotune.sh NCCL_TESTS_SOURCE OUT_DIR
#
# Each step is bounded; OUT_DIR/summary.txt has the exit codes and times.
set -uo pipefail
src=$(cd "$1" && pwd) out=$(mkdir -p "$2" && cd "$2" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=/opt/ncclkit/nccl-tests/current/bin
site=(-e nccl_validate_max_bytes=512M -e nccl_validate_timeout_s=90 -e nccl_validate_autotune=true
      -e nccl_validate_autotune_iters=6 -e nccl_validate_autotune_warmup_iters=2)
start=$(date +%s)
# shellcheck source=benchmarks/h200_steps.sh
. "$repo/benchmarks/h200_steps.sh"
left() { echo $(($1 - ($(date +%s) - start))); }
export NCCL_NVLS_ENABLE=0
nvidia-cuda-mps-control -d
{ date -u; hostname; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >"$out/machine.txt" 2>&1
cat /etc/nccl.conf >"$out/nccl.conf.before" 2>&1
step site-first 360 "$repo/benchmarks/h200_site.sh" "$out/site-first" "$src" "${site[@]}"
cat /etc/nccl.conf >"$out/nccl.conf.after-first" 2>&1
cp /etc/ncclkit/autotune.json "$out/autotune.json" 2>/dev/null
step site-second "$(left 470)" "$repo/benchmarks/h200_site.sh" "$out/site-second" "$src" "${site[@]}"
cat /etc/nccl.conf >"$out/nccl.conf.after-second" 2>&1
if [ -f "$out/autotune.json" ] && [ "$(left 575)" -gt 60 ]; then
  step compare "$(left 575)" env PYTHONUNBUFFERED=1 python3 "$repo/benchmarks/h200_socket_compare.py" "$bin" \
    "$out/compare/compare.json" --tuning-json "$out/autotune.json" --reps 3 --size 512M --iters 6 --warmup 2 --tcp-seconds 2
fi
echo quit | nvidia-cuda-mps-control
