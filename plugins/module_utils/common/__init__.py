"""What every other package needs, and nothing of theirs. Each part has one job:

- safe_names: names that reach a command, a root script or a firewall rule, checked strictly.
- secret_names: which environment variable names look like secrets, and the file modes that follow.
- findings: the one constructor of a finding (check, network, validation and log rules alike).
- script_result: the JSON object a standard-library script run through `raw` printed last.
- nccl_plugins: the short name NCCL takes for a plugin library (NCCL_NET_PLUGIN=ofi).
- tristate: the one reading of every auto/on/off setting (auto/true/false, auto/required/disabled).
"""
