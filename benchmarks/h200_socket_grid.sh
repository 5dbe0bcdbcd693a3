#!/usr/bin/env bash
# NCCL over NET/Socket on one GPU host at 512 MiB: NCCL's defaults, the common tuning values, the
# autotune grid (socket threads x sockets per thread, NCCL_ALGO/NCCL_PROTO set vs unset), the
# autotune decision and its re-measure, and raw TCP of the same loopback path, in one run
# (benchmarks/h200_socket_grid.py; docs/benchmarks.md has the figures measured on the H200).
#
#   benchmarks/h200_socket_grid.sh BIN_DIR OUT_DIR [h200_socket_grid.py options]
#
# Two ranks share the one GPU through CUDA MPS (started here when not running, stopped after).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BIN_DIR OUT_DIR [--reps N --size 512M --iters N --warmup N]" >&2
  exit 2
fi
bin=$1 out=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export NCCL_NVLS_ENABLE=0
started=0
if command -v nvidia-cuda-mps-control >/dev/null && ! pgrep -x nvidia-cuda-mps >/dev/null; then
  nvidia-cuda-mps-control -d && started=1
fi
status=0
{
  echo "# host: $(hostname), $(nproc) cores; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
  echo "# mps: $([ "$started" = 1 ] && echo started here || echo as found)"
  PYTHONUNBUFFERED=1 python3 "$repo/benchmarks/h200_socket_grid.py" "$bin" "$out/h200_socket_grid.json" "$@"
} 2>&1 | tee "$out/h200_socket_grid.log" || status=$?
[ "$started" = 0 ] || echo quit | nvidia-cuda-mps-control
exit "$status"
