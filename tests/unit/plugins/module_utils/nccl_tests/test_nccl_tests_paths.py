"""The nccl_tests install folder rule and what the role may delete under it."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.paths import (
    install_dir_problem,
    removable_paths,
)


@pytest.mark.parametrize("path", ["/", "/usr", "/usr/local", "/usr/local/", "/opt", "/home", "/root", "/var",
                                  "/etc", "/tmp", "/usr/local/src", "//usr//local", "/root/autodl-tmp"])
def test_system_folders_are_refused_with_the_fix(path):
    problem = install_dir_problem(path)
    assert "is a system folder" in problem and "use a dedicated subfolder such as" in problem
    assert "\n" not in problem


@pytest.mark.parametrize("path", ["/opt/ncclkit/nccl-tests", "/usr/local/nccl-tests", "/root/autodl-tmp/ncclkit",
                                  "/home/me/nccl-tests"])
def test_dedicated_folders_are_accepted(path):
    assert install_dir_problem(path) == ""


@pytest.mark.parametrize("path", ["relative/dir", "/opt/../usr", "/usr/local/./", None])
def test_relative_or_dotted_paths_are_refused(path):
    assert install_dir_problem(path).startswith("nccl_tests_install_dir")


def test_only_stamped_paths_not_in_use_are_removable():
    top = "/usr/local/nccl-tests"
    paths = [f"{top}/src/keepme", f"{top}/src/git", f"{top}/src/git.ncclkit",
             f"{top}/src/archive-v1-abc", f"{top}/src/archive-v1-abc.download", f"{top}/src/archive-v1-abc.ncclkit",
             f"{top}/src/controller-v2-def.ncclkit",  # stamped, never fetched: only the stamp goes
             f"{top}/builds/k1", f"{top}/builds/k1/ncclkit-stamp.json", f"{top}/builds/k2",
             f"{top}/builds/by-hand", f"{top}/builds/k2/ncclkit-stamp.json",
             f"{top}/.build-k3", f"{top}/.build-k3.sh", f"{top}/.build-mine"]
    found = removable_paths(top + "/", paths, [f"{top}/builds/k2", f"{top}/src/git"])
    assert found == {
        "leftovers": [f"{top}/.build-k3", f"{top}/.build-k3.sh"],
        "unused": [f"{top}/builds/k1", f"{top}/src/archive-v1-abc", f"{top}/src/archive-v1-abc.download",
                   f"{top}/src/archive-v1-abc.ncclkit", f"{top}/src/controller-v2-def.ncclkit"]}
