"""Which lab index each user of a lab cluster takes: one table, so that two test modules never
bring up (and tear down) the same lab under each other. A module takes its index with
`INDEX = lab_index(__file__)`; tests/static/test_lab_indices.py fails on a shared index, a literal
index in a test, or a module missing here. A new test takes an index not listed (0 to
ncclkit.lab.plan.MAX_INDEX).
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Path from the repository root (or what runs the lab, for users outside tests/) -> its indices.
LAB_INDICES: dict[str, tuple[int, ...]] = {
    "Makefile (make demo; `ncclkit lab up` without --index)": (0,),
    "molecule/default/molecule.yml": (1,),
    "molecule/network/molecule.yml": (2,),
    "tests/lab/test_network_lab.py": (20,),
    "tests/lab/test_network_backends.py": (21,),
    # test_profile_lab.py and test_validate_gloo_lab.py share the lab this conftest brings up.
    "tests/lab/test_link_bandwidth_lab.py": (30,),
    "tests/roles/nccl_profile/conftest.py": (40,),
    "tests/roles/nccl_validate/test_autotune_lab.py": (50,),
    "tests/roles/nccl_validate/test_find_slow_lab.py": (45,),
    "benchmarks/find_slow.py (as docs/benchmarks.md runs it: 4 and 8 nodes)": (46, 47),
    "tests/roles/nccl_validate/test_validate_role.py": (60,),
    "tests/roles/nccl_validate/test_gates_lab.py": (36,),
    "tests/lab/test_launch_lab.py": (71,),
    "benchmarks/launch_goals.py (as docs/benchmarks.md runs it: 2 and 16 nodes)": (72, 73),
    "tests/roles/nccl_tests/test_nccl_tests_lab.py": (80,),
    "tests/lab/test_lab_cluster.py": (90,),
    "tests/lab/test_lab_lifecycle.py": (91,),
    "tests/lab/test_lab_scale.py": (92,),
    "tests/roles/cloud_aws/test_aws_lab.py": (100,),
    "tests/roles/cloud_aws/test_efa.py": (101,),
    "tests/roles/cloud_aws/test_aws_check_lab.py": (102,),
    "tests/roles/cloud_autodl/test_autodl_lab.py": (120,),
    "tests/roles/cloud_alibaba/test_mtu_lab.py": (130,),
    "tests/lab/test_converged_repair_lab.py": (132,),
    "benchmarks/site_scale.py (as docs/benchmarks.md runs it: this code and the baseline)": (140, 141),
    "ncclkit check's lab work (kept for its next tests)": (150, 153),
    "tests/lab/test_check_lab.py": (151,),
    "benchmarks/check_speed.py (as docs/benchmarks.md runs it)": (152,),
    "tests/lab/test_network_hardening_lab.py": (170,),
    "tests/roles/nccl_tests/test_system_dir_lab.py": (175,),
    "tests/lab/test_fault_lab.py": (61,),
    "benchmarks/fault_matrix.py (the fault matrix, as docs/diagnosis.md runs it)": (62,),
    "tests/samples/SOURCES.md (recording lab-site-2node-report.json)": (190,),
}


def lab_index(module_file: str) -> int:
    """The index allocated above to the test module at `module_file` (pass `__file__`)."""
    key = Path(module_file).resolve().relative_to(REPO_ROOT).as_posix()
    if key not in LAB_INDICES:
        raise KeyError(f"{key} has no lab index: add it to tests/lab_indices.py with a free index")
    return LAB_INDICES[key][0]
