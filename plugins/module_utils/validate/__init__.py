"""nccl_validate's runs and decisions. Each part has one job:

- run_plan: the play's run plan (which runs happen, who launches them, where the report goes).
- run: one benchmark launch (why it cannot start, its command line, its record).
- bounded_run: a command with a deadline, the hang's evidence taken before the kill.
- gates: the gates, calibrated on the cluster itself.
- autotune: the grid of candidates, the decision rule, the hardware fingerprint and where it is kept.
- autotune_outcome: the measured outcome (a winner must win again, or the defaults stay).
- loopback: the node-local NET test (two ranks NCCL takes for two nodes).
- gloo: the result of the Gloo all-reduce where no host has a GPU.
- pair_rounds: the slow-node search (pairwise runs in rounds, and whom they blame).
"""
