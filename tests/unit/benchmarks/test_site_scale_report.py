"""benchmarks/site_scale.py's figures: host-tasks a host (the first host runs the run_once tasks
too), controller CPU seconds per added host, and a run cut short reporting the sizes it finished."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import site_scale  # noqa: E402


def result(seconds, controller, counts):
    return {"seconds": seconds, "controller": controller, "cpu": None, "rc": 0, "changed": 0,
            "per_host": {f"node{i + 1}": count for i, count in enumerate(counts)}}


def test_host_tasks_leave_the_first_host_out_of_the_typical_figure():
    assert site_scale.host_tasks(result(1, 1, [97, 76])) == (76, 97)
    assert site_scale.host_tasks(result(1, 1, [97] + [76] * 14 + [80])) == (76, 97)
    assert site_scale.host_tasks(result(1, 1, [])) == (0, 0)


def test_per_added_host_and_a_size_cut_short(capsys):
    results = {("this", 2, "first"): result(20, 10.0, [97, 76]), ("this", 2, "second"): result(18, 9.0, [95, 74]),
               ("this", 16, "first"): result(90, 52.0, [97] + [76] * 15),
               ("this", 16, "second"): result(80, 37.0, [95] + [74] * 15),
               ("this", 32, "first"): result(200, 100.0, [97] + [76] * 31)}   # no second run at 32
    site_scale.report(results, {"this": Path(".")}, [2, 16, 32])
    out = capsys.readouterr().out
    assert "| this | 16 | second | 4.44x | 4.43 | 2.00 | 74 |" in out   # (37 - 9) / 14 CPU s a host
    assert "| this | 16 | first | 4.50x | 5.00 | 3.00 | 76 |" in out
    assert "| this | 32 |" not in out


OUTPUT = """PLAY [Find out what each host has] *********
TASK [Read] ****
ok: [node1]
ok: [node2]
TASK [Plan] ****
ok: [node1]
PLAY [Write the profile] *********
TASK [Include] ****
included: /x/plan.yml for node1, node2
TASK [Loop] ****
skipping: [node2] => (item=a)
skipping: [node2] => (item=b)
skipping: [node2]
changed: [node1]
TASK [Fail] ****
fatal: [node2]: FAILED! => msg: no
"""


def test_tasks_by_play_counts_as_the_recap_does():
    assert site_scale.tasks_by_play(OUTPUT, "node2") == [("Find out what each host has", 1), ("Write the profile", 3)]
    assert site_scale.tasks_by_play(OUTPUT, "node1") == [("Find out what each host has", 2), ("Write the profile", 2)]
