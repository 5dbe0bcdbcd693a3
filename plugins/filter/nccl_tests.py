# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters of the nccl_tests role over module_utils/nccl_tests: the build plan, the install state,
the install folder rule and what may be deleted."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_tests_build_plan(settings, gpu, cuda, nccl, mpi):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.plan import PlanError, build_plan
    try:
        return build_plan(dict(settings), gpu, cuda, nccl, mpi)
    except PlanError as error:
        raise AnsibleFilterError(f"nccl_tests: {error}") from None


def nccl_tests_install_state(scan_lines, settings, cuda, nccl, mpi):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.plan import PlanError, install_state
    try:
        return install_state(list(scan_lines), dict(settings), cuda, nccl, mpi)
    except PlanError as error:
        raise AnsibleFilterError(f"nccl_tests: {error}") from None


def nccl_tests_install_dir_problem(path):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.paths import install_dir_problem
    return install_dir_problem(path)


def nccl_tests_removable(paths, install_dir, keep):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.paths import removable_paths
    return removable_paths(install_dir, list(paths), list(keep))


class FilterModule:
    def filters(self):
        return {
            "nccl_tests_build_plan": nccl_tests_build_plan,
            "nccl_tests_install_state": nccl_tests_install_state,
            "nccl_tests_install_dir_problem": nccl_tests_install_dir_problem,
            "nccl_tests_removable": nccl_tests_removable,
        }
