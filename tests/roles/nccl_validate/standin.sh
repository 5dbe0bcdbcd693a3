#!/bin/sh
# Stand-in for all_reduce_perf and ncclkit-mpirun on the lab, which has no GPU: prints a real
# nccl-tests sample kept beside it. Named ncclkit-mpirun it plays the multi-node launch and takes
# its files from the folder of the benchmark it was asked to start; started by a real mpirun it plays
# the multi-node benchmark, printed by rank 0 only as nccl-tests does. Files in that folder:
# <kind>.txt (printed), <kind>.json (copied to -J), <kind>.rc (exit code), <kind>.hang (hang after
# printing). As ncclkit-mpirun it also logs "remote ranks see: NAME=value ..." for each -x NAME:
# all that a rank on another host gets of the launching task's environment.
here=$(cd "$(dirname "$0")" && pwd)
kind=single
if [ "$(basename "$0")" = ncclkit-mpirun ]; then
  kind=multi
  for arg; do case "$arg" in */all_reduce_perf) here=$(dirname "$arg") ;; esac; done
  seen="" previous=""
  for arg; do [ "$previous" = -x ] && seen="$seen $arg=$(printenv "$arg")"; previous=$arg; done
  echo "remote ranks see:$seen" >> "${STANDIN_LOG:-/tmp/ncclkit-standin.log}"
elif [ -n "${OMPI_COMM_WORLD_RANK:-}" ]; then  # a rank under a real mpirun: rank 0 speaks for all
  kind=multi
  [ "$OMPI_COMM_WORLD_RANK" = 0 ] || exit 0
fi
echo "$kind NCCL_DEBUG=${NCCL_DEBUG:-} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-} NCCL_DEBUG_FILE=[${NCCL_DEBUG_FILE-unset}] $*" \
  >> "${STANDIN_LOG:-/tmp/ncclkit-standin.log}"
if [ "$1" = -h ]; then  # the usage line of nccl-tests 2.17.3+
  echo "[-J,--output_file <file> write output to filepath, if accessible. Infer type from suffix]"; exit 0
fi
json="" previous=""
for arg; do [ "$previous" = -J ] && json=$arg; previous=$arg; done
cat "$here/$kind.txt" 2>/dev/null
[ -e "$here/$kind.hang" ] && exec sleep 3599  # a number no other process sleeps, for tests to look for
if [ -n "$json" ] && [ -e "$here/$kind.json" ]; then cp "$here/$kind.json" "$json"; fi
exit "$(cat "$here/$kind.rc" 2>/dev/null || echo 0)"
