#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Read NCCL, Gloo and torch.distributed logs and say what is wrong, with a cause and a fix."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_diagnose
short_description: Diagnose NCCL, Gloo and torchrun logs
description:
  - Reads logs written with C(NCCL_DEBUG=INFO), C(WARN) or C(TRACE) (NCCL 2.12 to 2.30, with or
    without timestamps and C(mpirun --tag-output) labels), nccl-tests output, torch.distributed,
    torchrun, Gloo, Open MPI and Slurm errors, the kernel's OOM-killer lines, hang forensics
    (C(ncclkit-forensics:) lines, NCCL RAS reports in text or JSON) and PyTorch flight-recorder
    dumps (read without running any code from them).
  - The same engine as C(ncclkit diagnose); the first finding is the root cause (a killed rank, a
    hang in the rendezvous or in a collective, or the first error), and findings that follow from
    it carry its code in C(consequence_of). docs/diagnosis.md lists every code.
  - Returns, per host named in the log, the NICs NCCL chose for bootstrap and for its network
    transport, the transport, the NCCL versions and the NCCL variables it reports; and findings, each
    with a stable code, a severity, the host, the line that shows it, a cause and a fix.
  - Findings include a missing socket interface, refused or timed-out connections (with the peer
    address and port), NICs outside the cluster network, NCCL versions that differ between hosts,
    sockets used where InfiniBand or EFA was expected, missing InfiniBand libraries, remote ranks
    that exited, duplicate GPUs, nccl-tests failures, C(ncclInternalError), Gloo connection
    failures, rendezvous timeouts and collective timeouts.
  - Only reads; it changes nothing on the host. By default it never fails on findings (see O(fail_on)).
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
options:
  path:
    description:
      - Log file, or list of log files, on the managed host. Several files are read as one log
        (all ranks of one job), line by line whatever their size. An empty file is noted; all of
        them empty is an error.
      - Exactly one of O(path) and O(content) is required.
    type: list
    elements: path
  content:
    description:
      - The log text itself, for logs the controller already holds (up to 64 MiB). Never logged, as a log
        can hold tokens or keys from the environment.
    type: str
  cluster_cidr:
    description:
      - The cluster (private) network, for example C(10.0.0.0/16); several may be given separated by
        commas. A bootstrap or NET/Socket NIC whose address is outside it is reported as
        C(nic_outside_cluster).
    type: str
  cluster_ips:
    description:
      - The cluster addresses of the hosts (or networks in CIDR form). A NIC whose address is not
        among them is reported as C(nic_outside_cluster).
    type: list
    elements: str
  expected_transport:
    description:
      - The transport NCCL should use between hosts. With V(ib) or V(efa), NCCL falling back to
        sockets is an error and missing InfiniBand or EFA pieces become errors instead of info.
    type: str
    choices: [any, socket, ib, efa]
    default: any
  fail_on:
    description:
      - The severity of finding that fails the task. V(never) leaves the decision to the caller,
        which can read RV(findings).
    type: str
    choices: [error, warning, never]
    default: never
  default_host:
    description:
      - The host to report for log lines that name none (torch tracebacks, bare Gloo errors) when
        the log does not show which host wrote them. Without it such lines are reported for
        C(unknown), or for the only host the log names.
    type: str
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
notes:
  - On cloud hosts C(ncclInternalError) is almost always the network, not NCCL; the findings say which
    NIC NCCL used and which peer it could not reach.
seealso:
  - module: ncclkit.cluster.nccl_perf
  - module: ncclkit.cluster.nccl_cluster_nic
"""

EXAMPLES = r"""
- name: Diagnose the training log of each node
  ncclkit.cluster.nccl_diagnose:
    path: /var/log/train/rank0.log
    cluster_cidr: "{{ ncclkit_cluster_network }}"
  register: __nccl_validate_diagnosis

- name: Fail the play on errors, listing each cause and fix
  ansible.builtin.fail:
    msg: "{{ __nccl_validate_diagnosis.msg }}"
  when: __nccl_validate_diagnosis.findings | selectattr('severity', 'equalto', 'error') | list

- name: Diagnose all rank logs of a job at once and fail on errors
  ncclkit.cluster.nccl_diagnose:
    path:
      - /var/log/train/node0.log
      - /var/log/train/node1.log
    cluster_ips: "{{ ansible_play_hosts | map('extract', hostvars, 'ncclkit_cluster_ip') | list }}"
    expected_transport: efa
    fail_on: error

- name: Diagnose output the controller captured
  ncclkit.cluster.nccl_diagnose:
    content: "{{ __nccl_validate_run.stdout }}\n{{ __nccl_validate_run.stderr }}"
    default_host: "{{ inventory_hostname }}"
"""

RETURN = r"""
msg:
  description: >-
    One line per error finding that is a cause, C(host: cause -> fix), the first being the root cause,
    then one line counting the errors that follow from it; or a summary when there is no error.
  returned: always
  type: str
  sample: "node0: NCCL found no network interface to use ... -> set NCCL_SOCKET_IFNAME to the cluster NIC ..."
findings:
  description: What is wrong, most severe and most fundamental first; identical findings of a host appear once.
  returned: always
  type: list
  elements: dict
  contains:
    code:
      description: >-
        Stable identifier. Interfaces: C(no_socket_interface), C(nic_outside_cluster), C(loopback_nic),
        C(virtual_nic). Setup: C(nccl_version_mismatch), C(socket_instead_of_ib), C(socket_instead_of_efa),
        C(duplicate_gpu), C(address_in_use). Connections: C(connect_refused), C(connect_timeout),
        C(no_route), C(connect_failed), C(retry_exceeded), C(remote_exited). InfiniBand and EFA:
        C(ib_verbs_failed), C(ib_completion_error), C(ib_missing), C(ib_disabled), C(efa_missing).
        torch and Gloo: C(gloo_connect_failed), C(rendezvous_connection_error), C(rendezvous_timeout),
        C(collective_timeout), C(child_failed). The job: C(rank_exception) (a rank's own Python exception,
        quoted), C(cuda_oom), C(oom_killed), C(rank_killed), C(rank_failed), C(collective_desync),
        C(hang_in_collective), C(hang_in_rendezvous), C(incomplete_run), C(completion_unknown),
        C(launch_failed) (the launcher could not start the program on a host). Ranks and
        hosts that differ: C(runtime_version_mismatch), C(nccl_setting_mismatch). Containers and fabrics:
        C(shm_too_small), C(ib_gid_error), C(efa_av_insert_failed). NCCL and CUDA results: C(nccl_system_error),
        C(nccl_internal_error), C(cuda_not_initialized), C(cuda_error), C(test_nccl_failure),
        C(nccl_warning) (any other NCCL WARN line). nccl-tests' own check: C(max_wrong) (its wrong values).
      type: str
      sample: no_socket_interface
    severity:
      description: C(error), C(warning) or C(info).
      type: str
      sample: error
    host:
      description: The host the finding is about, as the log names it, or O(default_host) or C(unknown).
      type: str
      sample: node0
    rank:
      description: >-
        The rank the finding is about, when the log names it (a launcher label such as C([rank1]:), NCCL's
        init lines for its pid, torchrun's error report, or a file holding one rank's output).
      type: int
      sample: 1
    confidence:
      description: >-
        C(high) when the evidence names the cause, C(low) when it only points at it (the cause or fix then
        says what to collect next).
      type: str
      sample: high
    consequence_of:
      description: The code of the root-cause finding this one follows from, or null for a cause.
      type: str
      sample: rank_killed
    evidence:
      description: The log line that shows it (the first one when it repeats).
      type: str
      sample: "node0:2841:2841 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found"
    source:
      description: The file the line is in, or C(content).
      type: str
      sample: /var/log/train/rank0.log
    line:
      description: The line number of the evidence in its source.
      type: int
      sample: 9
    count:
      description: How many times the log shows it.
      type: int
      sample: 1
    cause:
      description: What it means.
      type: str
    fix:
      description: What to do about it.
      type: str
ansible_facts:
  description: The diagnosis as a fact.
  returned: always
  type: dict
  contains:
    nccl_diagnose:
      description: The whole diagnosis.
      type: dict
      contains:
        hosts:
          description: Per host named in the log.
          type: dict
          sample:
            node0:
              bootstrap_nics: [{name: eth1, address: 10.0.0.11}]
              net_nics: [{name: eth1, address: 10.0.0.11, kind: Socket}]
              transport: Socket
              nccl_versions: [2.28.9+cuda13.0]
              env: {NCCL_SOCKET_IFNAME: eth1}
              gpudirect_rdma: not in use
        findings:
          description: The same as RV(findings).
          type: list
          elements: dict
        nccl_versions:
          description: Every distinct NCCL version in the log.
          type: list
          elements: str
          sample: [2.28.9+cuda13.0]
        multi_node:
          description: Whether the log shows ranks on more than one node.
          type: bool
        lines:
          description: How many lines were read.
          type: int
        verdict:
          description: >-
            One line naming the root cause, C(HEALTHY) when there is no error, or C(NOTHING TO JUDGE) when
            no line of the input was recognised.
          type: str
        judged:
          description: Whether any line was recognised (false means nothing to judge, never healthy).
          type: bool
        notes:
          description: Remarks about the input, for example that it was not valid UTF-8.
          type: list
          elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import (
    TRANSPORTS,
    NcclLogError,
    read_nccl_log,
    read_nccl_log_files,
)

ARGUMENT_SPEC = {
    "path": {"type": "list", "elements": "path"},
    "content": {"type": "str", "no_log": True},
    "cluster_cidr": {"type": "str"},
    "cluster_ips": {"type": "list", "elements": "str"},
    "expected_transport": {"type": "str", "choices": list(TRANSPORTS), "default": "any"},
    "fail_on": {"type": "str", "choices": ["error", "warning", "never"], "default": "never"},
    "default_host": {"type": "str"},
}
FAILING = {"error": ("error",), "warning": ("error", "warning"), "never": ()}


def diagnose(params: dict) -> dict:
    options = {key: params[key] for key in ("cluster_cidr", "cluster_ips", "expected_transport", "default_host")}
    if params["path"] is not None:
        return read_nccl_log_files(params["path"], **options)
    return read_nccl_log(params["content"], **options)


def summary(result: dict) -> str:
    if result.get("judged") is False:
        return result["verdict"]
    errors = [f for f in result["findings"] if f["severity"] == "error"]
    causes = [f for f in errors if not f["consequence_of"]]
    if errors:
        lines = [f"{f['host']}: {f['cause']} -> {f['fix']}" for f in causes]
        following = [f["code"] for f in errors if f["consequence_of"]]
        if following:
            lines.append(f"{len(following)} later error(s) follow from {causes[0]['code']}: "
                         f"{', '.join(dict.fromkeys(following))}")
        return "\n".join(lines)
    counts = {severity: sum(f["severity"] == severity for f in result["findings"]) for severity in ("warning", "info")}
    hosts = list(result["hosts"])
    named = ", ".join(hosts) if len(hosts) <= 8 else f"{len(hosts)} ({', '.join(hosts[:3])}, ...)"
    return (f"no errors in {result['lines']} lines ({counts['warning']} warnings, {counts['info']} info); "
            f"hosts: {named or 'none named'}")


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=[("path", "content")],
        required_one_of=[("path", "content")],
        supports_check_mode=True,
    )
    try:
        result = diagnose(module.params)
    except NcclLogError as error:
        module.fail_json(msg=str(error))
    findings, msg = result["findings"], summary(result)
    facts = {"nccl_diagnose": result}
    if any(f["severity"] in FAILING[module.params["fail_on"]] for f in findings):
        module.fail_json(msg=msg, findings=findings, ansible_facts=facts)
    module.exit_json(changed=False, msg=msg, findings=findings, ansible_facts=facts)


if __name__ == "__main__":
    main()
