#!/usr/bin/env bash
# site.yml, the whole collection, on this one GPU host (connection local, no package registry):
# nccl_preflight, nccl_network (no packages installed), nccl_tests (from the source tree given),
# nccl_profile, nccl_validate with the node-local NET test (nccl_validate_net_loopback).
#
#   benchmarks/h200_site.sh OUT_DIR NCCL_TESTS_SOURCE [ansible-playbook options]
#
# OUT_DIR gets the inventory, ansible.log and the report folder.
# Exit status: ansible-playbook's.
set -euo pipefail
if [ $# -lt 2 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: $0 OUT_DIR NCCL_TESTS_SOURCE [ansible-playbook options]" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
src=$(cd "$2" && pwd)
shift 2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command -v ansible-playbook >/dev/null || { echo "$0: ansible-playbook not found: install ansible-core" >&2; exit 2; }
{
  echo "cluster:"
  echo "  hosts:"
  echo "    $(hostname -s):"
  echo "      ansible_connection: local"
  echo "      ansible_python_interpreter: $(command -v python3)"
} >"$out/inventory.yml"
status=0
# shellcheck disable=SC2016  # JSON, not shell
ANSIBLE_CONFIG="$repo/ansible.cfg" ANSIBLE_NOCOLOR=1 \
  ansible-playbook -i "$out/inventory.yml" "$repo/site.yml" \
  -e '{"nccl_network_install_packages": false, "nccl_preflight_gpu_required": true, "nccl_validate_net_loopback": true}' \
  -e '{"nccl_validate_env": {"NCCL_NVLS_ENABLE": "0"}}' \
  -e nccl_tests_source=controller -e "nccl_tests_controller_path=$src" \
  -e "nccl_validate_report_parent=$out/ncclkit-report" "$@" 2>&1 | tee "$out/ansible.log" || status=$?
echo "h200_site: ansible-playbook exited $status; report under $out/ncclkit-report"
exit "$status"
