"""What `ncclkit launch` runs on each host, sent over the connection on stdin (nothing is installed,
nothing outlives the job): start the host's launcher detached, follow its output with samples of
what the ranks do, and stop every process of the job.

Pure Python 3.8+ standard library. The controller sends this file on stdin after the source of
diagnosis/forensics.py (process state, py-spy, NCCL RAS), loaded as the module `forensics`
(transport.BOOT reads them; `ready` then reads the job's settings from the rest of stdin).

    python3 -c BOOT ready RUN_DIR CWD SCRIPT -- LAUNCHER ARG...    # what is there (script, launcher, py-spy,
                                                                   # GPU); then settings on stdin start the
                                                                   # launcher ({"pid": P}), end of input nothing
    python3 -c BOOT follow RUN_DIR LAUNCH_ID HOST INTERVAL [--stacks] [--ras]
    python3 -c BOOT sample RUN_DIR LAUNCH_ID HOST [--stacks] [--ras]   # one sample
    python3 -c BOOT stop RUN_DIR LAUNCH_ID HOST GRACE                  # TERM, KILL after GRACE s, count what is left
    python3 -c BOOT dump RUN_DIR LAUNCH_ID HOST WAIT                   # Flight Recorder dumps, base64
    python3 -c BOOT status RUN_DIR LAUNCH_ID HOST                      # processes, the exit code once ended
    python3 -c BOOT clean RUN_DIR LAUNCH_ID                            # remove RUN_DIR (launch made it)

A process belongs to the job when its environment (/proc/PID/environ) has NCCLKIT_LAUNCH_ID=ID and
NCCLKIT_LAUNCH_HOST=HOST: every child inherits them, so DataLoader workers and a child that
double-forks into a session of its own are found, and simulated hosts sharing one machine are kept
apart. `follow` prints one record per line: `L <text>` (the launcher's output), `S <json>` (a
sample), `E <json>` (the launcher ended: its exit code).
"""

import base64
import json
import os
import signal
import subprocess
import sys
import time

forensics = globals().get("forensics")  # the controller's prepended module (diagnosis/forensics.py)

MARK_ID = "NCCLKIT_LAUNCH_ID"
MARK_HOST = "NCCLKIT_LAUNCH_HOST"
FR_PIPE = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"
FR_PREFIX = "TORCH_FR_DUMP_TEMP_FILE"
FR_DEFAULT = "/tmp/nccl_trace_rank_"  # torch's own default dump prefix
LOG = "output.log"
TOOLS = "~/.cache/ncclkit/bin"
RC = "rc"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            items = handle.read(1 << 20).split(b"\0")
    except OSError:
        return None
    return dict(item.decode("utf-8", "replace").split("=", 1) for item in items if b"=" in item)


def marked(launch_id, host):
    """{pid: environ} of every process of this job on this host (not this script's own)."""
    found = {}
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        env = environ(int(entry))
        if env and env.get(MARK_ID) == launch_id and env.get(MARK_HOST) == host:
            found[int(entry)] = env
    return found


def cpu_ticks(pid, tid=None):
    path = f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat"
    try:
        with open(path, "rb") as handle:
            raw = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    return int(fields[11]) + int(fields[12]) if len(fields) > 12 else None


def io_chars(pid):
    try:
        with open(f"/proc/{pid}/io") as handle:
            values = dict(line.split(":", 1) for line in handle if ":" in line)
        return int(values.get("read_bytes", 0)) + int(values.get("write_bytes", 0))
    except (OSError, ValueError):
        return None


def main_thread(lines):
    """The frames of py-spy's MainThread block, innermost first, as 'function (file:line)'."""
    frames, inside = [], False
    for line in lines:
        if line.startswith("Thread "):
            inside = '"MainThread"' in line
            continue
        if inside and line.startswith("    ") and "(" in line:
            frames.append(line.strip())
    return frames[:40]


def ranks(launch_id, host, stacks=False):
    """One record per rank process (the outermost process carrying a rank), plus the job's pids."""
    procs = marked(launch_id, host)
    out, seen = [], set()
    for pid in sorted(procs):
        env = procs[pid]
        rank = env.get("RANK")
        stat = forensics.proc_stat(pid)
        if rank is None or not rank.isdigit() or stat is None:
            continue
        parent = procs.get(stat["ppid"])
        if parent is None or parent.get("RANK") is not None:
            continue  # a rank's child (a DataLoader worker), or one detached from it (a double fork)
        if int(rank) in seen:
            continue
        seen.add(int(rank))
        world = env.get("WORLD_SIZE", "")
        item = {"rank": int(rank), "local_rank": int(env.get("LOCAL_RANK", "0") or 0), "pid": pid,
                "world": int(world) if world.isdigit() else None,
                "state": stat["state"], "comm": stat["comm"], "cpu": cpu_ticks(pid), "main_cpu": cpu_ticks(pid, pid),
                "io": io_chars(pid), "wchan": forensics._read(f"/proc/{pid}/wchan") or "-"}
        if stacks and stat["state"] not in ("T", "t", "Z", "X"):
            dump = forensics.py_spy(pid) if _has_py_spy() else []
            item["stack"] = main_thread(dump)
            item["stack_error"] = "" if item["stack"] else " ".join(dump[:2])[:300]
        out.append(item)
    return out, sorted(procs)


def _has_py_spy():
    return forensics.shutil.which("py-spy") is not None


def sample(launch_id, host, stacks, ras):
    rank_list, pids = ranks(launch_id, host, stacks)
    record = {"t": time.time(), "ranks": rank_list, "pids": pids, "clk_tck": CLK_TCK}
    if ras:
        record["ras"] = forensics.ras_query(wait=0.5)[:400]
    return record


# The unmarked wrapper (not part of the job, so `stop` leaves it to record the exit code): it reads
# the job's settings from its stdin (never a command line, which other users can read), starts the
# launcher with them and writes the launcher's exit code (128+N for a signal N).
WRAPPER = """import json, os, subprocess, sys
env = dict(os.environ)
env.update(json.loads(sys.stdin.readline()))
process = subprocess.Popen(sys.argv[2:], env=env, stdin=subprocess.DEVNULL)
code = process.wait()
with open(sys.argv[1] + ".tmp", "w") as handle:
    handle.write(str(128 - code if code < 0 else code))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
"""


def start(run_dir, cwd, job_env, argv):
    """Start the launcher detached, in a session of its own (a dropped connection does not end the
    job: `ncclkit launch --status/--stop RUN` find it again); print the wrapper's pid."""
    os.makedirs(os.path.join(run_dir, "fr"), mode=0o700, exist_ok=True)
    job_env = {key: os.path.expanduser(value) if value.startswith("~/") else value for key, value in job_env.items()}
    for name in (RC, RC + ".tmp"):
        if os.path.exists(os.path.join(run_dir, name)):
            os.unlink(os.path.join(run_dir, name))
    log = os.open(os.path.join(run_dir, LOG), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        process = subprocess.Popen([sys.executable, "-c", WRAPPER, os.path.join(run_dir, RC)] + list(argv),
                                   cwd=cwd, stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True)
    finally:
        os.close(log)
    process.stdin.write((json.dumps(job_env) + "\n").encode())
    process.stdin.close()
    print(json.dumps({"pid": process.pid}), flush=True)
    return 0


def follow(run_dir, launch_id, host, interval, stacks, ras):
    path, rc_path = os.path.join(run_dir, LOG), os.path.join(run_dir, RC)
    offset, buffered, next_sample = 0, b"", 0.0
    while True:
        ended = os.path.exists(rc_path)
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read(1 << 20)
        except OSError:
            chunk = b""
        offset += len(chunk)
        buffered += chunk
        *complete, buffered = buffered.split(b"\n")
        for line in complete:
            sys.stdout.write("L " + line.decode("utf-8", "replace") + "\n")
        now = time.monotonic()
        if not ended and now >= next_sample:
            sys.stdout.write("S " + json.dumps(sample(launch_id, host, stacks, ras)) + "\n")
            next_sample = now + interval
        sys.stdout.flush()
        if ended and not chunk:
            if buffered:
                sys.stdout.write("L " + buffered.decode("utf-8", "replace") + "\n")
            with open(rc_path) as handle:
                text = handle.read().strip()
            sys.stdout.write("E " + json.dumps({"rc": int(text) if text.lstrip("-").isdigit() else None,
                                                "left": sorted(marked(launch_id, host))}) + "\n")
            sys.stdout.flush()
            return 0
        if not chunk:
            time.sleep(0.2)


def stop(launch_id, host, grace):
    """TERM (and CONT: a stopped process never acts on TERM) to every process of the job, KILL after
    `grace` seconds, then count what is left."""
    first = marked(launch_id, host)
    for sig in (signal.SIGTERM, signal.SIGCONT):
        for pid in first:
            _kill(pid, sig)
    deadline = time.monotonic() + grace
    left = first
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = marked(launch_id, host)
    killed = sorted(left)
    for pid in killed:
        _kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = {pid: env for pid, env in marked(launch_id, host).items() if _alive(pid)}
    print(json.dumps({"found": sorted(first), "killed": killed, "left": sorted(left)}), flush=True)
    return 0


def _alive(pid):
    stat = forensics.proc_stat(pid)
    return stat is not None and stat["state"] not in ("Z", "X")


def _kill(pid, sig):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def dump(launch_id, host, wait):
    """Ask every rank of an NCCL process group for its Flight Recorder dump (writing to the pipe file
    torch watches), and send the dumps back."""
    procs = marked(launch_id, host)
    asked, wanted, since = [], set(), time.time() - 1
    for env in procs.values():
        pipe, rank = env.get(FR_PIPE), env.get("RANK")
        if not pipe or rank is None:
            continue
        wanted.add((env.get(FR_PREFIX) or env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE") or FR_DEFAULT) + rank)
        target = pipe + rank
        if os.path.exists(target) and target not in asked:
            try:
                fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, b"1\n")
                os.close(fd)
                asked.append(target)
            except OSError:
                pass
    time.sleep(wait if asked else 0)
    dumps = {}
    for path in sorted(wanted):  # this host's ranks' own dumps, written since they were asked for
        if os.path.isfile(path) and os.path.getmtime(path) >= since:
            with open(path, "rb") as handle:
                dumps[os.path.basename(path)] = base64.b64encode(handle.read(16 << 20)).decode()
    print(json.dumps({"asked": asked, "dumps": dumps}), flush=True)
    return 0


def status(run_dir, launch_id, host):
    """Where a job stands on this host: its processes and the launcher's exit code once it ended."""
    rc_path = os.path.join(run_dir, RC)
    text = open(rc_path).read().strip() if os.path.exists(rc_path) else ""
    rank_list, pids = ranks(launch_id, host)
    print(json.dumps({"known": os.path.isdir(run_dir), "rc": int(text) if text.lstrip("-").isdigit() else None,
                      "ranks": rank_list, "pids": pids}), flush=True)
    return 0


def clean(run_dir, launch_id):
    """Remove this host's run folder (launch made it; the controller has the output), and the
    launch's folder once empty."""
    if os.path.basename(os.path.dirname(run_dir)) != launch_id:
        return 2
    for root, dirs, files in os.walk(run_dir, topdown=False):
        for name in files:
            os.unlink(os.path.join(root, name))
        for name in dirs:
            path = os.path.join(root, name)
            os.unlink(path) if os.path.islink(path) else os.rmdir(path)
    if os.path.isdir(run_dir):
        os.rmdir(run_dir)
    try:
        os.rmdir(os.path.dirname(run_dir))
    except OSError:
        pass
    print(json.dumps({"removed": run_dir}), flush=True)
    return 0


def ready(run_dir, cwd, script, argv):
    """`probe`, then wait on stdin for the controller's word: the job's settings (a JSON line) start
    the launcher `argv` (`start`), an end of input starts nothing. One connection per host does
    both, so the start costs no second connection and Python start when every host has answered."""
    probe(run_dir, cwd, script, argv[0] if argv else "")
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return 0
    return start(run_dir, cwd, json.loads(line), argv)


def probe(run_dir, cwd, script, launcher):
    """What launch needs on this host, before anything starts (it writes nothing: a refused launch
    leaves no trace on the host)."""
    path = script if os.path.isabs(script) else os.path.join(cwd, script)
    py_spy = forensics.shutil.which("py-spy")
    print(json.dumps({"script": os.path.isfile(path), "cwd": os.path.isdir(cwd),
                      "launcher": os.path.isfile(launcher) and os.access(launcher, os.X_OK),
                      "py_spy": py_spy,
                      "gpu": os.path.exists("/dev/nvidia0") or bool(forensics.shutil.which("nvidia-smi")),
                      "home": os.path.expanduser("~")}), flush=True)
    return 0


def main(argv):
    mode = argv[0]
    argv = [mode, os.path.expanduser(argv[1])] + list(argv[2:])  # RUN_DIR: ~/... on the host
    # py-spy that launch put on the host, where the host had none (transport.PY_SPY_HOME).
    os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + os.path.expanduser(TOOLS)
    if mode == "ready":  # RUN_DIR CWD SCRIPT -- LAUNCHER ARGS...; then the job's settings on stdin, or nothing
        split = argv.index("--")
        return ready(argv[1], argv[2], argv[3], argv[split + 1:])
    if mode == "follow":
        return follow(argv[1], argv[2], argv[3], float(argv[4]), "--stacks" in argv, "--ras" in argv)
    if mode == "sample":
        print(json.dumps(sample(argv[2], argv[3], "--stacks" in argv, "--ras" in argv)), flush=True)
        return 0
    if mode == "stop":
        return stop(argv[2], argv[3], float(argv[4]))
    if mode == "status":
        return status(argv[1], argv[2], argv[3])
    if mode == "clean":
        return clean(argv[1], argv[2])
    if mode == "dump":
        return dump(argv[2], argv[3], float(argv[4]))
    sys.stderr.write(f"unknown mode {mode!r}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
