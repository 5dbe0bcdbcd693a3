"""One host: what it has and how a module touches it. Each part has one job:

- command: run a host command with a time limit (every module's host commands go through it).
- files: write a host file atomically, with its mode, and say whether it changed.
- nics, routes: the NICs and their addresses over rtnetlink; which NIC a packet leaves by.
- gpus, rdma, toolchain: the GPUs (nvidia-smi), the RDMA ports NCCL's IB transport can use, and
  what there is to build and run NCCL programs (CUDA, NCCL, MPI).
- container: what a container lets the host change, and what NCCL needs from it.
- sysctl: which sysctl file decides a key at boot.
- summary: nccl_preflight's one-line summary of a host.
- state_stamp: a role's record of a converged host (inputs' digest, live file checksums, MTUs,
  the nftables ruleset's hash, its facts) and whether the host still matches it.
"""
