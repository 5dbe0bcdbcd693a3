"""ncclkit: prepare GPU clusters for multi-node NCCL training and prove they work."""

__version__ = "0.1.0"
