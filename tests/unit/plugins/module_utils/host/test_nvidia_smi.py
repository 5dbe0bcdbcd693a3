"""nvidia-smi's GPU list: the parser and the reader nccl_host_survey runs."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.host.gpus import GPU_FIELDS, GPU_QUERY, read_gpus
from ansible_collections.ncclkit.cluster.plugins.module_utils.host.gpus import parse_gpus as nvidia_smi_gpus
from fake_tools import fake_smi


def test_nvidia_smi_gpus_parses_csv_rows():
    rows = [
        "0, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:06.0",
        "1, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:07.0",
        "",
    ]
    gpus = nvidia_smi_gpus(rows)
    assert [gpu["index"] for gpu in gpus] == [0, 1]
    assert gpus[0] == {
        "index": 0, "name": "NVIDIA H200", "compute_cap": "9.0", "driver_version": "580.159.04",
        "memory_total_mib": 143771, "pci_bus_id": "00000000:00:06.0",
    }


def test_nvidia_smi_gpus_names_the_bad_row():
    with pytest.raises(ValueError, match="expected 6 comma-separated fields"):
        nvidia_smi_gpus(["No devices were found"])


def test_read_gpus_asks_for_the_parsed_fields(tmp_path):
    smi = fake_smi(tmp_path, 'echo "$@" > "$(dirname "$0")/args"; '
                             'echo "0, NVIDIA H200, 9.0, 580.159.04, 143771, 00000000:00:06.0"')
    gpus, reason = read_gpus(smi)
    assert reason == "" and [gpu["name"] for gpu in gpus] == ["NVIDIA H200"]
    assert (tmp_path / "args").read_text().split() == [f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"]
    assert len(GPU_QUERY.split(",")) == len(GPU_FIELDS)


def test_read_gpus_says_why_there_are_none(tmp_path):
    assert read_gpus(str(tmp_path / "absent-smi")) == ([], f"{tmp_path}/absent-smi not found")
    message = "NVIDIA-SMI has failed because it could not communicate with the driver"
    failing = fake_smi(tmp_path, f"echo '{message}' >&2; exit 9")
    assert read_gpus(failing)[1] == f"{failing} failed: {message}"
    silent = fake_smi(tmp_path, "exit 0")
    assert read_gpus(silent) == ([], f"{silent} failed: it listed no GPUs")
