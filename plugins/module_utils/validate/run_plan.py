# Copyright: Contributors to the ncclkit project
# SPDX-License-Identifier: Apache-2.0
"""nccl_validate's run plan, decided once for the play: which hosts run, whether the multi-node
and the Gloo runs happen, who launches them with what, and where the report goes.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

import posixpath

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.tristate import AUTO, ON, tristate


def report_dir(parent, cwd, playbook_dir):
    """`parent` when absolute, else under the folder ansible-playbook was started in (`cwd`, $PWD),
    or the playbook's folder when that is unknown. Controller-side modules run in the playbook's
    folder, which would put reports inside an installed collection."""
    parent = str(parent)
    if posixpath.isabs(parent):
        return parent
    return "{0}/{1}".format(cwd or playbook_dir, parent)


def run_plan(hosts, gpus, launchers, settings):
    """{report_dir, gpu_hosts, expected_ranks, launch_host, launcher, multi, gloo, gloo_host, note}.

    `hosts`: the play's hosts in order; `gpus`: {host: its GPU count}; `launchers`: {host: the
    mpirun its profile wrote (ncclkit_launch.mpirun), '' when none}; `settings`: multi_node,
    gloo (a tri-state), mpirun (the user's launcher, '' for the profile's), report_parent, cwd,
    playbook_dir.
    The multi-node run needs two hosts or more, all with a GPU; the Gloo run needs two hosts or
    more and runs where no host has a GPU (auto) or where asked for (on)."""
    hosts = list(hosts)
    gpu_hosts = [host for host in hosts if int(gpus.get(host) or 0) > 0]
    multi_node = bool(settings["multi_node"])
    several = multi_node and len(hosts) > 1
    gloo = tristate(settings["gloo"], "nccl_validate_gloo")
    launch_host = gpu_hosts[0] if gpu_hosts else ""
    # Without a GPU host the first host of the play reads the profile's launcher (the role's run_once host).
    launcher_host = gpu_hosts[0] if gpu_hosts else (hosts[0] if hosts else "")
    without_gpu = [host for host in hosts if host not in gpu_hosts]
    note = ""
    if multi_node and 0 < len(gpu_hosts) < len(hosts):
        note = "multi-node run skipped: hosts without GPU ({0}) cannot join it".format(", ".join(without_gpu))
    return {
        "report_dir": report_dir(settings["report_parent"], settings.get("cwd"), settings.get("playbook_dir")),
        "gpu_hosts": gpu_hosts,
        "expected_ranks": sum(int(gpus.get(host) or 0) for host in hosts),
        "launch_host": launch_host,
        "launcher": settings.get("mpirun") or launchers.get(launcher_host) or "",
        "multi": several and len(gpu_hosts) == len(hosts),
        "gloo": several and (not gpu_hosts if gloo == AUTO else gloo == ON),
        "gloo_host": hosts[0] if hosts else "",
        "note": note,
    }
