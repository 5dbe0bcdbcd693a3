#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Read nccl-tests output into facts and gate it on bandwidth, correctness and rank count."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_perf
short_description: Read nccl-tests output into facts and gate it
description:
  - Parses the output of an NVIDIA nccl-tests benchmark (C(all_reduce_perf) and the others) into
    the C(nccl_perf) fact - the text printed on stdout, of any layout since nccl-tests 2.0, or
    the file written by its C(-J) option.
  - Tolerates launcher prefixes (C(mpirun --tag-output), C(--timestamp-output), C(srun --label)),
    NCCL INFO/WARN lines and MPI messages anywhere, and files holding several runs.
  - A run that died (no C(Avg bus bandwidth) footer, or a C(Test NCCL failure),
    C(Test CUDA failure) or C(Test failure) line) is incomplete, never a pass.
  - Fails when a gate fails, with the measured numbers in the message; the facts are still in
    the result. Parse errors fail with the cause and the fix, never a traceback.
  - Only reads; it changes nothing on the host.
version_added: 0.1.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  path:
    description:
      - A file on the managed host holding nccl-tests output (text or C(-J) JSON).
      - Files over O(max_size_mib) are refused without being read. Text is read a chunk at a time,
        so memory stays bounded whatever the length of the output (a million rows take under 200 MB).
      - Mutually exclusive with O(content); one of them is required.
    type: path
  max_size_mib:
    description:
      - Largest O(path) file read, in MiB; a run of a million rows prints about 110 MiB.
      - A C(-J) JSON file is one document and is read whole, so its memory grows with its size.
      - O(content) is limited to 64 MiB whatever this says (it is already in memory).
    type: int
    default: 64
  content:
    description:
      - nccl-tests output given directly, for example the C(stdout) of a registered command.
      - Never echoed back in the result (C(no_log)), since a C(-J) file records the run's whole
        environment, credentials included.
      - Mutually exclusive with O(path).
    type: str
  min_busbw_gbps:
    description:
      - Lowest acceptable out-of-place bus bandwidth, in GB/s.
      - Applied to every row whose size is at least O(gate_min_size_bytes); the lowest of them is
        compared.
      - One rank always measures busbw 0; gate a run across ranks.
    type: float
  gate_min_size_bytes:
    description:
      - Smallest message size, in bytes, that O(min_busbw_gbps) applies to.
      - Default is the largest size the run measured, where bandwidth has converged.
    type: int
  max_wrong:
    description:
      - Most wrong elements (the C(#wrong) columns, both halves, all rows) allowed.
      - For layouts before nccl-tests 2.13, which print a relative error instead, the number of
        rows counted C(Out of bounds) is compared.
      - A run with C(-c 0) checks nothing; it passes this gate and the message says so.
    type: int
    default: 0
  expected_ranks:
    description:
      - Number of ranks (device lines) the run must have, for example nodes times GPUs per node.
      - Catches a launch that ran on fewer hosts than intended, or an nccl-tests built without
        C(MPI=1) whose ranks each ran alone.
    type: int
  require_complete:
    description:
      - Fail when the run is incomplete (died, or its output was cut short).
      - An error line in the output (C(Test NCCL failure), C(Test CUDA failure), C(NCCL WARN), a
        launcher's abort) fails the run whatever this says (the C(no_error_lines) gate).
    type: bool
    default: true
  run_index:
    description:
      - Which run to report and gate when the output holds several (one per test or launch, in
        order); negative values count from the end.
      - Every run is listed, with its own verdict, in RV(ansible_facts.nccl_perf.runs).
    type: int
    default: 0
  fail_on_gates:
    description:
      - Fail the task when a gate fails. With V(false) the task succeeds and sets the facts,
        with RV(ansible_facts.nccl_perf.passed) false, so a later task can write a report
        before failing.
      - Parse errors fail the task either way.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details: The module only reads, so it runs fully in check mode.
  diff_mode:
    support: none
notes:
  - Bandwidths are the GB/s nccl-tests prints (10^9 bytes per second), sizes are bytes.
  - From C(-J) JSON only an allow-list of the recorded environment is returned (C(NCCL_*),
    C(CUDA_*), C(NVIDIA_*), C(OMPI_MCA_*btl*)/C(*oob*), C(UCX_TLS), C(FI_PROVIDER),
    C(TORCH_NCCL_*) and a few more); the rest, credentials included, is dropped.
  - Ansible does not set facts from a failed task; read them from the registered result
    (C(result.ansible_facts.nccl_perf)) or use O(fail_on_gates=false).
"""

EXAMPLES = r"""
- name: Run all_reduce_perf across the nodes
  ansible.builtin.command:
    cmd: >-
      mpirun -np 16 -H node1:8,node2:8 -x NCCL_SOCKET_IFNAME=eth1
      /opt/nccl-tests/build/all_reduce_perf -b 8 -e 1G -f 2 -g 1
  register: __nccl_validate_all_reduce
  changed_when: false
  failed_when: false

- name: Gate the run on bandwidth, correctness and rank count
  ncclkit.cluster.nccl_perf:
    content: "{{ __nccl_validate_all_reduce.stdout }}"
    min_busbw_gbps: 2.5
    expected_ranks: 16

- name: Read a -J JSON file on the host, reporting instead of failing
  ncclkit.cluster.nccl_perf:
    path: /var/lib/ncclkit/all_reduce_perf.json
    min_busbw_gbps: 40
    gate_min_size_bytes: 67108864
    fail_on_gates: false

- name: Show the measured bandwidth
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.nccl_perf.peak_busbw_gbps }} GB/s peak at
      {{ ansible_facts.nccl_perf.peak_busbw_size_bytes }} B on {{ ansible_facts.nccl_perf.hosts | join(', ') }}
"""

RETURN = r"""
ansible_facts:
  description: The chosen run, its gates, and a summary of every run in the output.
  returned: always, also when a gate fails (parse errors return no facts)
  type: dict
  contains:
    nccl_perf:
      description: One nccl-tests run (the one O(run_index) selects) with its verdict.
      type: dict
      contains:
        source:
          description: C(text) or C(json), the kind of output read.
          type: str
          sample: text
        collective:
          description: The benchmark, from the C(Collective test starting) line or the command; C(_mpi) suffix dropped.
          type: str
          sample: all_reduce_perf
        nccl_tests_version:
          description: nccl-tests version (printed since 2.17); null when not printed.
          type: str
          sample: 2.19.6
        nccl_version:
          description: NCCL library version, from C(nccl-library=), the JSON C(nccl_version) or a C(NCCL version) log line.
          type: str
          sample: 2.28.9
        ranks:
          description: Number of ranks (device lines); null when the output lists none.
          type: int
          sample: 2
        hosts:
          description: Distinct host names of the ranks, sorted.
          type: list
          elements: str
          sample: [node0, node1]
        devices:
          description: One entry per rank with C(rank), C(group), C(pid), C(host), C(device), C(bus_id), C(name).
          type: list
          elements: dict
          sample: [{rank: 0, group: 0, pid: 1495, host: node0, device: 0, bus_id: "0000:00:06", name: NVIDIA H200}]
        rows:
          description:
            - One entry per result row with C(size_bytes), C(count), C(type), C(redop), C(root) and the
              C(out_of_place) and C(in_place) halves, each C(time_us), C(algbw_gbps), C(busbw_gbps),
              C(wrong) (elements; null when unchecked or before 2.13) and C(error) (relative error of layouts before 2.13).
            - C(redop) and C(root) are null when the layout has no such column.
            - At most the first 10000 rows of the output (all runs together), so that a long output
              (C(-N) cycles, C(-i) steps) does not flood the facts; RV(ansible_facts.nccl_perf.row_count)
              counts them all, and the figures and gates below read every row.
          type: list
          elements: dict
        row_count:
          description:
            - Number of result rows of the run; more than the length of RV(ansible_facts.nccl_perf.rows) when those were cut.
          type: int
          sample: 32
        peak_busbw_gbps:
          description: Highest out-of-place bus bandwidth of the run.
          type: float
          sample: 3.29
        peak_busbw_size_bytes:
          description: Message size of RV(ansible_facts.nccl_perf.peak_busbw_gbps).
          type: int
          sample: 67108864
        largest_size_bytes:
          description: Largest message size measured.
          type: int
          sample: 536870912
        largest_size_busbw_gbps:
          description: Out-of-place bus bandwidth at the largest size (the lowest, when several cycles or types repeat it).
          type: float
          sample: 2.99
        avg_busbw_gbps:
          description: The C(Avg bus bandwidth) nccl-tests printed; null when the run died before it.
          type: float
          sample: 2.91222
        avg_busbw_ok:
          description: nccl-tests' own verdict on the average (C(-G) check); null when not checked.
          type: bool
        wrong_total:
          description: Sum of the C(#wrong) columns; null when unchecked (C(-c 0)) or the layout has none.
          type: int
          sample: 0
        data_checked:
          description: Whether nccl-tests checked the results (false under C(-c 0)); null without rows.
          type: bool
          sample: true
        out_of_bounds:
          description: The C(Out of bounds values) footer, C(count) and C(ok).
          type: dict
          sample: {count: 0, ok: true}
        complete:
          description: The run printed its footer and no failure line.
          type: bool
          sample: true
        errors:
          description: Failure lines of the run (C(Test NCCL failure), MPI aborts, C(# error:)).
          type: list
          elements: str
        warnings:
          description:
            - NCCL WARN lines seen with the run, and ncclkit's notes on it (ranks loading different NCCL
              versions, an nccl-tests built without C(MPI=1) whose ranks each ran alone).
          type: list
          elements: str
        env:
          description: Allow-listed environment from a C(-J) file (C(NCCL_*), C(CUDA_*), ...); empty for text.
          type: dict
          sample: {NCCL_DEBUG: WARN}
        args:
          description: The benchmark's command line, from the JSON or a command line in the text; null when absent.
          type: list
          elements: str
          sample: [./build/all_reduce_perf, -b, "8", -e, 1G]
        config:
          description: The run's settings (C(nthreads), C(ngpus), C(min_bytes), C(max_bytes), C(step_factor), C(iters), C(validation), ...).
          type: dict
          sample: {nthreads: 1, ngpus: 1, min_bytes: 8, max_bytes: 1073741824, iters: 20, validation: 1}
        json_version:
          description: Schema version of a C(-J) file (1 to 3); null for text.
          type: int
          sample: 3
        start_time:
          description: When a C(-J) run started, as nccl-tests wrote it; null for text.
          type: str
          sample: "2026-12-02 09:04:19"
        end_time:
          description: When a C(-J) run ended; null for text.
          type: str
          sample: "2026-12-02 09:04:20"
        gates:
          description: Each gate applied, with C(name), C(limit), C(measured), C(passed) and C(message).
          type: list
          elements: dict
          sample:
            - name: min_busbw_gbps
              limit: 2.5
              measured: 2.99
              passed: true
              message: busbw 2.99 GB/s at 536870912 B meets min_busbw_gbps 2.5
        passed:
          description: Every gate passed.
          type: bool
          sample: true
        run_index:
          description: Index of the reported run.
          type: int
          sample: 0
        run_count:
          description: Number of runs in the output.
          type: int
          sample: 1
        runs:
          description:
            - One summary per run in the output, with C(index), C(collective), C(nccl_version), C(ranks), C(hosts),
              C(complete), the bandwidth figures, C(wrong_total), C(passed) (the same gates applied to that run)
              and C(failures) (messages of its failed gates).
          type: list
          elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import (
    NcclTestsParseError,
    failure_message,
    parse,
    parse_file,
    summarize,
)

_GATE_OPTIONS = ("min_busbw_gbps", "gate_min_size_bytes", "max_wrong", "expected_ranks", "require_complete")


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path"},
            "content": {"type": "str", "no_log": True},
            "min_busbw_gbps": {"type": "float"},
            "gate_min_size_bytes": {"type": "int"},
            "max_wrong": {"type": "int", "default": 0},
            "expected_ranks": {"type": "int"},
            "require_complete": {"type": "bool", "default": True},
            "run_index": {"type": "int", "default": 0},
            "fail_on_gates": {"type": "bool", "default": True},
            "max_size_mib": {"type": "int", "default": 64},
        },
        mutually_exclusive=[("path", "content")],
        required_one_of=[("path", "content")],
        supports_check_mode=True,
    )
    params = module.params
    try:
        runs = _read_runs(module)
        facts = summarize(runs, run_index=params["run_index"],
                          **{name: params[name] for name in _GATE_OPTIONS})
    except NcclTestsParseError as error:
        module.fail_json(msg=str(error))
    for line in _warnings(facts):
        module.warn(line)
    result = {"changed": False, "ansible_facts": {"nccl_perf": facts}}
    if not facts["passed"] and params["fail_on_gates"]:
        module.fail_json(msg=failure_message(facts), **result)
    module.exit_json(**result)


def _read_runs(module):
    path = module.params["path"]
    if path is None:
        return parse(module.params["content"])
    if not os.path.exists(path):
        module.fail_json(msg="nccl-tests output {0} does not exist on this host; run the benchmark "
                             "first (its stdout or -J file) or pass the output as content".format(path))
    if os.path.isdir(path):
        module.fail_json(msg="{0} is a directory; path must name the nccl-tests output file".format(path))
    max_size_mib = module.params["max_size_mib"]
    if max_size_mib < 1:
        module.fail_json(msg="max_size_mib is {0}; give a size of 1 MiB or more".format(max_size_mib))
    return parse_file(path, max_bytes=max_size_mib * 1024 * 1024)


def _warnings(facts):
    if facts["data_checked"] is False:
        yield ("nccl-tests did not check its results (-c 0): wrong elements are unknown; "
               "run with -c 1 to validate the data")
    if facts["ranks"] == 1:
        yield "the run has one rank, so busbw is 0 by definition and nothing crossed the network"


if __name__ == "__main__":
    main()
