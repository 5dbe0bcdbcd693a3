#!/usr/bin/env bash
# nccl_validate's multi-node run on two simulated hosts of one H200 (h200_validate.sh), with rank 1
# stopped by SIGSTOP once the run printed its 1 MiB row: the run's timeout must take the evidence
# (each rank's state and wait channel, NCCL's RAS report) BEFORE killing it, and the report must
# name the stopped rank. Everything lands in OUT_DIR (flat, for the device tool).
#
#   benchmarks/h200_validate_stuck.sh NCCL_TESTS_SOURCE WORK_DIR OUT_DIR    (on the lent H200; root)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$1 w=$2 out=$3
mkdir -p "$w" "$out"
lib=$("$here/h200_build_all_reduce.sh" "$src" "$w") || { tail -20 "$w/make.log" > "$out/make.log"; exit 1; }
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_NVLS_ENABLE=0
nvidia-cuda-mps-control -d 2>/dev/null || true

stop_rank_one() { # once the multi-node output has its 1 MiB row
  local i f p
  for ((i = 0; i < 1200; i++)); do
    f=$(grep -l '^ *1048576 ' /tmp/ncclkit-validate-*/multi.txt 2>/dev/null | head -n 1)
    if [ -n "$f" ]; then
      for p in /proc/[0-9]*; do
        [ "$(cat "$p/comm" 2>/dev/null)" = all_reduce_perf ] || continue
        tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 || continue
        echo "$(date -u +%T) kill -STOP ${p#/proc/} (rank 1; $f has its 1 MiB row)"
        kill -STOP "${p#/proc/}"
        return 0
      done
    fi
    sleep 0.5
  done
  echo "$(date -u +%T) no rank 1 to stop"
}
stop_rank_one > "$out/stopper.log" 2>&1 &

started=$(date +%s)
SIMULATED_HOSTS=2 NCCL_TESTS_BIN_DIR=$w/build "$here/h200_validate.sh" "$w/run" \
  -e nccl_validate_single_node=false -e nccl_validate_max_bytes=256M -e nccl_validate_iters=200 \
  -e nccl_validate_timeout_s=60 -e '{"nccl_validate_env": {"NCCL_NVLS_ENABLE": "0", "LD_LIBRARY_PATH": "'"$lib"'"}}' \
  > /dev/null 2>&1
echo "play exited $? after $(( $(date +%s) - started )) s" >> "$out/stopper.log"
# shellcheck disable=SC2012  # report folders are named by their UTC time stamp: no odd characters
report=$(ls -d "$w"/run/ncclkit-report/2*/ | tail -n 1)
cp "$report/report.json" "$report/report.md" "$out/" 2>/dev/null
cp "$report"/raw/node0/multi.txt "$report"/raw/node0/multi.stderr.txt "$out/" 2>/dev/null
tail -n 60 "$w/run/ansible.log" > "$out/ansible-tail.log"
