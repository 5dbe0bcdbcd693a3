"""The `ncclkit` subcommands, one module each, every one with `register(subparsers)`:

- check: will multi-node training start on this inventory? (read only)
- diagnose: the root cause of a failed or hung run, from its logs.
- parse: nccl-tests output -> runs, gated.
- report: plot a validation report's bus bandwidth.
- run: a playbook (site.yml by default) through ansible-runner, with progress and a report.
- lab: the local practice cluster (up, down, status).
"""
