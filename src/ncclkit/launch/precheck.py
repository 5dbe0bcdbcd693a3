"""Before a launch starts anything: the checks `ncclkit check` runs (playbooks/check.yml), whose
error findings refuse the launch (`--no-check` skips them), and, on every host, the script and the
launcher (hostside `probe`)."""

from __future__ import annotations

from pathlib import Path

from ncclkit.launch.verdict import finding


def cluster_check(inventory: Path, limit: str | None, hosts: list[str]) -> dict:
    """`ncclkit check`'s document for these hosts (its findings, unreachable hosts, verdict)."""
    from ncclkit.commands.check import run_check

    return run_check(inventory, hosts, limit=limit, quiet=True)


def check_refusal(document: dict) -> list[dict]:
    """The error findings that refuse a launch (empty: go)."""
    errors = [item for item in document["findings"] if item["severity"] == "error"]
    if not document.get("check") and not document["unreachable"]:
        errors.append(finding("launch_check_failed", "error", f"the checks did not finish: {document['verdict']}",
                              "run `ncclkit check -i INVENTORY` to see why, or launch with --no-check"))
    return errors


def probe_findings(host: str, probe: dict, script: str, launcher: str, cwd: str) -> list[dict]:
    """What is missing on one host for the launch."""
    found = []
    if not probe.get("cwd", True):
        found.append(finding("launch_script_missing", "error", f"{host}: the working directory {cwd} does not exist",
                             "give --chdir a folder that exists on every host", host=host))
    elif not probe.get("script"):
        found.append(finding("launch_script_missing", "error", f"{host}: the script {script} does not exist in {cwd}",
                             "copy the training script to the same path on every host (or a shared filesystem), "
                             "or give --chdir", host=host))
    if not probe.get("launcher"):
        found.append(finding("launcher_missing", "error", f"{host}: the launcher {launcher} is not there or not "
                             "executable", "run site.yml (the nccl_profile role writes it), or set "
                             "ncclkit_launch_torchrun for this host", host=host))
    return found
