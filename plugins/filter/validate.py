# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""Filters of nccl_validate over module_utils/validate: the runs (argv, why one cannot start, its
record, whether to diagnose it), the gates, the node-local NET test, the Gloo run's outcome and the
slow-node search."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# The module_utils are imported inside the filters, not here: Ansible imports every filter file of
# the collection in each worker that calls any of them (about 0.09 s CPU a worker, docs/benchmarks.md).


def nccl_validate_argv(launcher, binary, sizes, gpus_per_process, json_file, json=False):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run import benchmark_argv
    return benchmark_argv(list(launcher or []), binary, dict(sizes), gpus_per_process, json_file, json)


def nccl_validate_not_run_reason(stat_results, host_view, run_name, launcher, host):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run import not_run_reason
    return not_run_reason(list(stat_results or []), host_view, run_name, list(launcher or []), host)


def nccl_validate_needs_diagnosis(run, perf, expected_transport):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run import needs_diagnosis
    return needs_diagnosis(run, perf, expected_transport)


def nccl_validate_run_record(run, context, perf, diagnosis, fetched):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run import run_record
    return run_record(run, dict(context), perf, diagnosis, fetched)


def nccl_validate_gates(settings, ports_by_host, network_facts):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.gates import GateError, plan_gates
    try:
        return plan_gates(dict(settings or {}), dict(ports_by_host or {}), list(network_facts or []))
    except GateError as error:
        raise AnsibleFilterError(str(error)) from error


def nccl_net_loopback_plan(mpi, gpus, env_names, ifname=""):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate import loopback as nccl_net_loopback
    try:
        return nccl_net_loopback.plan(mpi if isinstance(mpi, dict) else {}, gpus, list(env_names or []), ifname or "")
    except ValueError as exc:
        raise AnsibleFilterError("nccl_net_loopback_plan: {0}".format(exc)) from exc


def nccl_mpmd_argv(argv, launcher_len, prefixes):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate import loopback as nccl_net_loopback
    try:
        return nccl_net_loopback.mpmd_argv(argv, launcher_len, prefixes or [])
    except ValueError as exc:
        raise AnsibleFilterError("nccl_mpmd_argv: {0}".format(exc)) from exc


def combined_run(results, hosts):
    outcome = {"rc": 0, "timed_out": False, "duration_s": 0.0, "forensics": [], "stderr_tail": []}
    first_failed = None
    for host, result in zip(hosts, results):
        result = result if isinstance(result, dict) else {}
        rc = result.get("rc", -1) if isinstance(result.get("rc", -1), int) else -1
        outcome["duration_s"] = max(outcome["duration_s"], float(result.get("duration_s") or 0))
        outcome["forensics"].extend(result.get("forensics") or [])
        if result.get("timed_out"):
            # KILL anywhere means TERM was not enough somewhere: the stronger code wins.
            outcome["rc"] = max(outcome["rc"], rc) if outcome["timed_out"] else rc
            outcome["timed_out"] = True
        elif rc != 0 and not outcome["timed_out"] and outcome["rc"] == 0:
            outcome["rc"] = rc
        if rc != 0 and first_failed is None:
            first_failed = host
            tail = result.get("stderr_lines") or ([result["msg"]] if result.get("msg") else [])
            outcome["stderr_tail"] = ["{0}: {1}".format(host, line) for line in tail]
    return outcome


def pair_rounds_plan(hosts, rounds=3):
    """[[[server, client], ...], ...]: the whole plan (for the report, made once)."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import plan_rounds
    return plan_rounds(hosts, int(rounds))


def pair_rounds_roles(hosts, host, rounds=3):
    """[{'role', 'peer'}, ...]: `host`'s own part of the plan, one entry per round."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import host_roles
    return host_roles(hosts, host, int(rounds))


def pair_blame(results, fraction=0.5, floor=0.0):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import blame
    return blame(results, float(fraction), float(floor))


def find_slow_decision(runs, setting, host_count):
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import TristateError
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.pair_rounds import find_slow_wanted
    try:
        wanted, why = find_slow_wanted(setting, runs, int(host_count))
    except TristateError as error:
        raise AnsibleFilterError(str(error)) from None
    return {"run": wanted, "why": why}


def nccl_validate_run_plan(hosts, hostvars, settings):
    """nccl_validate_plan (without its stamp) from every host's nccl_validate_host and ncclkit_launch."""
    from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import TristateError
    from ansible_collections.ncclkit.cluster.plugins.module_utils.validate.run_plan import run_plan
    hosts = list(hosts)
    gpus = {host: (hostvars[host].get("nccl_validate_host") or {}).get("gpus", 0) for host in hosts}
    launchers = {host: (hostvars[host].get("ncclkit_launch") or {}).get("mpirun", "") for host in hosts}
    try:
        return run_plan(hosts, gpus, launchers, dict(settings))
    except TristateError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    def filters(self):
        return {
            "nccl_validate_argv": nccl_validate_argv,
            "nccl_validate_not_run_reason": nccl_validate_not_run_reason,
            "nccl_validate_needs_diagnosis": nccl_validate_needs_diagnosis,
            "nccl_validate_run_record": nccl_validate_run_record,
            "nccl_validate_gates": nccl_validate_gates,
            "nccl_validate_run_plan": nccl_validate_run_plan,
            "nccl_net_loopback_plan": nccl_net_loopback_plan,
            "nccl_mpmd_argv": nccl_mpmd_argv,
            "combined_run": combined_run,
            "pair_rounds_plan": pair_rounds_plan,
            "pair_rounds_roles": pair_rounds_roles,
            "pair_blame": pair_blame,
            "find_slow_decision": find_slow_decision,
        }
