"""The environment every job starts with (nccl_profile). Each part has one job:

- env: the NCCL, Gloo, PyTorch and Open MPI environment of one host, computed once and checked.
- container: that environment as a container on the host takes it (no host paths).
- transport: the transport NCCL uses between hosts under an environment (efa, ib or any).
- launch: how a job starts on each host (node ranks, master, slots, hostfile, what mpirun forwards).
- ssh_host_keys, ssh_trust: known-hosts lines from the hosts' own keys; whether SSH trust is needed.
"""
