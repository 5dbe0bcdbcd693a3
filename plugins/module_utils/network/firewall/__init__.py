"""The host firewall. Each part has one job:

- sources: who the firewall admits, each source checked so no typo opens the ports wider.
- rules: the rules ncclkit adds, written out for each backend (nftables, firewalld, ufw, iptables).
- observe: what the host's firewalls look like now (read-only commands and their meaning).
- evidence: would this host's firewall drop a connection to a port, and by which rule.
- backends: the changes that bring the rules to the wanted state, on any backend.
"""
