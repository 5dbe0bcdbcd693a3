"""What the autotune recorded on one H200 over NET/Socket (tests/samples/h200-site-autotune-two-runs.txt,
benchmarks/results/h200_site_autotune.json, h200_socket_levers.json, h200_socket_compare.json):
site.yml measured and rewrote the profile, the second run kept the result and changed nothing,
and each recorded decision can be made again from its numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ansible_collections.ncclkit.cluster.plugins.module_utils.validate import autotune as nccl_autotune

REPO = Path(__file__).resolve().parents[5]
RESULTS = REPO / "benchmarks" / "results"
TWO_RUNS = (REPO / "tests" / "samples" / "h200-site-autotune-two-runs.txt").read_text(encoding="utf-8")


def load(name):
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def recaps():
    return [dict(re.findall(r"(\w+)=(\d+)", line)) for line in TWO_RUNS.splitlines() if line.startswith("vm ")]


def test_the_first_run_rewrote_the_profile_and_the_second_changed_nothing():
    first, second = recaps()
    assert first["failed"] == "0" and int(first["changed"]) > 0
    assert second["failed"] == "0" and second["changed"] == "0"
    first_conf, second_conf = [part.split("\n## ")[0] for part in TWO_RUNS.split("/etc/nccl.conf after the")[1:]]
    assert "NCCL_MIN_NCHANNELS=8" in first_conf
    assert first_conf.split("\n", 1)[1].strip() == second_conf.split("\n", 1)[1].strip()
    assert "Keep the result on each host, with its hardware] ***\nchanged: [vm]" in TWO_RUNS


def test_the_site_autotune_kept_the_winner_of_its_own_table():
    result, kept = load("h200_site_autotune.json"), load("h200_autotune_kept.json")
    table = {row["name"]: row for row in result["candidates"]}
    assert len(table) == len(nccl_autotune.grid("any")) and result["status"] == "measured"
    best = max((row for row in table.values() if row["beats"]), key=lambda row: row["median"])
    assert best["name"] == result["winner"] == kept["winner"] == "threads=1 socks=1 channels=8"
    assert kept["tuning"] == result["tuning"] and kept["fingerprint"]["nodes"] == 1
    assert result["remeasure"]["ratio"] > 1 and result["remeasure"]["low"] > 1


def test_the_levers_decision_is_made_again_from_the_repetitions():
    levers = load("h200_socket_levers.json")
    assert nccl_autotune.choose(levers["results"])["winner"] == levers["decision"]["winner"]
    assert levers["decision"]["winner"] == "threads=1 socks=1 channels=8"


def test_the_comparison_gives_raw_tcp_at_the_autotuned_stream_count():
    compare = load("h200_socket_compare.json")
    streams = compare["streams"]["autotuned"]
    assert streams == 8 and compare["streams"]["defaults"] == 2
    tcp = nccl_autotune.median(compare["tcp"][str(streams)])
    tuned = nccl_autotune.median(compare["results"]["autotuned"])
    assert compare["ratios"]["autotuned_over_tcp_same_streams"] == round(tuned / tcp, 3) < 0.8
    assert compare["ratios"]["autotuned_over_defaults"]["ratio"] >= 1.0
