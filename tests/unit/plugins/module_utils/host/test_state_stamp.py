"""A role's state stamp: the same inputs and live state are converged; any change by hand (a file
removed or edited, a link repointed, an MTU changed, the ruleset changed) or of the inputs is not."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.host import state_stamp


def test_the_digest_is_canonical():
    assert state_stamp.digest({"a": 1, "b": [1, 2]}) == state_stamp.digest({"b": [1, 2], "a": 1})
    assert state_stamp.digest({"a": 1}) != state_stamp.digest({"a": 2})


def test_file_state_names_absent_content_and_link_target(tmp_path):
    path = tmp_path / "nccl.conf"
    assert state_stamp.file_state(str(path)) == "absent"
    path.write_text("NCCL_SOCKET_IFNAME=eth1\n")
    first = state_stamp.file_state(str(path))
    path.write_text("NCCL_SOCKET_IFNAME=eth0\n")
    assert state_stamp.file_state(str(path)) not in (first, "absent")
    (tmp_path / "builds" / "a").mkdir(parents=True)
    (tmp_path / "builds" / "b").mkdir()
    (tmp_path / "builds" / "a" / "x").write_text("same")
    (tmp_path / "builds" / "b" / "x").write_text("same")
    link = tmp_path / "current"
    link.symlink_to("builds/a")
    through_a = state_stamp.file_state(str(link / "x"))
    assert state_stamp.file_state(str(link)) == "link:builds/a:dir"
    link.unlink()
    link.symlink_to("builds/b")
    assert state_stamp.file_state(str(link)) == "link:builds/b:dir"
    assert state_stamp.file_state(str(link / "x")) == through_a   # the same content


def test_link_mtu_reads_sysfs_and_refuses_a_path(tmp_path):
    (tmp_path / "eth1").mkdir()
    (tmp_path / "eth1" / "mtu").write_text("9000\n")
    assert state_stamp.link_mtu("eth1", str(tmp_path)) == 9000
    assert state_stamp.link_mtu("eth9", str(tmp_path)) is None
    with pytest.raises(state_stamp.StampError, match="not a Linux interface name"):
        state_stamp.link_mtu("../../etc", str(tmp_path))


def test_nft_ruleset_is_read_without_counters():
    calls = []

    def run(argv, timeout):
        calls.append(argv)
        return 0, "table inet ncclkit {\n}\n", ""

    assert len(state_stamp.nft_ruleset(run)) == 64
    assert calls == [["nft", "-s", "list", "ruleset"]]
    assert state_stamp.nft_ruleset(lambda argv, timeout: (127, "", "nft: command not found")) == "unread:rc=127"


def _live(tmp_path, mtu=1500, ruleset="table inet ncclkit {}"):
    (tmp_path / "net" / "eth1").mkdir(parents=True, exist_ok=True)
    (tmp_path / "net" / "eth1" / "mtu").write_text(f"{mtu}\n")
    state = state_stamp.live_state([str(tmp_path / "nccl.conf")], [], True, lambda argv, timeout: (0, ruleset, ""))
    state["mtu"] = {"eth1": state_stamp.link_mtu("eth1", str(tmp_path / "net"))}
    return state


def test_judge_converged_only_when_inputs_and_live_state_match(tmp_path):
    (tmp_path / "nccl.conf").write_text("NCCL_SOCKET_IFNAME=eth1\n")
    inputs = state_stamp.digest({"nccl_profile_env": {"NCCL_SOCKET_IFNAME": "eth1"}})
    recorded = {"format": 1, "inputs": inputs, "live": _live(tmp_path), "facts": {}}
    assert state_stamp.judge(recorded, inputs, _live(tmp_path)) == (True, "")
    assert state_stamp.judge(None, inputs, _live(tmp_path)) == (False, "no stamp recorded yet")
    changed_inputs = state_stamp.judge(recorded, state_stamp.digest({}), _live(tmp_path))
    assert changed_inputs == (False, "the inputs changed since the stamp")
    assert "MTU of eth1" in state_stamp.judge(recorded, inputs, _live(tmp_path, mtu=9000))[1]
    assert "nftables" in state_stamp.judge(recorded, inputs, _live(tmp_path, ruleset=""))[1]
    (tmp_path / "nccl.conf").unlink()
    assert "nccl.conf changed" in state_stamp.judge(recorded, inputs, _live(tmp_path))[1]


def test_a_stamp_that_does_not_parse_is_no_stamp(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{not json")
    assert state_stamp.read_stamp(str(path)) is None
    path.write_text('{"format": 0}')
    assert state_stamp.read_stamp(str(path)) is None
    path.write_text(state_stamp.stamp_text("d", {"files": {}, "mtu": {}}, {"f": 1}))
    assert state_stamp.read_stamp(str(path))["facts"] == {"f": 1}


@pytest.mark.parametrize("name", ["../etc/passwd", "", "a/b", "x" * 65, None])
def test_a_stamp_name_is_a_plain_name(name):
    with pytest.raises(state_stamp.StampError, match="not a plain name"):
        state_stamp.stamp_path(name)
