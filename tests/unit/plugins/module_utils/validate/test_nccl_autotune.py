"""nccl_validate's autotune: the grid within NCCL's limits, the decision rule, the fingerprint
and the record kept on each host, and the module's measuring loop with a fake runner."""

from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.autotune import nccl_autotune_grid, nccl_autotune_kept
from ansible_collections.ncclkit.cluster.plugins.module_utils.profile.env import env_problems
from ansible_collections.ncclkit.cluster.plugins.module_utils.validate import autotune as tune
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_autotune as module


def test_the_socket_grid_is_the_twelve_pairs_nccl_accepts():
    pairs = tune.socket_pairs()
    assert len(pairs) == 12 and (1, 1) in pairs and (8, 4) in pairs
    assert all(1 <= threads <= 16 and threads * socks <= 64 for threads, socks in pairs)


@pytest.mark.parametrize("candidate", tune.grid("any"), ids=lambda c: c["name"])
def test_every_candidate_is_a_tuning_the_profile_accepts(candidate):
    settings = {"ifname": "eth1", "cluster_networks": ["10.0.0.0/24"], "measured_tuning": candidate["env"]}
    assert env_problems(settings) == []


def test_sockets_get_defaults_first_the_grid_the_common_values_and_algo_proto():
    names = [candidate["name"] for candidate in tune.grid("any")]
    assert names[0] == "defaults" and tune.grid("any")[0]["env"] == {}
    assert names[1:13] == [f"threads={t} socks={s}" for t in (1, 2, 4, 8) for s in (1, 2, 4)]
    assert names[13:17] == ["threads=1 socks=1 channels=4", "threads=2 socks=1 channels=4",
                            "threads=1 socks=1 channels=8", "threads=2 socks=1 channels=8"]
    assert names[17:] == ["common", "algo=Ring proto=Simple"]
    assert tune.grid("any")[17]["env"] == {"NCCL_SOCKET_NTHREADS": "2", "NCCL_NSOCKS_PERTHREAD": "4",
                                           "NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}


@pytest.mark.parametrize("transport", ["ib", "efa", "IB"])
def test_rdma_hosts_never_get_a_socket_variable(transport):
    candidates = nccl_autotune_grid(transport)
    assert [c["name"] for c in candidates] == ["defaults", "common"]
    assert all(not set(c["env"]) & {"NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_MIN_NCHANNELS"}
               for c in candidates)
    assert candidates[1]["env"] == {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}


def test_the_grid_parts_can_be_left_out():
    assert [c["name"] for c in nccl_autotune_grid("any", "false", "no", False)] == ["defaults"]
    assert len(nccl_autotune_grid("any", True, False, False)) == 17


def test_channel_candidates_pin_the_count_and_keep_few_socket_threads():
    for candidate in tune.channel_candidates():
        env = candidate["env"]
        assert env["NCCL_MIN_NCHANNELS"] == env["NCCL_MAX_NCHANNELS"]
        assert 1 <= int(env["NCCL_MIN_NCHANNELS"]) <= 64 and int(env["NCCL_SOCKET_NTHREADS"]) <= 2
    assert tune.channel_candidates()[2]["env"] == {"NCCL_SOCKET_NTHREADS": "1", "NCCL_NSOCKS_PERTHREAD": "1",
                                                   "NCCL_MIN_NCHANNELS": "8", "NCCL_MAX_NCHANNELS": "8"}


def test_the_ib_grid_is_opt_in_and_measures_queue_pairs_by_a_channel_floor_on_ib_only():
    assert not any("NCCL_IB_QPS_PER_CONNECTION" in c["env"] for c in nccl_autotune_grid("ib"))
    candidates = nccl_autotune_grid("ib", True, True, True, "yes")
    extra = candidates[2:]
    assert len(extra) == 11 and candidates[0] == {"name": "defaults", "env": {}}
    assert {(c["env"].get("NCCL_IB_QPS_PER_CONNECTION", "1"), c["env"].get("NCCL_MIN_NCHANNELS")) for c in extra} == \
        {(q, m) for q in ("1", "2", "4", "8") for m in (None, "8", "16")} - {("1", None)}
    assert all(not set(c["env"]) & {"NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_MAX_NCHANNELS"} for c in extra)
    assert len({c["name"] for c in candidates}) == len(candidates)
    for transport in ("any", "efa"):
        assert not any("NCCL_IB_QPS_PER_CONNECTION" in c["env"] for c in nccl_autotune_grid(transport, True, True, True, True))


@pytest.mark.parametrize("candidate", tune.ib_candidates(), ids=lambda c: c["name"])
def test_every_ib_candidate_is_a_tuning_the_profile_accepts(candidate):
    settings = {"ifname": "eth1", "cluster_networks": ["10.0.0.0/24"], "measured_tuning": candidate["env"]}
    assert env_problems(settings) == []


@pytest.mark.parametrize("value", ["0", "129", "many"])
def test_the_profile_refuses_a_queue_pair_count_nccl_does_not_take(value):
    settings = {"ifname": "eth1", "cluster_networks": ["10.0.0.0/24"],
                "measured_tuning": {"NCCL_IB_QPS_PER_CONNECTION": value}}
    problems = env_problems(settings)
    assert len(problems) == 1 and "NCCL_IB_QPS_PER_CONNECTION" in problems[0] and "1-128" in problems[0]


@pytest.mark.parametrize("value", ["0", "65", "eight"])
def test_the_profile_refuses_a_channel_count_nccl_does_not_take(value):
    settings = {"ifname": "eth1", "cluster_networks": ["10.0.0.0/24"],
                "measured_tuning": {"NCCL_MIN_NCHANNELS": value, "NCCL_MAX_NCHANNELS": "8"}}
    problems = env_problems(settings)
    assert len(problems) == 1 and "NCCL_MIN_NCHANNELS" in problems[0] and "1-64" in problems[0]


def test_noise_within_the_spread_keeps_the_defaults():
    decision = tune.choose({"defaults": [3.0, 2.9, 3.1], "threads=4 socks=4": [3.15, 3.05, 3.2]})
    assert decision["winner"] == "defaults"
    row = decision["table"][1]
    assert row["median"] == 3.15 and row["spread"] == pytest.approx(0.15) and row["margin"] == pytest.approx(0.15)
    assert row["beats"] is False and "defaults stay" in decision["reason"]


def test_a_margin_equal_to_the_spread_is_not_enough():
    assert tune.choose({"defaults": [1.0, 1.0, 1.0], "a": [1.5, 1.0, 1.5]})["winner"] == "defaults"


def test_a_clear_winner_wins_and_the_highest_median_among_winners():
    decision = tune.choose({"defaults": [2.0, 2.1, 1.9], "a": [3.0, 3.1, 2.9], "b": [4.0, 4.2, 3.9],
                            "c": [9.0, 1.0, 9.0]})
    assert decision["winner"] == "b"
    beats = {row["name"]: row["beats"] for row in decision["table"]}
    assert beats == {"defaults": False, "a": True, "b": True, "c": False}  # c: its spread (8) hides its gain
    assert decision["reason"].startswith("b: median 4.0 GB/s against the defaults' 2.0 GB/s")


def test_a_tie_goes_to_the_first_in_grid_order():
    assert tune.choose({"defaults": [1.0, 1.0, 1.0], "x": [2.0, 2.0, 2.0], "y": [2.0, 2.0, 2.0]})["winner"] == "x"


def test_a_candidate_that_failed_once_never_wins_and_failed_defaults_keep_the_defaults():
    assert tune.choose({"defaults": [1.0, 1.0, 1.0], "x": [5.0, None, 5.0]})["winner"] == "defaults"
    decision = tune.choose({"defaults": [1.0, None, 1.0], "x": [5.0, 5.0, 5.0]})
    assert decision["winner"] == "defaults" and "did not measure" in decision["reason"]
    with pytest.raises(tune.AutotuneError, match="defaults"):
        tune.choose({"x": [1.0]})


def test_the_median_of_an_even_count_and_the_ratio_with_its_spread():
    assert tune.median([1, 2, 3, 4]) == 2.5
    measured = tune.ratio([3.0, 3.3, 3.6], [2.0, 2.2, 2.4])
    assert measured["ratio"] == 1.5 and measured["low"] == 1.25 and measured["high"] == 1.8
    assert tune.ratio([1.0], [None])["ratio"] is None


HOST = {"nodes": 2, "gpus": ["NVIDIA H200", "NVIDIA H200"], "nccl_version": "2.28.9", "transport": "any",
        "ifname": "eth1"}


def test_the_fingerprint_names_the_hardware_and_a_change_makes_the_record_stale():
    hardware = tune.fingerprint(HOST)
    assert hardware == {"nodes": 2, "gpus": "2 x NVIDIA H200", "nccl_version": "2.28.9", "transport": "any",
                        "nic": "eth1"}
    kept = json.dumps(tune.record(hardware, {"winner": "w", "reason": "r"}, {"NCCL_SOCKET_NTHREADS": 4}))
    assert tune.read_record(kept, hardware)["tuning"] == {"NCCL_SOCKET_NTHREADS": "4"}
    assert tune.read_record(kept, hardware)["current"] is True
    for change in ({"nodes": 3}, {"gpus": ["NVIDIA H100"] * 2}, {"nccl_version": "2.29.1"}, {"transport": "ib"}):
        stale = tune.read_record(kept, tune.fingerprint(dict(HOST, **change)))
        assert stale["current"] is False and stale["tuning"] == {} and "hardware changed" in stale["reason"]


@pytest.mark.parametrize("text, reason", [("", "no autotune result"), ("{", "not JSON"),
                                          ('{"version": 0, "tuning": {}}', "another version")])
def test_a_missing_or_unreadable_record_gives_no_tuning(text, reason):
    read = tune.read_record(text, tune.fingerprint(HOST))
    assert read["tuning"] == {} and not read["current"] and reason in read["reason"]


def test_the_kept_filter_reads_a_slurp_result():
    hardware = tune.fingerprint(HOST)
    text = json.dumps(tune.record(hardware, {"winner": "defaults"}, {}))
    assert nccl_autotune_kept({"content": base64.b64encode(text.encode()).decode()}, hardware)["current"]
    assert not nccl_autotune_kept({"failed": True, "msg": "file not found"}, hardware)["current"]


OUTPUT = """# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809
# Collective test starting: all_reduce_perf
#  Rank  0 Group  0 Pid   1495 on      node0 device  0 [0000:00:06] NVIDIA H200
#  Rank  1 Group  0 Pid   1496 on      node1 device  0 [0000:00:06] NVIDIA H200
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
   536870912     134217728     float     sum      -1   179339    {0}    {0}       0   182508    2.94    2.94       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : {0}
#
# Collective test concluded: all_reduce_perf
"""


def test_the_module_interleaves_forwards_each_variable_and_reads_the_peak(tmp_path):
    calls = []

    def runner(argv, out, err, timeout_s, kill_after_s, env, cwd, forensics):
        calls.append(argv)
        socks = int(env.get("NCCL_NSOCKS_PERTHREAD", "1"))
        with open(out, "w") as handle:
            handle.write("" if socks == 2 else OUTPUT.format(f"{socks:.2f}"))
        return {"rc": 3 if socks == 2 else 0, "timed_out": False}

    candidates = [{"name": "defaults", "env": {}}, {"name": "s4", "env": {"NCCL_NSOCKS_PERTHREAD": "4"}},
                  {"name": "s2", "env": {"NCCL_NSOCKS_PERTHREAD": "2"}}]
    params = {"launcher": ["mpirun", "-x", "NCCL_DEBUG"], "benchmark": ["a_r_p", "-b", "512M"], "env": {},
              "candidates": candidates, "repetitions": 3, "expected_ranks": 2, "timeout_s": 5, "chdir": str(tmp_path)}
    measured = module.measure(params, runner)
    assert measured["runs"] == 9 and measured["results"] == {"defaults": [1.0] * 3, "s4": [4.0] * 3,
                                                             "s2": [None] * 3}
    assert [argv[3:5] for argv in calls[:3]] == [["a_r_p", "-b"], ["-x", "NCCL_NSOCKS_PERTHREAD"],
                                                 ["-x", "NCCL_NSOCKS_PERTHREAD"]]
    assert measured["failures"][0] == "s2, repetition 1: rc 3"
    assert list(tmp_path.iterdir()) == []  # the outputs are read and removed
    assert tune.choose(measured["results"])["winner"] == "s4"
    params["expected_ranks"] = 4
    assert module.measure(params, runner)["failures"][0] == "defaults, repetition 1: 2 ranks, expected 4"


def test_the_module_gives_each_rank_its_prefix_after_the_candidates_variables(tmp_path):
    calls = []

    def runner(argv, out, err, timeout_s, kill_after_s, env, cwd, forensics):
        calls.append(argv)
        with open(out, "w") as handle:
            handle.write(OUTPUT.format("3.00"))
        return {"rc": 0, "timed_out": False}

    params = {"launcher": ["mpirun", "-x", "NCCL_DEBUG"], "benchmark": ["a_r_p", "-b", "512M"], "env": {},
              "candidates": [{"name": "defaults", "env": {}}, {"name": "c8", "env": {"NCCL_MIN_NCHANNELS": "8"}}],
              "rank_prefixes": [["env", "NCCL_HOSTID=h0"], ["env", "NCCL_HOSTID=h1"]],
              "repetitions": 3, "expected_ranks": 2, "timeout_s": 5, "chdir": str(tmp_path)}
    measured = module.measure(params, runner)
    assert measured["failures"] == [] and measured["results"]["c8"] == [3.0] * 3
    assert calls[1] == ["mpirun", "-x", "NCCL_DEBUG", "-x", "NCCL_MIN_NCHANNELS", "-np", "1", "env", "NCCL_HOSTID=h0",
                        "a_r_p", "-b", "512M", ":", "-np", "1", "env", "NCCL_HOSTID=h1", "a_r_p", "-b", "512M"]


def _kept(tuning, hardware=None):
    hardware = hardware or tune.fingerprint(HOST)
    return tune.read_record(json.dumps(tune.record(tune.fingerprint(HOST), {"winner": "w"}, tuning)), hardware)


MULTI_OK = {"name": "multi", "ran": True, "rc": 0, "perf": {"complete": True, "passed": True}}
TUNED = {"NCCL_SOCKET_NTHREADS": "4", "NCCL_NSOCKS_PERTHREAD": "2"}


def test_a_current_result_on_every_host_is_used_and_nothing_is_measured():
    kept = {"node1": _kept(TUNED), "node2": _kept(TUNED)}
    envs = {"node1": dict(TUNED, NCCL_DEBUG="WARN"), "node2": dict(TUNED)}
    decided = tune.plan(kept, envs, False, MULTI_OK)
    assert decided["measure"] is False and decided["blocker"] == "" and decided["tuning"] == TUNED
    forced = tune.plan(kept, envs, True, MULTI_OK)
    assert forced["measure"] and forced["clean_first"] and "nccl_validate_autotune_force" in forced["reason"]


def test_a_stale_or_missing_result_on_any_host_is_measured_again():
    other = tune.fingerprint(dict(HOST, nccl_version="2.29.1"))
    kept = {"node1": _kept(TUNED), "node2": _kept(TUNED, other)}
    # node1's profile still carries its kept result (its own hardware is the same): taken out first.
    decided = tune.plan(kept, {"node1": TUNED, "node2": {}}, False, MULTI_OK)
    assert decided["measure"] and decided["clean_first"] and decided["blocker"] == ""
    decided = tune.plan(kept, {"node1": {}, "node2": {}}, False, MULTI_OK)
    assert decided["measure"] and not decided["clean_first"] and decided["tuning"] == {}
    assert decided["reason"].startswith("no current result on node2: the hardware changed")


def test_no_measuring_over_a_failed_run_or_a_profile_with_tuning_of_its_own():
    kept = {"node1": _kept({}, tune.fingerprint(dict(HOST, nodes=9)))}
    failed = tune.plan(kept, {"node1": {}}, False, dict(MULTI_OK, rc=124))
    assert not failed["measure"] and failed["blocker"].startswith("the multi-node run did not complete")
    assert tune.plan(kept, {"node1": {}}, False, {})["blocker"].startswith("the multi-node run did not complete")
    own = tune.plan(kept, {"node1": {"NCCL_ALGO": "Tree", "NCCL_SOCKET_IFNAME": "=eth1"}}, False, MULTI_OK)
    assert not own["measure"] and own["blocker"].startswith("the profile sets NCCL_ALGO=Tree (nccl_profile_tuning")


def test_hosts_that_keep_different_results_are_measured_again():
    kept = {"node1": _kept(TUNED), "node2": _kept({})}
    decided = tune.plan(kept, {"node1": TUNED, "node2": {}}, False, MULTI_OK)
    assert decided["measure"] and decided["clean_first"]
    assert decided["reason"] == "the hosts keep different autotune results"


def test_the_report_section_says_what_the_profile_got_and_the_ratio_with_its_spread():
    from ansible_collections.ncclkit.cluster.plugins.module_utils.report import autotune as section
    from ansible_collections.ncclkit.cluster.plugins.module_utils.report.html_page import _autotune_section
    from ansible_collections.ncclkit.cluster.plugins.module_utils.report.markdown import _autotune_section as md
    decision = tune.choose({"defaults": [1.5, 1.52, 1.49], "threads=4 socks=2": [3.0, 3.01, 2.99]})
    result = {"status": "measured", "reason": "no current result on node1", "winner": decision["winner"],
              "tuning": TUNED, "decision_reason": decision["reason"], "candidates": decision["table"],
              "remeasure": tune.ratio([3.0, 3.02, 2.98], [1.5, 1.51, 1.49]), "repetitions": 3, "bytes": "512M",
              "transport": "any"}
    line = section.summary(result)
    assert "the profile gets NCCL_NSOCKS_PERTHREAD=2 NCCL_SOCKET_NTHREADS=4" in line
    assert line.endswith("same launcher: 2.0x (from 1.974x to 2.027x).")
    assert section.rows(result) == [["defaults", "1.50", "0.03", "", "no", "0"],
                                    ["threads=4 socks=2", "3.00", "0.02", "+1.50", "yes", "0"]]
    markdown = "\n".join(md(result))
    assert "| threads=4 socks=2 | 3.00 | 0.02 | +1.50 | yes | 0 |" in markdown
    html = "\n".join(_autotune_section(result))
    assert "<td>threads=4 socks=2</td><td>3.00</td>" in html and "2.0x" in html
    assert section.summary({"status": "not run", "reason": "the multi-node run did not complete"}) == (
        "Not run: the multi-node run did not complete.")
    assert section.summary({"status": "kept", "reason": "matches", "tuning": {}, "decision_reason": "r"}).startswith(
        "Kept from an earlier run for this hardware (matches): NCCL's defaults; r.")
