"""The engine's parts on lines written here in the shapes real logs have: prefixes, timestamps, a
rank's own exception, stages that never ended, ranks and hosts that differ, and who failed first.
(tests/samples/failures holds whole cases; these pin each part down on its own.)"""

import gzip

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.exceptions import classify
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.file_names import file_host, file_rank
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.job import pci_number
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.lines import parse_line
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.log import read_nccl_log, read_nccl_log_files
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.rules import NEEDLES, anchors
from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.timeline import SKEW_S, earlier, line_time

NCCL = "node1:4242:4250 [0] NCCL INFO NET/Socket : Using [0]eth1:10.0.0.12<0>"


def first(result):
    return result["findings"][0]


# ---- every shape of line ----

@pytest.mark.parametrize("shaped, label, stamp", [
    (NCCL, None, None),
    ("[2025-10-16 22:16:08] " + NCCL, None, "[2025-10-16 22:16:08]"),
    ("[1,3]<stdout>:" + NCCL, "1,3", None),
    ("[rank3]:" + NCCL, "rank3", None),
    ("[default0]:" + NCCL, "default0", None),
    ("(RayTrainWorker pid=812, ip=10.0.0.12) " + NCCL, "pid=812", None),
    ("2025-10-16T22:16:08.123Z stdout F " + NCCL, None, "2025-10-16T22:16:08.123Z"),
    ("  | 2025-05-16T16:39:55.218-07:00 | " + NCCL, None, "2025-05-16T16:39:55.218-07:00"),
    ("[pod/train-worker-1/main] " + NCCL, "pod/train-worker-1/main", None),
    ("\x1b[32m[rank3]:" + NCCL + "\x1b[0m", "rank3", None),
    ("3: " + NCCL, "3", None),
    ("node1: [rank3]:" + NCCL, "rank3", None),
])
def test_prefixes_in_any_order_leave_the_nccl_line(shaped, label, stamp):
    line = parse_line(1, shaped)
    assert (line.host, line.level, line.label, line.stamp) == ("node1", "INFO", label, stamp)
    assert line.msg == "NET/Socket : Using [0]eth1:10.0.0.12<0>"


def test_syslog_and_pdsh_prefixes_name_the_host_of_lines_that_have_none():
    kernel = parse_line(1, "Jun  3 01:40:12 node3 kernel: Out of memory: Killed process 51277 (python3)")
    expected = ("node3", "Out of memory: Killed process 51277 (python3)", "Jun  3 01:40:12")
    assert (kernel.host, kernel.text, kernel.stamp) == expected
    pdsh = parse_line(1, "gpu-7: [rank1]: ValueError: bad")
    assert (pdsh.host, pdsh.label, pdsh.text) == ("gpu-7", "rank1", "ValueError: bad")
    # A word without a digit is no host ("srun: error: ..." keeps its words).
    assert parse_line(1, "srun: error: gpu4: task 1: Killed").text.startswith("srun: error:")


def test_nccl_lines_without_their_prefix_and_before_2_5_are_nccl_lines():
    bare = parse_line(1, "[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device")
    assert (bare.level, bare.label, bare.host) == ("WARN", "3", None)
    old = parse_line(1, "gpu-a:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : Connection refused")
    assert (old.host, old.level) == ("gpu-a", "WARN")


def test_progress_bars_crlf_and_gz_read_as_the_same_lines(tmp_path):
    text = ("Epoch 0:  10%|#  | 1/10\rEpoch 0:  20%|## | 2/10\r\n"
            "[rank1]: Traceback (most recent call last):\r\n"
            '[rank1]:   File "train.py", line 9, in step\r\n'
            "[rank1]: KeyError: 'label'\r\n")
    plain, packed = tmp_path / "rank1.log", tmp_path / "rank1.log.gz"
    plain.write_text(text, newline="")
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        result = read_nccl_log_files([path])
        assert (first(result)["code"], first(result)["rank"]) == ("rank_exception", 1)
        assert "KeyError: 'label'" in first(result)["cause"] and result["lines"] == 5


# ---- time ----

def test_timestamps_of_every_kind_share_one_scale():
    nccl = line_time(parse_line(1, "[2025-12-05 04:47:09] " + NCCL))
    glog = line_time(parse_line(1, "E1205 04:47:09.474000 140 torch/distributed/run.py:12] failed"))
    bracketed = line_time(parse_line(1, "[rank0]:[E1205 04:47:19.100000 8101 ProcessGroupNCCL.cpp:632] x"))
    syslog = line_time(parse_line(1, "Dec  5 04:47:09 node3 kernel: Out of memory: Killed process 1 (a)"))
    assert nccl == syslog and abs(glog - nccl - 0.474) < 1e-6 and bracketed - glog > SKEW_S
    assert earlier(glog, bracketed) and not earlier(nccl, glog) and not earlier(None, glog)


def test_the_earliest_own_failure_is_the_root_when_the_clocks_tell():
    text = ("[rank1]:[E1205 04:40:00.000000 1 x.py:1] Traceback (most recent call last):\n"
            "[rank1]: ValueError: first\n"
            "[rank0]:[E1205 04:41:00.000000 1 x.py:1] Traceback (most recent call last):\n"
            "[rank0]: ValueError: second\n")
    later_first = text.replace("04:40:00", "04:42:00")
    assert first(read_nccl_log(text))["rank"] == 1
    assert first(read_nccl_log(later_first))["rank"] == 0  # rank 1's stamp is now the later one


# ---- a rank's own error ----

@pytest.mark.parametrize("exc_type, message, code", [
    ("ValueError", "bad batch at step 6", "rank_exception"),
    ("proj.data.errors.DataCorruptError", "shard 17", "rank_exception"),
    ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
    # A GPU fault, as NCCL's own lines of it are: the rank's cuda_error (its fix tells a bad access by Xid).
    ("RuntimeError", "CUDA error: an illegal memory access was encountered", "cuda_error"),
    ("RuntimeError", "CUDA error: device-side assert triggered", "rank_exception"),
    ("RuntimeError", "Unexpected error from cudaGetDeviceCount(). Error 802: system not yet initialized",
     "cuda_not_initialized"),
    ("torch.distributed.DistBackendError", "NCCL error in: x, remote process exited", None),
    ("RuntimeError", "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:1",
     None),
    ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError", "", None),
    ("RuntimeError", "DataLoader worker (pid(s) 812) exited unexpectedly", None),
    # NCCL's and Gloo's names count as words only: a path that holds them is the program's own business.
    ("FileNotFoundError", "[Errno 2] No such file or directory: '/opt/ncclkit/cache/shard-3.bin'", "rank_exception"),
    ("OSError", "libnccl.so.2: cannot open shared object file: No such file or directory", "rank_exception"),
    ("RuntimeError", "ncclUnhandledCudaError: Call to CUDA function failed.", None),
])
def test_only_a_rank_s_own_exception_is_its_root_cause(exc_type, message, code):
    assert classify(exc_type, message) == code


def test_the_exception_is_quoted_with_its_rank_and_host_and_the_peer_s_errors_follow():
    node1 = ("node1:10:10 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1 - Init COMPLETE\n"
             "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
             "peer [10.0.0.12]:28817\n")
    node2 = ("node2:20:20 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 1 - Init COMPLETE\n"
             "[rank1]: Traceback (most recent call last):\n"
             '[rank1]:   File "/srv/train.py", line 38, in training_step\n'
             '[rank1]:     raise ValueError(f"bad batch at step {i}")\n'
             "[rank1]: ValueError: bad batch at step 6\n")
    result = read_nccl_log(node1 + node2)
    root = first(result)
    assert (root["code"], root["rank"], root["host"]) == ("rank_exception", 1, "node2")
    assert "ValueError: bad batch at step 6" in root["cause"] and "/srv/train.py:38" in root["cause"]
    assert all(f["consequence_of"] == "rank_exception" for f in result["findings"][1:] if f["severity"] == "error")


def test_interleaved_tracebacks_of_two_ranks_stay_apart():
    text = ("[rank0]: Traceback (most recent call last):\n"
            "[rank1]: Traceback (most recent call last):\n"
            '[rank0]:   File "a.py", line 1, in f\n'
            "[rank1]: KeyError: 'x'\n"
            "[rank0]: IndexError: list index out of range\n")
    found = {(f["rank"], f["code"]) for f in read_nccl_log(text)["findings"]}
    assert {(0, "rank_exception"), (1, "rank_exception")} <= found


def test_exit_minus_9_alone_stays_rank_killed_and_an_oom_line_for_another_process_changes_nothing():
    death = "E0603 02:10:05.000000 2830 api.py:869] failed (exitcode: -9) local_rank: 0 (pid: 9902) of binary: x\n"
    assert first(read_nccl_log(death))["code"] == "rank_killed"
    other = "Jun  3 01:40:12 node3 kernel: Out of memory: Killed process 51277 (java)\n"
    assert first(read_nccl_log(other + death))["code"] == "rank_killed"
    same_time = other.replace("01:40:12", "02:10:01").replace("(java)", "(python3)")
    assert first(read_nccl_log(same_time + death))["code"] == "oom_killed"  # its host and time match


# ---- incomplete is never healthy ----

HEADER = "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20\n"
TABLE = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
ROW = "           8             2     float     sum      -1    20.11    0.00    0.00      0\n"


def test_an_nccl_tests_table_without_its_footer_is_incomplete_and_with_it_healthy():
    cut = read_nccl_log(HEADER + TABLE + ROW)
    assert first(cut)["code"] == "incomplete_run" and first(cut)["confidence"] == "low"
    assert "8 bytes" in first(cut)["cause"] and "Avg bus bandwidth" in first(cut)["cause"]
    done = read_nccl_log(HEADER + TABLE + ROW + "# Avg bus bandwidth    : 0.001\n")
    assert done["verdict"].startswith("HEALTHY") and not done["findings"]


def test_a_lightning_fit_without_its_stop_line_is_incomplete():
    fit = "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]\nEpoch 0:  50%|#####     | 5/10\n"
    assert first(read_nccl_log(fit))["code"] == "incomplete_run"
    assert read_nccl_log(fit + "`Trainer.fit` stopped: `max_epochs=1` reached.\n")["verdict"].startswith("HEALTHY")


def test_no_end_marker_is_a_warning_and_nothing_recognisable_is_nothing_to_judge():
    job = "node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1 - Init COMPLETE\nstep 10 loss 1.0\n"
    result = read_nccl_log(job)
    assert result["verdict"].startswith("HEALTHY") and [f["code"] for f in result["findings"]] == [
        "completion_unknown"]
    nothing = read_nccl_log("Collecting numpy\nInstalling collected packages: numpy\n")
    assert nothing["judged"] is False and nothing["findings"] == []


# ---- ranks and hosts that differ ----

def init_lines(host, pid, rank, env=(), version="2.21.5+cuda12.4"):
    lines = [f"{host}:{pid}:{pid} [0] NCCL INFO NCCL version {version}"]
    lines += [f"{host}:{pid}:{pid} [0] NCCL INFO {name} set by environment to {value}" for name, value in env]
    lines.append(f"{host}:{pid}:{pid} [0] NCCL INFO comm 0x1 rank {rank} nranks 3 cudaDev 0 busId 1 - Init COMPLETE")
    return "\n".join(lines) + "\n"


def watchdog(rank, seq, op, numel):
    return (f"[rank{rank}]:[E1205 04:47:09.000000 1 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, "
            "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n")


def test_watchdogs_that_disagree_name_the_odd_rank_its_collective_and_both_sizes():
    text = "".join(init_lines(f"n{r}", 10 + r, r) for r in range(3))
    text += "".join(watchdog(rank, 12, "BROADCAST", numel) for rank, numel in ((0, 1024), (1, 2048), (2, 1024)))
    root = first(read_nccl_log(text))
    assert (root["code"], root["rank"], root["host"]) == ("collective_desync", 1, "n1")
    assert "NumelIn=2048" in root["cause"] and "NumelIn=1024" in root["cause"] and "program" in root["fix"]
    same = "".join(init_lines(f"n{r}", 10 + r, r) for r in range(3)) + watchdog(0, 12, "BROADCAST", 1024)
    assert first(read_nccl_log(same))["code"] == "hang_in_collective"


def test_a_setting_on_one_host_only_is_the_root_of_the_hang_it_causes():
    text = (init_lines("n0", 10, 0, [("NCCL_PROTO", "LL")]) + init_lines("n1", 11, 1, [("NCCL_PROTO", "Simple")])
            + init_lines("n2", 12, 2, [("NCCL_PROTO", "Simple")]) + watchdog(0, 5, "ALLREDUCE", 1))
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"]) == ("nccl_setting_mismatch", "n0") and "NCCL_PROTO=LL" in root["cause"]
    healthy = text.replace(watchdog(0, 5, "ALLREDUCE", 1), "")
    assert {f["severity"] for f in read_nccl_log(healthy)["findings"] if f["code"] == "nccl_setting_mismatch"} == {
        "warning"}


def test_a_torch_build_on_one_host_is_named():
    builds = (("a", "2.4.1+cu124"), ("b", "2.4.1+cu124"), ("c", "2.4.1+cu118"))
    text = "".join(f"[{h}] PyTorch version: {v}\n" for h, v in builds)
    text = text.replace("[a] ", "a1: ").replace("[b] ", "b1: ").replace("[c] ", "c1: ")
    root = first(read_nccl_log(text + "c1: [rank2]: RuntimeError: NCCL error: unhandled cuda error\n"))
    assert (root["code"], root["host"]) == ("runtime_version_mismatch", "c1") and "2.4.1+cu118" in root["cause"]


# ---- signatures ----

@pytest.mark.parametrize("line, code, words", [
    ("h:1:2 [0] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x "
     "(size 9637888)", "shm_too_small", "--shm-size"),
    ("h:1:2 [0] ofi.c:1 NCCL WARN NET/OFI Unable to insert remote address into address vector for device 0",
     "efa_av_insert_failed", "outbound"),
    ("h:1:2 [0] net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got async event : local access violation work queue "
     "error", "ib_completion_error", "NCCL_IB_GID_INDEX"),
    ("h:1:2 [0] net_ib.cc:1 NCCL WARN NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument",
     "ib_gid_error", "NCCL_IB_GID_INDEX"),
    ("[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address "
     "already in use).", "address_in_use", "29500"),
    # NCCL 2.19+'s proxy threads report a failed connect without the socket's own line.
    ("gpu1:22:40 [3] NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3, closing "
     "connection", "connect_failed", "NCCL_SOCKET_IFNAME"),
    ("gpu1:22:33 [3] proxy.cc:1234 NCCL WARN Proxy Call to rank 1 failed (Connect)", "connect_failed",
     "NCCL_SOCKET_IFNAME"),
    # A CUDA failure inside NCCL says which path: GPU peer access (P2P), NVLink SHARP.
    ("g1:1:1 [0] transport/p2p.cc:272 NCCL WARN Cuda failure 'peer access is not supported between these two "
     "devices'", "cuda_error", "NCCL_P2P_DISABLE=1"),
    ("g1:1:1 [2] transport/nvls.cc:254 NCCL WARN Cuda failure 1 'invalid argument'", "cuda_error",
     "NCCL_NVLS_ENABLE=0"),
    # The last line of a rank's OOM, pasted without its traceback.
    ("[2025-10-16 22:16:08] node7: [rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
     "cuda_oom", "batch size"),
    # The launcher could not start the program on a host: never HEALTHY, never "nothing to judge".
    ("node2: Permission denied (publickey).", "launch_failed", "authorized_keys"),
    ("ssh: connect to host node2 port 22: Connection timed out", "launch_failed", "port 22"),
    ("PRTE has lost communication with a remote daemon.", "launch_failed", "orted"),
    ("./build/all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot open shared object "
     "file: No such file or directory", "launch_failed", "libnccl.so.2"),
    ("torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of "
     "(master-0, 29500).", "rendezvous_connection_error", "getent hosts"),
    # Gloo's peer went away: a consequence of that peer's own failure.
    ("[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
     "[10.0.0.12]:28817", "remote_exited", "failed first"),
    ("[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
     "[10.0.0.12]:15045: Connection reset by peer", "remote_exited", "failed first"),
])
def test_real_signatures_give_their_code_and_fix(line, code, words):
    root = first(read_nccl_log(line + "\n"))
    assert root["code"] == code and words in root["fix"] + root["cause"]


def test_a_virtual_nic_is_the_root_when_a_peer_connection_fails_after_it():
    text = ("node1:1:1 [0] NCCL INFO Bootstrap : Using br-3f2a:172.18.0.1<0>\n"
            "node1:1:1 [0] NCCL INFO NET/Socket : Using [0]br-3f2a:172.18.0.1<0> [1]ens5:10.0.0.11<0>\n"
            "node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
            "node1:1:2 [0] misc/socket.cc:1 NCCL WARN Net : Connect to 172.18.0.2<45000> failed : Connection "
            "refused\n")
    result = read_nccl_log(text)
    root = first(result)
    assert (root["code"], root["severity"]) == ("virtual_nic", "error") and "ens5" in root["fix"]
    assert next(f for f in result["findings"] if f["code"] == "connect_refused")["consequence_of"] == "virtual_nic"


def test_one_node_s_log_with_a_virtual_nic_and_a_failed_connect_blames_the_nic():
    # No nNodes line and one host only: the failed connect to a peer says there was another process.
    text = ("node1:1:1 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>\n"
            "node1:1:1 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0>\n"
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
            "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
            "Last error:\n"
            "socketStartConnect: Connect to 172.17.0.1<39001> failed : Software caused connection abort\n")
    assert (first(read_nccl_log(text))["code"], first(read_nccl_log(text))["host"]) == ("virtual_nic", "node1")
    # Without a failed connection one node on docker0 is a single-node job: no finding about the NIC.
    alone = read_nccl_log("\n".join(text.splitlines()[:2]) + "\n")
    assert not any(f["code"] == "virtual_nic" for f in alone["findings"])


def test_every_marker_holds_an_anchor():
    # The prefilter skips a line that holds no anchor: every needle must hold one.
    chosen = anchors(NEEDLES)
    assert all(any(anchor in needle for anchor in chosen) for needle in NEEDLES)
    assert len(chosen) < len(NEEDLES)


def test_the_line_prefilter_s_first_pieces_are_not_the_commonest_of_text():
    # A marker whose only two-letter cover is ": " makes most lines of a training log pass the first
    # stage of the prefilter (measured: 1.21x the time on benchmarks/diagnose_speed.py's 1 GiB log):
    # choose its words again.
    from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis import log

    assert not set(log._LINE_PAIRS) & {": ", ", ", "e ", " t", "th", "s "}, log._LINE_PAIRS


def test_flight_recorder_dumps_that_record_one_collective_differently_are_a_desync(tmp_path):
    import pickle

    def dump(rank, op, size):
        entries = [{"process_group": ("0", "default_pg"), "collective_seq_id": seq, "profiling_name": name,
                    "state": "completed", "is_p2p": False, "input_sizes": [[shape]]}
                   for seq, name, shape in ((1, "nccl:all_reduce", 8), (2, op, size))]
        return pickle.dumps({"version": "2.4", "rank": rank, "entries": entries,
                             "pg_config": {"0": {"ranks": "[0, 1, 2]"}},
                             "pg_status": {"0": {"last_completed_collective": 1, "last_enqueued_collective": 2}}})

    paths = []
    for rank, op, size in ((0, "nccl:broadcast", 1024), (1, "nccl:broadcast", 4096), (2, "nccl:broadcast", 1024)):
        path = tmp_path / f"nccl_trace_rank_{rank}"
        path.write_bytes(dump(rank, op, size))
        paths.append(path)
    root = first(read_nccl_log_files(paths))
    assert (root["code"], root["rank"]) == ("collective_desync", 1)
    assert "[[4096]]" in root["cause"] and "[[1024]]" in root["cause"] and "#2 is broadcast" in root["cause"]
    (tmp_path / "nccl_trace_rank_1").write_bytes(dump(1, "nccl:broadcast", 1024))
    assert "collective_desync" not in {f["code"] for f in read_nccl_log_files(paths)["findings"]}


def test_torch_s_own_desync_check_and_a_missing_unique_id_are_named():
    detail = ("[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
              "CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST, TensorShape=[2048]), but Rank 0 is running "
              "collective: CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST, TensorShape=[1024])\n")
    root = first(read_nccl_log(detail))
    assert (root["code"], root["rank"]) == ("collective_desync", 1) and "TensorShape=[2048]" in root["cause"]
    unique = ("[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
              "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection "
              "reset by peer\n")
    root = first(read_nccl_log(unique))
    assert root["code"] == "rendezvous_connection_error" and "rank 0" in root["cause"]


def monitored_barrier_lines(waiting, late, host):
    """torch's monitored barrier in the waiting rank's log (TORCH_DISTRIBUTED_DEBUG=DETAIL), in the
    shape a run of benchmarks/h200_fault_kinds.sh recorded on an H100 (collective_desync)."""
    return (f"{host}:30:30 [0] NCCL INFO comm 0x1 rank {waiting} nranks 2 cudaDev 0 busId 1 - Init COMPLETE\n"
            f"[rank{waiting}]:[E1205 17:23:26.533 ProcessGroupGloo.cpp:2708] [Rank {waiting}]: Rank {late} failed to "
            "pass monitoredBarrier in 20000 ms\n"
            f"[rank{waiting}]: Traceback (most recent call last):\n"
            f'[rank{waiting}]:   File "/srv/train.py", line 39, in <module>\n'
            f"[rank{waiting}]:     dist.all_reduce(tensor)\n"
            f"[rank{waiting}]: RuntimeError: [Rank {waiting}]: Ranks {late} failed to pass monitoredBarrier in 20000 ms\n")


def test_the_rank_late_to_torch_s_monitored_barrier_is_named_not_the_rank_that_waited():
    late_done = "node2:40:40 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 1 - Init COMPLETE\n"
    result = read_nccl_log(monitored_barrier_lines(0, 1, "node1") + late_done)
    root = first(result)
    assert (root["code"], root["rank"], root["host"]) == ("collective_desync", 1, "node2")
    assert "monitored barrier" in root["cause"] and "rank_exception" not in [f["code"] for f in result["findings"]]
    # The late rank's own exception is the root; the barrier's report follows from it.
    own = (late_done + "[rank1]: Traceback (most recent call last):\n"
           '[rank1]:   File "/srv/train.py", line 30, in <module>\n'
           "[rank1]: KeyError: 'labels'\n")
    root = first(read_nccl_log(monitored_barrier_lines(0, 1, "node1") + own))
    assert (root["code"], root["rank"], root["host"]) == ("rank_exception", 1, "node2")


def test_open_mpi_s_first_failed_process_is_rank_failed():
    text = ("mpirun detected that one or more processes exited with non-zero status, thus causing\n"
            "the job to be terminated. The first process to do so was:\n\n"
            "  Process name: [[38612,1],3]\n  Exit code:    1\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["rank"]) == ("rank_failed", 3)


def test_a_kill_the_clocks_show_before_an_exception_comes_first():
    kill = "E1205 04:40:00.000000 2830 api.py:869] failed (exitcode: -9) local_rank: 1 (pid: 11) of binary: x\n"
    exception = ("[rank0]:[E1205 04:45:00.000000 10 x.py:1] Traceback (most recent call last):\n"
                 "[rank0]: AssertionError: loss is nan\n")
    assert first(read_nccl_log(kill + exception))["code"] == "rank_killed"
    assert first(read_nccl_log(kill.replace("04:40:00", "04:46:00") + exception))["code"] == "rank_exception"


def test_a_traceback_python_says_it_ignored_is_no_root_cause():
    shutdown = ("Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
                "Traceback (most recent call last):\n"
                '  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1479, in __del__\n'
                "AssertionError: can only test a child process\n"
                "`Trainer.fit` stopped: `max_epochs=2` reached.\n")
    assert read_nccl_log(shutdown)["verdict"].startswith("HEALTHY")
    assert first(read_nccl_log(shutdown.split("\n", 1)[1]))["code"] == "rank_exception"


def test_a_gpu_xid_in_the_kernel_log_is_the_root_of_what_follows():
    text = ("node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1 - Init COMPLETE\n"
            "node1:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer node2<4000>\n"
            "Dec  5 04:47:01 node2 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.\n")
    result = read_nccl_log(text)
    root = first(result)
    assert (root["code"], root["host"]) == ("cuda_error", "node2") and "Xid 79" in root["cause"]
    assert next(f for f in result["findings"] if f["code"] == "remote_exited")["consequence_of"] == "cuda_error"


# ---- Gloo: a collective that timed out in some ranks, a rank that never came ----

def _lightning_rank(rank: int, world: int, tail: str = "") -> str:
    return (f"Initializing distributed: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/{world}\n"
            "All distributed processes registered. Starting with 4 processes\n" + tail)


def _gloo_timeout(rank: int) -> str:
    return (f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "/srv/train.py", line 80, in training_step\n'
            f"[rank{rank}]: RuntimeError: [/opt/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
            "Timed out waiting 1800000ms for recv operation to complete\n")


def test_the_rank_that_never_reached_a_gloo_collective_is_the_suspect_on_its_file_s_host(tmp_path):
    # One file per node, named after it; ranks 0, 1 and 3 time out in Gloo's recv, rank 2 announced
    # itself and then wrote nothing.
    paths = []
    for rank in range(4):
        path = tmp_path / f"gpu-node-0{rank + 1}.log"
        path.write_text(_lightning_rank(rank, 4, "" if rank == 2 else _gloo_timeout(rank)))
        paths.append(str(path))
    root = first(read_nccl_log_files(paths))
    assert (root["code"], root["rank"], root["host"]) == ("hang_in_collective", 2, "gpu-node-03"), root
    assert "rank(s) 0, 1, 3 timed out in a Gloo recv" in root["cause"]


def test_a_gloo_timeout_in_a_rank_whose_peers_logs_are_missing_names_no_suspect(tmp_path):
    # Only rank 1's log: the others may well have timed out too, so nobody is named.
    path = tmp_path / "rank1.log"
    path.write_text(_lightning_rank(1, 4, _gloo_timeout(1)))
    root = first(read_nccl_log_files([str(path)]))
    assert root["code"] == "hang_in_collective" and root["rank"] is None and root["confidence"] == "low", root


@pytest.mark.parametrize("name, host", [
    ("node1.log", "node1"), ("gpu-node-03.txt.gz", "gpu-node-03"), ("worker-1-describe.txt", "worker-1"),
    ("node3-torchrun.log", "node3"), ("node0_rank1.log", "node0"), ("10.0.0.5.log", "10.0.0.5"),
    ("ip-10-0-1-17.ec2.internal.log", "ip-10-0-1-17.ec2.internal"),
    ("train.log", None), ("rank0.log", None), ("slurm-9001.out", None), ("run7.log", None), ("gpu-7.log", "gpu-7"),
    ("train-2026-12-05.log", None), ("mpirun.out", None), ("<stdin>", None), ("nodeA.log", None),
])
def test_a_file_per_node_is_named_after_its_host_and_other_names_are_not_hosts(name, host):
    assert file_host(f"/logs/{name}") == host


def test_a_name_the_logs_give_a_host_is_that_host_whatever_its_shape():
    assert file_host("nodeA.log", hosts={"nodeA", "nodeB"}) == "nodeA"
    assert (file_rank("train_rank12.txt"), file_rank("node1.log")) == (12, None)


def test_the_file_s_name_settles_the_host_of_its_lines_and_the_lines_win_over_it(tmp_path):
    store = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
             "address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n")
    named = tmp_path / "gpu-7.log"
    named.write_text(store)
    assert first(read_nccl_log_files([str(named)]))["host"] == "gpu-7"
    # An NCCL line in the file names its host: the file's name is not used.
    named.write_text("gpu-9:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.9<0>\n" + store)
    assert first(read_nccl_log_files([str(named)]))["host"] == "gpu-9"


def test_an_exception_raised_while_handling_a_signal_or_a_peer_s_error_is_not_the_rank_s_own():
    # torchrun's shutdown after a SIGTERM: killpg on a process that has gone raises ProcessLookupError.
    shutdown = ("Traceback (most recent call last):\n"
                '  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/api.py", '
                "line 754, in run\n"
                "torch.distributed.elastic.multiprocessing.api.SignalException: Process 41 got signal: 15\n"
                "\n"
                "During handling of the above exception, another exception occurred:\n"
                "\n"
                "Traceback (most recent call last):\n"
                '  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py", '
                "line 1033, in _close\n"
                "{error}\n")
    for error in ("ProcessLookupError: [Errno 3] No such process", "KeyError: 'pid 42'"):
        found = read_nccl_log(shutdown.format(error=error))["findings"]
        assert not [f for f in found if f["code"] == "rank_exception"], (error, found)
    # A chain that starts with the rank's own error keeps it, and a later own error after it counts too.
    own = ("Traceback (most recent call last):\n"
           '  File "/srv/train.py", line 3, in load\n'
           "KeyError: 'shard'\n"
           "\n"
           "During handling of the above exception, another exception occurred:\n"
           "\n"
           "Traceback (most recent call last):\n"
           '  File "/srv/train.py", line 9, in main\n'
           "ValueError: no data for step 6\n")
    causes = [f["cause"] for f in read_nccl_log(own)["findings"] if f["code"] == "rank_exception"]
    assert any("KeyError: 'shard'" in cause for cause in causes), causes
    assert any("ValueError: no data for step 6" in cause for cause in causes), causes


def test_deepspeed_s_launcher_reports_a_worker_s_death():
    text = ("[2025-01-01 10:00:00,000] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', "
            "'train.py', '--local_rank=1'] exits with return code = -9\n")
    root = first(read_nccl_log(text))
    assert root["code"] == "rank_killed" and "signal 9" in root["cause"] and "pid None" not in root["cause"]
    failed = first(read_nccl_log(text.replace("= -9", "= 1")))
    assert failed["code"] == "rank_failed" and "exited with code 1" in failed["cause"]
    assert read_nccl_log(text.replace("= -9", "= 0"))["verdict"].startswith("NOTHING TO JUDGE")


def test_a_caller_that_knows_whose_log_a_file_is_names_its_host(tmp_path):
    # launch writes one log per inventory host; the name "trainer.log" alone names no host.
    log = tmp_path / "trainer.log"
    log.write_text("[rank1]: Traceback (most recent call last):\n"
                   '[rank1]:   File "/srv/train.py", line 4, in step\n'
                   "[rank1]: ValueError: bad batch\n")
    assert first(read_nccl_log_files([str(log)]))["host"] == "unknown"
    assert first(read_nccl_log_files([str(log)], file_hosts={str(log): "gpu-a"}))["host"] == "gpu-a"


# ---- the third pass on failures from elsewhere (tests/samples/failures/w3-*) ----

@pytest.mark.parametrize("address, number", [
    ("86000", 0x86000), ("a01c0", 0xa01c0), ("PCI:0000:86:00", 0x86000), ("0000:a0:1c.0", 0xa01c0),
    ("00000000:4E:00.0", 0x4e000), ("nonsense", None)])
def test_a_gpu_s_pci_address_is_one_number_as_nccl_prints_it(address, number):
    assert pci_number(address) == number


def test_an_xid_is_the_rank_s_whose_gpu_nccl_put_on_that_bus():
    text = ("node2:7001:7010 [6] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 14 nranks 16 cudaDev 6 nvmlDev 6 "
            "busId a01c0 commId 0x2 - Init START\n"
            "node2:7002:7011 [7] NCCL INFO ncclCommInitRankConfig comm 0x1 rank 15 nranks 16 cudaDev 7 nvmlDev 7 "
            "busId a01d0 commId 0x2 - Init START\n"
            "node2 kernel: NVRM: Xid (PCI:0000:a0:1c): 79, pid=7001, GPU has fallen off the bus.\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"], root["rank"]) == ("cuda_error", "node2", 14) and "Xid 79" in root["cause"]


def test_a_gpu_fault_is_the_rank_s_own_failure_ahead_of_its_peers_closed_connections():
    text = ("[2025-06-11 08:47:50] node0:1:100 [0] misc/socket.cc:64 NCCL WARN socketProgress: Connection closed "
            "by remote peer node1<52093>\n"
            "node1:1:1 [0] NCCL INFO comm 0x1 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
            "[2025-06-11 08:47:49] node1:1:1 [0] enqueue.cc:1556 NCCL WARN Cuda failure 700 'an illegal memory "
            "access was encountered'\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"], root["rank"]) == ("cuda_error", "node1", 1)
    assert "illegal memory access" in root["cause"]


def test_a_verbs_call_nccl_retries_is_no_failure_and_the_one_it_gives_up_on_is():
    retry = ("node1:5:6 [3] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_3:1, "
             "curr state INIT, next state RTR, retrying 1/35 after 100 msec of sleep\n")
    assert "ib_verbs_failed" not in [f["code"] for f in read_nccl_log(retry)["findings"]]
    failed = retry.replace("NCCL INFO", "misc/ibvwrap.cc:291 NCCL WARN")
    failed = failed.replace(", retrying 1/35 after 100 msec of sleep", "")
    assert first(read_nccl_log(failed))["code"] == "ib_verbs_failed"


def test_a_port_error_on_one_host_comes_before_its_peers_completion_errors():
    text = ("[2025-10-03 09:41:38] node1:70:71 [5] transport/net_ib.cc:2451 NCCL WARN NET/IB: Got completion from "
            "peer 10.0.0.3<43517> with status=12 opcode=1 len=0 vendor err 129 (Send) hca mlx5_5\n"
            "[2025-10-03 09:38:12] node3:72:73 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_5:1 Got async "
            "error event: port error\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"]) == ("ib_completion_error", "node3") and "port error" in root["cause"]


def test_gloo_receiving_more_than_the_rank_posted_is_a_desync():
    text = ("terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
            "  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] "
            "op.preamble.length <= op.nbytes. 1024 vs 512\n")
    root = first(read_nccl_log(text))
    assert root["code"] == "collective_desync" and "1024" in root["cause"] and "512" in root["cause"]


def test_launchers_name_the_rank_of_a_pid_ray_s_worker_table_and_deepspeed_s_mapping():
    ray = ("(TorchTrainer pid=1) - (ip=10.0.1.23, pid=8841) world_rank=3, local_rank=1, node_rank=1\n"
           "(RayTrainWorker pid=8841, ip=10.0.1.23) [E ProcessGroupNCCL.cpp:915] [Rank 3] NCCL watchdog thread "
           "terminated with exception: CUDA error: uncorrectable ECC error encountered\n")
    root = first(read_nccl_log(ray))
    assert (root["code"], root["rank"]) == ("cuda_error", 3) and "ECC" in root["cause"]
    deepspeed = ("node1: [INFO] [launch.py:163:main] global_rank_mapping=defaultdict(<class 'list'>, {'node0': [0, 1], "
                 "'node1': [2, 3]})\n"
                 "node1: [INFO] [launch.py:256:main] process 4821 spawned with command: ['python', '-u', 'train.py', "
                 "'--local_rank=1']\n"
                 "node1: [Tue May 14 11:03:53 2024] NVRM: Xid (PCI:0000:4e:00): 94, pid=4821, name=python, Contained\n")
    root = first(read_nccl_log(deepspeed))
    assert (root["code"], root["host"], root["rank"]) == ("cuda_error", "node1", 3)


def test_an_exception_that_names_no_rank_is_the_one_rank_of_its_host_that_did_not_time_out():
    waiting = "".join(
        f"[rank{r}]:[E612 04:11:18.363656480 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran "
        f"for 600044 milliseconds before timing out.\n" for r in (2, 3))
    init = "".join(f"hostb:{100 + r}:{100 + r} [{r - 2}] NCCL INFO comm 0x1 rank {r} nRanks 4 nNodes 1 localRanks 3 "
                   f"localRank {r - 2} MNNVL 0\n" for r in (2, 3, 4))
    thread = ("Exception in thread Prefetcher:\nTraceback (most recent call last):\n"
              '  File "/srv/prefetch.py", line 58, in run\n    batch = next(it)\nKeyError: \'labels\'\n')
    root = first(read_nccl_log(init + thread + waiting))
    assert (root["code"], root["host"], root["rank"]) == ("rank_exception", "hostb", 4) and "KeyError" in root["cause"]


def test_a_hang_whose_timeouts_come_from_every_rank_but_one_names_that_one():
    text = "".join(f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: "
                   f"WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800400 "
                   f"milliseconds before timing out.\n" for r in (1, 2, 3))
    root = first(read_nccl_log(text))
    assert (root["code"], root["rank"]) == ("hang_in_collective", 0)
    gap = "".join(f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: "
                  f"WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800400 "
                  f"milliseconds before timing out.\n" for r in (1, 3))
    assert first(read_nccl_log(gap))["rank"] is None   # two ranks missing: neither is named


def test_a_file_name_with_a_job_id_is_a_run_not_a_host():
    assert file_host("pretrain-88412-6.out") is None and file_host("ip-10-0-0-5.log") == "ip-10-0-0-5"


# ---- the fourth pass (tests/samples/failures/w4-*) ----

def test_a_host_ssh_refused_is_the_finding_s_host():
    root = first(read_nccl_log("ubuntu@gpu-n03: Permission denied (publickey).\n"
                               "ORTE was unable to reliably start one or more daemons.\n"))
    assert (root["code"], root["host"]) == ("launch_failed", "gpu-n03") and "publickey" in root["cause"]


def test_open_mpi_under_srun_without_pmi_is_a_launch_failure_and_pmix_noise_is_not():
    text = ("[gpu-b04:118211] PMIX ERROR: NOT-FOUND in file ptl_usock.c at line 175\n"
            "The application appears to have been direct launched using \"srun\",\n")
    assert first(read_nccl_log(text))["code"] == "launch_failed"
    assert "launch_failed" not in [f["code"] for f in read_nccl_log(text.splitlines()[0] + "\n")["findings"]]


def test_nccl_tests_wrong_values_are_the_cause_and_its_failing_rank_comes_from_the_rank_table():
    wrong = read_nccl_log("#  Rank  0 Group  0 Pid   4242 on      node1 device  0 [0000:07:00] NVIDIA H200\n"
                          "# Out of bounds values : 20 FAILED\n")
    assert first(wrong)["code"] == "max_wrong" and "20 wrong values" in first(wrong)["cause"]
    ecc = ("#  Rank 13 Group  0 Pid  31077 on     gpu-n2 device  5 [0000:90:00] NVIDIA A100-SXM4-80GB\n"
           "gpu-n2: Test CUDA failure common.cu:297 'uncorrectable ECC error encountered'\n"
           " .. gpu-n2 pid 31077: Test failure common.cu:407\n")
    assert (first(read_nccl_log(ecc))["host"], first(read_nccl_log(ecc))["rank"]) == ("gpu-n2", 13)


def test_the_ncclras_client_s_report_names_the_rank_behind_and_the_others_exits_follow():
    text = ("#  Rank 19 Group  0 Pid  40127 on h100-r3-03 device  3 [0000:5d:00] NVIDIA H100\n"
            "h100-r3-03:40127:40127 [3] NCCL INFO comm 0x1 rank 19 nranks 32 cudaDev 3 busId 5d000 - Init COMPLETE\n"
            "h100-r3-01:40001:40001 [0] NCCL INFO comm 0x2 rank 0 nranks 32 cudaDev 0 busId 18000 - Init COMPLETE\n"
            "NCCL version 2.26.5 compiled with CUDA 12.8\n\nWarnings\n========\n\n"
            "#0-0 (8c41d7a2e05f93b6) MISMATCH\n  Communicator ranks have different AllReduce operation counts\n"
            "  31 ranks have launched up to operation 1021\n"
            "  Rank 19 has launched up to operation 1008 -- GPU 3 managed by process 40127 on node 10.20.0.13\n"
            "mpirun noticed that process rank 2 with PID 0 on node h100-r3-01 exited on non-zero status 4.\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"], root["rank"]) == ("hang_in_collective", "h100-r3-03", 19)


def test_horovod_s_stall_inspector_names_the_missing_rank_even_behind_mpirun_s_tags():
    text = ("[1,6]<stdout>:hvd-b:19024:19197 [2] NCCL INFO comm 0x5 rank 6 nranks 8 cudaDev 2 busId 1d0 - Init COMPLETE\n"
            "[1,0]<stderr>:[2024-11-19 03:03:38.479205: W horovod/common/stall_inspector.cc:107] One or more tensors "
            "were submitted to be reduced by subset of ranks\n"
            "[1,0]<stderr>:Missing ranks:\n[1,0]<stderr>:6: [allreduce.fc.bias, allreduce.fc.weight]\n"
            "[1,3]<stderr>:RuntimeError: Horovod has been shut down. This was caused by an exception on one of the "
            "ranks\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"], root["rank"]) == ("hang_in_collective", "hvd-b", 6)


def test_errors_the_job_went_on_from_are_warnings_once_it_finished_well():
    text = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"/srv/up.py\", line 9, in send\n"
            "[rank1]: OSError: [Errno 5] Input/output error\n"
            "I1105 10:46:02.000000 1 torch/distributed/elastic/agent/server/api.py:879] [default] worker group "
            "successfully finished. Waiting 300 seconds for other agents to finish.\n")
    result = read_nccl_log(text)
    assert result["verdict"].startswith("HEALTHY") and "recovered" in result["findings"][0]["cause"]
    lines = text.splitlines(keepends=True)
    failed = read_nccl_log(lines[3] + "".join(lines[:3]))   # the error after the end: it stays
    assert failed["verdict"].startswith("PROBLEM: rank_exception")


def test_a_dataloader_worker_s_error_is_quoted_from_its_original_traceback():
    text = ("Traceback (most recent call last):\n  File \"/srv/train.py\", line 9, in <module>\n"
            "RuntimeError: Caught RuntimeError in DataLoader worker process 7.\nOriginal Traceback (most recent "
            "call last):\n  File \"/srv/data.py\", line 3, in collate\n"
            "RuntimeError: stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0\n")
    assert "equal size" in first(read_nccl_log(text))["cause"]


def test_a_node_on_another_network_than_the_others_or_on_docker_s_bridge_is_named():
    hosts = [("n01", "10.19.30.11"), ("n02", "10.19.30.12"), ("n03", "10.19.30.13"), ("n04", "198.51.100.74")]
    text = "".join(f"{h}:1:1 [0] NCCL INFO Bootstrap : Using eth0:{a}<0>\n" for h, a in hosts)
    text += "n03:1:1 [0] NCCL INFO Call to connect returned Connection timed out, exceeded error retry count\n"
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"]) == ("nic_outside_cluster", "n04") and "10.19.30.0/24" in root["cause"]
    bridge = ("7c1e9a4b2d3f:1:1 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>\n"
              "gpu-node-01:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
              "gpu-node-01:1:1 [0] NCCL INFO Call to connect returned Connection refused, exceeded error retry count\n")
    root = first(read_nccl_log(bridge))
    assert (root["code"], root["host"]) == ("virtual_nic", "7c1e9a4b2d3f") and "Docker" in root["cause"]


def test_nccl_s_version_check_names_the_host_whose_ranks_run_the_odd_version():
    init = "".join(f"{h}:{r}:{r} [0] NCCL INFO comm 0x{r} rank {r} nranks 3 cudaDev 0 busId 1b0 - Init START\n"
                   for h, r in (("hgx-11", 0), ("hgx-12", 1), ("hgx-13", 2)))
    warn = "".join(f"{h}:{r}:{r} [0] init.cc:729 NCCL WARN Mismatched NCCL version detected : rank {o} version "
                   f"{vo} rank {r} version {v}\n"
                   for h, r, v, o, vo in (("hgx-11", 0, 22705, 2, 22703), ("hgx-12", 1, 22705, 2, 22703),
                                          ("hgx-13", 2, 22703, 0, 22705)))
    root = first(read_nccl_log(init + warn))
    assert (root["code"], root["host"]) == ("nccl_version_mismatch", "hgx-13") and "22703" in root["cause"]


def test_a_log_cut_while_its_progress_bar_ran_is_an_incomplete_run():
    text = ("node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1b0 commId 0x9 - Init START\n"
            "node1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1b0 commId 0x9 - Init COMPLETE\n"
            " 36%|###       | 869/2352 [3:40:12<6:15:41, 15.20s/it]\r 37%|###       | 871/2352 [3:40:43<6:15:11, "
            "15.20s/it]")
    root = first(read_nccl_log(text))
    assert root["code"] == "incomplete_run" and "871 of 2352" in root["cause"]
    done = text + "\r100%|##########| 2352/2352 [9:56:00<00:00, 15.20s/it]\n"
    assert first(read_nccl_log(done))["code"] != "incomplete_run"


# ---- the fifth pass (tests/samples/failures/w5-*) ----

def test_a_bare_stop_iteration_is_a_rank_s_own_exception():
    text = "[rank11]: Traceback (most recent call last):\n[rank11]:   File \"/srv/t.py\", line 3, in get_batch\n" \
           "[rank11]:     data = next(it)\n[rank11]: StopIteration\n"
    root = first(read_nccl_log(text))
    assert (root["code"], root["rank"]) == ("rank_exception", 11) and "StopIteration" in root["cause"]


def test_sglang_s_nccl_init_that_never_ends_is_a_rendezvous_hang():
    text = "0|sgl      | [gpu=0] Init torch distributed begin.\n0|sgl      | [gpu=0] Init nccl begin.\n"
    assert first(read_nccl_log(text))["code"] == "hang_in_rendezvous"
    done = text + "0|sgl      | [gpu=0] Init torch distributed ends. mem usage=0.12 GB\n"
    assert not [f for f in read_nccl_log(done)["findings"] if f["code"] == "hang_in_rendezvous"]


def test_a_ray_worker_s_node_address_is_its_lines_host():
    text = ("(RayWorkerWrapper pid=7712, ip=10.30.0.22) Traceback (most recent call last):\n"
            "(RayWorkerWrapper pid=7712, ip=10.30.0.22)   File \"/srv/loader.py\", line 316, in weights\n"
            "(RayWorkerWrapper pid=7712, ip=10.30.0.22) RuntimeError: Cannot find any model weights with `/models/x`\n")
    assert first(read_nccl_log(text))["host"] == "10.30.0.22"


def test_a_graph_file_for_other_hardware_comes_before_the_system_error_it_causes():
    text = ("vm1:16674:16886 [0] graph/search.cc:703 NCCL WARN XML Import Channel : dev 2 not found.\n"
            "vm1:16674:16886 [0] NCCL INFO init.cc:1023 -> 2\n"
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system "
            "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["severity"]) == ("nccl_warning", "error") and "XML Import Channel" in root["cause"]


def test_a_silent_rank_is_on_the_host_whose_timed_out_ranks_surround_it():
    from ansible_collections.ncclkit.cluster.plugins.module_utils.diagnosis.root_cause import _host_by_neighbours

    # A node runs a block of consecutive ranks: rank 3, silent, sits among node-a's 0, 1, 2 and 4.
    timeouts = [{"rank": r, "host": "node-a"} for r in (0, 1, 2, 4)] + [{"rank": r, "host": "node-b"} for r in (5, 6, 7)]
    assert _host_by_neighbours(3, timeouts) == "node-a"
    assert _host_by_neighbours(9, timeouts) is None            # outside every host's block
    assert _host_by_neighbours(6, [{"rank": 5, "host": "x"}, {"rank": 7, "host": "x"},
                                   {"rank": 4, "host": "y"}, {"rank": 8, "host": "y"}]) is None   # two hosts span it


# ---- the sixth pass (tests/samples/failures/w6-*) ----

def test_a_host_name_after_the_job_id_is_the_file_s_host():
    # Slurm's %x-%j-%N: the job's name, its id, the node.
    assert file_host("llm-88713-a100-r3n04.out") == "a100-r3n04" and file_host("seg3d-57731-gpu-n11.out") == "gpu-n11"
    assert file_host("pretrain-88412-6.out") is None and file_host("train-123456-rank3.log") is None


def test_a_store_name_that_never_resolved_is_the_host_of_the_timeout():
    lines = "".join("[W socket.cpp:697] [c10d] The IPv6 network addresses of (pod-b-worker, 43913) cannot be retrieved "
                    "(gai error: -2 - Name or service not known).\n" for dummy in range(3))
    text = lines + ("[E socket.cpp:957] [c10d] The client socket has timed out after 600000ms while trying to connect to "
                    "(pod-b-worker, 43913).\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"]) == ("connect_timeout", "pod-b-worker") and "does not resolve" in root["cause"]
    # Without the resolver's errors a timeout stays on the host that reported it (the file's node).
    reported = first(read_nccl_log(text.replace(lines, ""), default_host="pod-a-master"))
    assert (reported["code"], reported["host"]) == ("connect_timeout", "pod-a-master")
    assert "does not resolve" not in reported["cause"]


def test_a_sigbus_is_shm_too_small_where_the_container_banner_says_64_mb():
    banner = "NOTE: The SHMEM allocation limit is set to the default of 64MB.  This may be\n"
    report = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
              "Root Cause (first observed failure):\n[0]:\n  time      : 2023-11-09_16:42:25\n  host      : gpu-a08\n"
              "  rank      : 13 (local_rank: 5)\n  exitcode  : -7 (pid: 5280)\n  error_file: <N/A>\n"
              "  traceback : Signal 7 (SIGBUS) received by PID 5280\n")
    assert (first(read_nccl_log(banner + report))["code"], first(read_nccl_log(banner + report))["host"]) == \
        ("shm_too_small", "gpu-a08")
    crashed = first(read_nccl_log(report))
    assert crashed["code"] == "rank_killed" and "a bus error" in crashed["cause"]


def test_detail_fingerprints_put_the_desync_on_the_ranks_that_differ_from_most():
    def fp(rank, shape):
        return (f"CollectiveFingerPrint(SequenceNumber=4, OpType=ALLREDUCE, TensorShape=[{shape}], TensorDtypes=Float, "
                f"TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda))")
    text = "".join(f"[rank{me}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {me} is running "
                   f"collective: {fp(me, 10)}, but Rank 2 is running collective: {fp(2, 12)}.\n" for me in (0, 1, 3))
    root = first(read_nccl_log(text))
    assert (root["code"], root["rank"]) == ("collective_desync", 2)
    assert "TensorShape=[12] where the others have [10]" in root["cause"] and "3 ranks agree" in root["cause"]


def test_a_refused_connection_is_the_host_whose_nccl_lines_hold_that_address():
    text = ("hpc-g17:1200:1200 [0] NCCL INFO NET/Socket : Using [0]eth1:10.30.0.17<0>\n"
            "hpc-g16:930:930 [0] NCCL INFO NET/Socket : Using [0]eth1:10.30.0.16<0>\n"
            + "".join(f"hpc-g16:930:945 [0] NCCL INFO socketPollConnect: connect to 10.30.0.17<45873> returned Connection "
                      f"refused, retrying ({n}/34) after sleep for {n}00 msec\n" for n in range(1, 4))
            + "hpc-g16:930:945 [0] misc/socket.cc:484 NCCL WARN socketPollConnect: connect returned Connection refused, "
              "exceeded error retry count (35)\n")
    root = first(read_nccl_log(text))
    assert root["host"] == "hpc-g17" and "10.30.0.17 is hpc-g17's" in root["cause"], root
    # An address no host's NCCL lines hold stays with the host that reported it.
    assert first(read_nccl_log(text.replace("10.30.0.17<0>", "10.30.0.99<0>")))["host"] == "hpc-g16"


def test_a_socket_family_one_host_forces_is_that_host_s_cause():
    text = ("dgx-b07:22:22 [0] NCCL INFO NCCL_SOCKET_FAMILY set by environment to AF_INET6\n"
            "dgx-b07:22:22 [0] NCCL INFO Bootstrap : Using bond0:fd12::17<0>\n"
            "dgx-b08:11:11 [0] NCCL INFO Bootstrap : Using bond0:10.1.0.18<0>\n"
            "dgx-b08:11:40 [0] misc/socket.cc:726 NCCL WARN ncclSocketInit: Socket creation failed : Address family "
            "not supported by protocol\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"]) == ("connect_failed", "dgx-b07") and "NCCL_SOCKET_FAMILY=AF_INET6" in root["cause"]


# ---- the seventh pass (tests/samples/failures/w7-*) ----

def test_a_gpu_the_rank_cannot_use_is_its_cuda_error_a_kernel_fault_stays_its_exception():
    busy = ("[rank6]: Traceback (most recent call last):\n[rank6]:   File \"train.py\", line 9, in <module>\n"
            "[rank6]: torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n")
    assert (first(read_nccl_log(busy))["code"], first(read_nccl_log(busy))["rank"]) == ("cuda_error", 6)
    assert first(read_nccl_log(busy.replace("CUDA-capable device(s) is/are busy or unavailable",
                                            "device-side assert triggered")))["code"] == "rank_exception"


def test_slurm_preemption_stops_the_job_from_outside():
    text = ("slurmstepd: error: *** STEP 8127.0 ON hgx-b03 CANCELLED AT 2025-02-19T14:22:09 DUE TO PREEMPTION ***\n"
            "[rank1]: RuntimeError: NCCL communicator was aborted on rank 1.\n")
    root = first(read_nccl_log(text))
    assert root["code"] == "rank_killed" and root["host"] in (None, "unknown") and "preemption" in root["cause"]


def test_a_pending_pod_is_the_node_the_rendezvous_waited_for(tmp_path):
    def files(describe_text):
        (tmp_path / "describe-worker-2.txt").write_text(describe_text)
        (tmp_path / "master-0.log").write_text(waiting)
        return [str(tmp_path / "describe-worker-2.txt"), str(tmp_path / "master-0.log")]

    describe = ("Name:             train-worker-2\nNamespace:        default\nStatus:           Pending\nEvents:\n"
                "  Warning  FailedScheduling  3m  volcano  0/6 nodes are unavailable: 4 Insufficient nvidia.com/gpu.\n")
    waiting = ("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n")
    root = first(read_nccl_log_files(files(describe)))
    assert (root["code"], root["host"]) == ("rendezvous_timeout", "train-worker-2") and "Pending" in root["cause"]
    pulled = describe.replace("  Warning  FailedScheduling  3m  volcano  0/6 nodes are unavailable: 4 Insufficient "
                              "nvidia.com/gpu.", "  Warning  Failed  11m  kubelet  Failed to pull image \"img\": write "
                              "/var/lib/containerd/x: no space left on device")
    root = first(read_nccl_log_files(files(pulled)))
    assert (root["code"], root["host"]) == ("launch_failed", "train-worker-2") and "no space left" in root["cause"]


def test_mpirun_losing_a_remote_daemon_names_that_node():
    text = ("ORTE has lost communication with a remote daemon.\n\n  HNP daemon   : [[41822,0],0] on node ml-c01\n"
            "  Remote daemon: [[41822,0],2] on node ml-c03\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"]) == ("rank_killed", "ml-c03")


def test_a_nul_inside_a_broken_utf8_sequence_reads_alike_streamed_and_in_memory():
    # Found by the property test: NUL padding is dropped before decoding on both paths.
    import io
    data = b"x \xe2\x00\x94 torchrun's ChildFailedError report\nRoot Cause (first observed failure):\n"
    streamed = read_nccl_log_files([io.BytesIO(data)])["findings"]
    assert [f["evidence"] for f in streamed] == [f["evidence"] for f in read_nccl_log(data)["findings"]]


# ---- the eighth blind pass (w8-k8s-*, w8-rl-*): Kubernetes operators, cloud ML platforms, Ray ----

def test_a_traceback_inside_vllm_logger_lines_is_read_and_its_wrapper_is_not_the_rank_s_own():
    """vLLM logs an engine's traceback line by line behind "ERROR MM-DD HH:MM:SS [file.py:N] ", then raises
    EngineDeadError, which only points back at it (shape: verl#4308)."""
    pre = "(AsyncvLLMServer pid=52392, ip=10.88.0.32) ERROR 08-21 11:38:14 [core.py:700] "
    text = (pre + "Traceback (most recent call last):\n"
            + pre + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 12, in execute_model\n'
            + pre + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.69 GiB. GPU 5 has a total\n"
            + "(TaskRunner pid=20871) Traceback (most recent call last):\n"
            + '(TaskRunner pid=20871)   File "/x/vllm/v1/engine/async_llm.py", line 375, in output_handler\n'
            + "(TaskRunner pid=20871) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
              "See stack trace (above) for the root cause.\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"]) == ("cuda_oom", "10.88.0.32")


def test_a_log_service_export_s_severity_stamp_and_resource_labels_are_prefixes():
    """Cloud Logging's export: "ERROR <ISO stamp> [resource.labels.taskName: workerpool1-1] [rank19]: ..."
    (shape: GoogleCloudPlatform/gcsfuse#1830): the rank label behind them is read."""
    pre = "ERROR 2024-09-18T04:19:58.518000000Z [resource.labels.taskName: workerpool1-1] [rank19]: "
    text = (pre + "Traceback (most recent call last):\n" + pre + '  File "/opt/t/data.py", line 74, in __getitem__\n'
            + pre + "OSError: [Errno 5] Input/output error: '/gcs/bucket/x.webp'\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["rank"]) == ("rank_exception", 19) and "OSError" in root["cause"]


def test_sshd_that_cannot_bind_its_port_explains_the_launcher_s_ssh_failures(tmp_path):
    """A hostNetwork MPIJob worker's sshd finds its port taken; the launcher's SSH then reaches another
    job's sshd and is refused (shape: kubeflow/mpi-operator#593)."""
    (tmp_path / "launcher.txt").write_text("mpiuser@job-worker-1.job.svc: Permission denied (publickey).\n"
                                           "ORTE was unable to reliably start one or more daemons.\n")
    (tmp_path / "worker-1.txt").write_text("Bind to port 2222 on 0.0.0.0 failed: Address already in use.\n"
                                           "Cannot bind any address.\n")
    root = first(read_nccl_log_files([str(tmp_path / "launcher.txt"), str(tmp_path / "worker-1.txt")]))
    assert root["code"] == "address_in_use" and "2222" in root["cause"] and "sshd" in root["cause"]
    alone = first(read_nccl_log_files([str(tmp_path / "launcher.txt")]))
    assert alone["code"] == "launch_failed"


def test_no_socket_interface_names_the_interface_asked_for_and_the_rank_of_the_same_error():
    text = ("master-0:71:71 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to net1\n"
            "master-0:71:71 [0] bootstrap.cc:66 NCCL WARN Bootstrap : no socket interface found\n"
            "[rank0]: Bootstrap : no socket interface found\n")
    root = first(read_nccl_log(text))
    assert (root["code"], root["rank"]) == ("no_socket_interface", 0) and "NCCL_SOCKET_IFNAME=net1" in root["cause"]


def test_a_ray_job_that_succeeded_recovered_from_its_warnings():
    text = ("(WorkerDict pid=44313) trn-h100-10:44313:46120 [3] transport/net_ib.cc:1095 NCCL WARN NET/IB : Got "
            "async event : GID table change\n")
    assert first(read_nccl_log(text))["severity"] == "error"
    done = read_nccl_log(text + "------------------------------------------\nJob 'raysubmit_HkY3' succeeded\n")
    assert all(f["severity"] != "error" for f in done["findings"])


def test_absl_s_crash_report_is_the_death_of_that_pid_and_a_small_dev_shm_makes_a_bus_error_shm_too_small():
    crash = ("(RayWorkerVllm pid=747, ip=10.244.7.15) *** SIGBUS received at time=1713852726 on cpu 37 ***\n"
             "(RayWorkerVllm pid=747, ip=10.244.7.15) Fatal Python error: Bus error\n")
    root = first(read_nccl_log(crash))
    assert (root["code"], root["host"]) == ("rank_killed", "10.244.7.15") and "SIGBUS" in root["cause"]
    small = ("2024-04-23 05:49:51,590\tWARNING services.py:2017 -- WARNING: The object store is using /tmp instead "
             "of /dev/shm because /dev/shm has only 67108864 bytes available. This will harm performance!\n")
    root = first(read_nccl_log(small + crash))
    assert (root["code"], root["host"]) == ("shm_too_small", "10.244.7.15") and "67108864" in root["cause"]
    big = small.replace("67108864", str(64 << 30))
    assert first(read_nccl_log(big + crash))["code"] == "rank_killed"
    # torch's watchdog aborting a rank (SIGABRT) is no crash of its own
    aborted = "(Ref pid=4149, ip=10.1.2.11) *** SIGABRT received at time=1740570247 on cpu 7 ***\n"
    assert not any(f["code"] == "rank_killed" for f in read_nccl_log(aborted)["findings"])


def test_the_kernel_s_oom_kill_is_on_the_host_its_journal_line_names(tmp_path):
    (tmp_path / "driver.log").write_text("(TaskRunner pid=301, ip=10.0.0.4) step 3\n"
                                         "(WorkerDict pid=7210, ip=10.0.0.6) step 3\n")
    (tmp_path / "journal.txt").write_text(
        "Jun 18 16:41:19 gpu-n05 kernel: Out of memory: Killed process 48208 (ray::WorkerDict) total-vm:2532kB, "
        "anon-rss:644kB, file-rss:1kB, shmem-rss:0kB, UID:0 pgtables:48kB oom_score_adj:1000\n")
    root = first(read_nccl_log_files([str(tmp_path / "driver.log"), str(tmp_path / "journal.txt")]))
    assert (root["code"], root["host"]) == ("oom_killed", "gpu-n05") and "48208" in root["cause"]


def _hang_on_two_hosts(tmp_path, extra_name, extra_text):
    """Two hosts' NCCL init done, then every rank times out in the same all-gather: no rank to blame."""
    for host, rank in (("gpu-01", 0), ("gpu-02", 1)):
        (tmp_path / f"{host}.log").write_text(
            f"{host}:11{rank}:12{rank} [0] NCCL INFO comm 0x1 rank {rank} nranks 2 cudaDev 0 nvmlDev 0 busId 41000 "
            f"commId 0xabc - Init COMPLETE\n"
            f"[rank{rank}]:[E ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1, OpType=ALLGATHER, NumelIn=1024, NumelOut=2048, Timeout(ms)=600000) ran for 600692 "
            "milliseconds before timing out.\n")
    (tmp_path / extra_name).write_text(extra_text)
    return read_nccl_log_files(sorted(str(p) for p in tmp_path.iterdir()))


def test_iommu_faults_in_one_host_s_kernel_log_name_it_in_a_hang_with_no_rank_to_blame(tmp_path):
    """Shape: NVIDIA/nccl#2079, NVIDIA/cuda-samples#48 (ACS forcing P2P through the IOMMU)."""
    root = first(_hang_on_two_hosts(tmp_path, "gpu-02-dmesg.txt", "".join(
        f"[Wed Apr 16 14:02:29 2025] nvidia 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x001c "
        f"address=0x3bfd8c17{i:02d} flags=0x0030]\n" for i in range(3))))
    assert (root["code"], root["host"], root["rank"]) == ("hang_in_collective", "gpu-02", None)
    assert "3 IOMMU fault(s)" in root["cause"]


def test_a_fabric_manager_that_does_not_start_is_the_root_of_the_hang_on_its_host(tmp_path):
    """Shape: pytorch/pytorch#129749, NVIDIA/gpu-operator#544 (the Fabric Manager's version against the driver's)."""
    root = first(_hang_on_two_hosts(tmp_path, "gpu-02-fabricmanager.txt", (
        "Jul 11 06:25:19 gpu-02 nv-fabricmanager[2215773]: fabric manager NVIDIA GPU driver interface version "
        "550.90.07 don't match with driver version 550.54.15. Please update with matching NVIDIA driver package.\n"
        "Jul 11 06:25:19 gpu-02 systemd[1]: Failed to start NVIDIA fabric manager service.\n")))
    assert (root["code"], root["host"]) == ("cuda_not_initialized", "gpu-02")
    assert "550.90.07" in root["cause"] and "550.54.15;" in root["cause"]


# ---- the ninth blind pass (w9-fabric-*, w9-cloud-*) ----

def test_the_peer_that_several_hosts_failed_rdma_transfers_name_is_the_culprit():
    """One host's HCA at fault: every peer's transfers with it fail, and it fails with every peer (shape:
    NVIDIA/nccl#1170). Its address is its NCCL bootstrap interface's."""
    boot = "".join(f"c0{n}:1{n}:1{n} [0] NCCL INFO Bootstrap : Using eno1:10.31.0.1{n}<0>\n" for n in (6, 7, 8))
    fail = ("c06:16:26 [0] transport/net_ib.cc:1333 NCCL WARN NET/IB : Got completion from peer 10.31.0.17<53357> with "
            "error 12, opcode 1, len 0, vendor err 129 (Send)\n"
            "c07:17:27 [0] transport/net_ib.cc:1333 NCCL WARN NET/IB : Got completion from peer 10.31.0.16<58968> with "
            "error 12, opcode 0, len 0, vendor err 129 (Recv)\n"
            "c08:18:28 [0] transport/net_ib.cc:1333 NCCL WARN NET/IB : Got completion from peer 10.31.0.17<54086> with "
            "error 12, opcode 32610, len 0, vendor err 129 (Recv)\n")
    root = first(read_nccl_log(boot + fail))
    assert (root["code"], root["host"]) == ("ib_completion_error", "c07") and "c06, c08" in root["cause"]
    # One reporter alone names nobody else: the failure stays where it was reported.
    assert first(read_nccl_log(boot + fail.splitlines(keepends=True)[0]))["host"] == "c06"


def test_roce_gids_in_the_completion_errors_tie_a_peer_address_to_its_host():
    """NCCL 2.19+ prints both ends' GIDs: the peer is the host whose own errors carry that GID as local."""
    line = ("{me}: NET/IB: Got completion from peer {peer}<4{n}> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
            "localGid ::ffff:10.60.1.{mine} remoteGids::ffff:10.60.1.{theirs} hca mlx5_1\n")
    text = (line.format(me="r1-06", peer="10.50.0.17", n=1, mine=16, theirs=17)
            + line.format(me="r1-08", peer="10.50.0.17", n=2, mine=18, theirs=17)
            + line.format(me="r1-07", peer="10.50.0.16", n=3, mine=17, theirs=16))
    root = first(read_nccl_log(text))
    assert (root["code"], root["host"]) == ("ib_completion_error", "r1-07")


def test_a_gid_error_quotes_its_line():
    text = "w2:57:453 [0] misc/ibvwrap.cc:137 NCCL WARN Call to ibv_query_gid failed with error Invalid argument\n"
    root = first(read_nccl_log(text))
    assert root["code"] == "ib_gid_error" and "ibv_query_gid" in root["cause"]


def test_a_message_truncated_in_the_same_collective_of_the_same_size_is_a_setting_that_differs():
    """NCCL_PROTO on one host only (recorded on an H100: case nccl_setting_differs-1): torch shows both ranks in
    collective #1 ALLREDUCE with the same NumelIn, NCCL's messages differ in size."""
    work = "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=16777216, NumelOut=16777216, Timeout(ms)=20000)"
    text = ("node1:597:646 [0] transport/net_socket.cc:567 NCCL WARN NET/Socket : peer 127.0.0.1<42738> message "
            "truncated : receiving 1048576 bytes instead of 65536. If you believe your socket network is in a healthy "
            "state, there may be a mismatch in collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) "
            "between ranks\n"
            f"[rank1]:[E1206 03:44:03.806 ProcessGroupNCCL.cpp:612] [Rank 1] Collective {work} raised the following "
            "async exception: NCCL error: remote process exited or there was a network error\n"
            f"[rank0]:[E1206 03:44:23.670 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation "
            f"timeout: {work} ran for 20002 milliseconds before timing out.\n")
    root = first(read_nccl_log(text))
    assert root["code"] == "nccl_setting_mismatch" and "NCCL_PROTO" in root["cause"]
    # Another size on one rank: the program's desync, as before.
    other = text.replace("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
                         "NumelIn=16777216", "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
                         "OpType=ALLREDUCE, NumelIn=8388608")
    assert first(read_nccl_log(other))["code"] == "collective_desync"


def test_the_address_every_other_host_s_gloo_failed_to_reach_is_the_one_silent_host_s(tmp_path):
    """One host's name resolves to its public address: Gloo advertises it and every peer times out connecting to
    it, while that host's own log says nothing (shape: pytorch/gloo#70, sgl-project/sglang#3226)."""
    line = ("[rank{r}]: RuntimeError: Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/"
            "pair.cc:152] timed out connecting: SO_ERROR: Connection timed out, remote=[192.0.2.47]:41877\n")
    (tmp_path / "gpu-117.torchrun.log").write_text(line.format(r=0) + line.format(r=1))
    (tmp_path / "gpu-121.torchrun.log").write_text(line.format(r=2))
    (tmp_path / "gpu-134.torchrun.log").write_text("starting the agent\n")
    files = sorted(str(p) for p in tmp_path.iterdir())
    root = first(read_nccl_log_files(files))
    assert (root["code"], root["host"]) == ("gloo_connect_failed", "gpu-134") and "192.0.2.47" in root["cause"]
    # One reporter only: nothing to eliminate with, the failure stays with it.
    assert first(read_nccl_log_files([files[0], files[2]]))["host"] == "gpu-117"


def test_a_tool_word_in_place_of_an_extension_is_not_part_of_the_host():
    assert file_host("logs/gpu-sfo-117.torchrun.log") == "gpu-sfo-117"
    assert file_host("node2.dmesg.txt") == "node2"
    assert file_host("node1.cluster.local.log") == "node1.cluster.local"
