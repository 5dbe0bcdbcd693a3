"""site.yml with ncclkit_cloud: aws on a 2-node lab (index 100) against moto on loopback: apply
for real; the IMDSv2 stand-in refuses a request without a token."""

from __future__ import annotations

import sys

import pytest
from lab_indices import lab_index

from .aws_lab import aws_lab_cluster, run_site, secrets_in
from .conftest import group_rules

pytestmark = pytest.mark.lab
INDEX = lab_index(__file__)


@pytest.fixture(scope="module")
def aws_lab(tmp_path_factory, ec2):
    yield from aws_lab_cluster(INDEX, tmp_path_factory, ec2)


def test_site_apply_on_the_lab(aws_lab, ec2, ec2_api, credentials):
    """apply adds the three missing inbound rules; audit and --check run in test_aws_check_lab.py."""
    lab, inventory, cluster = aws_lab
    # A request without the token is refused, as EC2 refuses it.
    refused = lab.exec("node1", [sys.executable, "-c", "import urllib.request as u;"
                                 "u.urlopen('http://169.254.169.254/latest/meta-data/instance-id', timeout=2)"],
                       capture_output=True, text=True)
    assert "HTTP Error 401" in refused.stderr
    before = group_rules(ec2, cluster["group"])
    rc, output, seconds = run_site(inventory, ec2_api.url, credentials, "apply")
    assert rc == 0, output
    after = group_rules(ec2, cluster["group"])
    assert len(after["in"]) == len(before["in"]) + 3
    assert f"security group {cluster['group']}: missing TCP 32768-60999 inbound from" in output
    # nccl_validate wrote its report folder (it ran nothing without GPUs): no credential in it either.
    reports = [path for path in (inventory / "reports").rglob("*") if path.is_file()]
    assert reports, "no report folder was written"
    assert secrets_in(credentials, [output], inventory / "reports") == []
    print(f"site.yml apply on lab {INDEX}: inbound rules {len(before['in'])} -> {len(after['in'])}, "
          f"apply took {seconds:.0f} s; {len(reports)} report file(s) free of the planted credentials")
