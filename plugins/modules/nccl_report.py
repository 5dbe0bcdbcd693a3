#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Write the nccl_validate report (report.md, report.json, report.html, raw outputs) atomically on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_report
short_description: Write the nccl_validate report folder atomically
description:
  - Builds the verdict of an nccl_validate run from its benchmark runs (the nccl_perf facts,
    exit codes, timeouts, nccl_diagnose findings) and the hosts' facts, and writes
    C(report.json), C(report.md) and C(report.html) (one self-contained page, nothing fetched)
    into O(parent)/O(name)/ beside the C(raw/) outputs.
  - The folder is built in a staging folder of its own, O(parent)/.O(name).<random>.partial/ (two
    runs in the same second never share one), and renamed into place in one step, so a report
    folder is always complete; a failed write leaves nothing behind. Folders are 0700 and files
    0600 - the raw outputs come from the hosts.
  - nccl-tests' C(-J) files record the launching process's whole environment; every C(env) list in
    them, at any depth, keeps only NCCL/CUDA/MPI names that do not look secret. O(state=redacted)
    does that on the host, before the file is fetched; O(state=written) does it again on the
    controller for any raw file in the staging folder.
  - Never fails because a check failed; it returns RV(passed) and RV(msg) so that the play can
    fail after the report exists.
  - V(staged) and V(written) are meant to run on the controller, with C(delegate_to) C(localhost)
    and C(run_once); V(redacted) on the host that ran the benchmark.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  parent:
    description:
      - The folder that holds the report folders, for example C(ncclkit-report). Give an
        absolute path - Ansible runs controller-side modules in the playbook's folder, so a
        relative one is relative to that (the nccl_validate role resolves it against C($PWD)).
      - Required for V(staged) and V(written).
    type: path
  name:
    description:
      - The report folder's name, a UTC timestamp such as C(20261202T090419Z). When that folder
        exists, C(-2), C(-3) ... is appended.
      - Required for V(staged) and V(written).
    type: str
  staging:
    description:
      - For V(written), the staging folder V(staged) returned in RV(staging) (it must be one
        made for O(name) in O(parent)); empty makes a new one.
    type: path
  paths:
    description:
      - For V(redacted), the C(-J) files to redact in place; a missing one is skipped.
    type: list
    elements: path
    default: []
  state:
    description:
      - V(staged) creates the staging folder and its C(raw/) subfolder, for the raw outputs to be
        fetched into, and returns its path in RV(staging).
      - V(written) writes the report and moves the staging folder into place.
      - V(redacted) rewrites O(paths) in place with their environment redacted.
      - Staging folders (C(.<timestamp>.<random>.partial)) untouched for a day, left by
        interrupted plays, are removed when a staging folder is created.
    type: str
    choices: [staged, written, redacted]
    default: written
  data:
    description:
      - What the role collected, for V(written) - C(hosts) (host -> record), C(runs) (run
        records), C(network) (host -> C(ncclkit_network)), C(settings) and C(notes); C(link_bandwidth)
        (a list of dicts) and C(autotune) (a dict) are carried into the report as given.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    details: In check mode nothing is written; RV(passed) and RV(msg) are still computed.
  diff_mode:
    support: none
notes:
  - The report is the play's output on the controller, not a change to the managed hosts, so the
    module reports C(changed=false) and a second run of a play stays at C(changed=0).
seealso:
  - module: ncclkit.cluster.nccl_perf
  - module: ncclkit.cluster.nccl_diagnose
"""

EXAMPLES = r"""
- name: Create the staging folder for the raw outputs
  ncclkit.cluster.nccl_report:
    parent: ncclkit-report
    name: "{{ nccl_validate_stamp }}"
    state: staged
  delegate_to: localhost
  run_once: true
  register: __nccl_validate_stage

- name: Write the report
  ncclkit.cluster.nccl_report:
    parent: ncclkit-report
    name: "{{ nccl_validate_stamp }}"
    staging: "{{ __nccl_validate_stage.staging }}"
    data:
      hosts: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'nccl_validate_host'))) }}"
      runs: "{{ ansible_play_hosts_all | map('extract', hostvars, 'nccl_validate_runs') | flatten }}"
  delegate_to: localhost
  run_once: true
  register: __nccl_validate_report

- name: Redact the -J file's environment before it leaves the host
  ncclkit.cluster.nccl_report:
    state: redacted
    paths: [/tmp/ncclkit-validate-x/single.json]
"""

RETURN = r"""
path:
  description: The report folder (absolute); empty in check mode and for O(state=staged).
  returned: always
  type: str
  sample: /home/me/ncclkit-report/20261202T090419Z
staging:
  description: The staging folder the raw outputs go into (absolute); empty in check mode.
  returned: always
  type: str
redacted:
  description: For O(state=redacted), the files that were rewritten.
  returned: always
  type: list
  elements: str
passed:
  description: Whether every check passed (true for O(state=staged)).
  returned: always
  type: bool
msg:
  description: The summary line, then one line per reason when a check failed, then the report's path.
  returned: always
  type: str
reasons:
  description: Why the validation failed, the cause first; empty when it passed.
  returned: always
  type: list
  elements: str
summary:
  description: One line saying the verdict and how many runs passed.
  returned: always
  type: str
  sample: "nccl_validate PASSED: 3 run(s), 3 passed"
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.report import (
    NcclReportError,
    build_report,
    redact_raw_file,
    stage,
    summary_line,
    write_report,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "parent": {"type": "path"},
            "name": {"type": "str"},
            "state": {"type": "str", "choices": ["staged", "written", "redacted"], "default": "written"},
            "staging": {"type": "path"},
            "paths": {"type": "list", "elements": "path", "default": []},
            "data": {"type": "dict", "default": {}},
        },
        required_if=[("state", "staged", ("parent", "name")), ("state", "written", ("parent", "name"))],
        supports_check_mode=True,
    )
    params = module.params
    result = {"changed": False, "path": "", "staging": params["staging"] or "", "passed": True, "reasons": [],
              "summary": "", "msg": "", "redacted": []}
    try:
        if params["state"] == "redacted":
            for path in params["paths"]:
                if os.path.isfile(path) and not module.check_mode:
                    redact_raw_file(path)
                    result["redacted"].append(path)
            result["msg"] = "redacted " + (", ".join(result["redacted"]) or "nothing")
        elif params["state"] == "staged":
            if not module.check_mode:
                result["staging"] = stage(params["parent"], params["name"])
            result["msg"] = "staging folder " + (result["staging"] or "(check mode: none)")
        else:
            report = build_report(params["data"])
            if not module.check_mode:
                result["path"] = write_report(params["parent"], params["name"], report, staging=params["staging"] or None)
                result["staging"] = ""
            result.update(passed=report["passed"], reasons=report["reasons"], summary=summary_line(report))
            result["msg"] = "\n".join([result["summary"]] + report["reasons"]
                                      + (["report: " + result["path"]] if result["path"] else []))
    except (NcclReportError, OSError) as error:
        module.fail_json(msg=str(error), **{key: result[key] for key in ("path", "staging")})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
