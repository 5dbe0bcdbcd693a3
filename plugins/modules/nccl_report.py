#!/usr/bin/python
"""Write the nccl_validate report (report.md, report.json, raw outputs) atomically on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_report
short_description: Write the nccl_validate report folder atomically
description:
  - Builds the verdict of an nccl_validate run from its benchmark runs (the nccl_perf facts,
    exit codes, timeouts, nccl_diagnose findings) and the hosts' facts, and writes
    C(report.json) and C(report.md) into O(parent)/O(name)/ beside the C(raw/) outputs.
  - The folder is built as O(parent)/.O(name).partial/ and renamed into place in one step, so a
    report folder is always complete; a failed write leaves nothing behind.
  - Never fails because a check failed; it returns RV(passed) and RV(msg) so that the play can
    fail after the report exists.
  - Meant to run on the controller, with C(delegate_to) C(localhost) and C(run_once).
version_added: 0.1.0
author: ncclkit maintainers
options:
  parent:
    description:
      - The folder that holds the report folders, for example C(ncclkit-report). Give an
        absolute path - Ansible runs controller-side modules in the playbook's folder, so a
        relative one is relative to that (the nccl_validate role resolves it against C($PWD)).
    type: path
    required: true
  name:
    description:
      - The report folder's name, a UTC timestamp such as C(20261202T090419Z). When that folder
        exists, C(-2), C(-3) ... is appended.
    type: str
    required: true
  state:
    description:
      - V(staged) creates the staging folder and its C(raw/) subfolder, for the raw outputs to be
        fetched into, and returns its path in RV(staging).
      - V(written) writes the report and moves the staging folder into place.
      - Staging folders (C(.<timestamp>.partial)) untouched for a day, left by interrupted plays
        with unredacted raw outputs, are removed when a staging folder is created.
    type: str
    choices: [staged, written]
    default: written
  data:
    description:
      - What the role collected, for V(written) - C(hosts) (host -> record), C(runs) (run
        records), C(network) (host -> C(ncclkit_network)), C(settings) and C(notes).
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    details: In check mode nothing is written; RV(passed) and RV(msg) are still computed.
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
    data:
      hosts: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'nccl_validate_host'))) }}"
      runs: "{{ ansible_play_hosts_all | map('extract', hostvars, 'nccl_validate_runs') | flatten }}"
  delegate_to: localhost
  run_once: true
  register: __nccl_validate_report
"""

RETURN = r"""
path:
  description: The report folder (absolute); empty in check mode and for O(state=staged).
  returned: always
  type: str
  sample: /home/me/ncclkit-report/20261202T090419Z
staging:
  description: The staging folder the raw outputs go into (absolute).
  returned: always
  type: str
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_report import (
    NcclReportError,
    build_report,
    stage,
    staging_dir,
    summary_line,
    write_report,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "parent": {"type": "path", "required": True},
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["staged", "written"], "default": "written"},
            "data": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    params = module.params
    result = {"changed": False, "path": "", "staging": staging_dir(params["parent"], params["name"]),
              "passed": True, "reasons": [], "summary": "", "msg": ""}
    try:
        if params["state"] == "staged":
            if not module.check_mode:
                result["staging"] = stage(params["parent"], params["name"])
            result["msg"] = "staging folder " + result["staging"]
        else:
            report = build_report(params["data"])
            if not module.check_mode:
                result["path"] = write_report(params["parent"], params["name"], report)
            result.update(passed=report["passed"], reasons=report["reasons"], summary=summary_line(report))
            result["msg"] = "\n".join([result["summary"]] + report["reasons"]
                                      + (["report: " + result["path"]] if result["path"] else []))
    except NcclReportError as error:
        module.fail_json(msg=str(error), **{key: result[key] for key in ("path", "staging")})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
