"""site.yml with ncclkit_cloud: aws on a 2-node lab against moto on loopback (behind the EC2 stand-in).

Each node reads its instance id from an IMDSv2 stand-in on 169.254.169.254:80 that lives only
in that node's network namespace (the address is added to the namespace's loopback); the
machine's own namespace never gets the address and never sends to it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lab_playbook import lab_cluster, play

from .conftest import (
    REGION,
    group_rules,
    make_cluster,
    playbook_env,
    rule_entries,
)

STANDIN = Path(__file__).with_name("imds_standin.py")


def aws_lab_cluster(index: int, tmp_path_factory, ec2):
    """A 2-node lab with an IMDSv2 stand-in per node answering the ids of two moto instances."""
    inventory = tmp_path_factory.mktemp(f"aws-lab{index}") / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    for lab in lab_cluster(index, inventory, nodes=2):
        cluster = make_cluster(ec2, "lab-cluster")
        servers = []
        try:
            for node, instance in zip(lab.nodes(), cluster["instances"], strict=False):
                subprocess.run(["ip", "netns", "exec", node.netns, "ip", "addr", "add", "169.254.169.254/32", "dev",
                                "lo"], check=True)
                server = subprocess.Popen(lab.command(node.name, [sys.executable, str(STANDIN), "169.254.169.254",
                                                                  "80", instance, REGION + "a"]),
                                          stdout=subprocess.PIPE, text=True)
                servers.append(server)
                assert server.stdout.readline().strip() == "listening"
            yield lab, inventory, cluster
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=10)


def run_site(inventory: Path, moto_url: str, credentials: dict, mode: str, *args: str,
             extra: dict | None = None, log: Path | None = None) -> tuple[int, str, float]:
    (inventory / "group_vars" / "all.yml").write_text(
        f"ncclkit_cloud: aws\ncloud_aws_region: {REGION}\ncloud_aws_endpoint_url: {moto_url}\n"
        f"cloud_aws_mode: {mode}\n")
    # The report folder goes next to the inventory, where the leak test reads it.
    variables = {"ansible_python_interpreter": sys.executable,
                 "ncclkit_report_parent": str(inventory / "reports"), **(extra or {})}
    done = play(inventory, "site.yml", variables, env=playbook_env(credentials, log), args=args, timeout=600)
    return done.rc, done.stdout, done.seconds


def task_status(output: str, task: str) -> list[str]:
    """The status words (ok, changed, skipping) of one task's result lines."""
    block = output.split(f"{task}] ***", 1)[1].split("\nTASK [", 1)[0] if f"{task}] ***" in output else ""
    return [line.split(":", 1)[0] for line in block.splitlines() if line.startswith(("ok:", "changed:", "skipping:"))]


def moto_state(ec2, group: str) -> tuple:
    """The group's rules and each instance's state and placement, as moto holds them."""
    instances = [(inst["InstanceId"], inst["State"]["Name"], inst["Placement"].get("GroupName", ""))
                 for reservation in ec2.describe_instances()["Reservations"] for inst in reservation["Instances"]]
    return rule_entries(group_rules(ec2, group)), sorted(instances)


def secrets_in(credentials: dict, texts: list[str], folder: Path) -> list[str]:
    """The planted credentials found in the texts or in any file under folder (should be none)."""
    paths = [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []
    files = [path.read_text(errors="replace") for path in paths]
    return [name for name, value in credentials.items() if any(value in text for text in texts + files)]
