"""Why a job failed or hung, from its logs and evidence. Each part has one job:

- log: the public reader (files -> per-host facts, findings and a verdict).
- lines: raw input -> lines (every prefix shape, .gz, CRLF, colours), and the parts of one line the rules read.
- file_names: whose log a file is by its name (the host of a file per node, the rank of a file per rank).
- rules: what a log line means (pattern -> code, severity, cause, fix).
- timeline: when a line was written, on one scale for every stamp format, and the clock-skew margin.
- exceptions: a rank's own Python exception (the final line of its traceback), quoted.
- stages: how far the job got (nccl-tests table and footer, NCCL init, Lightning fit) and whether it ended.
- job: what the log says about the job as a whole (ranks, hosts, init, exits).
- compare: what differs between ranks and hosts (torch/CUDA versions, NCCL_* settings, the collective
  each rank was in).
- root_cause: the root cause from all the evidence together; consequences point at it.
- ras, flight_recorder: NCCL's RAS report and PyTorch's Flight Recorder dumps.
- forensics: evidence about a hung job, taken before it is killed.
"""
