"""`ncclkit launch --status RUN` and `--stop RUN`: reach a job again from its run folder's
launch.json (its hosts, their connection settings and the launch id), for when the controller that
started it went away (a closed laptop, a dropped SSH session: the job keeps running on the hosts)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from ncclkit.launch import record, transport
from ncclkit.launch.hosts import LaunchHost


def _call(host: LaunchHost, mode: str, run_dir: str, args: list[str], control: Path, timeout: float) -> dict:
    argv = transport.host_argv(host, mode, [run_dir, *args], control)
    try:
        done = subprocess.run(argv, input=transport.script_payload(), capture_output=True, timeout=timeout,
                              check=False, start_new_session=True)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer in {timeout:g} s"}
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else {"error": done.stderr.decode(errors="replace").strip()[-300:]}
    except ValueError:
        return {"error": lines[-1][:300]}


def job_state(run: str, parent: Path, stop: bool = False, grace: float = 10.0) -> dict:
    """Each host's processes of the job and its launcher's exit code; with `stop`, stop them first."""
    folder, document = record.read_record(run, parent)
    control = Path(tempfile.mkdtemp(prefix="nkl-"))
    hosts = {}
    try:
        for item in document["hosts"]:
            host = LaunchHost.from_public(item)
            host.env = {}
            if stop:
                args = [document["launch_id"], host.name, f"{grace:g}"]
                hosts[host.name] = {"stop": _call(host, "stop", item["run_dir"], args, control, grace + 30)}
            hosts.setdefault(host.name, {}).update(_call(host, "status", item["run_dir"],
                                                         [document["launch_id"], host.name], control, 60))
        transport.close_masters([LaunchHost.from_public(item) for item in document["hosts"]], control)
    finally:
        shutil.rmtree(control, ignore_errors=True)
    running = sum(len(state.get("pids") or []) for state in hosts.values())
    unreachable = [name for name, state in hosts.items() if "error" in state]
    return {"folder": str(folder), "launch_id": document["launch_id"], "recorded_status": document["status"],
            "hosts": hosts, "processes": running, "unreachable": unreachable}
