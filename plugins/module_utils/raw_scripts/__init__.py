"""Standard-library scripts that run through `raw` (one Python start a host, no AnsiballZ).
They import nothing of ours, so the file itself is the payload:

- check_probe: `ncclkit check`'s probe (pings and TCP connects to the peers; on the master, who already holds the rendezvous port).
- profile_host_read: what nccl_profile reads on a host before it writes anything.
"""
