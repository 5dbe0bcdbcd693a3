"""The nccl_validate report, one name for its parts (the nccl_report module and the ncclkit package
import from here). Each part has one job:

- nccl_report_verdict: the run records and facts -> the report dict, its reasons (root cause
  first) and summary line.
- nccl_report_markdown, nccl_report_html (with nccl_report_chart's SVG) and nccl_report_values:
  the renderings, report.md and the self-contained report.html.
- nccl_report_storage (with nccl_report_redaction): the staging folder, the redaction of the raw
  outputs, the atomic write of the report folder, reading a report back.

Pure Python 3.8+ standard library.
"""

from __future__ import annotations

from .nccl_report_chart import busbw_svg
from .nccl_report_html import reachability_rows, render_html
from .nccl_report_markdown import render_markdown
from .nccl_report_redaction import redact_json_text
from .nccl_report_storage import (
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
from .nccl_report_values import bandwidth_lines, bandwidth_series, human_size
from .nccl_report_verdict import (
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
