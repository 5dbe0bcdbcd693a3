"""Link bandwidth between hosts. Each part has one job:

- rounds: which host measures to which, round by round.
- bandwidth: every host's iperf3 rounds -> the `link_bandwidth` record and verdicts.
"""
