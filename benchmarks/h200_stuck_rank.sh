#!/usr/bin/env bash
# shellcheck disable=SC2086  # $cmd, $FR and $* are word lists, split into words on purpose
# On one GPU host: stop (SIGSTOP) or kill (SIGKILL) rank 1 of a two-rank job mid-run, take the
# forensics (plugins/module_utils/diagnosis/forensics.py: /proc state, wchan, py-spy, NCCL RAS) BEFORE
# killing the rest, and keep every log for `ncclkit diagnose`. Two simulated hosts (node0/node1,
# each rank in its own UTS namespace, sharing GPU 0, NCCL NET/Socket on lo), for nccl-tests'
# all_reduce_perf under mpirun and for a torch job under torchrun (PyTorch's NCCL flight recorder
# on, dumps in WORK/fr). Also times the torch job's all-reduce with and without the recorder.
#
#   benchmarks/h200_stuck_rank.sh NCCL_TESTS_SOURCE WORK_DIR     (ran on the lent H200; root)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(readlink -f "$1"); w=$2
forensics=${FORENSICS:-$here/../plugins/module_utils/diagnosis/forensics.py}
mkdir -p "$w/fr"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
say() { echo "$(date -u +%T) $*" | tee -a "$w/summary.txt"; }
py=$(command -v python3)
nccl=$($py -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); NCCL $nccl; $($py -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())')"

lib=$("$here/h200_build_all_reduce.sh" "$src" "$w"); say "build rc=$?"
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

wait_for() { # file regex seconds
  local i; for ((i = 0; i < $3 * 2; i++)); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.5; done; return 1
}
stop_group() { kill -TERM -- "-$1" 2>/dev/null; sleep 3; kill -KILL -- "-$1" 2>/dev/null; wait "$1" 2>/dev/null; }

arp() { # name signal
  local name=$1 sig=$2 log=$w/$1.log root pid
  local cmd="$here/two_hosts_one_gpu_mpirun.sh -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET -x LD_LIBRARY_PATH $w/build/all_reduce_perf -b 8 -e 256M -f 2 -g 1 -n 400"
  echo "# recorded $(date -u +%F) on one H200 by benchmarks/h200_stuck_rank.sh ($sig to rank 1 after the 1 MiB row): $cmd" > "$log"
  setsid $cmd >> "$log" 2>&1 &
  root=$!
  wait_for "$log" '^ +1048576 ' 90 || say "$name: no 1 MiB row"
  pid=$(grep -oE '^node1:[0-9]+:' "$log" | head -n 1 | cut -d: -f2)
  say "$name: kill -$sig $pid (rank 1 on node1)"; kill "-$sig" "$pid"
  if [ "$sig" = STOP ]; then
    sleep 8; say "$name: forensics"; $py "$forensics" --wait 15 "$root" >> "$log" 2>&1
  else
    for ((i = 0; i < 60; i++)); do kill -0 "$root" 2>/dev/null || break; sleep 1; done
  fi
  stop_group "$root"; say "$name: done"
}

torchjob() { # name signal|none [extra env...]
  local name=$1 sig=$2; shift 2
  local r pid roots=() port=$((29600 + RANDOM % 300))
  for r in 0 1; do
    local log=$w/$name-node$r.log
    local cmd="env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 GLOO_SOCKET_IFNAME=lo $* $py -m torch.distributed.run --nnodes 2 --node-rank $r --nproc-per-node 1 --master-addr 127.0.0.1 --master-port $port $here/torch_allreduce_steps.py --steps ${STEPS:-3000} --pause ${PAUSE:-0.05} --timeout 30"
    echo "# recorded $(date -u +%F) on one H200 by benchmarks/h200_stuck_rank.sh (node$r, $sig to rank 1 at step 40): $cmd" > "$log"
    # shellcheck disable=SC2016  # the inner sh expands these, not this one
    setsid unshare --uts sh -c 'hostname "node$0" && exec "$@"' "$r" $cmd >> "$log" 2>&1 &
    roots+=($!)
  done
  if [ "$sig" = none ]; then wait "${roots[@]}"; say "$name: $(grep -h 'us per all_reduce' "$w/$name"-node*.log)"; return; fi
  wait_for "$w/$name-node1.log" 'rank=1 .*step=40$' 120 || say "$name: no step 40"
  pid=$(grep -oE 'rank=1 pid=[0-9]+' "$w/$name-node1.log" | head -n 1 | cut -d= -f3)
  say "$name: kill -$sig $pid (rank 1 on node1)"; kill "-$sig" "$pid"
  if [ "$sig" = STOP ]; then
    sleep 8; say "$name: forensics"
    $py "$forensics" --wait 15 "${roots[@]}" > "$w/$name-forensics.log" 2>&1
    sed -i "1i # recorded $(date -u +%F) on one H200 by benchmarks/h200_stuck_rank.sh: python3 nccl_forensics.py --wait 15 ${roots[*]} (8 s after SIGSTOP to rank 1)" "$w/$name-forensics.log"
    wait_for "$w/$name-node0.log" 'Watchdog caught' 60 || say "$name: no watchdog line"
    sleep 15
  else
    for ((i = 0; i < 60; i++)); do kill -0 "${roots[0]}" 2>/dev/null || kill -0 "${roots[1]}" 2>/dev/null || break; sleep 1; done
  fi
  for r in "${roots[@]}"; do stop_group "$r"; done; say "$name: done"
}

command -v py-spy >/dev/null && say "py-spy: $(py-spy --version)"
arp arp_stop STOP
arp arp_kill KILL
FR="TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=$w/fr/nccl_trace_rank_ TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$w/fr/nccl_trace_rank_"
torchjob torch_stop STOP $FR
torchjob torch_kill KILL $FR
STEPS=2000 PAUSE=0 torchjob cost_off none TORCH_NCCL_TRACE_BUFFER_SIZE=0 && STEPS=2000 PAUSE=0 torchjob cost_on none $FR
STEPS=2000 PAUSE=0 torchjob cost_off2 none TORCH_NCCL_TRACE_BUFFER_SIZE=0 && STEPS=2000 PAUSE=0 torchjob cost_on2 none $FR
ls -l "$w/fr" >> "$w/summary.txt"
