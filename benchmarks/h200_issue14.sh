#!/usr/bin/env bash
# The H200 runs of docs/benchmarks.md "The whole collection on the H200", in one device call:
#   1. site.yml, first run (benchmarks/h200_site.sh; the node-local NET test on, CUDA MPS off);
#      when it fails, once more with the cluster NIC set to lo and no reachability check;
#   2. the NET/Socket grid at 512 MiB (benchmarks/h200_socket_grid.sh; CUDA MPS on, then off);
#   3. site.yml, second run (nothing to change: changed=0), when time is left.
#
#   benchmarks/h200_issue14.sh NCCL_TESTS_SOURCE OUT_DIR [BUNDLE]
#
# Each step is bounded so that the next still runs; OUT_DIR/summary.txt has the exit codes and
# times. BUNDLE: a .tgz of OUT_DIR written after every step (what a bounded call brings back).
set -uo pipefail
src=$(cd "$1" && pwd) out=$(mkdir -p "$2" && cd "$2" && pwd) bundle=${3:-}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=/opt/ncclkit/nccl-tests/current/bin
site=(-e nccl_validate_max_bytes=512M -e nccl_validate_timeout_s=90)
start=$(date +%s)
# shellcheck source=benchmarks/h200_steps.sh
. "$repo/benchmarks/h200_steps.sh"
{ hostname; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; mpirun --version | head -n 1
  command -v iperf3 ip || true; } >"$out/machine.txt" 2>&1
if ! step site-first 200 "$repo/benchmarks/h200_site.sh" "$out/site-first" "$src" "${site[@]}"; then
  site+=(-e nccl_preflight_ifname=lo -e nccl_network_diagnose=false)
  step site-retry 120 "$repo/benchmarks/h200_site.sh" "$out/site-retry" "$src" "${site[@]}"
fi
step socket-grid 270 "$repo/benchmarks/h200_socket_grid.sh" "$bin" "$out/grid" --reps 3 --size 512M --iters 6 --warmup 2
if [ $(($(date +%s) - start)) -lt 440 ]; then
  step site-second 110 "$repo/benchmarks/h200_site.sh" "$out/site-second" "$src" "${site[@]}"
fi
