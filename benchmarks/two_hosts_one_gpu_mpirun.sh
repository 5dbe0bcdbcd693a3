#!/usr/bin/env bash
# A launcher for nccl_validate's multi-node run on ONE GPU host that makes NCCL see two hosts:
# Open MPI starts two ranks, each in its own UTS namespace named node<rank>, so NCCL's host hashes
# differ and it joins them over NET/Socket on lo, as it would two nodes (the method behind
# tests/samples/h200-2host-*). Both ranks share GPU 0.
#
#   two_hosts_one_gpu_mpirun.sh [-x NAME]... PROGRAM [ARGS...]   (nccl_validate_mpirun)
set -euo pipefail
options=()
while [ $# -gt 1 ] && [ "$1" = -x ]; do
  options+=("$1" "$2")
  shift 2
done
[ $# -gt 0 ] || { echo "usage: $0 [-x NAME]... PROGRAM [ARGS...]" >&2; exit 2; }
# shellcheck disable=SC2016  # the inner sh expands these, not this one
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "${options[@]}" \
  -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1 -x NCCL_NVLS_ENABLE=0 \
  unshare --uts sh -c 'hostname "node$OMPI_COMM_WORLD_RANK" && exec "$@"' sh "$@"
