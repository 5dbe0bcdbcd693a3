"""The report's autotune section (nccl_validate's tasks/autotune.yml): one summary line and the
candidates' table, shared by report.md and report.html."""

from __future__ import annotations

COLUMNS = ("candidate", "median GB/s", "spread", "vs defaults", "beats the defaults", "failed")


def _tuning(tuning):
    return " ".join("{0}={1}".format(name, value) for name, value in sorted((tuning or {}).items())) or "NCCL's defaults"


def _ratio(remeasure):
    if not isinstance(remeasure, dict) or remeasure.get("ratio") is None:
        return ""
    return " Measured again against the defaults with the same launcher: {0}x (from {1}x to {2}x).".format(
        remeasure["ratio"], remeasure.get("low"), remeasure.get("high"))


def summary(autotune):
    """One sentence: what the autotune did, the tuning the profile got and the ratio with its spread."""
    status = autotune.get("status")
    if status not in ("measured", "kept", "not run"):
        return ""
    if status == "not run":
        return "Not run: {0}.".format(autotune.get("reason", ""))
    tuning = _tuning(autotune.get("tuning"))
    if status == "kept":
        return "Kept from an earlier run for this hardware ({0}): {1}; {2}.{3}".format(
            autotune.get("reason", ""), tuning, autotune.get("decision_reason", ""), _ratio(autotune.get("remeasure")))
    return "Measured ({0}; {1} repetitions of {2}, transport {3}): the profile gets {4}; {5}.{6}".format(
        autotune.get("reason", ""), autotune.get("repetitions"), autotune.get("bytes"), autotune.get("transport"),
        tuning, autotune.get("decision_reason", ""), _ratio(autotune.get("remeasure")))


def rows(autotune):
    """The candidates' table as rows of strings, in COLUMNS' order."""
    table = []
    for row in autotune.get("candidates") or []:
        if not isinstance(row, dict):
            continue
        table.append([str(row.get("name")), _num(row.get("median")), _num(row.get("spread")),
                      "" if row.get("margin") is None else "{0:+.2f}".format(row["margin"]),
                      "yes" if row.get("beats") else "no", str(row.get("failed") or 0)])
    return table


def _num(value):
    return "-" if value is None else "{0:.2f}".format(float(value))
