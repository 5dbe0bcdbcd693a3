#!/usr/bin/env bash
# Run nccl_validate's single-node path for real on this GPU host (an H200 machine without network:
# ansible-core from wheels, connection local) and keep the report and the raw outputs in OUT_DIR.
#
#   benchmarks/h200_validate.sh OUT_DIR [ansible-playbook options, e.g. -e nccl_validate_max_bytes=8G]
#
# nccl-tests is built by the nccl_tests role; NCCL_TESTS_BIN_DIR=/path/to/nccl-tests/build uses an
# existing build instead. SIMULATED_HOSTS=2 (with NCCL_TESTS_BIN_DIR) makes the inventory two local
# hosts, node0 and node1, whose multi-node run goes through benchmarks/two_hosts_one_gpu_mpirun.sh:
# two ranks on the one GPU that NCCL takes for two nodes (NET/Socket on lo).
# Exit status: ansible-playbook's (0 = every check passed).
set -euo pipefail

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: $0 OUT_DIR [ansible-playbook options]" >&2
  exit 2
fi
out=$1
shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v ansible-playbook >/dev/null || { echo "$0: ansible-playbook not found: install ansible-core" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

python=$(command -v python3)
hosts=${SIMULATED_HOSTS:-1}
if [ "$hosts" -gt 1 ] && [ -z "${NCCL_TESTS_BIN_DIR:-}" ]; then
  echo "$0: SIMULATED_HOSTS needs NCCL_TESTS_BIN_DIR (simulated hosts must not build at once)" >&2
  exit 2
fi
{
  echo "cluster:"
  echo "  hosts:"
  for i in $(seq 0 $((hosts - 1))); do
    if [ "$hosts" -gt 1 ]; then echo "    node$i:"; else echo "    $(hostname -s):"; fi
    echo "      ansible_connection: local"
    echo "      ansible_python_interpreter: $python"
  done
} > "$out/inventory.yml"

extra=(-e '{"nccl_preflight_gpu_required": true}'
       # One host: the cluster NIC does not matter, and this machine may have none but lo.
       -e nccl_preflight_ifname=lo
       -e "nccl_validate_report_parent=$out/ncclkit-report")
if [ -n "${NCCL_TESTS_BIN_DIR:-}" ]; then
  extra+=(-e "nccl_validate_bin_dir=$NCCL_TESTS_BIN_DIR")
fi
if [ "$hosts" -gt 1 ]; then
  extra+=(-e "nccl_validate_mpirun=$repo/benchmarks/two_hosts_one_gpu_mpirun.sh")
fi

status=0
ANSIBLE_CONFIG="$repo/ansible.cfg" ANSIBLE_NOCOLOR=1 \
  ansible-playbook -i "$out/inventory.yml" "$repo/benchmarks/h200_validate.yml" "${extra[@]}" "$@" \
  2>&1 | tee "$out/ansible.log" || status=$?

# The bandwidth plot, where matplotlib is installed; the report is complete without it.
for report in "$out"/ncclkit-report/*/; do
  [ -f "$report/report.json" ] || continue
  PYTHONPATH="$repo/src${PYTHONPATH:+:$PYTHONPATH}" "$python" -m ncclkit.cli report "$report" || true
done
echo "h200_validate: ansible-playbook exited $status; report and raw outputs under $out/ncclkit-report"
exit "$status"
