#!/usr/bin/env python
"""What Ansible itself costs a host on this controller: a playbook of trivial tasks at 2 and 16 hosts.

Run from the checkout (the shared venv's python; no lab, no root needed):
    python benchmarks/ansible_floor.py [--tasks 92] [--hosts 2 16] [--repeat 2]

Every host runs TASKS `set_fact` tasks and as many skipped ones (`when: false`) over the local
connection: no SSH, no module start on a host, no templating beyond one variable. That is the least
a play of that many tasks a host can cost, so it bounds what any role design with the same task
count can reach. The sizes are run alternately, `forks` = the number of hosts (at least 5, as
benchmarks/site_scale.py does), and each run's wall time and CPU time (the playbook and its workers,
from the kernel's accounting of waited-for children) are printed, then per size the medians, the
ratio to the smallest size, and the wall and CPU seconds per added host-task.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_play(folder: Path, hosts: int, tasks: int) -> tuple:
    inventory = folder / f"hosts-{hosts}.yml"
    names = "".join(f"    h{i}:\n" for i in range(hosts))
    inventory.write_text(f"all:\n  hosts:\n{names}  vars:\n    ansible_connection: local\n"
                         f"    ansible_python_interpreter: {sys.executable}\n")
    playbook = folder / "play.yml"
    body = "".join(f"    - name: Record value {i}\n      ansible.builtin.set_fact:\n"
                   f"        value_{i}: \"{{{{ inventory_hostname }}}}-{i}\"\n"
                   f"    - name: Skip step {i}\n      ansible.builtin.debug:\n        msg: never\n"
                   f"      when: false\n" for i in range(tasks))
    playbook.write_text(f"- name: Trivial tasks\n  hosts: all\n  gather_facts: false\n  tasks:\n{body}")
    # An empty configuration: the checkout's ansible.cfg (and its callbacks) stays out of the figure.
    (folder / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = false\n")
    return inventory, playbook


def timed_run(inventory: Path, playbook: Path, forks: int) -> tuple:
    """(wall seconds, CPU seconds of the playbook and everything it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    playbook_command = Path(sys.executable).with_name("ansible-playbook")
    config = str(inventory.with_name("ansible.cfg"))
    run = subprocess.run([str(playbook_command), "-i", str(inventory), "--forks", str(forks), str(playbook)],
                         capture_output=True, text=True, check=False,
                         env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=config))
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode:
        raise SystemExit(f"ansible-playbook failed (rc {run.returncode}): {run.stdout[-800:]}{run.stderr[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=46,
                        help="set_fact tasks a host (each followed by a skipped one: 2 x TASKS host-tasks)")
    parser.add_argument("--hosts", type=int, nargs="+", default=[2, 16])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    if len(args.hosts) < 2 or min(args.hosts) < 1 or args.tasks < 1 or args.repeat < 1:
        raise SystemExit("give two or more --hosts sizes of 1 or more, and --tasks and --repeat of 1 or more")
    host_tasks = 2 * args.tasks
    print(f"cores: {os.cpu_count()}, load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}, "
          f"{host_tasks} host-tasks a host ({args.tasks} set_fact + {args.tasks} skipped)", flush=True)
    walls, cpus = {n: [] for n in args.hosts}, {n: [] for n in args.hosts}
    with tempfile.TemporaryDirectory(prefix="ncclkit-ansible-floor-") as folder:
        plays = {n: write_play(Path(folder), n, args.tasks) for n in args.hosts}
        for attempt in range(args.repeat):
            for hosts in args.hosts:
                wall, cpu = timed_run(*plays[hosts], max(hosts, 5))
                walls[hosts].append(wall)
                cpus[hosts].append(cpu)
                print(f"run {attempt + 1}: {hosts} hosts {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| hosts | wall s (median) | CPU s (median) | wall ratio to the smallest |")
    print("|---|---|---|---|")
    small = min(args.hosts)
    base = statistics.median(walls[small])
    for hosts in args.hosts:
        print(f"| {hosts} | {statistics.median(walls[hosts]):.2f} | {statistics.median(cpus[hosts]):.2f} "
              f"| {statistics.median(walls[hosts]) / base:.2f}x |")
    for hosts in (n for n in args.hosts if n != small):
        added = (hosts - small) * host_tasks
        wall = (statistics.median(walls[hosts]) - base) / added
        cpu = (statistics.median(cpus[hosts]) - statistics.median(cpus[small])) / added
        print(f"{hosts} hosts: {1000 * wall:.1f} ms wall and {1000 * cpu:.1f} ms CPU per added host-task, "
              f"{wall * host_tasks:.2f} s wall per added host")


if __name__ == "__main__":
    main()
