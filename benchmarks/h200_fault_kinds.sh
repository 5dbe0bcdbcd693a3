#!/usr/bin/env bash
# The fault matrix's GPU kinds on one GPU host: two simulated hosts (node0/node1, each rank in its own
# UTS namespace, sharing GPU 0, NCCL NET/Socket on lo), benchmarks/h200_fault_job.py under torchrun,
# one fault per run in rank 1 (node1): CUDA OOM, a stopped rank (with NCCL RAS: ncclras's report
# taken while it is stopped), a killed rank, a wrong NCCL_SOCKET_IFNAME on node1, a desync, and
# NCCL_PROTO set on node1 only.
# Logs: WORK/h200-<kind>-node{0,1}.log (+ -ncclras.log), summary.txt.
#
#   benchmarks/h200_fault_kinds.sh WORK_DIR          (ran on the lent GPU machine; root)
#   TIMEOUT=20 MAX_WAIT=45 KINDS="cuda_oom rank_stopped" benchmarks/h200_fault_kinds.sh WORK_DIR
#   (NCCL timeout, seconds a job may run, which kinds; SUBSYS=INIT,ENV for NCCL_DEBUG_SUBSYS)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
w=$1; mkdir -p "$w"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
py=$(command -v python3)
say() { echo "$(date -u +%T) $*" | tee -a "$w/summary.txt"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $($py -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())')"
wait_for() { local i; for ((i = 0; i < $3 * 2; i++)); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.5; done; return 1; }

job() { # kind action [node1 env...]
  local kind=$1 action=$2; shift 2
  local r roots=() port=$((29600 + RANDOM % 300)) started=$SECONDS
  for r in 0 1; do
    local log=$w/h200-$kind-node$r.log extra=""
    [ "$r" = 1 ] && extra="$*"
    local cmd
    cmd="env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=${SUBSYS:-INIT,NET} NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_RAS_ENABLE=1 GLOO_SOCKET_IFNAME=lo TORCH_NCCL_ASYNC_ERROR_HANDLING=1 FAULT_JOB=$action FAULT_RANK=1 TIMEOUT=${TIMEOUT:-30} $([ "$action" = desync ] && echo TORCH_DISTRIBUTED_DEBUG=DETAIL) $extra $py -m torch.distributed.run --nnodes 2 --node-rank $r --nproc-per-node 1 --master-addr 127.0.0.1 --master-port $port $here/h200_fault_job.py"
    echo "# recorded $(date -u +%F) on one $gpu by benchmarks/h200_fault_kinds.sh (node$r; $kind: FAULT_JOB=$action in rank 1 at step 20): $cmd" > "$log"
    # shellcheck disable=SC2016,SC2086
    setsid unshare --uts sh -c 'hostname "node$0" && exec "$@"' "$r" $cmd >> "$log" 2>&1 &
    roots+=($!)
  done
  if [ "$action" = stop ]; then
    wait_for "$w/h200-$kind-node1.log" 'fault hook stop' 90 || say "$kind: no fault hook line"
    sleep 5
    { echo "# recorded $(date -u +%F) on one $gpu: /usr/bin/ncclras (5 s after rank 1 stopped itself)"; timeout 20 /usr/bin/ncclras 2>&1; } > "$w/h200-$kind-ncclras.log"
  fi
  local i; for ((i = 0; i < ${MAX_WAIT:-75}; i++)); do kill -0 "${roots[0]}" 2>/dev/null || kill -0 "${roots[1]}" 2>/dev/null || break; sleep 1; done
  for r in "${roots[@]}"; do kill -KILL -- "-$r" 2>/dev/null; wait "$r" 2>/dev/null; done
  say "$kind: ended after $((SECONDS - started)) s"
}

# KINDS="cuda_oom rank_killed" runs only those (all six when unset).
want() { [ -z "${KINDS:-}" ] || [[ " $KINDS " == *" $1 "* ]]; }
want cuda_oom && job cuda_oom oom
want rank_stopped && job rank_stopped stop
want rank_killed && job rank_killed kill
want socket_ifname_missing && job socket_ifname_missing "" NCCL_SOCKET_IFNAME=eth9
want collective_desync && job collective_desync desync
# NCCL-only setting on one node: NCCL_PROTO on node1 only, no fault in the job. Expected "none"; measured
# 2026-12-06 on an H100: the first all-reduce fails (NCCL message truncated on node1, a timeout on node0).
want nccl_setting_differs && job nccl_setting_differs "" NCCL_PROTO=LL
