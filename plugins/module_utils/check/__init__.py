"""`ncclkit check`: will training start here? Each part has one job:

- host: what one host shows about the rendezvous path (read only).
- findings: what every host's view predicts, as findings.
"""
