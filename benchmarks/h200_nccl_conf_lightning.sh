#!/usr/bin/env bash
# On one GPU host: examples/lightning_ddp_check.py --gpu as two simulated nodes (each torchrun in
# its own UTS namespace, node0 and node1, sharing GPU 0, NCCL over NET/Socket on lo), with NCCL's
# settings given ONLY in /etc/nccl.conf, written in the form nccl_profile's template writes it
# (NCCL_SOCKET_IFNAME's exact-match form '=lo' included). Shows that NCCL reads the file itself
# (its INFO lines appear though NCCL_DEBUG is not in the environment) and that the check passes
# on NCCL. Needs root (it writes /etc/nccl.conf and restores what was there).
#
#   benchmarks/h200_nccl_conf_lightning.sh [OUT_DIR]        (ran on the lent H200: docs/benchmarks.md)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(mktemp -d)}
mkdir -p "$out"
conf=/etc/nccl.conf
saved=$(mktemp)
if [ -e $conf ]; then cp -p $conf "$saved"; trap 'cp -p "$saved" $conf; rm -f "$saved"' EXIT
else trap 'rm -f $conf "$saved"' EXIT; fi
cat > $conf <<'CONF'
# written by benchmarks/h200_nccl_conf_lightning.sh in nccl_profile's nccl.conf format
NCCL_DEBUG=INFO
NCCL_DEBUG_SUBSYS=INIT,NET
NCCL_IB_DISABLE=1
NCCL_SOCKET_IFNAME==lo
CONF
env | grep -E '^NCCL_(DEBUG|SOCKET_IFNAME|IB_DISABLE)=' && { echo "unset these first" >&2; exit 2; }

port=29561
started=$EPOCHREALTIME
for rank in 0 1; do
  # shellcheck disable=SC2016  # the inner sh expands these, not this one
  unshare --uts sh -c 'hostname "node$0" && exec "$@"' "$rank" \
    env GLOO_SOCKET_IFNAME=lo python3 -m torch.distributed.run --nnodes 2 --node-rank "$rank" \
      --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$port" \
      "$repo/examples/lightning_ddp_check.py" --gpu --timeout 120 > "$out/node$rank.log" 2>&1 &
  pids[rank]=$!
done
codes=()
for rank in 0 1; do code=0; wait "${pids[$rank]}" || code=$?; codes+=("$code"); done
ended=$EPOCHREALTIME
echo "exit codes: ${codes[*]}; seconds: $(awk "BEGIN {printf \"%.1f\", $ended - $started}")"
grep -h "ncclkit-check" "$out"/node*.log
echo "--- NCCL lines that show /etc/nccl.conf was read:"
grep -h -m3 -E "NCCL INFO (NCCL_SOCKET_IFNAME set|Bootstrap|NET/Socket : Using|NCCL version)" "$out"/node*.log || true
grep -q "NCCL INFO" "$out/node0.log" && grep -q "NCCL INFO" "$out/node1.log"
[ "${codes[*]}" = "0 0" ]
