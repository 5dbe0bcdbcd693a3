"""The ncclkit.cluster.nccl_tests_build_plan filter: what the nccl_tests role builds on a host."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_tests_build_plan
short_description: Settle what nccl_tests builds on a host, and what stops the build
version_added: 0.3.0
author: ncclkit maintainers
description:
  - Settles, from the role's settings and the toolchain facts that nccl_preflight sets, whether the
    host builds nccl-tests, the nvcc C(-gencode) flags, MPI, the binaries' name suffix, the tools the
    build needs, the controller source's absolute path and packed copy, and the source folder.
  - The C(-gencode) flags are derived from the GPUs' compute capabilities (plus PTX for the newest
    one when O(_input.ptx)) unless O(_input.gencode) gives them.
  - C(problems) lists what stops the build, each with its fix - no GPU while O(_input.required), no
    CUDA toolkit or NCCL, an unreadable NCCL version, MPI required but missing, GPUs older or newer
    than the toolkit builds for (the first row of O(_input.arch_limits) whose C(cuda) is not newer
    than the toolkit applies).
  - Booleans may be given as strings (C(true), C(no), C(1), ...), as the C(bool) filter reads them.
  - Runs on the controller; the logic is plugins/module_utils/nccl_tests/plan.py.
positional: gpu, cuda, nccl, mpi
options:
  _input:
    description:
      - The role's variables without their C(nccl_tests_) prefix - C(version), C(source),
        C(archive_checksum), C(controller_path), C(install_dir), C(gencode), C(ptx), C(mpi),
        C(required), C(make_vars) - and C(arch_limits) (rows of C(cuda), C(min_sm), C(max_sm), newest
        toolkit first), C(playbook_dir), C(host) (the inventory name) and C(tmpdir) (the controller's).
    type: dict
    required: true
  gpu:
    description: The C(ncclkit_gpu_capabilities) fact (C(present), C(sm), C(reason)).
    type: dict
    required: true
  cuda:
    description: The C(ncclkit_cuda) fact (C(found), C(version), C(nvcc), C(hint)).
    type: dict
    required: true
  nccl:
    description: The C(ncclkit_nccl) fact (C(found), C(version), C(include_dir), C(hint)).
    type: dict
    required: true
  mpi:
    description: The C(ncclkit_mpi) fact (C(found), C(hint)).
    type: dict
    required: true
"""

EXAMPLES = r"""
_nccl_tests_plan: >-
  {{ _nccl_tests_settings | ncclkit.cluster.nccl_tests_build_plan(ncclkit_gpu_capabilities, ncclkit_cuda,
     ncclkit_nccl, ncclkit_mpi) }}
# => {"build": true, "gencode": "-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90",
#     "mpi": true, "suffix": "", "needed_tools": ["make", "g++", "ldd", "git"],
#     "controller_path": "/work/play/", "packed": "/tmp/ncclkit-nccl-tests-<sha1>.tar.gz",
#     "src_dir": "/opt/ncclkit/nccl-tests/src/git", "problems": []}
"""

RETURN = r"""
_value:
  description:
    - C(build) (the host has a GPU), C(gencode), C(mpi) (build with MPI), C(suffix), C(needed_tools),
      C(controller_path), C(packed), C(src_dir), and C(problems) (a list of one-line causes with
      their fixes; empty when nothing stops the build).
  type: dict
"""

from ansible.errors import AnsibleFilterError
# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_tests_build_plan(settings, gpu, cuda, nccl, mpi):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.plan import PlanError, build_plan
    try:
        return build_plan(dict(settings), gpu, cuda, nccl, mpi)
    except PlanError as error:
        raise AnsibleFilterError(f"nccl_tests: {error}") from None


class FilterModule:
    def filters(self):
        return {"nccl_tests_build_plan": nccl_tests_build_plan}
