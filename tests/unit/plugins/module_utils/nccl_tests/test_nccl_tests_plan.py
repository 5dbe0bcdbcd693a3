"""The nccl_tests role's decisions (module_utils/nccl_tests/plan.py, filters nccl_tests_build_plan
and nccl_tests_install_state): what a host builds, what stops it, the stamp and its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.filter.core import get_hash

from ansible_collections.ncclkit.cluster.plugins.filter.nccl_tests import FilterModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.plan import (
    PlanError,
    arch_limits,
    build_plan,
    install_state,
    stamp_key,
)

SAMPLES = Path(__file__).resolve().parents[4] / "samples"
# The role's table (roles/nccl_tests/vars/main.yml), read so that a change there is tested too.
LIMITS = [
    {"cuda": "13.0", "min_sm": 75, "max_sm": 0},
    {"cuda": "12.9", "min_sm": 50, "max_sm": 121},
    {"cuda": "12.8", "min_sm": 50, "max_sm": 120},
    {"cuda": "12.0", "min_sm": 50, "max_sm": 90},
    {"cuda": "11.8", "min_sm": 35, "max_sm": 90},
    {"cuda": "11.1", "min_sm": 35, "max_sm": 86},
    {"cuda": "11.0", "min_sm": 35, "max_sm": 80},
    {"cuda": "0", "min_sm": 30, "max_sm": 75},
]
CUDA = {"found": True, "version": "12.4", "nvcc": "/usr/local/cuda/bin/nvcc", "home": "/usr/local/cuda", "hint": ""}
NCCL = {"found": True, "version": "2.21.5", "include_dir": "/usr/include", "library": "/usr/lib/libnccl.so.2",
        "hint": ""}
MPI = {"found": True, "home": "/usr/lib/x86_64-linux-gnu/openmpi", "hint": ""}
GPU = {"present": True, "sm": [80, 90], "reason": ""}


def settings(**over):
    base = {"version": "v2.19.6", "source": "git", "archive_checksum": "", "controller_path": "",
            "install_dir": "/opt/ncclkit/nccl-tests", "gencode": "", "ptx": True, "mpi": "auto",
            "required": False, "make_vars": [], "arch_limits": LIMITS, "playbook_dir": "/play", "host": "node1",
            "tmpdir": "/tmp"}
    base.update(over)
    return base


def plan(gpu=None, cuda=None, nccl=None, mpi_fact=None, **over):
    return build_plan(settings(**over), GPU if gpu is None else gpu, CUDA if cuda is None else cuda,
                      NCCL if nccl is None else nccl, MPI if mpi_fact is None else mpi_fact)


def test_role_table_is_the_one_tested():
    import yaml
    role_vars = yaml.safe_load((Path(__file__).resolve().parents[5] / "roles/nccl_tests/vars/main.yml").read_text())
    assert role_vars["_nccl_tests_cuda_arch_limits"] == LIMITS


def test_gencode_is_derived_from_every_capability_with_ptx_for_the_newest():
    assert plan()["gencode"] == ("-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 "
                                 "-gencode=arch=compute_90,code=compute_90")
    assert plan(ptx=False)["gencode"] == "-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90"


@pytest.mark.parametrize("false", [False, "false", "False", "no", "0", 0])
def test_booleans_given_as_strings_count_as_booleans(false):
    assert "code=compute_" not in plan(ptx=false)["gencode"]
    assert plan(gpu={"present": "false", "sm": [], "reason": "no driver"}, required=false)["problems"] == []


def test_a_bad_boolean_names_the_variable():
    with pytest.raises(AnsibleFilterError, match="nccl_tests_ptx must be true or false, not 'maybe'"):
        FilterModule().filters()["nccl_tests_build_plan"](settings(ptx="maybe"), GPU, CUDA, NCCL, MPI)


def test_a_given_gencode_is_kept_and_no_arch_problem_is_raised():
    got = plan(gencode="  -gencode=arch=compute_70,code=sm_70 ", gpu={"present": True, "sm": [70], "reason": ""},
               cuda=dict(CUDA, version="13.0"))
    assert got["gencode"] == "-gencode=arch=compute_70,code=sm_70"
    assert got["problems"] == []


def test_gpus_older_than_the_toolkit_builds_for_stop_the_build_with_the_fix():
    got = plan(gpu={"present": True, "sm": [60, 70, 80], "reason": ""}, cuda=dict(CUDA, version="13.0"))
    assert got["problems"] == [
        ("CUDA 13.0 (/usr/local/cuda/bin/nvcc) builds for sm_75 and newer, but the GPUs here are older "
         "(sm_60, sm_70): install an older CUDA toolkit that still supports them (CUDA 12.x builds sm_50 to sm_90, "
         "and from 12.8 sm_100/sm_120; CUDA 11.8 builds sm_35 to sm_90) and point nccl_preflight_cuda_home at it, "
         "or set nccl_tests_gencode yourself")]


def test_gpus_newer_than_the_toolkit_builds_for_stop_the_build():
    got = plan(gpu={"present": True, "sm": [90, 100], "reason": ""}, cuda=dict(CUDA, version="12.4"))
    assert len(got["problems"]) == 1
    assert got["problems"][0].startswith("CUDA 12.4 (/usr/local/cuda/bin/nvcc) builds up to sm_90, but the GPUs "
                                         "here are newer (sm_100)")


@pytest.mark.parametrize("version,row", [("13.1", "13.0"), ("12.10", "12.9"), ("12.8", "12.8"), ("12.4", "12.0"),
                                         ("11.8", "11.8"), ("10.2", "0"), ("", "0")])
def test_the_first_row_not_newer_than_the_toolkit_applies(version, row):
    assert arch_limits(LIMITS, dict(CUDA, version=version))["cuda"] == row
    assert arch_limits(LIMITS, dict(CUDA, found=False, version="13.0"))["cuda"] == "0"


def test_what_is_missing_on_a_gpu_host_is_listed_with_the_hints():
    got = plan(cuda={"found": False, "version": "", "nvcc": "", "hint": "install CUDA"},
               nccl={"found": False, "hint": "install NCCL"}, mpi_fact={"found": False, "hint": "no mpicc"},
               mpi="required")
    assert got["problems"] == ["install CUDA", "install NCCL", "nccl_tests_mpi is required but no mpicc"]
    assert got["mpi"] is False


@pytest.mark.parametrize("word", ["required", "true", True, "yes", "on", "1"])
def test_mpi_required_in_any_of_its_words_fails_without_mpi(word):
    got = plan(mpi_fact={"found": False, "hint": "no mpicc"}, mpi=word)
    assert got["problems"] == ["nccl_tests_mpi is required but no mpicc"] and got["mpi"] is False


@pytest.mark.parametrize("word", ["disabled", "false", False, "no", "off", "0"])
def test_mpi_disabled_in_any_of_its_words_builds_without_it(word):
    got = plan(mpi=word)
    assert got["mpi"] is False and got["problems"] == []


@pytest.mark.parametrize("word", ["auto", "AUTO"])
def test_mpi_auto_uses_mpi_where_found(word):
    assert plan(mpi=word)["mpi"] is True
    assert plan(mpi=word, mpi_fact={"found": False, "hint": "no mpicc"})["problems"] == []


def test_an_unknown_mpi_word_is_refused_naming_the_variable():
    with pytest.raises(PlanError, match="nccl_tests_mpi is 'sometimes'"):
        plan(mpi="sometimes")


def test_an_unreadable_nccl_version_is_a_problem():
    assert plan(nccl=dict(NCCL, version="2.21"))["problems"] == ["NCCL version unreadable from /usr/include/nccl.h"]


def test_a_host_without_gpu_builds_nothing_and_fails_only_when_required():
    no_gpu = {"present": False, "sm": [], "reason": "nvidia-smi not found"}
    got = plan(gpu=no_gpu, cuda={"found": False, "hint": "install CUDA"})
    assert got["build"] is False and got["problems"] == []
    required = plan(gpu=no_gpu, required="yes")["problems"]
    assert len(required) == 1 and required[0].startswith("no GPU (nvidia-smi not found) and nccl_tests_required")


def test_mpi_is_used_when_found_unless_disabled():
    assert plan()["mpi"] is True
    assert plan(mpi="disabled")["mpi"] is False
    assert plan(mpi_fact={"found": False, "hint": "x"})["mpi"] is False


def test_sources_tools_and_paths():
    git = plan()
    assert git["src_dir"] == "/opt/ncclkit/nccl-tests/src/git"
    assert git["needed_tools"] == ["make", "g++", "ldd", "git"]
    archive = plan(source="archive", archive_checksum="sha256:0123456789abcdef0123")
    assert archive["src_dir"] == "/opt/ncclkit/nccl-tests/src/archive-v2.19.6-0123456789ab"
    assert archive["needed_tools"] == ["make", "g++", "ldd", "tar", "gzip"]
    relative = plan(source="controller", controller_path="files/nccl-tests")
    assert relative["controller_path"] == "/play/files/nccl-tests"
    # the hashes as the role's Jinja made them (hash('sha1'))
    assert relative["src_dir"] == ("/opt/ncclkit/nccl-tests/src/controller-v2.19.6-"
                                   + get_hash("/play/files/nccl-tests")[:12])
    assert relative["packed"] == "/tmp/ncclkit-nccl-tests-{}.tar.gz".format(get_hash("/play/files/nccl-testsnode1"))
    assert plan(source="controller", controller_path="/src/x", tmpdir="")["packed"].startswith("/tmp/")
    assert plan(source="controller", controller_path="/src/x")["controller_path"] == "/src/x"
    assert plan(host="node2")["packed"] != plan(host="node1")["packed"]


def test_the_last_name_suffix_wins():
    assert plan(make_vars=["NAME_SUFFIX=_a", "CUDA_HOME=/x", "NAME_SUFFIX=_mpi"])["suffix"] == "_mpi"
    assert plan(make_vars=["CUDA_HOME=/x"])["suffix"] == ""


def stamp_settings(**over):
    base = {"version": "v2.19.6", "install_dir": "/opt/ncclkit/nccl-tests",
            "src_dir": "/opt/ncclkit/nccl-tests/src/git",
            "gencode": "-gencode=arch=compute_90,code=sm_90", "mpi": True, "suffix": "", "make_vars": [],
            "rpath": True, "binaries": ["all_reduce_perf"]}
    base.update(over)
    return base


def test_the_key_is_the_one_the_role_wrote_on_the_h200():
    stamp = json.loads((SAMPLES / "h200-nccl_tests-role-stamp.json").read_text())
    key = stamp.pop("key")
    assert stamp_key(stamp) == key


def test_the_h200_stamp_is_composed_again_from_its_inputs():
    recorded = json.loads((SAMPLES / "h200-nccl_tests-role-stamp.json").read_text())
    top = "/opt/ncclkit/nccl-tests"
    scan = [f"dir\t{top}/src/git", f"dir\t{top}/builds/{recorded['key']}", f"root\t{top}/src/git",
            f"tree\t{recorded['source_tree_sha256']}"]
    state = FilterModule().filters()["nccl_tests_install_state"](
        scan, stamp_settings(gencode=recorded["gencode"], mpi="true", rpath="yes", binaries=recorded["binaries"]),
        {"version": recorded["cuda_version"], "home": recorded["cuda_home"]},
        {"version": recorded["nccl_version"], "library": recorded["nccl_library"],
         "include_dir": recorded["nccl_include_dir"]},
        {"home": recorded["mpi_home"]})
    assert state["key"] == recorded.pop("key")
    assert state["stamp"] == recorded
    assert state["installed"] is True and state["has_source"] is True
    assert state["build_dir"] == f"{top}/builds/{state['key']}"
    assert state["dirs"] == [f"{top}/src/git", f"{top}/builds/{state['key']}"]


def test_any_input_change_makes_another_key_and_no_source_is_none():
    scan = ["tree\tabc"]
    keys = {install_state(scan, stamp_settings(**over), CUDA, NCCL, MPI)["key"]
            for over in ({}, {"gencode": "x"}, {"mpi": False}, {"rpath": False}, {"suffix": "_s"},
                         {"make_vars": ["A=1"]}, {"version": "v2.19.5"})}
    assert len(keys) == 7
    assert install_state(["tree\tdef"], stamp_settings(), CUDA, NCCL, MPI)["key"] not in keys
    bare = install_state(["tree\tnone"], stamp_settings(), CUDA, NCCL, MPI)
    assert bare["has_source"] is False and bare["installed"] is False
    assert bare["src_root"] == "/opt/ncclkit/nccl-tests/src/git"


def test_without_mpi_the_stamp_has_no_mpi_home_and_binaries_carry_the_suffix():
    state = install_state(["tree\tabc"], stamp_settings(mpi="false", suffix="_x",
                                                        binaries=["all_reduce_perf", "sendrecv_perf"]),
                          CUDA, NCCL, MPI)
    assert state["stamp"]["mpi"] is False and state["stamp"]["mpi_home"] == ""
    assert state["stamp"]["binaries"] == ["all_reduce_perf_x", "sendrecv_perf_x"]


def test_check_mode_says_what_it_would_do():
    bare = install_state(["tree\tnone"], stamp_settings(mpi=False), CUDA, NCCL, MPI)
    assert bare["check_mode_note"] == ("would fetch and build nccl-tests v2.19.6 (-gencode=arch=compute_90,code=sm_90, "
                                       "MPI=0, NCCL 2.21.5).")
    ready = install_state(["tree\tabc"], stamp_settings(), CUDA, NCCL, MPI)
    assert ready["check_mode_note"] == ("would build nccl-tests v2.19.6 (-gencode=arch=compute_90,code=sm_90, MPI=1, "
                                        "NCCL 2.21.5) as build {}.".format(ready["key"]))
