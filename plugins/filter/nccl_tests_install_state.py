"""The ncclkit.cluster.nccl_tests_install_state filter: the build's stamp and key, and whether it is installed."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_tests_install_state
short_description: Compose the nccl_tests build's stamp and key from a scan of the host
version_added: 0.3.0
author: ncclkit maintainers
description:
  - Reads the nccl_tests role's scan of the install folder (lines C(dir<TAB>path) for each build,
    source and leftover, C(root<TAB>path) for the source root, C(tree<TAB>sha256) or C(tree<TAB>none)
    when there is no source yet) and composes the stamp recorded in each build.
  - The key is the first 16 hex digits of the sha1 of the stamp as sorted JSON, so a change of any
    input - source tree, toolkit, NCCL, flags, MPI, make variables - makes a new build.
  - Booleans may be given as strings (C(true), C(no), ...), as the C(bool) filter reads them.
  - Runs on the controller; the logic is plugins/module_utils/nccl_tests/plan.py.
positional: settings, cuda, nccl, mpi
options:
  _input:
    description: The scan's lines.
    type: list
    elements: str
    required: true
  settings:
    description:
      - C(version), C(install_dir), C(src_dir), C(gencode), C(mpi) and C(suffix) (as
        P(ncclkit.cluster.nccl_tests_build_plan#filter) settled them), C(make_vars), C(rpath), C(binaries).
    type: dict
    required: true
  cuda:
    description: The C(ncclkit_cuda) fact (C(version), C(home)).
    type: dict
    required: true
  nccl:
    description: The C(ncclkit_nccl) fact (C(version), C(library), C(include_dir)).
    type: dict
    required: true
  mpi:
    description: The C(ncclkit_mpi) fact (C(home)).
    type: dict
    required: true
"""

EXAMPLES = r"""
_nccl_tests_state: >-
  {{ __nccl_tests_scan.stdout_lines | ncclkit.cluster.nccl_tests_install_state(_nccl_tests_stamp_settings,
     ncclkit_cuda, ncclkit_nccl, ncclkit_mpi) }}
# => {"has_source": true, "src_root": "/opt/ncclkit/nccl-tests/src/git", "stamp": {...},
#     "key": "0123456789abcdef", "build_dir": "/opt/ncclkit/nccl-tests/builds/0123456789abcdef",
#     "installed": false, "dirs": ["/opt/ncclkit/nccl-tests/src/git"],
#     "check_mode_note": "would build nccl-tests v2.19.6 (-gencode=..., MPI=1, NCCL 2.21.5) as build 0123456789abcdef."}
"""

RETURN = r"""
_value:
  description:
    - C(has_source) (the scan found a source tree), C(src_root), C(stamp), C(key), C(build_dir)
      (builds/<key>), C(installed) (that build exists), C(dirs) (every path the scan listed) and
      C(check_mode_note) (what a run in check mode would do, as a sentence).
  type: dict
"""

from ansible.errors import AnsibleFilterError
# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_tests_install_state(scan_lines, settings, cuda, nccl, mpi):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.plan import PlanError, install_state
    try:
        return install_state(list(scan_lines), dict(settings), cuda, nccl, mpi)
    except PlanError as error:
        raise AnsibleFilterError(f"nccl_tests: {error}") from None


class FilterModule:
    def filters(self):
        return {"nccl_tests_install_state": nccl_tests_install_state}
