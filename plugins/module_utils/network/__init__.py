"""The network between hosts. Each part has one job:

- cluster_nic: each host's cluster NIC, the one whose network holds the other hosts.
- left_out: the hosts that failed or have no cluster address.
- ports: the TCP ports NCCL needs (the ephemeral range, the rendezvous ports).
- mtu_plan, mtu_persist: one MTU for the cluster, and keeping it across reboots.
- firewall/: the rules ncclkit adds on every backend and the evidence of what drops a port.
- reachability/: who probes whom, one host's probe, and the verdict per failing pair.
- links/: the link-bandwidth rounds and gate.
"""
