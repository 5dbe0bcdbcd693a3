"""Why a job failed or hung, from its logs and evidence. Each part has one job:

- log: the public reader (files -> per-host facts, findings and a verdict).
- lines: raw input -> lines, and the parts of one line the rules read.
- rules: what a log line means (pattern -> code, severity, cause, fix).
- job: what the log says about the job as a whole (ranks, hosts, init, exits).
- root_cause: the root cause from all the evidence together; consequences point at it.
- ras, flight_recorder: NCCL's RAS report and PyTorch's Flight Recorder dumps.
- forensics: evidence about a hung job, taken before it is killed.
"""
