"""Filters of the nccl_tests role: the install folder rule and what it may delete
(plugins/module_utils/nccl_tests/paths.py decides both)."""

from __future__ import annotations

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_tests_install_dir_problem(path):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.paths import install_dir_problem
    return install_dir_problem(path)


def nccl_tests_removable(paths, install_dir, keep):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.paths import removable_paths
    return removable_paths(install_dir, list(paths), list(keep))


class FilterModule:
    def filters(self):
        return {
            "nccl_tests_install_dir_problem": nccl_tests_install_dir_problem,
            "nccl_tests_removable": nccl_tests_removable,
        }
