# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters of nccl_validate's autotune (and nccl_profile's reading of its result) over
module_utils/validate/autotune.py: the grid, the hardware fingerprint, the record kept on each host
and reading it back."""

from __future__ import annotations

import base64

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_autotune_grid(transport, socket_grid=True, common=True, algo_proto=True, ib_grid=False):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import grid
    return grid(transport, boolean(socket_grid, strict=False), boolean(common, strict=False),
                boolean(algo_proto, strict=False), boolean(ib_grid, strict=False))


def nccl_autotune_fingerprint(host):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import fingerprint
    return fingerprint(dict(host))


def nccl_autotune_kept(kept, hardware):
    """read_record of the file's text (None or "" when there is none), or of a slurp result (its
    base64 `content`)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import read_record
    if kept is None or isinstance(kept, str):
        return read_record(kept or "", dict(hardware))
    content = (kept or {}).get("content") or ""
    try:
        text = base64.b64decode(content).decode("utf-8", "replace")
    except (ValueError, TypeError):
        text = "not base64"
    return read_record(text, dict(hardware))


def nccl_autotune_plan(kept_by_host, env_by_host, force, multi_run):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import plan
    return plan(dict(kept_by_host), dict(env_by_host or {}), boolean(force, strict=False), multi_run)


def nccl_autotune_record(hardware, decision, tuning, remeasure=None):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import record
    return record(dict(hardware), dict(decision), dict(tuning or {}), remeasure)


def nccl_autotune_host(facts, nodes=0, env=None):
    """{path, hardware}: where the host keeps the autotune result, and the hardware it holds for."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune import RECORD_PATH, host_hardware
    return {"path": RECORD_PATH, "hardware": host_hardware(facts or {}, int(nodes), dict(env or {}))}


def nccl_autotune_outcome(measured, again, candidates, context):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.autotune_outcome import (
        OutcomeError,
        outcome,
    )
    try:
        return outcome(dict(measured or {}), dict(again or {}), list(candidates), dict(context))
    except OutcomeError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    def filters(self):
        return {
            "nccl_autotune_grid": nccl_autotune_grid,
            "nccl_autotune_fingerprint": nccl_autotune_fingerprint,
            "nccl_autotune_kept": nccl_autotune_kept,
            "nccl_autotune_plan": nccl_autotune_plan,
            "nccl_autotune_record": nccl_autotune_record,
            "nccl_autotune_host": nccl_autotune_host,
            "nccl_autotune_outcome": nccl_autotune_outcome,
        }
