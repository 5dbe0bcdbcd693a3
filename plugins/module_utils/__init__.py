"""ncclkit.cluster's Python, grouped by concern. Each package's docstring gives each part one job.

Layers, lowest first; an import points only down a layer or within its own package
(tests/static/test_layering.py enforces it):

0. common (safe names, secret names, findings, a raw script's result) and raw_scripts (standard
   library scripts sent through `raw`; they import nothing of ours).
1. host: what one host has and how to touch it (commands, files, NICs, routes, GPUs, RDMA,
   toolchain, container limits, sysctl).
2. nccl_tests, network, profile, clouds: the build, the network between hosts, the environment
   a job starts with, and each cloud's pieces.
3. check and diagnosis: before a job (will it start?) and after one (why did it fail?).
4. validate: the benchmarks' runs, gates and autotune.
5. report: the validation report in its renderings.
"""
