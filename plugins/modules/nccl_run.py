#!/usr/bin/python
# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Run a benchmark with a deadline, taking the hang's evidence before killing it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_run
short_description: Run a benchmark with a deadline and take a hang's evidence before killing it
description:
  - Starts a command (an nccl-tests binary under its launcher, or C(ncclkit-torchrun)) with its
    output in files, and waits at most O(timeout_s) seconds.
  - When the deadline passes, it first records the evidence of the hang, then stops the whole
    process tree (TERM, then KILL after O(kill_after_s)). The evidence is, for every process that
    carries a rank (C(RANK), C(OMPI_COMM_WORLD_RANK), C(PMI_RANK)), its state (running, sleeping,
    stopped) and kernel wait channel, its Python stack where C(py-spy) is installed, and NCCL's
    RAS report (NCCL 2.24 and later, 127.0.0.1:O(ras_port)), which covers the ranks of other hosts
    too. The lines start with C(ncclkit-forensics:) and are appended to O(stderr) so that
    C(ncclkit diagnose) reads them with the log.
  - The return code follows coreutils C(timeout) - 124 when TERM stopped the run, 137 when KILL
    was needed - so that a report tells a hang from a crash.
  - Never changes anything but the two output files.
version_added: 0.2.0
author: ncclkit maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ncclkit.cluster.attributes
options:
  argv:
    description: The command and its arguments; run without a shell.
    type: list
    elements: str
    required: true
  env:
    description:
      - Variables added to the environment of the command (the NCCL profile, already in the
        C(ncclkit_nccl_env) fact, and the run's own logging settings).
      - Not marked C(no_log) on purpose - Ansible would then mask every occurrence of each value in
        the result, and a value such as C(1) would blank the return code. Keep credentials out of
        it (they have no place in a benchmark's environment).
    type: dict
    default: {}
  chdir:
    description: Folder to run the command in.
    type: path
  stdout:
    description: File that receives the command's standard output (created 0600, truncated).
    type: path
    required: true
  stderr:
    description: File that receives its standard error and the evidence of a hang (created 0600).
    type: path
    required: true
  timeout_s:
    description: Seconds the command may run.
    type: float
    required: true
  kill_after_s:
    description: Seconds between TERM and KILL when the deadline passed.
    type: float
    default: 10
  forensics:
    description: Take the evidence of a hang before stopping it.
    type: bool
    default: true
  ras_port:
    description: Port of NCCL's RAS service (C(NCCL_RAS_ADDR) moves it).
    type: int
    default: 28028
  ras_wait_s:
    description: Seconds to retry the RAS port while the job's first communicator is not up yet.
    type: float
    default: 5
  tail_lines:
    description: Lines at the end of O(stderr) returned in RV(stderr_lines).
    type: int
    default: 20
notes:
  - In check mode nothing runs; the result says what would.
attributes:
  check_mode:
    support: full
    details: In check mode nothing runs; the result says what would have.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Run all_reduce_perf for at most 5 minutes, with the evidence of a hang
  ncclkit.cluster.nccl_run:
    argv: [/opt/ncclkit/bin/ncclkit-mpirun, /opt/nccl-tests/build/all_reduce_perf, -b, 8, -e, 1G]
    env:
      NCCL_DEBUG: INFO
    stdout: /tmp/multi.txt
    stderr: /tmp/multi.stderr.txt
    timeout_s: 300
"""

RETURN = r"""
rc:
  description: The command's exit code; 124 or 137 when the deadline stopped it.
  returned: when run
  type: int
timed_out:
  description: Whether the deadline passed.
  returned: when run
  type: bool
duration_s:
  description: Seconds from start to end, the stop included.
  returned: when run
  type: float
forensics:
  description: The evidence lines taken before the stop (empty when it ended by itself).
  returned: when run
  type: list
  elements: str
stderr_lines:
  description: The last O(tail_lines) lines of O(stderr), the evidence included.
  returned: when run
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.bounded_run import BoundedRunError, run_bounded


def _tail(path, count):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 65536))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    return lines[-count:] if count > 0 else []


def main():
    module = AnsibleModule(
        argument_spec=dict(
            argv=dict(type="list", elements="str", required=True),
            env=dict(type="dict", default={}),
            chdir=dict(type="path"),
            stdout=dict(type="path", required=True),
            stderr=dict(type="path", required=True),
            timeout_s=dict(type="float", required=True),
            kill_after_s=dict(type="float", default=10.0),
            forensics=dict(type="bool", default=True),
            ras_port=dict(type="int", default=28028),
            ras_wait_s=dict(type="float", default=5.0),
            tail_lines=dict(type="int", default=20),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not params["argv"]:
        module.fail_json(msg="nccl_run: argv is empty: give the command to run")
    if params["timeout_s"] <= 0 or params["kill_after_s"] < 0:
        module.fail_json(msg="nccl_run: timeout_s must be above 0 and kill_after_s at least 0 (got {0} and {1})"
                         .format(params["timeout_s"], params["kill_after_s"]))
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode: would run " + " ".join(params["argv"]))

    env = dict(os.environ, **{str(k): str(v) for k, v in params["env"].items()})
    try:
        result = run_bounded(params["argv"], params["stdout"], params["stderr"], params["timeout_s"],
                             params["kill_after_s"], env, params["chdir"], params["forensics"],
                             params["ras_port"], params["ras_wait_s"])
    except BoundedRunError as error:
        module.fail_json(msg="nccl_run: {0}".format(error))
    module.exit_json(changed=False, stderr_lines=_tail(params["stderr"], params["tail_lines"]), **result)


if __name__ == "__main__":
    main()
