"""`ncclkit launch`: start a training job on every host of the inventory's `cluster` group with the
host's own launcher, follow it, name a hang or a failed rank, stop every process of it. Each part
has one job:

- hosts: the hosts and how to reach each (ssh settings, or the controller itself) from the inventory.
- transport: the argv that runs the host side on a host (OpenSSH with ControlMaster, or local).
- hostside: what runs on a host (sent on stdin, nothing installed): start, follow, sample, stop, dump.
- watch: progress and stalls from the ranks' samples (state, py-spy stacks, CPU, storage I/O).
- verdict: the diagnosis engine on the run folder, and launch's own findings.
- precheck: `ncclkit check`'s checks and the script and launcher on every host, before starting.
- record: the run folder, launch.json, secret masking.
- session: one launch from checks to verdict (`launch()`, the Python API).
- control: `--status RUN` and `--stop RUN` for a job whose controller went away.

    from ncclkit.launch import launch
    record = launch("inventories/lab", ["train.py", "--epochs", "1"], stall_after=60)
    record["exit_code"], record["verdict"], record["findings"]
"""

from __future__ import annotations

from ncclkit.paths import use_collection

# The parts import the collection's module_utils by name: the collection goes on sys.path first.
use_collection()


def launch(inventory, argv, **options) -> dict:
    """See ncclkit.launch.session.launch: the record launch.json holds (`exit_code`, `verdict`, ...)."""
    from ncclkit.launch.session import launch as run

    return run(inventory, argv, **options)
