"""The root cause of a failed or hung job, from the evidence of all its logs together.

Pure Python 3.8+ standard library. diagnosis.log reads the lines (per-line findings and JobEvidence);
judge() then adds the findings only the whole job shows and orders everything root cause first:

- a rank that died (mpirun/srun "exited on signal", torchrun's ChildFailedError, the kernel's OOM
  killer) is `rank_killed` (a signal) or `rank_failed` (an exit code), naming rank, host, signal;
- a job whose ranks all finished NCCL init but then stopped (torch's watchdog timeout, forensics
  showing a stopped process, RAS naming a missing rank, flight-recorder dumps out of step) is
  `hang_in_collective`, naming the suspect rank;
- a job that announced its distributed start but where no communicator finished init, with no
  error, is `hang_in_rendezvous`.
What follows from a root (connection closed by the dead peer, ncclRemoteError, the watchdog's
timeout, a CUDA error after the abort) keeps its own finding with `consequence_of` set to the
root's code, and is listed after every independent finding.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from .compare import FIX_SETTINGS, desync_finding
from .file_names import file_host
from .rules import FIX_NIC, FIX_PORTS, PRIORITY, sort_key
from .job import STUCK_STATES, file_stem, signal_name
from .timeline import earlier

_RANK_OF = {code: index for index, code in enumerate(PRIORITY)}

# Findings that a dead or stuck peer produces on the ranks still running.
CONSEQUENCES = frozenset((
    "remote_exited", "connect_refused", "connect_timeout", "connect_failed", "retry_exceeded",
    "nccl_system_error", "nccl_internal_error", "cuda_error", "test_nccl_failure", "child_failed",
    "collective_timeout", "nccl_warning", "gloo_connect_failed", "ib_completion_error",
    "rank_killed", "rank_failed", "rendezvous_timeout", "rendezvous_connection_error", "no_route",
))
FOLLOWERS = frozenset(("test_nccl_failure", "child_failed"))
ROOT_CODES = ("rank_killed", "rank_failed", "hang_in_collective", "hang_in_rendezvous")
# Codes this engine makes from the whole job rather than from one line's rule.
JOB_CODES = ROOT_CODES + ("oom_killed", "cuda_oom", "rank_exception", "collective_desync", "incomplete_run",
                          "completion_unknown", "runtime_version_mismatch", "nccl_setting_mismatch")
# Signals a launcher or torch's watchdog sends to ranks after another failed: weaker roots.
_SECONDARY_SIGNALS = (6, 15)

FIX_KILLED = ("find who sent the signal: the kernel's OOM killer (`dmesg -T | grep -i -e oom -e 'killed process'` "
              "on that host), a scheduler enforcing a memory or time limit, or a person; if it was memory, "
              "lower the batch size or give the job more memory")
FIX_CRASHED = ("read that rank's own output for its first error or traceback; enable core dumps "
               "(ulimit -c unlimited) and check `dmesg` for Xid errors on that host")
FIX_FAILED = "read that rank's own output: its first error or Python traceback is the cause"
FIX_COLLECTIVE = ("the network is not the cause (every rank connected): look at the suspect rank: a stopped "
                  "process (SIGSTOP, a debugger, Ctrl-Z: `kill -CONT PID`), a process blocked in I/O or the "
                  "driver (state D: `dmesg` for Xid), or a rank that took another code path and never called "
                  "this collective (data-dependent branches, uneven batches); take `py-spy dump --pid PID` of "
                  "every rank, and enable TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 to "
                  "record which collective each rank reached")
FIX_RENDEZVOUS_HANG = ("pin GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME to the cluster NIC on every node "
                       "(e.g. GLOO_SOCKET_IFNAME=eth1 NCCL_SOCKET_IFNAME=eth1), set MASTER_ADDR to the "
                       "master's address on the cluster network, and make each hostname resolve to its "
                       "cluster address; " + FIX_PORTS + "; `ncclkit check -i INVENTORY` tests all of this "
                       "before training")


OWN_CODES = ("oom_killed", "cuda_oom", "rank_exception")
# Warnings about the setup that explain the connection failures that follow them: then they are the root.
EXPLAINING = ("virtual_nic", "loopback_nic", "efa_missing", "nic_outside_cluster")
CONNECTION_FAILURES = frozenset((
    "connect_refused", "connect_timeout", "no_route", "connect_failed", "retry_exceeded", "gloo_connect_failed",
    "rendezvous_timeout", "rendezvous_connection_error",
))
# Failures NCCL reports when it could not connect, but also later for other reasons.
_INIT_FAILURES = frozenset(("nccl_system_error", "nccl_internal_error", "remote_exited"))
# Errors about the setup or the program that come before anything the network does with them.
_SETUP_LAST = PRIORITY.index("collective_desync")
FIX_INCOMPLETE = ("find why it stopped: read the launcher's output and `dmesg -T` on every host (OOM kills, Xid "
                  "errors), check whether a rank is stopped or stuck (`py-spy dump --pid PID`), and collect every "
                  "rank's log with NCCL_DEBUG=INFO and TORCH_NCCL_DUMP_ON_TIMEOUT=1 for the next run")


def judge(findings: List[dict], job, dumps_verdict: Optional[dict], ras_problems: List[dict],
          settle_host, stages=None) -> List[dict]:
    """All findings, root causes first; settle_host(host_or_None) names a host for unnamed lines.

    stages: diagnosis.stages.Stages of the log, to tell a run that stopped from one that finished.
    """
    findings = [dict(f, rank=f.get("rank"), consequence_of=f.get("consequence_of")) for f in findings]
    desync = desync_finding(job.timeouts, job.ranks)
    if desync:
        findings.append(dict(desync, count=1))
        findings.extend(_oom_behind_desync(desync, job))
    _fingerprint_minority(findings, job)
    _sshd_port_taken(findings)
    _same_collective_other_sizes(findings, job)
    roots = _death_findings(job, settle_host)
    root = _own_root(findings, roots) or _setup_root(findings, roots, job) or _stopped_from_outside(findings, job)
    if root is not None:
        return _pending_pod(_recovered(_around(root, findings, roots), stages), job)
    return _pending_pod(_recovered(_job_root(findings, job, dumps_verdict, ras_problems, settle_host, roots, stages),
                                   stages), job)


def _stopped_from_outside(findings: List[dict], job) -> Optional[dict]:
    """The job was stopped by its scheduler (Slurm's preemption) or one node's launcher was told to stop
    (SIGTERM) before any error: the others' errors follow from that, not from the network."""
    if job.preempted is not None:
        return dict(job.preempted, code="rank_killed", severity="error", host=None, rank=None, count=1,
                    consequence_of=None, cause="Slurm stopped the job: its allocation was taken for another job "
                    "(preemption); every rank got SIGTERM, and the errors after it follow from that",
                    fix="run in a partition or QOS that is not preempted, or make the job checkpoint and requeue on "
                        "SIGTERM (`#SBATCH --requeue`, a signal handler that saves)")
    if not job.terminated:
        return None
    first = min(job.terminated, key=lambda o: (o.get("time") is None, o.get("time") or 0))
    errors = [f for f in findings if f["severity"] == "error" and f.get("time") is not None]
    if first.get("time") is None or any(earlier(f["time"], first["time"]) for f in errors):
        return None  # an error came first: the SIGTERM is the job being stopped after it
    host = file_host(first.get("source"))
    return dict(first, code="rank_killed", severity="error", host=host, rank=None, count=1, consequence_of=None,
                cause=f"torchrun on {host or 'one node'} received SIGTERM before any rank failed (the node or the "
                      "job was stopped from outside: a preemption, a node shutdown or drain, a cancel), and the other "
                      "ranks' errors follow from its ranks' exit",
                fix="look at why that node was stopped (the cloud's preemption or maintenance events, `kubectl "
                    "describe pod`, the scheduler's log); for spot or preemptible nodes checkpoint often and restart "
                    "the job on a fresh node")


# Failures of ranks that wait for a node that never came.
_NEVER_JOINED = frozenset(("hang_in_rendezvous", "rendezvous_timeout", "rendezvous_connection_error", "connect_timeout"))


def _pending_pod(findings: List[dict], job) -> List[dict]:
    """A pod `kubectl describe` shows still Pending is the node the others waited for at the rendezvous:
    never scheduled (the cause is its scheduling events), or its image could not be pulled (a launch
    failure, with the kubelet's words)."""
    root = findings[0] if findings and findings[0]["severity"] == "error" else None
    if root is None or root["code"] not in _NEVER_JOINED or len(job.pending_pods) != 1:
        return findings
    pod, pending = next(iter(job.pending_pods.items()))
    if pending["pull"]:
        root.update(code="launch_failed", host=pod, rank=None,
                    cause=f"pod {pod} never started (Pending): its image could not be pulled: {pending['pull']}; the "
                          f"other ranks waited for it ({root['code']})",
                    fix="free the node's disk or fix the image reference and registry access (`kubectl describe pod` "
                        "events), then restart the job")
    else:
        root.update(host=pod, rank=None,
                    cause=f"{root['cause']}; pod {pod} is Pending (never scheduled"
                          + (f": {pending['why']}" if pending["why"] else "") + ")",
                    fix="give the job the resources every pod needs at once (GPUs, node selector, a gang-scheduling "
                        "minimum it can reach), or fewer nodes; `kubectl describe pod` shows why it is not scheduled")
    return findings


def _fingerprint_minority(findings: List[dict], job) -> None:
    """torch's desync check names two ranks' collectives per message; across all of them, the ranks whose
    collective differs from most ranks' are the odd ones (a node with another config, a rank on another
    code path): the first collective_desync finding is put on them, with the fields that differ."""
    groups: Dict[str, List[int]] = {}
    for rank, printed in job.fingerprints.items():
        groups.setdefault(printed, []).append(rank)
    if len(groups) < 2:
        return
    ordered = sorted(groups.items(), key=lambda item: len(item[1]))
    (odd_print, odd), (common_print, common) = ordered[0], ordered[-1]
    if len(odd) >= len(common):
        return  # no majority: nothing says which side is odd
    desyncs = [f for f in findings if f["code"] == "collective_desync"]
    if not desyncs:
        return
    hosts_of = {f["rank"]: f["host"] for f in desyncs if f.get("rank") is not None and f.get("host")}
    hosts_of.update({rank: info["host"] for rank, info in job.ranks.items() if info.get("host")})
    hosts = sorted({hosts_of[rank] for rank in odd if rank in hosts_of})
    mine, theirs = dict(_fields(odd_print)), dict(_fields(common_print))
    differ = ", ".join(f"{key}={mine.get(key)} where the others have {theirs.get(key)}"
                       for key in mine if mine.get(key) != theirs.get(key)) or odd_print
    ranks = sorted(odd)
    named = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {_span(ranks)}"
    where = f" on {', '.join(hosts)}" if hosts else ""
    root = desyncs[0]
    root.update(host=hosts[0] if len(hosts) == 1 else root["host"], rank=ranks[0] if len(ranks) == 1 else None,
                cause=f"torch (TORCH_DISTRIBUTED_DEBUG=DETAIL) found the ranks in different collectives (a desync): "
                      f"{named}{where} call their collective with {differ} ({len(common)} ranks agree on "
                      f"CollectiveFingerPrint({common_print})): that side runs another configuration or code path")


def _fields(printed: str) -> List[tuple]:
    """"SequenceNumber=7, OpType=X, TensorShape=[1, 2], TensorDtypes=Half" as (key, value) pairs."""
    return re.findall(r"(\w+)=(\[[^\]]*\]|[^,]+)", printed)


def _span(ranks: List[int]) -> str:
    """[16, 17, 18, 19] -> "16-19"; [3, 5] -> "3, 5"."""
    if ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


def _oom_behind_desync(desync: dict, job) -> List[dict]:
    """The out-of-step rank's GPU ran out of memory first (a trainer that catches the OOM and skips the
    step, as fairseq does, calls one collective fewer): that OOM is the rank's own error, the desync its
    consequence."""
    host = desync.get("host")
    for source, origin in job.gpu_oom.items():
        # The file the out-of-step rank's own timeout came from, or one whose NCCL lines are its host's.
        if host and (source == desync.get("source") or host in job.source_hosts.get(source, ())):
            quoted = origin["evidence"].strip()[:200]
            return [dict(origin, code="cuda_oom", severity="error", host=host, rank=desync.get("rank"), count=1,
                         consequence_of=None,
                         cause=f"rank {desync.get('rank')} on {host} ran out of GPU memory ({quoted}) and then went out "
                               f"of step with the other ranks: {desync['cause']}",
                         fix="lower the memory per GPU (a smaller batch, activation checkpointing, "
                             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True); a trainer that skips a step after an "
                             "OOM must skip it on every rank, or stop")]
    return []


def _recovered(findings: List[dict], stages) -> List[dict]:
    """Errors the job went on from: where a line after them says the work finished well (torchrun's
    worker group after an elastic restart, a trainer's end), they were caught or recovered from, and
    are warnings. Errors after that line, or without one, stay."""
    ends = getattr(stages, "success", None) if stages is not None else None
    if not ends:
        return findings
    for finding in findings:
        # The end in the finding's own file (or its task's other file), by line; else any file's, by the clocks.
        stem = file_stem(finding.get("source"))
        end = ends.get(finding.get("source")) or next((e for where, e in ends.items() if file_stem(where) == stem), None) \
            or max(ends.values(), key=lambda e: e.get("time") or 0)
        if finding["severity"] == "error" and _before(finding, end):
            finding.update(severity="warning", consequence_of=None,
                           cause=f"recovered (the job went on and finished after it: {end['evidence'][:120]}): "
                                 f"{finding['cause']}")
    return [f for f in findings if f["severity"] == "error"] + [f for f in findings if f["severity"] != "error"]


def _before(finding: dict, end: dict) -> bool:
    """Whether the finding's line came before `end`: in the same file by line, else by the clocks."""
    if finding.get("source") and finding.get("source") == end.get("source") and finding.get("line") and end.get("line"):
        return finding["line"] < end["line"]
    if finding.get("source") and file_stem(finding["source"]) == file_stem(end.get("source")) \
            and not earlier(end.get("time"), finding.get("time")):
        return True  # a task's other file (its .err beside the .out that says it completed): nothing comes after
    return earlier(finding.get("time"), end.get("time"))


# Which host's settings differ is not in such logs: the fix says where to look.
FIX_SETTINGS_DIFFER = (FIX_SETTINGS + "; to find the host, compare `env | grep ^NCCL_`, /etc/nccl.conf and "
                       "~/.nccl.conf on every host, or rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV (each "
                       "rank's `set by environment` lines)")


def _same_collective_other_sizes(findings: List[dict], job) -> None:
    """NCCL's "message truncated" where torch shows every rank in the same collective (SeqNum, OpType) with
    the same number of elements: the program agrees, NCCL's messages do not, so the ranks' NCCL settings
    differ (a protocol, algorithm or buffer size set on some hosts only), not their collectives."""
    works = set(job.works.values())
    if len(job.works) < 2 or len(works) != 1 or next(iter(works))[2] is None:
        return
    seq, op, numel = next(iter(works))
    for finding in findings:
        evidence = finding.get("evidence") or ""
        if finding["code"] == "collective_desync" and "truncated" in evidence:
            sizes = evidence.split("truncated", 1)[1].split(".", 1)[0].strip(" :")[:80]
            finding.update(code="nccl_setting_mismatch", cause=(
                f"NCCL's messages differ in size between ranks ({sizes}) while torch shows every rank in the same "
                f"collective #{seq} {op} with {numel} elements: the program agrees, so the ranks' NCCL settings "
                "differ (NCCL_PROTO, NCCL_ALGO, NCCL_BUFFSIZE or the like set on some hosts only)"),
                fix=FIX_SETTINGS_DIFFER)


def _sshd_port_taken(findings: List[dict]) -> None:
    """sshd could not bind its port on a host: a launcher's SSH failures there (refused, or a key that the
    process holding the port does not know) follow from it."""
    if any(f["code"] == "address_in_use" and "Bind to port" in (f.get("evidence") or "") for f in findings):
        for finding in findings:
            if finding["code"] == "launch_failed" and finding["severity"] == "error":
                finding.update(severity="warning", consequence_of="address_in_use")


def _own_root(findings: List[dict], roots: List[dict]) -> Optional[dict]:
    """A rank's own error (an exception, CUDA OOM, an OOM kill): the earliest of them."""
    own = [f for f in findings + roots if (f["code"] in OWN_CODES or f.get("_own")) and f["severity"] == "error"]
    if not own:
        return None
    root = _earliest(sorted(own, key=sort_key))
    # A rank killed or crashed (SIGKILL, SIGSEGV) before it, by the clocks, came first.
    for death in roots:
        if death["_class"] == 0 and death["code"] == "rank_killed" and earlier(death.get("time"), root.get("time")):
            root = death
    return root


def _setup_root(findings: List[dict], roots: List[dict], job) -> Optional[dict]:
    """A setup or program error (NIC, versions, settings, SHM, EFA, GID, a desync) ahead of what it breaks."""
    if any(f["_class"] == 0 for f in roots):
        return None  # a rank killed or crashed: that comes first (the death rules)
    mixed = _socket_minority(findings, job)
    if mixed is not None:
        return mixed
    errors = [f for f in findings if f["severity"] == "error"]
    # A NIC over which every communicator finished init works: later failures are not its doing.
    unconnected = any(f["code"] in CONNECTION_FAILURES or (f["code"] in _INIT_FAILURES and not job.init_done_hosts)
                      for f in errors)
    failing = errors or roots or job.timeouts
    for finding in findings:
        # Explained by another error, unless that one is the same code (a more specific line of it).
        explained = any(f["code"] not in CONSEQUENCES and f["code"] not in FOLLOWERS and f["code"] != finding["code"]
                        for f in errors)
        if finding["code"] == "collective_desync" and finding["severity"] == "warning" and failing \
                and not explained:
            finding["severity"] = "error"
            finding["confidence"] = "low"
        if finding["severity"] != "warning":
            continue
        # A virtual or loopback NIC that carried a finished init works; EFA missing explains any failure.
        weak = unconnected if finding["code"] != "efa_missing" else unconnected or (failing and not explained)
        if (finding["code"] in EXPLAINING and weak) or (finding["code"] == "nccl_setting_mismatch" and failing):
            finding["severity"] = "error"
    setup = sorted((f for f in findings if f["severity"] == "error"
                    and _RANK_OF.get(f["code"], len(PRIORITY)) <= _SETUP_LAST), key=sort_key)
    return _earliest(setup) if setup else None


def _socket_minority(findings: List[dict], job) -> Optional[dict]:
    """Fewer hosts on sockets than on an RDMA network (IB, EFA): the transports do not match, so the
    hosts' connections fail ("wrong type"); the socket host's own "no device" line is the cause."""
    only_socket = sorted(host for host, nets in job.networks.items() if nets == {"Socket"})
    rdma = sorted(host for host, nets in job.networks.items() if nets and "Socket" not in nets)
    if not only_socket or len(only_socket) >= len(rdma) or not any(f["severity"] == "error" for f in findings):
        return None
    missing = sorted((f for f in findings if f["code"] in ("ib_missing", "efa_missing") and f.get("host") in only_socket),
                     key=sort_key)
    if not missing:
        return None
    root = missing[0]
    used = ", ".join(sorted({net for host in rdma for net in job.networks[host]}))
    quoted = re.split(r"NCCL (?:INFO|WARN) ", root.get("evidence") or "", maxsplit=1)[-1].strip()[:100]
    root.update(severity="error", rank=None,
                cause=f"{root['cause']} on {', '.join(only_socket)} ({quoted}), while {', '.join(rdma)} use {used}: NCCL's transports "
                      "differ between the hosts, so their connections fail (NCCL's 'wrong type' or a closed connection); "
                      "that host's RDMA device is down or not visible")
    return root


def _earliest(candidates: List[dict]) -> dict:
    """The first candidate in priority order, unless another happened earlier by more than the clock skew."""
    first = candidates[0]
    for candidate in candidates[1:]:
        if earlier(candidate.get("time"), first.get("time")):
            first = candidate
    return first


def _around(root: dict, findings: List[dict], roots: List[dict]) -> List[dict]:
    """root first; what follows from it (the consequences and the deaths) after the independent findings."""
    root["consequence_of"] = None
    for finding in findings + roots:
        if finding is root or finding["severity"] == "info":
            continue
        if finding["code"] in CONSEQUENCES or finding in roots or finding["code"] == "collective_desync" \
                and root["code"] in OWN_CODES:
            finding["consequence_of"] = root["code"]
    others = [f for f in findings + roots if f is not root]
    independent = sorted((f for f in others if f["consequence_of"] is None), key=sort_key)
    following = sorted((f for f in others if f["consequence_of"] is not None), key=sort_key)
    return [root] + independent + following


def _job_root(findings, job, dumps_verdict, ras_problems, settle_host, roots, stages) -> List[dict]:
    """Dead ranks, hangs, the first error; without any error, a rendezvous hang or a run that stopped."""
    killed = [f for f in roots if f["consequence_of"] is None]
    errors = sorted((f for f in findings if f["severity"] == "error"), key=sort_key)
    causes = [f for f in errors if f["code"] not in FOLLOWERS]
    aborted_after_error = bool(killed and killed[0]["_class"] in (1, 2) and causes)
    if aborted_after_error:
        # An abort (SIGABRT, SIGTERM) or an exit code after an error the log shows: that error came first.
        for finding in roots:
            finding["consequence_of"] = causes[0]["code"]
        killed = []
    elif not killed:
        hang = _collective_hang(job, findings, dumps_verdict, ras_problems, settle_host)
        if hang:
            roots.insert(0, hang)
            killed = [hang]
        elif roots:  # deaths after a timeout, with no hang shown: they are the roots after all
            for finding in roots:
                finding["consequence_of"] = None
            killed = roots[:1]
    if not killed and not any(f["severity"] == "error" for f in findings):
        hang = None if stages is not None and stages.finished() else _rendezvous_hang(job, settle_host)
        if hang:
            roots.append(hang)
        elif stages is not None:
            roots.extend(_stage_findings(stages, job, settle_host))
    root = killed[0]["code"] if killed else None
    if root:
        for finding in findings:
            if finding["code"] in CONSEQUENCES and finding["severity"] != "info":
                finding["consequence_of"] = root
    elif errors:
        # "nccl-tests stopped", "a worker failed": they only say that something above went wrong.
        for finding in errors[1:]:
            if finding["code"] in FOLLOWERS and finding["code"] != errors[0]["code"]:
                finding["consequence_of"] = errors[0]["code"]
    last = [f for f in roots if f["consequence_of"] is None and f["severity"] != "error"]
    independent = sorted((f for f in findings + last if f["consequence_of"] is None), key=sort_key)
    following = sorted((f for f in roots + findings if f["consequence_of"] is not None), key=sort_key)
    first = [f for f in roots if f["consequence_of"] is None and f["severity"] == "error"]
    return first + independent + following


def _host_by_neighbours(rank: int, timeouts: List[dict]) -> Optional[str]:
    """The host whose timed-out ranks span `rank` (a node runs a block of consecutive ranks): the host
    of a silent rank that logged nothing of its own. None when no host, or more than one, spans it."""
    spans: Dict[str, List[int]] = {}
    for timeout in timeouts:
        if timeout.get("rank") is not None and timeout.get("host") not in (None, "unknown"):
            spans.setdefault(timeout["host"], []).append(timeout["rank"])
    holding = [host for host, ranks in spans.items() if min(ranks) < rank < max(ranks)]
    return holding[0] if len(holding) == 1 else None


def _stage_findings(stages, job, settle_host) -> List[dict]:
    """incomplete_run for a stage that started and never ended; else a warning when no end is shown."""
    unfinished = stages.unfinished(bool(job.init_done_hosts))
    if unfinished:
        origin = unfinished["origin"] or {"evidence": "", "source": None, "line": None}
        return [dict(origin, code="incomplete_run", severity="error", host=settle_host(None), rank=None, count=1,
                     consequence_of=None, confidence="low",
                     cause=(f"the run did not finish: {unfinished['what']} (last stage reached: "
                            f"{unfinished['stage']}); it hung or was killed, and the log does not say why"),
                     fix=FIX_INCOMPLETE)]
    if stages.finished() or not (job.init_done_hosts or job.rendezvous or stages.torch):
        return []
    last = stages.last or {"evidence": "", "source": None, "line": None}
    return [{"code": "completion_unknown", "severity": "warning", "host": settle_host(None), "rank": None,
             "count": 1, "consequence_of": None, "confidence": "low", "evidence": last["evidence"],
             "source": last["source"], "line": last["line"],
             "cause": "no error, but this log has no end marker: cannot tell whether it finished or was cut short",
             "fix": "check the job's exit status with its launcher; print a line when training ends (Lightning "
                    "prints '`Trainer.fit` stopped'), and keep every rank's log"}]


# ---- dead ranks ----

def _death_findings(job, settle_host) -> List[dict]:
    deaths = _merge_deaths(job)
    timed_out = {t["rank"] for t in job.timeouts if t["rank"] is not None}
    # Where NCCL RAS (or Horovod's stall inspector) names the ranks out of step, every other rank was
    # waiting for them: its exit
    # (nccl-tests' own timeout, a launcher's abort) follows from the hang.
    behind = {problem["rank"] for problem in job.ras.problems} | set(job.stalled)
    if behind:
        timed_out |= {death.get("rank") for death in deaths if death.get("rank") not in behind} - {None}
    ranked = []
    for death in deaths:
        sig = death.get("signal")
        if death.get("rank") in timed_out and sig in _SECONDARY_SIGNALS + (None,):
            klass = 3  # the watchdog aborted this rank after its collective timed out
        elif death.get("oom") or (sig is not None and sig not in _SECONDARY_SIGNALS):
            klass = 0
        elif sig is not None:
            klass = 1
        else:
            klass = 2
        ranked.append((klass, death))
    best = min((klass for klass, dummy in ranked if klass < 3), default=None)
    found = [(klass, dict(_death_finding(death, job, settle_host), _class=klass)) for klass, death in ranked]
    root_code = next((f["code"] for klass, f in found if klass == best), None)
    for klass, finding in found:
        if klass == 3:
            finding["consequence_of"] = "hang_in_collective"
        elif klass != best:
            finding["consequence_of"] = root_code
    return [f for dummy, f in found]


def _merge_deaths(job) -> List[dict]:
    """One record per dead rank (or pid), combining what mpirun, torchrun and the kernel said."""
    merged: Dict[tuple, dict] = {}
    # Where torchrun's report names ranks on a node, srun's task there is that node's launcher (one
    # torchrun a node), not a global rank: its verdict (an OOM kill) goes to the node's one dead rank.
    reported: Dict[str, List[dict]] = {}
    for death in job.deaths:
        if death.get("how") == "torchrun" and death.get("rank") is not None and death.get("host"):
            reported.setdefault(death["host"], []).append(death)
    oom_ranks, deaths = set(), []
    for death in job.deaths:
        on_node = reported.get(death.get("node")) if death.get("how") == "srun" else None
        if on_node:
            if len(on_node) == 1 and death.get("oom"):
                oom_ranks.add((on_node[0]["host"], on_node[0]["rank"]))
                continue
            death = dict(death, rank=None)
        deaths.append(death)
    for death in deaths:
        death = dict(death)
        if death.get("how") == "torchrun" and (death.get("host"), death.get("rank")) in oom_ranks:
            death["oom"] = True
        if death.get("rank") is None and death.get("pid"):
            # The pid's host in the file that reported the death first: two hosts may run the same pid.
            source = (death.get("origin") or {}).get("source")
            host = death.get("host") or job.source_pid_host.get((source, death["pid"])) or job.pid_hosts.get(death["pid"])
            rank = job.pid_rank.get((host, death["pid"]))
            if rank is not None:
                death["rank"] = rank
            death.setdefault("host", host)
        key = ("rank", death["rank"]) if death.get("rank") is not None else ("pid", death.get("pid"))
        known = merged.get(key)
        if known is None and death.get("pid"):
            known = next((m for m in merged.values() if m.get("pid") == death["pid"]
                          and (m.get("host") is None or death.get("host") is None or m.get("host") == death.get("host"))),
                         None)
        if known is None:
            merged[key] = death
        else:
            for field, value in death.items():
                if value is not None and known.get(field) is None:
                    known[field] = value
            known["oom"] = known.get("oom") or death.get("oom")
    return _place_oom_kills(list(merged.values()), job)


# A kernel OOM line and a rank's SIGKILL this close in time on one host are one event.
_OOM_WINDOW_S = 120.0


def _place_oom_kills(deaths: List[dict], job) -> List[dict]:
    """An OOM kill naming no rank's pid: the SIGKILL of a rank on its host at its time, else another
    process (dropped when the job shows deaths of its own: an OOM kill of, say, a database is not
    this job's); alone, it stays (the only death the log shows)."""
    loose = [d for d in deaths if d.get("oom") and d.get("how") == "oom" and d.get("rank") is None]
    others = [d for d in deaths if d not in loose]
    for oom in loose:
        when, host = (oom.get("origin") or {}).get("time"), oom.get("oom_host")
        for death in others:
            then = (death.get("origin") or {}).get("time")
            where = death.get("host") or death.get("node") or (job.ranks.get(death.get("rank")) or {}).get("host")
            if death.get("signal") == 9 and not death.get("oom") and when is not None and then is not None \
                    and abs(when - then) <= _OOM_WINDOW_S and (host is None or where is None or host == where):
                death["oom"] = True
                break
    return others if others else deaths


def _death_finding(death: dict, job, settle_host) -> dict:
    rank = death.get("rank")
    nccl = job.ranks.get(rank) if rank is not None else None
    # A pod's host name is the pod's (what its own lines carry), not the Kubernetes node it ran on.
    # The kernel's OOM kill is on the host its log line names (syslog's, journalctl's "gpu-n05 kernel:").
    named = (nccl or {}).get("host") or death.get("host") or death.get("pod") or death.get("node") \
        or death.get("oom_host")
    host = settle_host(named)
    who = f"rank {rank}" if rank is not None else f"pod {death['pod']}" if death.get("pod") else \
        f"pid {death['pid']}" if death.get("pid") else "a worker process (its launcher names no rank or pid)"
    where = f" on {named}" if named else ""
    pid = death.get("pid") or (nccl or {}).get("pid")
    notes = [f"pid {pid}"] if pid and rank is not None else []
    if death.get("node") and death["node"] != host:
        notes.append(f"the launcher names the machine {death['node']}")
    extra = f" ({'; '.join(notes)})" if notes else ""
    sig = death.get("signal")
    if death.get("oom"):
        code = "oom_killed"
        how = "was killed by the kernel's OOM killer (signal 9): the host (or its cgroup) ran out of memory"
        if death.get("pod"):
            how = ("was OOMKilled by Kubernetes (exit code 137): its container reached its memory limit"
                   + (f" ({death['limit']})" if death.get("limit") else ""))
        fix = ("give the job more host memory or use less (smaller batch, fewer data-loader workers, no dataset "
               "held in memory per rank); `dmesg -T | grep -i -e oom -e 'killed process'` shows what was using it")
    elif sig == 7 and job.small_shm:
        # A bus error where a line says /dev/shm is small (a container's 64 MB default, by its banner in the
        # same log or Ray's warning at the node's start): the shared-memory segment NCCL (or a DataLoader)
        # mapped ran past what /dev/shm holds.
        banner = job.small_shm.get((death.get("origin") or {}).get("source")) or next(iter(job.small_shm.values()))
        said = " ".join(banner["evidence"].split())[:160]
        return dict(banner, code="shm_too_small", severity="error", host=host, rank=None, count=1,
                    consequence_of=None,
                    cause=f"{who}{where}{extra} was killed by signal 7 (SIGBUS) where /dev/shm is small ({said}): the "
                          "shared memory NCCL or a DataLoader mapped ran past it",
                    fix="give the container more shared memory: `docker run --shm-size=16g` (or `--ipc=host`), on "
                        "Kubernetes an emptyDir with medium: Memory at /dev/shm")
    elif sig is not None:
        code = "rank_killed"
        how = f"was killed by signal {sig} ({signal_name(sig)})"
        fix = FIX_KILLED if sig in (9, 15) else FIX_CRASHED
    else:
        code = "rank_failed"
        how = f"exited with code {death.get('exitcode')}"
        fix = FIX_FAILED
    origin = death["origin"] or {"evidence": "", "source": None, "line": None}
    return dict(origin, code=code, severity="error", host=host, rank=rank, count=1, consequence_of=None,
                cause=f"{who}{where}{extra} {how}",
                fix=fix)


# ---- hangs ----

def _collective_hang(job, findings, dumps_verdict, ras_problems, settle_host) -> Optional[dict]:
    stuck = [f for f in job.forensics if f["state"] in STUCK_STATES]
    ras = job.ras.problems + list(ras_problems)
    if not (job.timeouts or stuck or ras or dumps_verdict or job.stalled):
        return None
    if job.init_started and not job.init_done_hosts:
        return None  # no communicator finished init: not a collective hang
    if not job.init_done_hosts and any(t["seq"] is not None and t["seq"] <= 1 for t in job.timeouts):
        return None  # the first collective is where NCCL connects: this may be the network (Gloo connects before)
    reasons, rank, host, origin = [], None, None, None
    if stuck:
        item = stuck[0]
        rank, host, origin = item["rank"], item["host"], item["origin"]
        reasons.append(f"its process is {STUCK_STATES[item['state']]} (state {item['state']}, "
                       f"wchan {item['wchan']})")
    if ras:
        item = ras[0]
        if rank is None:
            rank = item["rank"]
            origin = origin or item.get("origin")
        reasons.append(f"NCCL RAS reports rank {item['rank']}: {item['reason'] or 'a problem'} "
                       f"(process {item['pid']} on {item['node']})")
    if job.stalled:
        missing = sorted(job.stalled)
        if rank is None:
            rank = missing[0]
            origin = origin or job.stalled[rank]
        reasons.append(f"Horovod's stall inspector reports rank(s) {', '.join(map(str, missing))} missing from the "
                       "collectives the other ranks submitted")
    if dumps_verdict:
        if rank is None:
            rank = dumps_verdict["rank"]
        what = ("wrote no flight-recorder dump" if dumps_verdict["missing"]
                else f"completed only up to collective #{dumps_verdict['seq'] - 1}")
        done = ", ".join(f"rank {r} completed #{s}" for r, s in sorted(dumps_verdict["last_completed"].items()))
        reasons.append(f"flight recorder: rank {dumps_verdict['rank']} {what} while {done}; the collective out "
                       f"of step is #{dumps_verdict['seq']} {dumps_verdict['op']} (process group "
                       f"{dumps_verdict['pg']})")
    timeout_text = ""
    if job.timeouts:
        first = job.timeouts[0]
        origin = origin or first["origin"]
        ranks_out = sorted({t["rank"] for t in job.timeouts if t["rank"] is not None})
        timeout_text = (f"; rank(s) {', '.join(map(str, ranks_out)) or '?'} timed out in {first['op']}"
                        + (f" (SeqNum {first['seq']})" if first["seq"] is not None else ""))
        # The ranks whose own lines are in the logs (NCCL's init, Lightning's announcement): a rank whose
        # log is missing is not taken for a silent one.
        known = (set(job.ranks) | set(job.announced)) or set(range(job.world))
        if not known and ranks_out:
            # Ranks are 0..N-1: timeouts from all of them but one name the one that did not time out.
            gaps = set(range(max(ranks_out) + 1)) - set(ranks_out)
            known = set(range(max(ranks_out) + 1)) if len(gaps) == 1 else set()
        silent = sorted(known - set(ranks_out))
        if ranks_out and len(silent) >= 1 and len(silent) < len(known) and rank in (None, silent[0]):
            rank = silent[0]  # the same rank as other evidence names, or the only evidence
            reasons.append(f"rank {rank} reported no timeout while its peers did: it never entered the "
                           "collective")
    if rank is not None and host is None and rank in job.ranks:
        host = job.ranks[rank]["host"]
    if rank is not None and host is None:
        host = _host_by_neighbours(rank, job.timeouts)
    if rank is not None and host is None and ras and ras[0]["rank"] == rank:
        host = job.pid_hosts.get(ras[0]["pid"])  # RAS names the bootstrap address; NCCL's prefix the host
    if rank is None and host is None:
        faulted = _iommu_host(job)
        if faulted:
            host, count, evidence = faulted
            reasons.append(f"{host}'s kernel log has {count} IOMMU fault(s) ({evidence}): its devices' DMA is "
                           "refused, GPU peer-to-peer traffic sent through the IOMMU among it (ACS on the PCIe "
                           "bridges, or the IOMMU on where P2P needs it off or in pass-through)")
    if rank is None:
        host = settle_host(host)
    elif host is None and settle_host(None) not in (None, "unknown"):
        host = settle_host(None)  # the only host of the logs: the suspect's
    origin = origin or _first_origin(ras, dumps_verdict)
    suspect = f"rank {rank}" + (f" on {host}" if host else " (host not in the logs)") if rank is not None \
        else "no rank named"
    # Without NCCL's init lines (a Gloo job, NCCL_DEBUG unset) the evidence of the stuck rank speaks alone.
    started = ("every rank finished NCCL init, so the network path worked" if job.init_done_hosts
               else "the job was running and one rank stopped taking part")
    cause = (f"hang in a collective: {started}; suspect: "
             f"{suspect}" + (": " + "; ".join(reasons) if reasons else
                             " (collect forensics while it hangs: process states, py-spy, NCCL RAS)")
             + timeout_text)
    # Without a named suspect the evidence only points at a hang: low confidence, and the fix says what to collect.
    return dict(origin, code="hang_in_collective", severity="error", host=host, rank=rank, count=1,
                consequence_of=None, cause=cause, fix=FIX_COLLECTIVE, confidence="high" if rank is not None else "low")


def _iommu_host(job) -> Optional[tuple]:
    """(host, faults, a quoted line) of the one host whose kernel log shows IOMMU faults, else None."""
    hosts = {r["host"] for r in job.ranks.values() if r.get("host")}
    found: Dict[str, list] = {}
    for source, fault in job.iommu_faults.items():
        host = fault["host"] or file_host(source, hosts)
        if host:
            found.setdefault(host, []).append(fault)
    if len(found) != 1:
        return None
    host, faults = next(iter(found.items()))
    return host, sum(f["count"] for f in faults), " ".join(faults[0]["origin"]["evidence"].split())[:160]


def _first_origin(ras, dumps_verdict) -> dict:
    if dumps_verdict:
        return {"evidence": f"flight recorder, process group {dumps_verdict['pg']}: rank {dumps_verdict['rank']} "
                            f"behind at #{dumps_verdict['seq']} {dumps_verdict['op']}",
                "source": dumps_verdict.get("source"), "line": None}
    return {"evidence": "", "source": None, "line": None}


def _rendezvous_hang(job, settle_host) -> Optional[dict]:
    if job.init_done_hosts or job.rendezvous_done or job.deaths:
        return None
    if job.rendezvous is None and not job.init_started:
        return None
    origin = job.rendezvous or {"evidence": "", "source": None, "line": None}
    stage = ("the distributed start" if job.rendezvous else "NCCL's init (Init START, never COMPLETE)")
    return dict(origin, code="hang_in_rendezvous", severity="error", host=settle_host(None), rank=None, count=1,
                consequence_of=None, confidence="low",
                cause=(f"hang in the rendezvous: the log stops at {stage} and no communicator finished init, "
                       "with no error: the ranks never met. torch's store (MASTER_ADDR:MASTER_PORT), Gloo or "
                       "NCCL's bootstrap cannot reach the other nodes: usually the hostname resolves to an "
                       "address the peers cannot reach, or Gloo/NCCL picked the wrong NIC"),
                fix=FIX_RENDEZVOUS_HANG + "; " + FIX_NIC.split(", e.g.", maxsplit=1)[0])


# ---- the verdict ----

def verdict(findings: List[dict], lines: int, hosts) -> str:
    errors = [f for f in findings if f["severity"] == "error"]
    if not errors:
        warnings = sum(f["severity"] == "warning" for f in findings)
        hosts = list(hosts)
        named = (", ".join(hosts) if len(hosts) <= 4 else f"{len(hosts)} ({', '.join(hosts[:3])}, ...)") \
            or "none named"
        return f"HEALTHY: no errors in {lines} lines ({warnings} warning(s)); hosts: {named}"
    root = errors[0]
    follow = sum(1 for f in errors if f["consequence_of"])
    tail = f"; {follow} later error(s) follow from it" if follow else ""
    where = root["host"] or "unknown host"
    if root.get("rank") is not None:
        where += f", rank {root['rank']}"
    return f"PROBLEM: {root['code']} ({where}): {root['cause']}{tail}"
