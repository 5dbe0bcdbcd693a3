import pytest

from ansible_collections.ncclkit.cluster.plugins.filter.host_inventory import nvidia_smi_gpus


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
