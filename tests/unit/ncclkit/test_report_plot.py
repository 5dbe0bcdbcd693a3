"""`ncclkit report DIR` and the plot after `ncclkit run`: a PNG made from report.json's rows."""

import json
import sys

from ansible_collections.ncclkit.cluster.plugins.module_utils import report as nccl_report
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file, summarize
from conftest import SAMPLES
from ncclkit.cli import main
from ncclkit.plot import bandwidth_figure

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write(tmp_path, *samples):
    runs = [{"name": "multi" if index == 0 else "single", "host": f"node{index + 1}", "hosts": ["node1", "node2"],
             "rc": 0, "perf": summarize(parse_file(str(SAMPLES / sample))) if sample else None}
            for index, sample in enumerate(samples)]
    report = nccl_report.build_report({"hosts": {"node1": {"gpus": 1}}, "runs": runs})
    return nccl_report.write_report(str(tmp_path), "20261202T090419Z", report)


def test_the_figure_holds_the_rows_of_each_run(tmp_path):
    folder = write(tmp_path, "h200-2host-socket-defaults.txt", "perf-a3mega-h100-16rank-2node.txt")
    figure = bandwidth_figure(nccl_report.load_report(folder))
    lines = {line.get_label(): line.get_xydata().tolist() for line in figure.axes[0].get_lines()}
    assert lines["multi-node across node1, node2"] == [[1048576, 2.22], [8388608, 3.13], [67108864, 3.29],
                                                       [536870912, 2.99]]
    assert lines["single-node on node2"][-1] == [8589934592, 338.82] and len(lines["single-node on node2"]) == 31
    assert figure.axes[0].get_xscale() == "log"


def test_ncclkit_report_writes_a_valid_png_beside_report_md(tmp_path, capsys):
    folder = write(tmp_path, "h200-2host-socket-defaults.txt")
    assert main(["report", folder]) == 0
    png = tmp_path / "20261202T090419Z" / "busbw.png"
    assert capsys.readouterr().out == f"ncclkit report: wrote {png}\n"
    from matplotlib import image

    assert png.read_bytes()[:8] == PNG_MAGIC
    height, width, dummy = image.imread(str(png)).shape
    assert (width, height) == (900, 500)
    assert [path.name for path in png.parent.iterdir() if path.name.startswith(".")] == []


def test_ncclkit_report_takes_the_report_json_too(tmp_path, capsys):
    folder = write(tmp_path, "h200-2host-socket-defaults.txt")
    assert main(["report", folder + "/report.json"]) == 0, capsys.readouterr().err
    png = tmp_path / "20261202T090419Z" / "busbw.png"
    assert capsys.readouterr().out == f"ncclkit report: wrote {png}\n"
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_a_report_without_rows_is_a_clear_error(tmp_path, capsys):
    folder = write(tmp_path, None)
    assert main(["report", folder]) == 3
    assert "the report has no measured rows" in capsys.readouterr().err
    assert not (tmp_path / "20261202T090419Z" / "busbw.png").exists()
    assert main(["report", str(tmp_path / "missing")]) == 3
    assert "does not exist: pass a folder that nccl_validate wrote" in capsys.readouterr().err


PLAYBOOK = """
- name: Write a report as nccl_validate does
  hosts: cluster
  gather_facts: false
  tasks:
    - name: Write it
      ncclkit.cluster.nccl_report:
        parent: "{{ lookup('env', 'PWD') }}/ncclkit-report"
        name: 20261202T090419Z
        data: "{{ lookup('file', data_file) | from_json }}"
      delegate_to: localhost
      run_once: true
"""


def test_ncclkit_run_plots_the_report_the_play_wrote(tmp_path, monkeypatch, capsys):
    report_data = {"hosts": {"probe1": {"gpus": 1}}, "runs": [
        {"name": "single", "host": "probe1", "rc": 0,
         "perf": summarize(parse_file(str(SAMPLES / "h200-2host-socket-defaults.txt")))}]}
    (tmp_path / "data.json").write_text(json.dumps(report_data))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    (tmp_path / "hosts.yml").write_text("cluster:\n  hosts:\n    probe1:\n      ansible_connection: local\n"
                                        f"      ansible_python_interpreter: {sys.executable}\n")
    monkeypatch.chdir(tmp_path)
    code = main(["run", "-i", "hosts.yml", "--playbook", "play.yml", "-e", f"data_file={tmp_path / 'data.json'}"])
    printed = capsys.readouterr().out
    folder = tmp_path / "ncclkit-report" / "20261202T090419Z"
    assert code == 0, printed
    assert f"report: {folder} (plot: {folder / 'busbw.png'})" in printed
    assert "TASK [Write it]" in (folder / "ansible-run.log").read_text()   # the run's log beside its report
    assert (folder / "busbw.png").read_bytes()[:8] == PNG_MAGIC
