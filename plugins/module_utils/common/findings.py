"""The one shape of a finding, whoever makes it: `ncclkit check`, the network's link and
reachability verdicts, nccl_validate's gates and the log rules of the diagnosis.

A finding is a dict (facts and JSON carry it as is):
- code: stable, documented (docs/check.md, docs/diagnosis.md); codes are added, never renamed.
- severity: "error" (training fails or hangs), "warning" (slower, or fails later), "info".
- cause, fix: one sentence each, naming what a person can look at and change.
- host, rank: where it was seen (None when it is the cluster's, or unknown).
- confidence: "high" when the evidence names the cause, "low" when it only points at it (the
  cause then says what to collect next).
- evidence: the lines or values it rests on; consequence_of: the code of the root cause a
  consequence follows from.
Other keys a maker needs (source and target of a pair, ports) ride along unchanged.

Pure Python standard library.
"""

from __future__ import annotations

SEVERITIES = ("error", "warning", "info")
CONFIDENCES = ("high", "low")


def finding(code: str, severity: str, cause: str, fix: str, host=None, rank=None, evidence=(),
            consequence_of=None, confidence: str = "high", **extra) -> dict:
    """A finding dict; ValueError on a severity or confidence outside the vocabulary."""
    if severity not in SEVERITIES:
        raise ValueError(f"finding {code}: severity {severity!r} is not one of {', '.join(SEVERITIES)}")
    if confidence not in CONFIDENCES:
        raise ValueError(f"finding {code}: confidence {confidence!r} is not one of {', '.join(CONFIDENCES)}")
    made = {"code": code, "severity": severity, "host": host, "rank": rank, "cause": cause, "fix": fix,
            "confidence": confidence, "evidence": list(evidence), "consequence_of": consequence_of}
    made.update(extra)
    return made
