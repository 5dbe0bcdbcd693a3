"""The nccl_files module through main(): write, leave alone, modes, backups, check and diff mode."""

import json
import os
import stat
from unittest.mock import patch

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.modules import nccl_files

ME = os.getuid()


def run_module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        nccl_files.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def profile(tmp_path, text="NCCL_SOCKET_IFNAME=eth1\n", secret_mode="0600"):
    return {"directories": [{"path": str(tmp_path / "etc/ncclkit"), "mode": "0755"},
                            {"path": str(tmp_path / "fr"), "mode": "1777"}],
            "files": [{"dest": str(tmp_path / "etc/ncclkit/nccl.env"), "content": text, "mode": secret_mode},
                      {"dest": str(tmp_path / "etc/ncclkit/hostfile"), "content": "node1 slots=1\n", "mode": "0644"}]}


def test_first_run_writes_every_folder_and_file_with_its_mode_and_a_second_changes_nothing(capsys, tmp_path):
    code, first = run_module(capsys, profile(tmp_path))
    assert code == 0 and first["changed"] is True
    assert [item["changed"] for item in first["directories"] + first["files"]] == [True] * 4
    assert (tmp_path / "etc/ncclkit/nccl.env").read_text() == "NCCL_SOCKET_IFNAME=eth1\n"
    assert mode_of(tmp_path / "etc/ncclkit/nccl.env") == 0o600
    assert mode_of(tmp_path / "etc/ncclkit/hostfile") == 0o644
    assert mode_of(tmp_path / "fr") == 0o1777 and mode_of(tmp_path / "etc/ncclkit") == 0o755
    code, second = run_module(capsys, profile(tmp_path))
    assert code == 0 and second["changed"] is False
    assert sorted(os.listdir(tmp_path / "etc/ncclkit")) == ["hostfile", "nccl.env"]  # no temporary left


def test_only_what_differs_is_rewritten_and_a_mode_alone_is_corrected(capsys, tmp_path):
    run_module(capsys, profile(tmp_path))
    hostfile = tmp_path / "etc/ncclkit/hostfile"
    before = os.stat(hostfile).st_ino
    os.chmod(tmp_path / "etc/ncclkit/nccl.env", 0o644)
    code, result = run_module(capsys, profile(tmp_path, text="NCCL_SOCKET_IFNAME=eth2\n"))
    assert code == 0 and [item["changed"] for item in result["files"]] == [True, False]
    assert os.stat(hostfile).st_ino == before
    assert mode_of(tmp_path / "etc/ncclkit/nccl.env") == 0o600
    os.chmod(hostfile, 0o600)
    code, result = run_module(capsys, profile(tmp_path, text="NCCL_SOCKET_IFNAME=eth2\n"))
    assert [item["changed"] for item in result["files"]] == [False, True] and mode_of(hostfile) == 0o644


def test_a_private_file_is_never_readable_by_others_while_it_is_written(capsys, tmp_path):
    seen = []
    real_replace = os.replace

    def watch(source, target):
        seen.append(mode_of(source))
        real_replace(source, target)

    with patch.object(nccl_files.os, "replace", watch):
        run_module(capsys, profile(tmp_path))
    assert seen == [0o600, 0o644]


def test_backup_keeps_the_file_it_replaces_and_only_when_it_changes(capsys, tmp_path):
    conf = tmp_path / "nccl.conf"
    conf.write_text("NCCL_TOPO_FILE=/opt/topo.xml\n")
    args = {"files": [{"dest": str(conf), "content": "NCCL_DEBUG=WARN\n", "mode": "0644", "backup": True}]}
    code, result = run_module(capsys, args)
    backup = result["files"][0]["backup_file"]
    assert code == 0 and open(backup).read() == "NCCL_TOPO_FILE=/opt/topo.xml\n"
    assert conf.read_text() == "NCCL_DEBUG=WARN\n"
    code, again = run_module(capsys, args)
    assert again["changed"] is False and "backup_file" not in again["files"][0]
    assert len([name for name in os.listdir(tmp_path) if name.startswith("nccl.conf.")]) == 1


def test_check_mode_changes_nothing_and_diff_mode_shows_the_lines_not_the_whole_content(capsys, tmp_path):
    run_module(capsys, profile(tmp_path))
    args = dict(profile(tmp_path, text="NCCL_SOCKET_IFNAME=eth2\n"), _ansible_check_mode=True, _ansible_diff=True)
    code, result = run_module(capsys, args)
    assert code == 0 and result["changed"] is True
    assert (tmp_path / "etc/ncclkit/nccl.env").read_text() == "NCCL_SOCKET_IFNAME=eth1\n"
    assert len(result["diff"]) == 1
    assert "-NCCL_SOCKET_IFNAME=eth1" in result["diff"][0]["prepared"]
    assert "+NCCL_SOCKET_IFNAME=eth2" in result["diff"][0]["prepared"]
    code, fresh = run_module(capsys, dict(profile(tmp_path / "new"), _ansible_check_mode=True))
    assert code == 0 and fresh["changed"] is True and not (tmp_path / "new").exists()


def test_the_content_is_never_echoed_in_the_result_nor_in_a_failure(capsys, tmp_path):
    args = {"files": [{"dest": str(tmp_path / "env"), "content": "HF_TOKEN=hf_abcdefgh123\n", "mode": "0600"}]}
    code, result = run_module(capsys, args)
    assert code == 0 and "hf_abcdefgh123" not in json.dumps(result)
    assert result["invocation"]["module_args"]["files"][0]["content"] == "(24 characters not shown)"
    args["files"][0]["dest"] = str(tmp_path / "missing/env")
    code, failure = run_module(capsys, args)
    assert code == 1 and "hf_abcdefgh123" not in json.dumps(failure)


def test_owner_and_group_apply_to_items_that_name_none(capsys, tmp_path):
    group = os.getgid()
    code, result = run_module(capsys, {"owner": str(ME), "group": str(group),
                                       "files": [{"dest": str(tmp_path / "a"), "content": "a\n", "mode": "0644"}]})
    assert code == 0 and (os.stat(tmp_path / "a").st_uid, os.stat(tmp_path / "a").st_gid) == (ME, group)


def test_a_file_where_a_folder_belongs_and_a_folder_where_a_file_belongs_are_clear_errors(capsys, tmp_path):
    (tmp_path / "etc").write_text("x")
    code, result = run_module(capsys, {"directories": [{"path": str(tmp_path / "etc")}]})
    assert code == 1 and result["msg"] == f"{tmp_path}/etc exists and is not a directory: move it away, or choose " \
        "another path."
    code, result = run_module(capsys, {"files": [{"dest": str(tmp_path), "content": "x"}]})
    assert code == 1 and result["msg"] == f"{tmp_path} is a directory: choose a file path for it."


def test_a_missing_folder_is_one_clear_error_naming_it(capsys, tmp_path):
    code, result = run_module(capsys, {"files": [{"dest": str(tmp_path / "no/such/file"), "content": "x"}]})
    assert code == 1 and result["msg"] == (f"The folder of {tmp_path}/no/such/file does not exist: list "
                                           f"{tmp_path}/no/such in directories first.")


def test_a_link_is_made_repointed_through_a_rename_and_left_alone_when_right(capsys, tmp_path):
    (tmp_path / "wants").mkdir()
    link = tmp_path / "wants/ncclkit-firewall.service"
    args = {"links": [{"dest": str(link), "src": "/etc/systemd/system/ncclkit-firewall.service"}]}
    code, made = run_module(capsys, args)
    assert code == 0 and made["links"] == [{"dest": str(link), "changed": True}]
    assert os.readlink(link) == "/etc/systemd/system/ncclkit-firewall.service"
    code, again = run_module(capsys, args)
    assert again["changed"] is False
    os.unlink(link)
    os.symlink("/elsewhere", link)
    code, checked = run_module(capsys, dict(args, _ansible_check_mode=True))
    assert checked["changed"] is True and os.readlink(link) == "/elsewhere"
    code, repointed = run_module(capsys, args)
    assert repointed["changed"] is True and os.readlink(link) == "/etc/systemd/system/ncclkit-firewall.service"
    assert sorted(os.listdir(tmp_path / "wants")) == ["ncclkit-firewall.service"]


def test_a_file_in_the_place_of_a_link_is_an_error_and_is_kept(capsys, tmp_path):
    (tmp_path / "unit").write_text("mine")
    code, result = run_module(capsys, {"links": [{"dest": str(tmp_path / "unit"), "src": "/x"}]})
    assert code == 1 and result["msg"] == f"{tmp_path}/unit exists and is not a symbolic link: move it away, or " \
        "choose another path."
    assert (tmp_path / "unit").read_text() == "mine"


def test_absent_removes_the_listed_files_and_links_only_and_check_mode_removes_nothing(capsys, tmp_path):
    unit, link, other = tmp_path / "unit.service", tmp_path / "wants.service", tmp_path / "user.service"
    for path in (unit, other):
        path.write_text("[Unit]\n")
    link.symlink_to(unit)
    args = {"absent": [str(link), str(unit), str(tmp_path / "never-there")]}
    code, checked = run_module(capsys, dict(args, _ansible_check_mode=True))
    assert code == 0 and checked["changed"] is True and unit.exists() and link.is_symlink()
    code, result = run_module(capsys, args)
    assert code == 0 and [item["changed"] for item in result["absent"]] == [True, True, False]
    assert not unit.exists() and not link.is_symlink() and other.exists()
    code, again = run_module(capsys, args)
    assert code == 0 and again["changed"] is False


def test_a_directory_listed_as_absent_is_an_error_and_is_kept(capsys, tmp_path):
    folder = tmp_path / "unit.service"
    folder.mkdir()
    code, result = run_module(capsys, {"absent": [str(folder)]})
    assert code == 1 and "is a directory" in result["msg"] and folder.is_dir()
