"""Whatever it is given, the log reader returns plain JSON or raises NcclLogError, never anything else."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import NcclLogError, read_nccl_log

# Pieces of real lines, so that generated logs reach the patterns and not only the fallbacks.
PIECES = [
    "node0:2841:2841 [0] ", "[1,0]<stdout>:", "[rank1]: ", "[2026-12-02 09:05:03] ", "\x1b[0m", "NCCL INFO ",
    "bootstrap.cc:114 NCCL WARN ", "Bootstrap : no socket interface found", "Bootstrap: Using eth0:10.0.0.1<0>",
    "Bootstrap : Using [0]eno1:avahi:", "NET/Socket : Using [0]lo:127.0.0.1<0> [1]", "fe80::1%eth0<0>",
    "NET/IB : Using [0]mlx5_0:1/IB ; OOB ", "NET/OFI Selected provider is efa", "Using network ",
    "NCCL version 2.28.9+cuda13.0", "Connect to 10.0.0.2<45763> failed : ", "Connection refused",
    "connect to [::1]:80 returned ", "exceeded error retry count", "Test NCCL failure common.cu:1 '",
    "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device ", "Gloo connectFullMesh failed with ",
    "connect [127.0.1.1]:3210: ", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=",
    "ncclInternalError", "RendezvousTimeoutError", "(errno: 110 - Connection timed out)", "nNodes 2",
    "via NET/Socket/0", " set by environment to ", "\n", "\r", "\x00", "%", "<", ">", ":", "{", "}",
]
LOGS = st.one_of(
    st.binary(max_size=3000),
    st.text(max_size=1500),
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=30)), max_size=60).map("".join),
    st.lists(st.sampled_from(PIECES), max_size=80).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass")),
)
OPTIONS = st.fixed_dictionaries({}, optional={
    "cluster_cidr": st.one_of(st.none(), st.sampled_from(["10.0.0.0/8", "fe80::/10", "x", "10.0.0.0/33", ""]),
                              st.text(max_size=20)),
    "cluster_ips": st.one_of(st.none(), st.lists(st.sampled_from(["10.0.0.1", "::1", "bogus", "1.2.3.0/24"]),
                                                 max_size=3)),
    "expected_transport": st.sampled_from(["any", "socket", "ib", "efa", "roce"]),
    "default_host": st.one_of(st.none(), st.text(max_size=10)),
})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=LOGS, options=OPTIONS)
def test_reader_returns_json_or_raises_only_its_own_error(data, options):
    try:
        result = read_nccl_log(data, **options)
    except NcclLogError as error:
        assert str(error)
        return
    json.dumps(result)
    assert set(result) == {"verdict", "judged", "hosts", "findings", "nccl_versions", "multi_node", "lines",
                           "notes"}
