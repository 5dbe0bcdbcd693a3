"""The nccl_validate report, one name for its parts (the nccl_report module and the ncclkit package
import from here). Each part has one job:

- report.verdict: the run records and facts -> the report dict, its reasons (root cause
  first) and summary line.
- report.markdown, report.html_page (with report.chart's SVG) and report.values:
  the renderings, report.md and the self-contained report.html.
- report.storage (with report.redaction): the staging folder, the redaction of the raw
  outputs, the atomic write of the report folder, reading a report back.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

from .chart import busbw_svg
from .html_page import reachability_rows, render_html
from .markdown import render_markdown
from .redaction import redact_json_text
from .storage import (
    PARTIAL_SUFFIX,
    PLOT_PNG,
    RAW_DIR,
    REPORT_HTML,
    REPORT_JSON,
    REPORT_MD,
    STALE_STAGING_S,
    load_report,
    redact_raw_file,
    redact_raw_json,
    remove_stale_staging,
    report_folder,
    stage,
    write_report,
)
from .values import bandwidth_lines, bandwidth_series, human_size
from .verdict import (
    GLOO_RUN,
    KILLED_RC,
    NCCL_NOT_EXERCISED,
    REPORT_VERSION,
    ROOT_CAUSE_CODES,
    TIMEOUT_RC,
    TRANSPORT_FALLBACK_CODES,
    NcclReportError,
    build_report,
    diagnosis_lines,
    network_verdict,
    root_cause,
    run_title,
    run_verdict,
    summary_line,
    timed_out,
    unrecorded_runs,
)

__all__ = [
    "GLOO_RUN", "KILLED_RC", "NCCL_NOT_EXERCISED", "NcclReportError", "PARTIAL_SUFFIX", "PLOT_PNG", "RAW_DIR",
    "REPORT_HTML", "REPORT_JSON", "REPORT_MD", "REPORT_VERSION", "ROOT_CAUSE_CODES", "STALE_STAGING_S",
    "TIMEOUT_RC", "TRANSPORT_FALLBACK_CODES", "bandwidth_lines", "bandwidth_series", "build_report",
    "busbw_svg", "diagnosis_lines", "human_size", "load_report", "network_verdict", "reachability_rows",
    "redact_json_text", "redact_raw_file", "redact_raw_json", "remove_stale_staging", "render_html",
    "render_markdown", "report_folder", "root_cause", "run_title", "run_verdict", "stage", "summary_line",
    "timed_out", "unrecorded_runs", "write_report",
]
