"""benchmarks/process_cpu.py: the process accounting reader that splits a site.yml run's CPU seconds
into the controller's and the lab nodes' (benchmarks/site_scale.py --cpu)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import process_cpu  # noqa: E402


def record(command: bytes, utime: int, stime: int, version: int = 3) -> bytes:
    return process_cpu.RECORD.pack(0, version, 0, 0, 0, 0, 1, 1, 0, 0.0, utime, stime, 0, 0, 0, 0, 0, 0,
                                   command)


def test_a_record_is_the_kernels_64_bytes():
    assert process_cpu.RECORD.size == 64


@pytest.mark.parametrize(("encoded", "ticks"), [(0, 0), (150, 150), (0x1FFF, 8191), ((1 << 13) | 100, 800),
                                                ((2 << 13) | 3, 192)])
def test_comp_t_is_a_base_8_float(encoded, ticks):
    assert process_cpu.comp_t(encoded) == ticks


def test_cpu_is_summed_by_command_and_split_controller_from_nodes(tmp_path):
    pacct = tmp_path / "pacct"
    pacct.write_bytes(record(b"ansible-playboo", 150, 50) + record(b"ansible-playboo", 100, 0)
                      + record(b"ssh", 10, 10) + record(b"python3", 30, 20) + record(b"iperf3", (1 << 13) | 10, 0))
    seconds = process_cpu.cpu_by_command(pacct)
    assert seconds["ansible-playboo"] == pytest.approx(3.0)
    assert seconds["python3"] == pytest.approx(0.5)
    assert seconds["iperf3"] == pytest.approx(0.8)
    controller, nodes = process_cpu.controller_and_nodes(seconds)
    assert controller == pytest.approx(3.2)
    assert nodes == pytest.approx(1.3)


def test_another_record_version_is_refused(tmp_path):
    pacct = tmp_path / "pacct"
    pacct.write_bytes(record(b"bash", 1, 1, version=2))
    with pytest.raises(ValueError, match="acct version 2, not 3"):
        process_cpu.cpu_by_command(pacct)
