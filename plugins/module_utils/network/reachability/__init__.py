"""The reachability check between every pair of hosts. Each part has one job:

- plan: who probes whom, on which ports.
- probe: one host's part (listen, probe the peers, wait, report).
- verdicts: every host's results -> a matrix and one verdict per failing pair.
"""
