"""Where a report lives: the staging folder, the redaction of the raw outputs, the atomic write of
report.json, report.md and report.html, and reading a report back.

Pure Python 3.8+ standard library: the nccl_report module and the ncclkit package share it.

A report folder is <parent>/<name>/ with report.json, report.md, report.html and
raw/<host>/<files>, all for the owner only (0700/0600). It is built in a staging folder of its own,
<parent>/.<name>.<random>.partial/, and renamed into place in one step once complete.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
import time

from .html_page import render_html
from .markdown import render_markdown
from .redaction import redact_json_text
from .verdict import REPORT_VERSION, NcclReportError

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
RAW_DIR = "raw"
PLOT_PNG = "busbw.png"
PARTIAL_SUFFIX = ".partial"
# A staging folder untouched this long was left by an interrupted play (no play waits a day).
STALE_STAGING_S = 24 * 3600
# Staging folders nccl_validate makes: .<UTC timestamp>.<8 random>.partial, and earlier versions'
# .<UTC timestamp>[-N].partial (others are not ours to remove).
_STAGING_NAME = re.compile(r"^\.\d{8}T\d{6}Z(-\d+)?(\.[a-z0-9_]{8})?\.partial$")


# -- writing -------------------------------------------------------------------------------


def stage(parent, name, now=None):
    """Create a staging folder of its own for this run (two runs in the same second get two) with
    its raw/ folder, both 0700: the raw outputs fetched into it are the hosts' until redacted.
    Stale staging folders of interrupted plays are removed first. Returns the staging path."""
    _check_name(name)
    parent = os.path.abspath(parent)
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
        staging = tempfile.mkdtemp(prefix="." + name + ".", suffix=PARTIAL_SUFFIX, dir=parent)
        os.mkdir(os.path.join(staging, RAW_DIR), 0o700)
    except OSError as error:
        raise NcclReportError("cannot create a report folder in {0}: {1}; set nccl_validate_report_parent to a "
                              "folder the controller's user can write".format(parent, error.strerror or error))
    remove_stale_staging(parent, now)
    return staging


def remove_stale_staging(parent, now=None):
    """Remove .<timestamp>.<random>.partial folders untouched for STALE_STAGING_S: a play
    interrupted before writing its report left them; a running play's folder changes with each fetch."""
    now = time.time() if now is None else now
    parent = os.path.abspath(parent)
    for entry in os.listdir(parent):
        path = os.path.join(parent, entry)
        if _STAGING_NAME.match(entry) and os.path.isdir(path) and now - _newest_mtime(path) > STALE_STAGING_S:
            shutil.rmtree(path, ignore_errors=True)


def _newest_mtime(folder):
    newest = os.path.getmtime(folder)
    for root, dirs, files in os.walk(folder):
        for entry in dirs + files:
            try:
                newest = max(newest, os.lstat(os.path.join(root, entry)).st_mtime)
            except OSError:
                pass
    return newest


def _checked_staging(parent, name, staging):
    """The staging folder stage() made for this report, or NcclReportError: write_report removes
    it on failure, so it must be ours."""
    staging = os.path.abspath(staging)
    entry = os.path.basename(staging)
    if (os.path.dirname(staging) != os.path.abspath(parent) or not _STAGING_NAME.match(entry)
            or not entry.startswith("." + name + ".") or not os.path.isdir(staging)
            or os.path.islink(staging)):
        raise NcclReportError("{0} is not a staging folder of this report (made by state=staged for {1} in {2}): "
                              "pass the staging path that step returned".format(staging, name, parent))
    return staging


def write_report(parent, name, report, staging=None):
    """Redact the raw outputs, write report.json, report.md and report.html into the staging folder (stage()'s,
    or a new one), then rename it into place as <parent>/<name> (or <name>-2, -3 ...).

    Returns the final folder. On any error the staging folder is removed and NcclReportError
    raised: a report folder either is complete or does not exist, and no unredacted file stays.
    """
    _check_name(name)
    staging = stage(parent, name) if staging is None else _checked_staging(parent, name, staging)
    try:
        redact_raw_json(os.path.join(staging, RAW_DIR))
        _write_file(os.path.join(staging, REPORT_JSON), json.dumps(report, indent=2, sort_keys=True,
                                                                   allow_nan=False) + "\n")
        _write_file(os.path.join(staging, REPORT_MD), render_markdown(report))
        _write_file(os.path.join(staging, REPORT_HTML), render_html(report))
        _owner_only(staging)
        final = _rename_free(staging, os.path.join(os.path.abspath(parent), name))
        _fsync_dir(os.path.dirname(final))
    except Exception as error:  # RecursionError and MemoryError too: never leave the raw files
        shutil.rmtree(staging, ignore_errors=True)
        raise NcclReportError("could not write the report in {0}: {1}; nothing was left behind".format(
            parent, getattr(error, "strerror", None) or error or type(error).__name__))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _owner_only(folder):
    """Folders 0700, files 0600: fetch writes with the controller's umask."""
    os.chmod(folder, 0o700)
    for root, dirs, files in os.walk(folder):
        for entry in dirs:
            os.chmod(os.path.join(root, entry), 0o700)
        for entry in files:
            path = os.path.join(root, entry)
            if not os.path.islink(path):
                os.chmod(path, 0o600)


def _check_name(name):
    if not name or os.sep in name or name.startswith(".") or name in ("..",):
        raise NcclReportError("report name {0!r} must be a plain folder name such as 20261202T090419Z".format(name))


def _rename_free(source, path):
    """Rename source to path, or path-2, path-3 ...: the first name no other run took, even one
    that renamed its report into place a moment ago (a report folder is never empty, so renaming
    onto it fails rather than replaces it)."""
    number = 1
    while True:
        candidate = path if number == 1 else "{0}-{1}".format(path, number)
        if not os.path.lexists(candidate):
            try:
                os.rename(source, candidate)
                return candidate
            except OSError as error:
                if error.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
        number += 1


def _write_file(path, text):
    folder = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _fsync_dir(folder):
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# -- redaction of the raw outputs ----------------------------------------------------------


def redact_raw_file(path):
    """Rewrite one raw -J file in place, redacted (see redact_json_text); 0600."""
    with open(path, encoding="utf-8", errors="replace") as stream:
        text = stream.read()
    redacted, _removed = redact_json_text(text)
    _write_file(path, redacted)


def redact_raw_json(raw_dir):
    """nccl-tests' -J files record the launching process's whole environment (cloud credentials
    included); in the report they keep only the allow-listed NCCL/CUDA/MPI names."""
    for folder, _dirs, files in os.walk(raw_dir):
        for file_name in files:
            if file_name.endswith(".json"):
                redact_raw_file(os.path.join(folder, file_name))


# -- reading -------------------------------------------------------------------------------


def report_folder(path):
    """The report folder of a path naming it or its report.json: the plot goes beside report.json."""
    path = str(path)
    return os.path.dirname(os.path.abspath(path)) if os.path.basename(path) == REPORT_JSON else path


def load_report(report_dir):
    """The report dict of a report folder (or of its report.json)."""
    path = os.path.join(report_folder(report_dir), REPORT_JSON)
    try:
        with open(path, encoding="utf-8") as stream:
            report = json.load(stream)
    except FileNotFoundError:
        raise NcclReportError("{0} does not exist: pass a folder that nccl_validate wrote "
                              "(ncclkit-report/<UTC timestamp>/)".format(path))
    except (OSError, ValueError) as error:
        raise NcclReportError("cannot read {0}: {1}".format(path, getattr(error, "strerror", None) or error))
    if not isinstance(report, dict) or report.get("report_version") != REPORT_VERSION \
            or not isinstance(report.get("runs"), list):
        raise NcclReportError("{0} is not an ncclkit report (report_version {1} with a runs list expected)"
                              .format(path, REPORT_VERSION))
    return report
