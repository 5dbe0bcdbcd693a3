"""playbooks/site.yml: what each host's summary needs is printed before nccl_validate, whose failed
verdict fails every host and so ends the playbook (no later play runs for a failed host)."""

from pathlib import Path

import yaml

SITE = Path(__file__).resolve().parents[2] / "playbooks" / "site.yml"


def test_the_per_host_summary_comes_before_the_validation_that_may_fail_the_play():
    plays = yaml.safe_load(SITE.read_text())
    roles = [[role["role"] if isinstance(role, dict) else role for role in play.get("roles", [])] for play in plays]
    validate = next(index for index, names in enumerate(roles) if "ncclkit.cluster.nccl_validate" in names)
    summary = next(index for index, play in enumerate(plays)
                   if any("nccl_preflight_summary" in str(task) for task in play.get("tasks", [])))
    assert summary < validate
    # Nothing after the validation that a failed validation would silently skip.
    assert validate == len(plays) - 1
