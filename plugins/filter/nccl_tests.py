"""Filters of the nccl_tests role: the install folder rule and what it may delete
(plugins/module_utils/nccl_tests_paths.py decides both)."""

from __future__ import annotations

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests_paths import (
    install_dir_problem,
    removable_paths,
)


class FilterModule:
    def filters(self):
        return {
            "nccl_tests_install_dir_problem": install_dir_problem,
            "nccl_tests_removable": lambda paths, install_dir, keep: removable_paths(install_dir, list(paths),
                                                                                     list(keep)),
        }
