"""The link-bandwidth gate: thresholds from the median, the NIC speed or the override, and slow links."""

from ansible_collections.ncclkit.cluster.plugins.module_utils.network.links.bandwidth import judge_links
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.links.rounds import plan_rounds
from ansible_collections.ncclkit.cluster.plugins.module_utils.network.reachability.verdicts import build_report

NAMES = ["n1", "n2", "n3", "n4"]
HOSTS = [{"name": name, "address": f"198.19.30.{11 + i}", "ifname": "eth1", "mtu": 1500}
         for i, name in enumerate(NAMES)]
FAST, THROTTLED = 9.0, 0.05


def rate(sender, jitter=0.0):
    return THROTTLED if sender == "n2" else round(FAST * (1 + jitter), 3)


def results(names=None, speed=None, jitter=0.0):
    """Every host's links as the rounds plan them; n2 sends slowly (its NIC shaped on the way out)."""
    names = NAMES if names is None else names
    found = {name: {"links": [], "nic_speed_mbps": speed, "probes": [], "listeners": {}} for name in names}
    for number, pairs in enumerate(plan_rounds(names, 2, seed=0)):
        for index, (client, server) in enumerate(pairs.items()):
            wobble = jitter * (1 if (number + index) % 2 else -1)
            found[client]["links"].append({"round": number, "target": server, "sent_gbps": rate(client, wobble),
                                           "received_gbps": rate(server, -wobble), "error": None})
    return found


def test_a_throttled_host_fails_every_link_it_is_in_and_is_named():
    record, verdicts = judge_links(HOSTS, results())
    assert record["measured"] and record["threshold_source"] == "median" and record["median_gbps"] == FAST
    assert record["threshold_gbps"] == 0.5 * FAST and record["passed"] is False
    assert len(record["links"]) == 12 and {link["round"] for link in record["links"]} == {0, 1, 2}
    assert all(set(link) == {"source", "target", "round", "sent_gbps", "received_gbps"} for link in record["links"])
    assert record["slow"] and all("n2" in (item["source"], item["target"]) and item["gbps"] == THROTTLED
                                  for item in record["slow"])
    involving = [link for link in record["links"] if "n2" in (link["source"], link["target"])]
    assert len(record["slow"]) == len(involving)
    slow = [v for v in verdicts if v["code"] == "slow_link"]
    assert len(slow) == len(record["slow"]) and all(v["severity"] == "error" for v in slow)
    first = slow[0]
    assert first["source"] in NAMES and first["target"] in NAMES
    assert f"{THROTTLED} Gbit/s" in first["cause"] and f"{FAST} Gbit/s" in first["cause"]
    assert "0.5 x the median 9.0 Gbit/s of 24 figures" in first["cause"]
    assert "n2 is in every slow link" in first["cause"] and first["fix"].startswith("check n2")


def test_the_throttled_host_is_named_beside_a_link_slowed_by_a_moment_of_load():
    found = results()
    noisy = next(link for link in found["n3"]["links"] if link["target"] != "n2")
    noisy["sent_gbps"] = 1.0
    record, verdicts = judge_links(HOSTS, found)
    involving = sum(1 for item in record["slow"] if "n2" in (item["source"], item["target"]))
    assert len(record["slow"]) == involving + 1
    assert f"n2 is in {involving} of the {involving + 1} slow links" in verdicts[0]["cause"]
    alone = results()
    for result in alone.values():
        for link in result["links"]:
            link["sent_gbps"] = link["received_gbps"] = FAST
    alone["n3"]["links"][1]["sent_gbps"] = 1.0
    only_verdict = judge_links(HOSTS, alone)[1]
    assert len(only_verdict) == 1 and "slow link" not in only_verdict[0]["cause"]


def test_a_healthy_cluster_with_some_spread_passes():
    healthy = results()
    for result in healthy.values():
        for link in result["links"]:
            link["sent_gbps"], link["received_gbps"] = FAST * 0.7, FAST * 1.3
    record, verdicts = judge_links(HOSTS, healthy)
    assert record["passed"] is True and record["slow"] == [] and verdicts == []


def test_the_fraction_of_the_median_is_a_setting():
    record, dummy = judge_links(HOSTS, results(), median_fraction=0.001)
    assert record["threshold_gbps"] == round(0.001 * FAST, 3) and record["passed"] is True


def test_the_override_wins_and_says_so():
    record, verdicts = judge_links(HOSTS, results(), min_gbps=20)
    assert record["threshold_gbps"] == 20.0 and record["threshold_source"] == "nccl_network_min_bandwidth_gbps"
    assert len(record["slow"]) == 12 and "nccl_network_min_bandwidth_gbps" in verdicts[0]["cause"]


def test_two_hosts_are_held_to_a_fraction_of_the_nic_speed():
    two = HOSTS[:2]
    record, verdicts = judge_links(two, results(["n1", "n2"], speed=10000))
    assert record["threshold_source"] == "nic_speed" and record["threshold_gbps"] == 1.0
    assert [(item["source"], item["target"], item["gbps"]) for item in record["slow"]] == [("n1", "n2", THROTTLED)]
    assert "0.1 x the NIC speed 10000 Mbit/s" in verdicts[0]["cause"] and record["passed"] is False
    fine = results(["n1", "n3"], speed=10000)
    record, verdicts = judge_links([HOSTS[0], HOSTS[2]], fine)
    assert record["passed"] is True and verdicts == []


def test_two_hosts_on_virtual_nics_are_measured_but_not_judged_and_told_so():
    unknown = results(["n1", "n3"], speed=None)
    unknown["n3"]["nic_speed_mbps"] = 10000
    record, verdicts = judge_links([HOSTS[0], HOSTS[2]], unknown)
    assert record["measured"] and record["threshold_gbps"] is None and record["threshold_source"] == "none"
    assert record["passed"] is None and record["median_gbps"] == FAST
    assert [(v["code"], v["severity"]) for v in verdicts] == [("link_floor_unknown", "warning")]
    assert "n1's eth1 reports no speed" in verdicts[0]["cause"]
    assert "nccl_network_min_bandwidth_gbps" in verdicts[0]["fix"]


def test_nothing_measured_is_no_verdict():
    record, verdicts = judge_links(HOSTS, {name: {"links": []} for name in NAMES})
    assert record == {"measured": False, "links": [], "median_gbps": None, "threshold_gbps": None,
                      "threshold_source": "none", "slow": [], "passed": None}
    assert verdicts == []


def test_failed_tests_are_one_warning_per_host():
    broken = results()
    for link in broken["n3"]["links"]:
        link.update(sent_gbps=None, received_gbps=None, error="unable to connect to server: Connection refused")
    record, verdicts = judge_links(HOSTS, broken)
    warnings = [v for v in verdicts if v["code"] == "bandwidth_unmeasured"]
    assert len(warnings) == 1 and warnings[0]["source"] == "n3" and "(round 2)" in warnings[0]["cause"]
    assert all(link["source"] != "n3" for link in record["links"])


def test_the_report_fails_on_a_slow_link_and_marks_its_row():
    found = results()
    for name in NAMES:
        target = found[name]["links"][0]["target"]
        found[name]["probes"] = [{"peer": target, "address": "x", "ping": True, "ping_large": True,
                                  "ports": {"40000": "ok"}, "bandwidth_gbps": found[name]["links"][0]["sent_gbps"]}]
    report = build_report(HOSTS, found)
    assert report["passed"] is False and report["link_bandwidth"]["passed"] is False
    assert any(v["code"] == "slow_link" and v["message"].startswith("ERROR slow_link (") for v in report["verdicts"])
    row = next(row for row in report["matrix"] if row["source"] == "n2")
    assert row["status"] == "error" and row["cause"] == "slow_link"
    healthy = build_report(HOSTS, found, min_bandwidth_gbps=0.01)
    assert healthy["passed"] is True
    assert healthy["link_bandwidth"]["threshold_source"] == "nccl_network_min_bandwidth_gbps"


def test_both_reports_show_the_links_slow_first_under_the_threshold():
    from ansible_collections.ncclkit.cluster.plugins.module_utils import report as nccl_report

    record, verdicts = judge_links(HOSTS, results())
    network = {name: {"passed": False, "reachability": [], "verdicts": [], "link_bandwidth": record} for name in NAMES}
    report = nccl_report.build_report({"hosts": {}, "runs": [], "network": network}, created="2026-12-04T12:00:00Z")
    markdown = nccl_report.render_markdown(report)
    section = markdown.split("## Link bandwidth (nccl_network, iperf3)", 1)[1]
    assert "12 link(s) measured, median 9.0 Gbit/s, threshold 4.5 Gbit/s (a fraction of the median): FAILED" in section
    table = [line for line in section.splitlines() if line.startswith("| n")]
    assert len(table) == 12 and all("**slow**" in line for line in table[:len(record["slow"])])
    assert "| 0.05 |" in table[0] and table[-1].endswith("| ok |")
    page = nccl_report.render_html(report)
    links = page.split('<section id="links">', 1)[1].split("</section>", 1)[0]
    assert "<th>back (Gbit/s)</th>" in links and links.count('<td class="error">slow</td>') == len(record["slow"])
    assert "threshold 4.5 Gbit/s (a fraction of the median): FAILED" in links
    unmeasured = {name: dict(facts, link_bandwidth={"measured": False, "links": []}) for name, facts in network.items()}
    bare = nccl_report.build_report({"hosts": {}, "runs": [], "network": unmeasured}, created="2026-12-04T12:00:00Z")
    assert "Link bandwidth" not in nccl_report.render_markdown(bare)
    assert 'id="links"' not in nccl_report.render_html(bare)


def test_a_slow_link_verdict_is_a_finding_naming_the_common_host_and_the_figures():
    dummy, verdicts = judge_links(HOSTS, results())
    first = next(v for v in verdicts if v["code"] == "slow_link")
    assert {"code", "severity", "cause", "fix", "host", "rank", "confidence", "evidence",
            "consequence_of", "source", "target"} <= set(first)
    assert (first["host"], first["rank"], first["confidence"], first["consequence_of"]) == ("n2", None, "high", None)
    assert len(first["evidence"]) == 1 and f"{THROTTLED} Gbit/s" in first["evidence"][0]


def test_an_unmeasured_link_is_a_finding_of_the_host_that_ran_iperf3():
    found = {"n1": {"links": [{"round": 0, "target": "n2", "sent_gbps": None, "error": "connection refused"}]},
             "n2": {"links": []}}
    dummy, verdicts = judge_links(HOSTS[:2], found)
    verdict = only_code(verdicts, "bandwidth_unmeasured")
    assert (verdict["host"], verdict["evidence"], verdict["target"]) == ("n1", ["connection refused"], "n2")


def only_code(verdicts, code):
    matching = [v for v in verdicts if v["code"] == code]
    assert len(matching) == 1, verdicts
    return matching[0]
