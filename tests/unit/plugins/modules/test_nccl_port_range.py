"""The sysctl file that pins NCCL's port range: named to win at boot, a later setting of the key
named before anything is written, and only ncclkit's own old file removed. A directory stands in
for the host's root (the module's `root`); the live value is left alone (set_live false)."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ncclkit.cluster.plugins.module_utils.host import sysctl as precedence
from ansible_collections.ncclkit.cluster.plugins.modules import nccl_port_range

KEY = "net.ipv4.ip_local_port_range"
OURS = "etc/sysctl.d/99-zz-ncclkit-nccl.conf"
OLD = "etc/sysctl.d/60-ncclkit-nccl.conf"


def host(root, files):
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    # Debian's link: systemd-sysctl reads /etc/sysctl.conf only through it.
    link = root / "etc/sysctl.d/99-sysctl.conf"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to("../sysctl.conf")
    return root


def run(capsys, root, **args):
    with patch_module_args({"port_range": [32768, 60999], "root": str(root), "set_live": False, **args}), \
            pytest.raises(SystemExit) as exit_info:
        nccl_port_range.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_ours_sorts_after_every_usual_file(tmp_path):
    host(tmp_path, {"etc/sysctl.conf": "", "usr/lib/sysctl.d/99-protect-links.conf": "",
                    "usr/lib/sysctl.d/50-pid-max.conf": "", OURS: "", "run/sysctl.d/99-zz-later.conf": ""})
    order = [path.split("/")[-1] for path in precedence.boot_order(str(tmp_path))]
    assert order == ["50-pid-max.conf", "99-protect-links.conf", "99-sysctl.conf", "99-zz-later.conf",
                     "99-zz-ncclkit-nccl.conf"]


def test_an_etc_name_hides_the_same_name_elsewhere(tmp_path):
    host(tmp_path, {"etc/sysctl.d/zz-site.conf": f"{KEY} = 32768 60999\n",
                    "usr/lib/sysctl.d/zz-site.conf": f"{KEY} = 1024 2048\n"})
    assert precedence.later_setters(str(tmp_path), KEY, "32768 60999", "99-zz-ncclkit-nccl.conf") == []


def test_writes_the_stamped_file_and_a_second_run_changes_nothing(capsys, tmp_path):
    host(tmp_path, {"etc/sysctl.conf": "# nothing here\nvm.swappiness = 10\n"})
    code, result = run(capsys, tmp_path)
    assert code == 0 and result["changed"]
    text = (tmp_path / OURS).read_text()
    assert text.startswith("# ncclkit:") and text.endswith(f"\n{KEY} = 32768 60999\n")
    assert oct((tmp_path / OURS).stat().st_mode & 0o777) == "0o644"
    code, again = run(capsys, tmp_path)
    assert (code, again["changed"], again["removed"]) == (0, False, [])


@pytest.mark.parametrize("where, line", [
    ("etc/sysctl.conf", f"{KEY}=1024 65000"),
    ("etc/sysctl.conf", "-net/ipv4/ip_local_port_range =  1024\t65000"),
    ("etc/sysctl.d/zz-tuning.conf", f"{KEY} = 1024 65000"),
    ("usr/lib/sysctl.d/99-zzz-vendor.conf", f"{KEY} = 1024 65000"),
])
def test_a_later_setting_fails_naming_file_and_line_and_writes_nothing(capsys, tmp_path, where, line):
    host(tmp_path, {"etc/sysctl.conf": "vm.swappiness = 10\n", where: f"# site\n\n{line}\n"})
    code, result = run(capsys, tmp_path, _ansible_check_mode=False)
    assert code == 1 and not (tmp_path / OURS).exists()
    assert f"/{where} line 3: {line.strip()}" in result["msg"]
    assert "set nccl_network_port_range to [1024, 65000]" in result["msg"] and "Nothing was changed" in result["msg"]
    assert result["conflicts"][0]["file"] == f"/{where}"


def test_the_same_value_later_or_an_earlier_file_is_no_conflict(capsys, tmp_path):
    host(tmp_path, {"etc/sysctl.conf": f"{KEY} = 32768   60999\n",
                    "usr/lib/sysctl.d/50-vendor.conf": f"{KEY} = 1024 65000\n"})
    code, result = run(capsys, tmp_path)
    assert code == 0 and (tmp_path / OURS).exists()


def test_only_ncclkits_old_file_is_removed(capsys, tmp_path):
    host(tmp_path, {OLD: f"{KEY}=32768 60999\n"})
    code, result = run(capsys, tmp_path)
    assert code == 0 and result["removed"] == ["/" + OLD] and not (tmp_path / OLD).exists()
    (tmp_path / OLD).write_text(f"{KEY}=32768 60999\nvm.swappiness = 10\n")
    code, result = run(capsys, tmp_path)
    assert code == 0 and result["removed"] == [] and (tmp_path / OLD).exists()
    assert "so ncclkit keeps it" in json.dumps(result.get("warnings"))


def test_check_mode_and_absent(capsys, tmp_path):
    host(tmp_path, {OLD: f"{KEY}=32768 60999\n"})
    code, result = run(capsys, tmp_path, _ansible_check_mode=True)
    assert code == 0 and result["changed"] and not (tmp_path / OURS).exists() and (tmp_path / OLD).exists()
    run(capsys, tmp_path)
    (tmp_path / "etc/sysctl.d/10-user.conf").write_text(f"{KEY} = 1024 65000\n")
    code, result = run(capsys, tmp_path, state="absent", port_range=None)
    assert code == 0 and result["removed"] == ["/" + OURS] and not (tmp_path / OURS).exists()
    assert (tmp_path / "etc/sysctl.d/10-user.conf").exists()
