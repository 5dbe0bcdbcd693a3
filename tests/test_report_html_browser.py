"""report.html in a real headless Chromium (Debian's chromium, driven by Playwright with that system
browser): reports written by the real code path from recorded data render, with the title, a row
per host, the busbw chart with one path per measured run and its gate, the reachability grid, the
findings; every image loads; no console error and no request leaves the page. A screenshot of each
is kept under build/test-artifacts/.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils import report as nccl_report
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import read_nccl_log_files
from ansible_collections.ncclkit.cluster.plugins.module_utils.nccl_tests.output import parse_file, summarize
from conftest import REPO_ROOT, SAMPLES

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO_ROOT / "build" / "test-artifacts"

pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="the Debian package chromium is not installed (make setup installs it): report.html is checked "
           "in a real browser")

# Fields build_report adds to each run record; the rest is what the role recorded.
DERIVED = ("title", "passed", "reasons", "timed_out")


def recorded_h200_data():
    """What nccl_validate collected on the H200 (two simulated hosts), from the report it wrote."""
    report = json.loads((SAMPLES / "h200-validate-2simhosts-report.json").read_text())
    runs = [{key: value for key, value in run.items() if key not in DERIVED} for run in report["runs"]]
    return report, {"hosts": report["hosts"], "runs": runs, "settings": report["settings"]}


def h200_gated(_tmp_path):
    """The H200 runs, the multi-node one gated again from its raw output through the nccl_perf code."""
    report, data = recorded_h200_data()
    multi = next(run for run in data["runs"] if run["name"] == "multi")
    multi.update(min_busbw_gbps=2.5, perf=summarize(parse_file(str(SAMPLES / "h200-validate-2simhosts-multi.txt")),
                                                    expected_ranks=2, min_busbw_gbps=2.5))
    return nccl_report.build_report(data, created=report["created"])


def h200_bad_ifname(_tmp_path):
    """The same hosts, the multi-node run the one recorded with NCCL_SOCKET_IFNAME naming no NIC."""
    report, data = recorded_h200_data()
    log = SAMPLES / "h200-2host-bad-socket-ifname.txt"
    multi = next(run for run in data["runs"] if run["name"] == "multi")
    found = read_nccl_log_files([log])
    # The command and exit code its first line records.
    multi.update(rc=3, duration_s=None, raw=["raw/node0/multi.txt"],
                 command=["benchmarks/two_hosts_one_gpu_mpirun.sh", "-x", "NCCL_SOCKET_IFNAME=doesnotexist0", "-x",
                          "NCCL_DEBUG=INFO", "./build/all_reduce_perf", "-b", "8", "-e", "8", "-g", "1"],
                 perf=summarize(parse_file(str(log)), expected_ranks=2),
                 diagnosis={"findings": found["findings"], "hosts": found["hosts"]},
                 stderr_tail=[])
    return nccl_report.build_report(data, created=report["created"])


def lab_site_yml(tmp_path):
    """What site.yml wrote on a 2-node lab (network facts, firewall, the Gloo run), read back as
    `ncclkit report` reads a report folder."""
    shutil.copy(SAMPLES / "lab-site-2node-report.json", tmp_path / "report.json")
    return nccl_report.load_report(str(tmp_path))


CASES = {"h200-gated": h200_gated, "h200-bad-ifname": h200_bad_ifname, "lab-site": lab_site_yml}


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        # The system's Chromium, never a downloaded one; root in CI needs --no-sandbox.
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_html_renders_in_chromium(browser, tmp_path, case):
    (tmp_path / "recorded").mkdir()
    report = CASES[case](tmp_path / "recorded")
    folder = nccl_report.write_report(str(tmp_path / "reports"), "20261202T191011Z", report)
    page_path = Path(folder) / "report.html"
    assert page_path.is_file() and oct(page_path.stat().st_mode & 0o777) == "0o600"

    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors, failed, requests = [], [], []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(page_path.as_uri(), wait_until="load")

    assert page.title() == f"ncclkit validation report: {report['verdict'].upper()} ({report['created']} UTC)"
    for host in set(report["hosts"]) | set(report["network"]):
        row = page.locator(f'table.hosts tr[data-host="{host}"]')
        assert row.count() == 1 and row.is_visible() and row.locator("td").first.inner_text() == host
    measured = [run for run in report["runs"] if (run.get("perf") or {}).get("rows")]
    if measured:
        assert page.locator("svg.chart").is_visible()
        assert page.locator("svg.chart path.run").count() == len(measured)
        gated = [run for run in measured if any(gate["name"] == "min_busbw_gbps" and gate["limit"]
                                                for gate in run["perf"]["gates"])]
        assert page.locator("svg.chart line.gate").count() == len(gated)
        assert page.locator("svg.chart").bounding_box()["width"] > 500
    else:
        assert page.locator("svg.chart").count() == 0
    images = page.evaluate("Array.from(document.images, image => [image.alt, image.complete, image.naturalWidth])")
    assert images and all(complete and width > 0 for _alt, complete, width in images), images
    if report["reasons"]:
        root = page.locator("ol.reasons li.root").first.inner_text()
        assert " ".join(root.split()).startswith(" ".join(report["reasons"][0].split()))
    for run in report["runs"]:
        for finding in (run.get("diagnosis") or {}).get("findings") or []:
            assert page.get_by_text(finding["fix"], exact=True).count() >= 1
    pairs = nccl_report.reachability_rows(report["network"])
    assert page.locator("table.matrix td[data-pair]").count() == len(pairs)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / f"report-{case}.png"
    page.screenshot(path=str(screenshot), full_page=True)
    page.close()
    print(f"\nscreenshot of report.html ({case}): {screenshot}")
    assert errors == [] and failed == []
    assert requests == [page_path.as_uri()], f"the page loaded more than itself: {requests}"
