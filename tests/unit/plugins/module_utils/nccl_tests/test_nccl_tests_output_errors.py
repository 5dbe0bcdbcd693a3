"""Inputs the nccl-tests parser refuses, each with a message naming the cause and the fix."""

import time

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import (
    DEFAULT_MAX_BYTES,
    NcclTestsParseError,
    parse,
    parse_file,
)
from conftest import SAMPLES


@pytest.mark.parametrize("data", ["", "  \n\t\n", b"", b"\xef\xbb\xbf\n"])
def test_empty_input(data):
    with pytest.raises(NcclTestsParseError, match="the input is empty.*stdout was captured"):
        parse(data)


@pytest.mark.parametrize("data", [b"\x7fELF\x02\x01\x01\x00\x00\x00", "# nThread 1\x00nGpus 1"])
def test_binary_input(data):
    with pytest.raises(NcclTestsParseError, match="binary .*NUL byte at offset .*not the executable"):
        parse(data)


def test_gzip_input():
    with pytest.raises(NcclTestsParseError, match="gzip-compressed.*zcat"):
        parse(b"\x1f\x8b\x08\x00\x00\x00\x00\x00")


def test_invalid_utf8():
    with pytest.raises(NcclTestsParseError, match=r"not UTF-8 text \(byte 0xff at offset 12\).*iconv"):
        parse(b"# nThread 1 \xff\xfe nGpus 1\n")


def test_over_the_size_limit_is_refused_quickly():
    data = b"#" * (100 * 1024 * 1024)
    started = time.monotonic()
    with pytest.raises(NcclTestsParseError, match="104857600 bytes, over the 67108864-byte limit"):
        parse(data)
    with pytest.raises(NcclTestsParseError, match="over the 1000-byte limit"):
        parse("x" * 1001, max_bytes=1000)
    assert time.monotonic() - started < 2


def test_a_large_file_is_refused_without_being_read(tmp_path):
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as handle:  # sparse: 100 MB on paper, nothing on disk
        handle.truncate(100 * 1024 * 1024)
    started = time.monotonic()
    with pytest.raises(NcclTestsParseError, match="huge.txt is 104857600 bytes, over the 67108864-byte limit"):
        parse_file(str(huge))
    assert time.monotonic() - started < 1
    assert DEFAULT_MAX_BYTES == 64 * 1024 * 1024


def test_the_limit_applies_to_files_too(tmp_path):
    sample = (SAMPLES / "h200-2host-socket-defaults.txt").read_bytes()
    path = tmp_path / "run.txt"
    path.write_bytes(sample)
    assert parse_file(str(path), max_bytes=len(sample))
    with pytest.raises(NcclTestsParseError, match="over the"):
        parse_file(str(path), max_bytes=len(sample) - 1)


@pytest.mark.parametrize("text", [
    "hello world\n", "total 0\ndrwxr-xr-x 2 root root 4096 .\n",
    "#!/bin/bash\n# a shell script\nmpirun ./all_reduce_perf\n",
])
def test_no_nccl_tests_table(text):
    with pytest.raises(NcclTestsParseError, match="no nccl-tests output found.*all_reduce_perf"):
        parse(text)


def test_no_table_but_failures_names_them():
    text = "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
    with pytest.raises(NcclTestsParseError, match="the input does show these failures: mpirun detected"):
        parse(text)


def test_missing_file():
    with pytest.raises(NcclTestsParseError, match="cannot read nccl-tests output /nonexistent/out.txt"):
        parse_file("/nonexistent/out.txt")


def test_a_directory(tmp_path):
    with pytest.raises(NcclTestsParseError, match="cannot read nccl-tests output"):
        parse_file(str(tmp_path))


@pytest.mark.parametrize("text, message", [
    ('{"version": 3, "results": [{"size": 8', "not valid JSON .*killed while writing.*text output"),
    ('{"version": 3, "results": {}}', "not an nccl-tests -J file"),
    ('{"foo": 1}', "not an nccl-tests -J file"),
    ("[" * 100000, "no nccl-tests output found"),
    ("{" + "[" * 100000, "not valid JSON"),
])
def test_broken_json(text, message):
    with pytest.raises(NcclTestsParseError, match=message):
        parse(text)


def test_neither_str_nor_bytes():
    with pytest.raises(NcclTestsParseError, match="must be str or bytes, not int"):
        parse(42)


def test_a_failure_line_without_its_host_still_counts():
    """A launcher or a cut line can leave "Test NCCL failure" without the host name before it."""
    text = (SAMPLES / "h200-2host-bad-socket-ifname.txt").read_text()
    text = text.replace("node0: Test NCCL failure", "Test NCCL failure").replace(".. node0 pid 2841: Test failure",
                                                                                 "Test failure")
    errors = parse(text)[0]["errors"]
    assert errors[:2] == ["Test NCCL failure common.cu:1550 'invalid usage (run with NCCL_DEBUG=WARN for details) / '",
                          "Test failure common.cu:1454"]
    with pytest.raises(NcclTestsParseError, match="the input does show these failures: Test NCCL failure common.cu:1"):
        parse("Test NCCL failure common.cu:1 'unhandled system error'\n")
