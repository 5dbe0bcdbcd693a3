"""NVIDIA nccl-tests: what to build, where, and what its output says. Each part has one job:

- plan, paths: what the nccl_tests role builds on a host, and which paths it may install or delete.
- output: the public reader (text or -J JSON -> runs, gated); text, json_file, rows and lines
  are its parts (the stdout reader, the JSON reader, the bounded result rows, the shared line shapes).
"""
