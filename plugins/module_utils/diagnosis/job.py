"""What a log says about the job as a whole: which rank runs where, which finished NCCL init,
which died (and how), which timed out in a collective, and what hang forensics saw.

Pure Python 3.8+ standard library. diagnosis.log feeds every line to JobEvidence.add(); diagnosis.root_cause
turns the evidence into root-cause findings. Every pattern matches the structure of lines that
NCCL, torch, torchrun, Open MPI, Slurm, the kernel and diagnosis.forensics write, gated by a cheap
substring test so that the lines that match nothing (nearly all) cost one `in` each.
"""

from __future__ import annotations

import re
import signal
from typing import Dict, List, Optional

from .ras import RasText
from .timeline import parse_stamp

# "ncclCommInitRankConfig comm 0x.. rank 1 nranks 2 ..." (2.19+), "comm 0x.. rank 1 nranks 2 cudaDev 0
# busId 60 - Init COMPLETE" (2.12+), "comm 0x.. rank 1 nRanks 2 nNodes 2 ..." (2.18+).
_NCCL_RANK = re.compile(r"\bcomm \S+ rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)\b")
_NCCL_BUS = re.compile(r"\bbusId (?P<bus>[0-9a-fA-F:.]+)")
_VERSION_MISMATCH = re.compile(r"Mismatched NCCL version detected : rank (?P<a>\d+) version (?P<va>\d+) "
                               r"rank (?P<b>\d+) version (?P<vb>\d+)")
# nccl-tests' rank table "#  Rank 13 Group  0 Pid  31077 on     gpu-n2 device  5 [0000:90:00] NVIDIA ..."
# and the trace a failing rank prints " .. gpu-n2 pid 31077: Test failure common.cu:407".
_TESTS_RANK = re.compile(r"#\s+Rank\s+(?P<rank>\d+) Group\s+\d+ Pid\s+(?P<pid>\d+) on\s+(?P<host>\S+) device\s+\d+"
                         r"(?: \[(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)\])?")
_TESTS_TRACE = re.compile(r"\.\. (?P<host>\S+) pid (?P<pid>\d+): Test failure")
# Ray Train's worker table: "(ip=10.0.1.23, pid=8841) world_rank=3, local_rank=1, node_rank=1".
_RAY_WORKER = re.compile(r"\(ip=(?P<ip>[\w.:-]+), pid=(?P<pid>\d+)\) world_rank=(?P<rank>\d+)")
# Open MPI / PRRTE: "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
_MPI_SIGNAL = re.compile(r"process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<node>\S+?)\.? "
                         r"exited on signal (?P<signal>\d+)(?: \((?P<name>[^)]*)\))?")
# Slurm: "srun: error: node1: task 1: Killed"
_SRUN = re.compile(r"srun: error: (?P<node>[\w.\-]+): tasks? (?P<rank>\d+)(?:[-,]\d+)*: "
                   r"(?P<name>Killed|Segmentation fault|Aborted|Terminated|Bus error|Out Of Memory"
                   r"|Exited with exit code (?P<code>\d+))")
# absl's failure signal handler (in Ray's workers, JAX, TensorFlow), as the process dies of it:
# "*** SIGBUS received at time=1713852726 on cpu 37 ***".
# A crash only: SIGABRT there is most often torch's watchdog ending a rank whose collective timed out.
_FAILURE_SIGNAL = re.compile(r"\*\*\* (?P<name>SIGSEGV|SIGBUS|SIGILL|SIGFPE) received at time=")
# torchrun's agent: "failed (exitcode: -9) local_rank: 0 (pid: 1747) of binary: ..."
_AGENT_FAILED = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\)")
# DeepSpeed's launcher: "['/usr/bin/python', '-u', 'train.py', '--local_rank=1'] exits with return code = -9"
_DEEPSPEED_EXIT = re.compile(r"\] exits with return code = (?P<code>-?\d+)")
# DeepSpeed's launcher also names each host's global ranks and each process it starts:
# "global_rank_mapping=defaultdict(<class 'list'>, {'gpu-a01': [0, 1], 'gpu-a02': [2, 3]})",
# "process 48213 spawned with command: ['python', '-u', 'train.py', '--local_rank=1', ...]".
_DEEPSPEED_HOST_RANKS = re.compile(r"'(?P<host>[^']+)': \[(?P<ranks>[\d, ]*)\]")
_DEEPSPEED_SPAWN = re.compile(r"process (?P<pid>\d+) spawned with command: .*--local_rank=(?P<local>\d+)")
# torchrun's ChildFailedError report: "  host      : node1", "  rank      : 1 (local_rank: 0)", ...
_CHILD_FIELD = re.compile(r"^\s*(?P<key>host|rank|exitcode|traceback|time)\s*: (?P<value>.*\S)")
_CHILD_BLOCK = re.compile(r"^\s*\[\d+\]:\s*$")
_REPORT_ROOT = "Root Cause (first observed failure)"
# The kernel's OOM killer: "Out of memory: Killed process 1747 (python3) ..." (also "Memory cgroup out
# of memory: ...") and "oom-kill:constraint=...,task=python3,pid=1747,uid=0".
_OOM = re.compile(r"[Oo]ut of memory: Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)"
                  r"|oom-kill:.*\btask=(?P<comm2>[^,]*),pid=(?P<pid2>\d+)")
# torch's watchdog: "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=49, OpType=ALLREDUCE"
_WATCHDOG = re.compile(r"(?:\bRank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout: "
                       r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)(?:, NumelIn=(?P<numel>-?\d+))?")
# torch's report of a collective that failed: "[Rank 1] Collective WorkNCCL(SeqNum=1, OpType=ALLREDUCE,
# NumelIn=16777216, ...) raised the following async exception": which collective, and its size, on that rank.
_WORK_FAILED = re.compile(r"\bRank (?P<rank>\d+)\] Collective WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)"
                          r"(?:, NumelIn=(?P<numel>-?\d+))?")
_WORK_FAILED_MARK = "raised the following async exception"
_TORCH_LABEL_RANK = re.compile(r"^rank(?P<rank>\d+)$")
# Gloo's collective timeout (torch's Gloo backend, also barriers and object collectives):
# "[.../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 60000ms for recv operation to complete"
_GLOO_TIMEOUT = re.compile(r"Timed out waiting (?P<ms>\d+) ?ms for (?P<op>recv|send) operation to complete")
# Lightning's announcement of a rank and the world size: "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2"
_ANNOUNCE = re.compile(r"GLOBAL_RANK: (?P<rank>\d+), MEMBER: \d+/(?P<world>\d+)")
# The distributed start as torch and Lightning announce it, before any communicator exists.
_RENDEZVOUS_START = re.compile(
    r"Initializing distributed: GLOBAL_RANK: (?P<rank>\d+), MEMBER: \d+/(?P<world>\d+)"
    r"|Waiting in store based barrier to initialize process group"
    r"|Rendezvous'ing worker group|\[c10d\] The (?:client|server) socket |\[c10d\] The hostname of the client socket"
    r"|Starting elastic_operator"
    # SGLang's and vLLM's own start of torch.distributed and NCCL
    r"|Init torch distributed begin|Init nccl begin|distributed_init_method=")
# After this the process group exists: the rendezvous is over.
_RENDEZVOUS_DONE = ("All distributed processes registered", "Init COMPLETE", "Connected all rings",
                    "Rendezvous complete for workers", "peer ranks. Expected number of connected peer",
                    "Destroy COMPLETE", "Init torch distributed ends")
_FORENSICS = re.compile(r"ncclkit-forensics: rank=(?P<rank>\d+) host=(?P<host>\S+) pid=(?P<pid>\d+) "
                        r"state=(?P<state>\S)(?: \([^)]*\))?(?: wchan=(?P<wchan>\S+))?")
_FORENSICS_RAS = "ncclkit-forensics: ras: "

# NGC containers' banner where `docker run` gave no --shm-size/--ipc=host: "NOTE: The SHMEM allocation
# limit is set to the default of 64MB. This may be insufficient for PyTorch...".
_SMALL_SHM = "SHMEM allocation limit is set to the default"
# The kernel's IOMMU faults (AMD-Vi's "Event logged [IO_PAGE_FAULT domain=...]", Intel VT-d's "DMAR: [DMA
# Read NO_PASID] Request device [41:00.0] fault addr ... [fault reason 0x06]"): a device's DMA the IOMMU
# refused, GPU peer-to-peer traffic sent through it (ACS on the PCIe bridges) among them.
_IOMMU_AMD = "Event logged [IO_PAGE_FAULT"
_IOMMU_INTEL = "[fault reason"
# Ray's node start where /dev/shm is small: "The object store is using /tmp instead of /dev/shm because
# /dev/shm has only 67108864 bytes available." (The marker is the part that keeps the line prefilter's
# letter pairs as they are: a new pair would let many more lines through.)
_RAY_SHM = "/dev/shm because"
_RAY_SHM_BYTES = re.compile(r"/dev/shm has only (?P<bytes>\d+) bytes")
_SMALL_SHM_BYTES = 512 << 20
# torch's desync check (TORCH_DISTRIBUTED_DEBUG=DETAIL): "Rank 5 is running collective:
# CollectiveFingerPrint(SequenceNumber=7, OpType=_ALLGATHER_BASE, TensorShape=[..], TensorDtypes=BFloat16, ...),
# but Rank 16 is running collective: CollectiveFingerPrint(...)": each names two ranks' collectives.
_FINGERPRINT_MARK = "is running collective: CollectiveFingerPrint("
# torch's c10d when a name does not resolve: "The IPv6 network addresses of (NAME, PORT) cannot be
# retrieved (gai error: -2 - Name or service not known)".
_GAI_FAILED = "cannot be retrieved (gai error: -2"
# submitit's first line in each task's log: "Starting with JobEnvironment(job_id=93112, hostname=a100-n07,
# local_rank=0(4), node=0(2), global_rank=0(8))": the host and rank of that task's files (.out and .err).
_SUBMITIT_MARK = "Starting with JobEnvironment("
# torchrun's agent told to stop from outside (a scheduler's cancel, a preemption, a node shutdown):
# "Received Signals.SIGTERM death signal, shutting down workers".
_TERM_MARK = "death signal, shutting down workers"
_SUBMITIT = re.compile(r"hostname=(?P<host>[^,\s)]+).*?global_rank=(?P<rank>\d+)")
_GAI_NAME = re.compile(r"network addresses of \((?P<name>[^,()\s]+), ?\d+\) cannot be retrieved \(gai error: -2")
_FINGERPRINT = re.compile(r"Rank (?P<rank>\d+) is running collective: CollectiveFingerPrint\("
                          r"(?P<print>SequenceNumber=\d+, OpType=\w+(?:, TensorShape=\[[^\]]*\])?"
                          r"(?:, TensorDtypes=[\w, ]+?)?)(?:, TensorDeviceTypes|\))")

# Every substring JobEvidence.add() looks for in a line that is not NCCL's own: a line holding none
# of them (outside a torchrun report and a RAS report) tells the job nothing (diagnosis.log skips it).
# (The rendezvous' start markers are looked for only while no rendezvous is known: see watching().)
# (nccl-tests' "#  Rank ... Pid" rows need no marker: lines that start with "#" pass.)
MARKERS = ("ncclkit-forensics:", "ChildFailedError", _REPORT_ROOT, "exited on signal", "srun: error:",
           "Process name: [[", "Exit code:", "OOMKilled", "Name:", "memory:",
           "(exitcode: ", "exits with return code", "ut of memory", "oom-kill:", "Watchdog caught", _WORK_FAILED_MARK,
           "SERVER PROTOCOL",
           " compiled with CUDA ", "Timed out waiting", "GLOBAL_RANK", "world_rank=", "global_rank_mapping=",
           "spawned with command", ": Test failure", "Missing ranks:", _SMALL_SHM, _RAY_SHM, _IOMMU_AMD, _IOMMU_INTEL,
           _FINGERPRINT_MARK, _GAI_FAILED, _SUBMITIT_MARK, "Pending", "Failed to pull image",
           "FailedScheduling", _TERM_MARK, " CANCELLED AT", " received at time=") + _RENDEZVOUS_DONE
# Horovod's stall inspector: "Missing ranks:" then one line per rank that did not submit the tensors
# the others wait on ("6: [allreduce.fc.bias, ...]").
_STALLED_RANK = re.compile(r"^\s*(?P<rank>\d+): \[")

# States of a process that cannot make progress in a collective.
STUCK_STATES = {"T": "stopped (SIGSTOP or a debugger)", "t": "stopped by a tracer",
                "D": "in an uninterruptible wait (I/O or the driver)", "Z": "a zombie (exited)"}


def pci_number(address: str) -> Optional[int]:
    """A GPU's PCI address as one number, as NCCL prints it in hex (`busId 86000`) and the kernel in parts
    (`PCI:0000:86:00`, `0000:86:00.0`): domain, bus, device and function packed 16:8:8:4 bits."""
    text = address.strip().lower()
    if text.startswith("pci:"):
        text = text[4:]
    try:
        if ":" not in text:
            return int(text, 16)
        parts = text.split(":")
        device, dummy, function = parts[-1].partition(".")
        domain = int(parts[0], 16) if len(parts) == 3 else 0
        return (domain << 20) | (int(parts[-2], 16) << 12) | (int(device, 16) << 4) | int(function or "0", 16)
    except ValueError:
        return None


# What the signals a crashed rank dies of usually mean, for the cause line.
_SIGNAL_MEANING = {signal.SIGSEGV: "a segmentation fault", signal.SIGBUS: "a bus error, most often a full /dev/shm",
                   signal.SIGABRT: "an abort", signal.SIGFPE: "an arithmetic fault", signal.SIGILL: "an illegal instruction"}


def signal_name(number: int) -> str:
    """"SIGSEGV: a segmentation fault", "SIGKILL", "signal 99"."""
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"signal {number}"
    return f"{sig.name}: {_SIGNAL_MEANING[sig]}" if sig in _SIGNAL_MEANING else sig.name


class JobEvidence:
    """Accumulates, line by line, what the whole job did; memory grows with ranks, not lines."""

    def __init__(self):
        self.ranks: Dict[int, dict] = {}          # rank -> {host, pid, nranks}
        self.pid_rank: Dict[tuple, int] = {}      # (host, pid) -> rank
        self.pid_hosts: Dict[str, str] = {}       # pid -> host (for OOM lines naming a pid only)
        self.source_pid_host: Dict[tuple, str] = {}  # (file, pid) -> host: hosts reuse pids, a file is one host's
        self.source_hosts: Dict[str, set] = {}    # file -> the hosts whose NCCL lines it holds
        self.small_shm: Dict[str, dict] = {}      # file -> origin of its line saying /dev/shm is small
        self.gpu_oom: Dict[str, dict] = {}        # file -> origin of its first "CUDA out of memory" line (any logger)
        self.works: Dict[int, tuple] = {}         # rank -> (SeqNum, OpType, NumelIn) of its failed or timed-out collective
        self.iommu_faults: Dict[str, dict] = {}   # file -> {origin, host (the line's, if any), count} of IOMMU faults
        self.fingerprints: Dict[int, str] = {}    # rank -> its collective as torch's desync check prints it
        self.networks: Dict[str, set] = {}        # host -> the networks NCCL says it uses ("IB", "Socket", ...)
        self.unresolved: Dict[str, int] = {}      # name -> how often c10d could not resolve it (gai error -2)
        self.task_files: Dict[str, tuple] = {}    # a task's file stem -> (host, rank) its launcher announced
        self.pending_pods: Dict[str, dict] = {}   # `kubectl describe pod` of a pod still Pending -> {origin, pull, why}
        self.terminated: List[dict] = []          # origins of launchers told to stop from outside (SIGTERM)
        self.preempted: Optional[dict] = None     # origin of Slurm's "CANCELLED AT ... DUE TO PREEMPTION"
        self.bus_rank: Dict[tuple, int] = {}      # (host, the GPU's PCI address as a number) -> rank
        self.rank_versions: Dict[int, str] = {}   # rank -> the NCCL version code NCCL's mismatch check names
        self.world = 0
        self.init_done_hosts: Dict[str, dict] = {}  # host -> origin of its first init-complete line
        self.init_started = False
        self.deaths: List[dict] = []              # {rank?, host?, pid?, signal?, exitcode?, how, origin}
        self.timeouts: List[dict] = []            # {rank?, host?, seq (None for Gloo), op, origin}
        self.announced: Dict[int, dict] = {}      # rank -> origin of the line that announced it (Lightning)
        self.rendezvous: Optional[dict] = None    # origin of the first rendezvous-start line
        self.rendezvous_done = False
        self.forensics: List[dict] = []           # {rank, host, pid, state, wchan, origin}
        self.ras = RasText()
        self._child: Optional[dict] = None        # the ChildFailedError failure being read
        self._in_report = False
        self._line_host = None
        self._mpi_rank: Optional[int] = None     # Open MPI's "Process name: [[J,1],R]" before its "Exit code:"
        self._pod: Optional[dict] = None          # the pod `kubectl describe` is describing
        self.test_failure_pid: Dict[str, str] = {}  # nccl-tests: host -> the pid of its first failing rank
        self.stalled: Dict[int, dict] = {}        # Horovod: rank -> origin of the stall report naming it missing
        self._stall_block = False
        self._host_ranks: Dict[str, List[int]] = {}  # DeepSpeed: host -> its global ranks by local rank
        self._spawned: List[tuple] = []           # DeepSpeed: (host, pid, local rank) of each process started

    def add(self, line, origin) -> None:
        """line: diagnosis.lines.Line; origin: a callable giving {evidence, source, line, time} on demand."""
        text = line.text
        self._line_host = line.host
        if line.level:
            # NCCL's own line: it carries ranks and init, never a launcher's or torch's message.
            self._nccl(line, origin)
            if not self.rendezvous_done and ("Init COMPLETE" in text or "Connected all rings" in text
                                             or "Destroy COMPLETE" in text):
                self.rendezvous_done = True
            return
        if "ncclkit-forensics:" in text:
            self._forensic(text, origin)
            return
        if self._stall_block:
            # "6: [allreduce...]" reads as srun's label "6: " before the tensor list.
            missing = _STALLED_RANK.match(text)
            rank = missing["rank"] if missing else line.label if text.startswith("[") else None
            if rank is not None and str(rank).isdigit():
                self.stalled.setdefault(int(rank), origin())
                return
            self._stall_block = False
        if text.strip() == "Missing ranks:":
            self._stall_block = True
            return
        if " Pid " in text and "Rank" in text:
            row = _TESTS_RANK.search(text)
            if row:
                self.pid_rank.setdefault((row["host"], row["pid"]), int(row["rank"]))
                self.pid_hosts.setdefault(row["pid"], row["host"])
                self.ranks.setdefault(int(row["rank"]), {"host": row["host"], "pid": row["pid"], "nranks": None})
                if row["bus"]:
                    self.bus_rank.setdefault((row["host"], pci_number(row["bus"])), int(row["rank"]))
        elif ": Test failure" in text:
            trace = _TESTS_TRACE.search(text)
            if trace:
                self.test_failure_pid.setdefault(trace["host"], trace["pid"])
        if "global_rank_mapping=" in text:
            for match in _DEEPSPEED_HOST_RANKS.finditer(text):
                self._host_ranks[match["host"]] = [int(r) for r in match["ranks"].split(",") if r.strip()]
        elif "spawned with command" in text and line.host:
            spawn = _DEEPSPEED_SPAWN.search(text)
            if spawn:
                self._spawned.append((line.host, spawn["pid"], int(spawn["local"])))
        if "world_rank=" in text:
            worker = _RAY_WORKER.search(text)
            if worker:  # Ray names a worker by its node's address: that is its host where no line names one
                host = self.pid_hosts.setdefault(worker["pid"], worker["ip"])
                self.pid_rank.setdefault((host, worker["pid"]), int(worker["rank"]))
        if self._in_report or "ChildFailedError" in text or _REPORT_ROOT in text:
            self._child_block(text, origin)
        if "OOMKilled" in text or text.startswith(("Name:", "Node:")) or ("memory:" in text and self._pod) \
                or (self._pod and ("Pending" in text or "Failed to pull image" in text or "FailedScheduling" in text)):
            self._kubernetes(text, origin)
        if "Process name: [[" in text or (self._mpi_rank is not None and "Exit code:" in text):
            self._mpi_exit(text, origin)
        if "exited on signal" in text:
            self._match_death(_MPI_SIGNAL, text, origin, "mpi")
        elif "srun: error:" in text:
            self._match_death(_SRUN, text, origin, "srun")
        elif "(exitcode: " in text:
            self._match_death(_AGENT_FAILED, text, origin, "agent")
        elif "exits with return code" in text:
            self._deepspeed_exit(text, origin)
        elif " received at time=" in text:
            self._failure_signal(line, text, origin)
        elif "ut of memory" in text or "oom-kill:" in text:
            if "CUDA out of memory" in text:  # a trainer that logs and recovers from it (fairseq) leaves no traceback
                found = origin()
                self.gpu_oom.setdefault(found.get("source"), found)
            self._match_death(_OOM, text, origin, "oom")
        elif "Watchdog caught" in text:
            self._watchdog(line, origin)
        elif _WORK_FAILED_MARK in text:
            match = _WORK_FAILED.search(text)
            if match:
                self.works.setdefault(int(match["rank"]), (int(match["seq"]), match["op"], match["numel"]))
        elif "Timed out waiting" in text:
            self._gloo_timeout(line, origin)
        if _TERM_MARK in text and "SIGTERM" in text:
            self.terminated.append(origin())
        if " CANCELLED AT" in text and " DUE TO PREEMPTION" in text and self.preempted is None:
            self.preempted = origin()
        if _SUBMITIT_MARK in text:
            found = _SUBMITIT.search(text)
            if found:
                self.task_files.setdefault(file_stem(origin().get("source")), (found["host"], int(found["rank"])))
        if _GAI_FAILED in text:
            found = _GAI_NAME.search(text)
            if found:
                self.unresolved[found["name"]] = self.unresolved.get(found["name"], 0) + 1
        if _FINGERPRINT_MARK in text:
            for match in _FINGERPRINT.finditer(text):
                self.fingerprints.setdefault(int(match["rank"]), match["print"])
        ray_shm = _RAY_SHM_BYTES.search(text) if _RAY_SHM in text else None
        if _IOMMU_AMD in text or _IOMMU_INTEL in text:
            found = self.iommu_faults.get(origin().get("source"))
            if found is None:
                self.iommu_faults[origin().get("source")] = {"origin": origin(), "host": self._line_host, "count": 1}
            else:
                found["count"] += 1
        if _SMALL_SHM in text or (ray_shm and int(ray_shm["bytes"]) < _SMALL_SHM_BYTES):
            found = origin()
            self.small_shm.setdefault(found.get("source"), found)
        if "GLOBAL_RANK" in text:
            self._announce(text, origin)
        if not self.rendezvous_done:
            if any(marker in text for marker in _RENDEZVOUS_DONE):
                self.rendezvous_done = True
            elif self.rendezvous is None and ("distributed" in text or "Rendezvous" in text or "c10d" in text
                                              or "elastic_operator" in text or "Init nccl" in text):
                match = _RENDEZVOUS_START.search(text)
                if match:
                    self.rendezvous = origin()
        if self.ras.seen or "SERVER PROTOCOL" in text or " compiled with CUDA " in text:
            self.ras.add(text, origin)

    # ---- NCCL's own lines ----

    def _nccl(self, line, origin) -> None:
        msg, host = line.msg, line.host
        if "Mismatched NCCL version" in msg:
            pair = _VERSION_MISMATCH.search(msg)
            if pair:
                self.rank_versions[int(pair["a"])] = pair["va"]
                self.rank_versions[int(pair["b"])] = pair["vb"]
        if "nranks" in msg or "nRanks" in msg:
            match = _NCCL_RANK.search(msg)
            if match:
                pid = _pid(line)
                rank, nranks = int(match.group("rank")), int(match.group("nranks"))
                self.init_started = True
                self.world = max(self.world, nranks)
                if pid is not None and (host, pid) not in self.pid_rank:
                    self.pid_rank[(host, pid)] = rank
                    self.pid_hosts.setdefault(pid, host)
                    source = origin().get("source")
                    if (source, pid) not in self.source_pid_host:
                        self.source_pid_host[(source, pid)] = host
                        self.source_hosts.setdefault(source, set()).add(host)
                    self.ranks.setdefault(rank, {"host": host, "pid": pid, "nranks": nranks})
                bus = _NCCL_BUS.search(msg)
                if bus and pci_number(bus.group("bus")) is not None:
                    self.bus_rank.setdefault((host, pci_number(bus.group("bus"))), rank)
        if "Using network " in msg and host:
            self.networks.setdefault(host, set()).add(msg.split("Using network ", 1)[1].strip())
        if ("Init COMPLETE" in msg or "Connected all rings" in msg) and host not in self.init_done_hosts:
            self.init_done_hosts[host] = origin()

    # ---- deaths, timeouts, forensics ----

    def _match_death(self, pattern, text, origin, how) -> None:
        match = pattern.search(text)
        if not match:
            return
        groups = match.groupdict()
        death = {"how": how, "origin": origin()}
        if how in ("mpi", "srun"):
            death["rank"] = int(groups["rank"])
            death["node"] = groups["node"]
            if how == "mpi":
                death["signal"] = int(groups["signal"])
                if groups["pid"] != "0":
                    death["pid"] = groups["pid"]
            elif groups.get("code"):
                death["exitcode"] = int(groups["code"])
            else:
                death["signal"] = {"Killed": 9, "Segmentation fault": 11, "Aborted": 6, "Terminated": 15,
                                   "Bus error": 7, "Out Of Memory": 9}[groups["name"]]
                if groups["name"] == "Out Of Memory":
                    death["oom"] = True  # Slurm's cgroup OOM handler named this task
        elif how == "agent":
            code = int(groups["code"])
            death.update(pid=groups["pid"], **({"signal": -code} if code < 0 else {"exitcode": code}))
        else:
            death.update(pid=groups["pid"] or groups["pid2"], signal=9, oom=True,
                         comm=groups["comm"] or groups["comm2"], oom_host=self._line_host)
        self.deaths.append(death)

    def _failure_signal(self, line, text, origin) -> None:
        """The process that printed absl's signal report dies of that signal (Ray labels its lines with the pid)."""
        match = _FAILURE_SIGNAL.search(text)
        number = getattr(signal, match.group("name"), None) if match else None
        if number is None:
            return
        pid = line.label[4:] if (line.label or "").startswith("pid=") else None
        self.deaths.append({"how": "signal", "origin": origin(), "host": self._line_host, "pid": pid,
                            "signal": int(number)})

    def _deepspeed_exit(self, text, origin) -> None:
        match = _DEEPSPEED_EXIT.search(text)
        if not match or match.group("code") == "0":
            return
        code = int(match.group("code"))
        self.deaths.append({"how": "deepspeed", "origin": origin(), "host": self._line_host,
                            **({"signal": -code} if code < 0 else {"exitcode": code})})

    def _kubernetes(self, text, origin) -> None:
        # `kubectl describe pod`: "Name: trainjob-worker-1", "Node: gpu-node-14/10.12.0.14", "Reason: OOMKilled".
        stripped = text.strip()
        if stripped.startswith("Name:"):
            self._pod = {"pod": stripped[5:].strip()}
        elif stripped.startswith("Node:") and self._pod is not None:
            self._pod["node"] = stripped[5:].strip().split("/", 1)[0]
        elif stripped.startswith("memory:") and self._pod is not None and self._pod.get("death"):
            self._pod["death"].setdefault("limit", f"memory limit {stripped[7:].strip()}")
        elif stripped.startswith("Status:") and stripped[7:].strip() == "Pending" and self._pod.get("pod"):
            self.pending_pods.setdefault(self._pod["pod"], {"origin": origin(), "pull": "", "why": ""})
        elif self._pod.get("pod") in self.pending_pods and ("Failed to pull image" in text or "FailedScheduling" in text):
            pending = self.pending_pods[self._pod["pod"]]
            said = re.split(r"kubelet\s+|volcano\s+|default-scheduler\s+", stripped, maxsplit=1)[-1]
            said = said if len(said) <= 300 else f"{said[:120]} ... {said[-170:]}"  # the reason is at the end
            if "Failed to pull image" in text and not pending["pull"]:
                pending["pull"] = said
            elif "FailedScheduling" in text:
                pending["why"] = said
        elif "OOMKilled" in text:
            pod = self._pod or {}
            death = {"how": "kube", "oom": True, "signal": 9, "pod": pod.get("pod"), "node": pod.get("node"),
                     "origin": origin()}
            self.deaths.append(death)
            if self._pod is not None:
                self._pod["death"] = death

    def _mpi_exit(self, text, origin) -> None:
        # Open MPI: "The first process to do so was:\n  Process name: [[38612,1],3]\n  Exit code: 1"
        match = re.search(r"Process name: \[\[\d+,\d+\],(\d+)\]", text)
        if match:
            self._mpi_rank = int(match.group(1))
            return
        code = re.search(r"Exit code:\s*(-?\d+)", text)
        if code and int(code.group(1)):
            self.deaths.append({"how": "mpi", "rank": self._mpi_rank, "exitcode": int(code.group(1)),
                                "origin": origin()})
        self._mpi_rank = None

    def _child_block(self, text, origin) -> None:
        # The report has no blank line inside: "[N]:" opens a failure, "key : value" lines fill it.
        if "ChildFailedError" in text or _REPORT_ROOT in text:
            self._flush_child()
            self._in_report = True
            return
        if not self._in_report:
            return
        stripped = text.strip()
        if not stripped:
            self._flush_child()
            self._in_report = False
        elif _CHILD_BLOCK.match(text):
            self._flush_child()
            self._child = {"origin": None}
        elif stripped.startswith(("====", "----")):
            self._flush_child()
        elif self._child is not None:
            match = _CHILD_FIELD.match(text)
            if match:
                key = match.group("key")
                self._child[key] = match.group("value")
                if self._child["origin"] is None or key == "exitcode":
                    self._child["origin"] = origin()

    def _flush_child(self) -> None:
        child, self._child = self._child, None
        if not child or "exitcode" not in child:
            return
        code = re.match(r"-?\d+", child["exitcode"])
        rank = re.match(r"\d+", child.get("rank", ""))
        pid = re.search(r"pid: (\d+)", child["exitcode"])
        if not code:
            return
        death = {"how": "torchrun", "origin": child["origin"], "host": child.get("host")}
        if child.get("time") and child["origin"] is not None:
            death["origin"] = dict(child["origin"], time=parse_stamp(child["time"]))
        if rank:
            death["rank"] = int(rank.group())
        if pid:
            death["pid"] = pid.group(1)
        number = int(code.group())
        death.update({"signal": -number} if number < 0 else {"exitcode": number})
        self.deaths.append(death)

    def _watchdog(self, line, origin) -> None:
        match = _WATCHDOG.search(line.text)
        if not match:
            return
        rank = match.group("rank")
        if rank is None and line.label:
            label = _TORCH_LABEL_RANK.match(line.label)
            rank = label.group("rank") if label else None
        numel = match.group("numel")
        if rank is not None:
            self.works.setdefault(int(rank), (int(match.group("seq")), match.group("op"), numel))
        self.timeouts.append({"rank": int(rank) if rank is not None else None, "host": line.host,
                              "seq": int(match.group("seq")), "op": match.group("op"),
                              "numel_in": int(numel) if numel is not None else None, "origin": origin()})

    def _gloo_timeout(self, line, origin) -> None:
        # Gloo names no collective or sequence number: one timeout per rank (its traceback repeats it).
        match = _GLOO_TIMEOUT.search(line.text)
        if not match:
            return
        label = _TORCH_LABEL_RANK.match(line.label or "")
        rank = int(label.group("rank")) if label else None
        if rank is not None and any(t["rank"] == rank for t in self.timeouts):
            return
        self.timeouts.append({"rank": rank, "host": line.host, "seq": None, "op": f"a Gloo {match.group('op')}",
                              "numel_in": None, "origin": origin()})

    def _announce(self, text, origin) -> None:
        match = _ANNOUNCE.search(text)
        if match and int(match.group("rank")) not in self.announced:
            self.announced[int(match.group("rank"))] = origin()
            self.world = max(self.world, int(match.group("world")))

    def _forensic(self, text, origin) -> None:
        if _FORENSICS_RAS in text:
            self.ras.add(text.split(_FORENSICS_RAS, 1)[1], origin)
            return
        match = _FORENSICS.search(text)
        if match:
            self.forensics.append({"rank": int(match.group("rank")), "host": match.group("host"),
                                   "pid": match.group("pid"), "state": match.group("state"),
                                   "wchan": match.group("wchan") or "-", "origin": origin()})

    def watching(self) -> bool:
        """Whether every line matters now: a torchrun error report or a RAS report is being read (their
        lines hold no marker), or the rendezvous has not started nor finished yet."""
        return (self._in_report or self.ras.seen or self._stall_block
                or (self.rendezvous is None and not self.rendezvous_done))

    def report_rank(self) -> Optional[int]:
        """The rank of the torchrun error report being read (its traceback is that rank's), else None."""
        child = self._child if self._in_report else None
        match = re.match(r"\d+", (child or {}).get("rank", ""))
        return int(match.group()) if match else None

    def odd_version(self) -> Optional[tuple]:
        """(the version fewer ranks run, those ranks, the version the most run) from NCCL's mismatch lines."""
        counts: Dict[str, List[int]] = {}
        for rank, version in self.rank_versions.items():
            counts.setdefault(version, []).append(rank)
        if len(counts) < 2:
            return None
        ordered = sorted(counts, key=lambda version: len(counts[version]))
        return ordered[0], sorted(counts[ordered[0]]), ordered[-1]

    def finish(self) -> None:
        self._flush_child()
        self.ras.finish()
        for host, pid, local in self._spawned:  # DeepSpeed's processes: their global ranks by host and local rank
            ranks = self._host_ranks.get(host) or []
            if local < len(ranks):
                self.pid_rank.setdefault((host, pid), ranks[local])
                self.pid_hosts.setdefault(pid, host)


def file_stem(source) -> str:
    """A task's files share a stem: "93112_0_log.out" and "93112_0_log.err" are one task's."""
    return re.sub(r"\.(?:out|err|log|txt)(?:\.gz)?$", "", str(source or ""))


def _pid(line) -> Optional[str]:
    # The NCCL prefix is "host:pid:tid"; the host is known, the pid follows it.
    if not line.host:
        return None
    head = line.text.split(line.host + ":", 1)
    return head[1].split(":", 1)[0] if len(head) == 2 else None
