"""AWS. Each part has one job:

- cluster_plan: what an EC2 cluster lacks for NCCL, and the aws CLI command that fixes each piece.
- imds: an instance's identity from IMDSv2.
- efa_host: EFA on one host (devices, software, aws-ofi-nccl).
"""
