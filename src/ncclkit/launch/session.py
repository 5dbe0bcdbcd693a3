"""One launch from start to verdict: checks, start on every host, the merged live stream, the watch
for stalls, stopping everything, the record. `launch()` is the Python API; `ncclkit launch` calls it.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ncclkit import exitcodes
from ncclkit.inventory import InventoryError
from ncclkit.launch import precheck, record, transport, verdict
from ncclkit.launch.hosts import LaunchHost, launch_hosts
from ncclkit.launch.watch import StallWatch

# torchrun --tee 3 prefixes each rank's line with "[<role><local rank>]:".
TEE_PREFIX = re.compile(r"^\[(?P<role>[A-Za-z_]*?)(?P<local>\d+)\]:(?P<text>.*)$")
# torchrun's agent when a rank exits: "failed (exitcode: 1) local_rank: 0 (pid: 1747) of binary: ...".
AGENT_FAILED = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\)")
HOST_BASE = "~/.cache/ncclkit/launch"


class LaunchInputError(ValueError):
    """Bad input: one line naming the cause and the fix (exit code 3)."""


class Launch:
    def __init__(self, hosts: list[LaunchHost], argv: list[str], *, inventory: Path | None = None,
                 nproc_per_node: int | None = None, stall_after: float = 60.0, timeout: float | None = None,
                 stop_on_hang: bool = False, check: bool = True, grace: float = 10.0, chdir: str | None = None,
                 report_parent: Path = Path("ncclkit-report"), echo: Callable[[str], None] = print,
                 limit: str | None = None):
        self.hosts, self.argv, self.inventory, self.limit = hosts, list(argv), inventory, limit
        self.nproc, self.stall_after, self.timeout = nproc_per_node, float(stall_after), timeout
        self.stop_on_hang, self.check, self.grace, self.chdir = stop_on_hang, check, float(grace), chdir
        self.echo = echo
        self.id = uuid.uuid4().hex[:16]
        self.folder = record.make_run_folder(Path(report_parent))
        self.control = Path(tempfile.mkdtemp(prefix="nkl-"))
        self.payload = transport.script_payload()
        self.t0 = time.time()
        self.watch = StallWatch(self.stall_after)
        self.samples: dict[str, dict] = {}
        self.rank_of: dict[tuple, int] = {}
        self.exceptions = verdict.TracebackTracker()
        self.events: queue.Queue = queue.Queue()
        self.ended: dict[str, int | None] = {}
        self.followers: dict[str, subprocess.Popen] = {}
        self.logs = {host.name: record.private_file(self.folder / f"{host.name}.log") for host in hosts}
        self.findings: list[dict] = []
        self.timings: dict[str, float] = {}
        self.state = {"status": "starting", "stop_reason": None}
        self.stopped: dict[str, dict] = {}
        self.pids: dict[str, dict] = {host.name: {} for host in hosts}
        self.gpu: dict[str, bool] = {}
        self.stall_reported: dict | None = None
        self.need_py_spy: list[LaunchHost] = []
        self.sessions: dict[str, subprocess.Popen] = {}  # host -> its connection waiting after the probe

    # ---- helpers ----
    def mark(self, name: str) -> float:
        self.timings.setdefault(name, round(time.time() - self.t0, 3))
        return self.timings[name]

    def run_dir(self, host: LaunchHost) -> str:
        return f"{HOST_BASE}/{self.id}/{host.name}"

    def cwd(self, host: LaunchHost) -> str:
        if self.chdir:
            return self.chdir
        return os.getcwd() if host.connection == "local" else "."

    def call(self, host: LaunchHost, mode: str, args: list[str], extra: bytes = b"", timeout: float = 60):
        argv = transport.host_argv(host, mode, [self.run_dir(host), *args], self.control)
        try:
            done = subprocess.run(argv, input=self.payload + extra, capture_output=True, timeout=timeout,
                                  check=False, start_new_session=True)
        except subprocess.TimeoutExpired:
            return 124, {}, f"{mode} on {host.name} took over {timeout:g} s"
        text = done.stdout.decode(errors="replace").strip().splitlines()
        try:
            data = json.loads(text[-1]) if text else {}
        except ValueError:
            data = {}
        return done.returncode, data, done.stderr.decode(errors="replace").strip()

    def parallel(self, function, items):
        with ThreadPoolExecutor(max_workers=min(32, max(1, len(items)))) as pool:
            return list(pool.map(function, items))

    def job_env(self, host: LaunchHost) -> dict:
        base = f"{self.run_dir(host)}/fr"  # hostside expands ~/ on the host
        env = dict(host.env)
        # The marker, and the pipe torch's NCCL watchdog reads to dump its Flight Recorder on demand;
        # where the dumps go and how many entries they keep stay the profile's (nccl_profile).
        env.update({"NCCLKIT_LAUNCH_ID": self.id, "NCCLKIT_LAUNCH_HOST": host.name,
                    "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": f"{base}/pipe_rank_"})
        return env

    # ---- the stages ----
    def run(self) -> dict:
        record.write_record(self.folder, self.document())
        try:
            if not self.prepare():
                return self.finish()
            self.start()
            # py-spy only serves the watch: copied after the start, in parallel, off the start's path.
            threading.Thread(target=self.parallel, args=(self.put_py_spy, self.need_py_spy), daemon=True).start()
            self.follow_loop()
        except KeyboardInterrupt:
            self.echo("launch: interrupted: stopping the job on every host")
            self.state["status"] = "interrupted"
            self.stop_all("interrupted (Ctrl-C)")
        except Exception:
            # launch's own failure must not leave the job running unwatched.
            self.state["status"] = "failed"
            self.stop_all("launch's own error (a bug: please report it with the traceback)")
            self.finish()
            raise
        finally:
            self.close_sessions()  # connections still waiting after their probe start nothing
        return self.finish()

    def prepare(self) -> bool:
        names = [host.name for host in self.hosts]
        if self.check and self.inventory is not None:
            self.echo(f"launch: checking {len(names)} host(s) as `ncclkit check` does (--no-check skips this)")
            document = precheck.cluster_check(self.inventory, self.limit, names)
            self.mark("checked")
            if document["unreachable"]:
                return self.refuse("unreachable", [verdict.finding(
                    "host_unreachable", "error", f"{host}: unreachable: {why}", "check the inventory's address, "
                    "port, user and key for this host", host=host) for host, why in document["unreachable"].items()])
            refusal = precheck.check_refusal(document)
            if refusal:
                return self.refuse("refused", refusal)
        script = self.argv[0]
        results = self.parallel(self.open_session, self.hosts)
        unreachable, missing = [], []
        for host, (rc, data, err) in zip(self.hosts, results, strict=True):
            if rc == transport.UNREACHABLE_RC or (rc != 0 and not data):
                unreachable.append(verdict.finding("host_unreachable", "error", f"{host.name}: unreachable: "
                                                   f"{(err.splitlines() or ['no answer'])[-1]}",
                                                   "check the inventory's address, port, user and key for this "
                                                   "host", host=host.name))
                continue
            self.gpu[host.name] = bool(data.get("gpu"))
            missing += precheck.probe_findings(host.name, data, script, host.launcher, self.cwd(host))
            if not data.get("py_spy"):
                self.need_py_spy.append(host)
        if unreachable or missing:
            self.close_sessions()
            return self.refuse("unreachable", unreachable) if unreachable else self.refuse("refused", missing)
        self.mark("probed")
        return True

    def launcher_argv(self, host: LaunchHost) -> list[str]:
        return [host.launcher, *host.launcher_args, "--nnodes", str(len(self.hosts)), "--node-rank",
                str(host.node_rank), "--tee", "3", *(["--nproc-per-node", str(self.nproc)] if self.nproc else []),
                *self.argv]

    def open_session(self, host: LaunchHost, timeout: float = 60):
        """One connection per host for the probe and the start (hostside `ready`): its probe's answer as
        call() returns it; the connection then waits for start() or close_sessions()."""
        args = [self.run_dir(host), self.cwd(host), self.argv[0], "--", *self.launcher_argv(host)]
        process = subprocess.Popen(transport.host_argv(host, "ready", args, self.control), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.sessions[host.name] = process
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        try:
            process.stdin.write(self.payload)
            process.stdin.flush()
            first = process.stdout.readline()
        except OSError:
            first = b""
        finally:
            timer.cancel()
        try:
            return 0, json.loads(first), ""
        except ValueError:
            process.kill()
            err = process.stderr.read().decode(errors="replace").strip()
            rc = process.wait()
            self.sessions.pop(host.name, None)
            return (124 if rc == -signal.SIGKILL and not err else rc), {}, (
                err or f"the probe on {host.name} gave no answer within {timeout:g} s")

    def close_sessions(self) -> None:
        """End every waiting connection without starting anything (the host side sees the end of input)."""
        for process in self.sessions.values():
            try:
                process.stdin.close()
            except OSError:
                pass
        for process in self.sessions.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.sessions.clear()

    def put_py_spy(self, host: LaunchHost) -> None:
        tool = transport.local_py_spy()
        if tool is None:
            self.echo(f"launch: {host.name} has no py-spy and neither has this machine: no stacks from it")
            return
        done = subprocess.run(transport.py_spy_install_argv(host, self.control, transport.file_digest(tool)),
                              input=tool.read_bytes(), capture_output=True, timeout=120, check=False)
        if done.returncode != 0:
            self.echo(f"launch: could not put py-spy on {host.name}: {done.stderr.decode(errors='replace')[-200:]}")

    def refuse(self, status: str, findings: list[dict]) -> bool:
        self.state["status"] = status
        self.findings.extend(findings)
        return False

    def start(self) -> None:
        def start_one(host: LaunchHost):
            process = self.sessions.pop(host.name)
            try:
                out, err = process.communicate((json.dumps(self.job_env(host)) + "\n").encode(), timeout=60)
            except (OSError, subprocess.TimeoutExpired) as error:
                process.kill()
                out, err = b"", str(error).encode()
            text = out.decode(errors="replace").strip().splitlines()
            try:
                data = json.loads(text[-1]) if text else {}
            except ValueError:
                data = {}
            return host, process.returncode, data, err.decode(errors="replace").strip(), round(time.time() - self.t0, 3)

        self.state["status"] = "running"
        for host, rc, data, err, at in self.parallel(start_one, self.hosts):
            if "pid" not in data:
                self.findings.append(verdict.finding(
                    "host_unreachable" if rc == transport.UNREACHABLE_RC else "launch_start_failed", "error",
                    f"{host.name}: the launcher did not start: {(err.splitlines() or ['no answer'])[-1]}",
                    "check the connection and the launcher on this host", host=host.name))
                self.ended[host.name] = None
                continue
            self.pids[host.name]["wrapper"] = data["pid"]
            self.timings[f"started {host.name}"] = at
        self.mark("launchers started")
        self.echo(f"launch: started on {len(self.hosts) - len(self.ended)} of {len(self.hosts)} host(s); "
                  f"run folder {self.folder}")
        record.write_record(self.folder, self.document())
        for host in self.hosts:
            if host.name not in self.ended:
                self.open_follower(host, skip=0)

    def open_follower(self, host: LaunchHost, skip: int) -> None:
        interval = max(1.0, min(10.0, self.stall_after / 5))
        args = [self.id, host.name, f"{interval:g}", "--stacks", *(["--ras"] if self.gpu.get(host.name) else [])]
        argv = transport.host_argv(host, "follow", [self.run_dir(host), *args], self.control)
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        process.stdin.write(self.payload)
        process.stdin.close()
        self.followers[host.name] = process
        threading.Thread(target=self.read_follower, args=(host, process, skip), daemon=True).start()

    def read_follower(self, host: LaunchHost, process: subprocess.Popen, skip: int) -> None:
        lines = 0
        for raw in process.stdout:
            kind, dummy, body = raw.decode(errors="replace").rstrip("\n").partition(" ")
            if kind == "L":
                lines += 1
                if lines <= skip:
                    continue
                self.events.put((host, "L", body, lines))
            elif kind in ("S", "E"):
                try:
                    self.events.put((host, kind, json.loads(body), lines))
                except ValueError:
                    pass
        process.wait()
        self.events.put((host, "gone", process.returncode, lines))

    def follow_loop(self) -> None:
        reconnects = {host.name: 0 for host in self.hosts}
        while len(self.ended) < len(self.hosts):
            try:
                host, kind, data, count = self.events.get(timeout=0.5)
            except queue.Empty:
                host = None
            now = time.time()
            if host is not None:
                if kind == "L":
                    self.line(host, data)
                elif kind == "S":
                    self.sample(host, data)
                elif kind == "E":
                    self.host_ended(host, data)
                elif kind == "gone" and host.name not in self.ended:
                    reconnects[host.name] += 1
                    if reconnects[host.name] > 3:
                        self.findings.append(verdict.finding(
                            "host_unreachable", "error", f"{host.name}: the connection dropped "
                            f"{reconnects[host.name]} times; the job may still run there",
                            f"ncclkit launch --status {self.folder}", host=host.name))
                        self.ended[host.name] = None
                    else:
                        self.echo(f"launch: the connection to {host.name} dropped; reconnecting")
                        time.sleep(1)
                        self.open_follower(host, skip=count)
            if self.state["stop_reason"] is None:
                self.check_stall(now)
                if self.timeout and now - self.t0 > self.timeout:
                    self.findings.append(verdict.finding(
                        "launch_timeout", "error", f"the job ran past --timeout {self.timeout:g} s", "give the job "
                        "more time with --timeout, or look at why it is slow (its per-host logs)"))
                    self.state["status"] = "timed out"
                    self.stop_all(f"--timeout {self.timeout:g} s")

    def line(self, host: LaunchHost, text: str) -> None:
        self.logs[host.name].write((text + "\n").encode())
        match = TEE_PREFIX.match(text)
        if match:
            local = int(match.group("local"))
            rank = self.rank_of.get((host.name, local))
            if rank is None and self.nproc:
                rank = host.node_rank * self.nproc + local
            label = f"{host.name} {rank if rank is not None else 'L' + str(local)}"
            body = match.group("text")
            self.exceptions.add((host.name, rank if rank is not None else local), body)
        else:
            label, body = host.name, text
            self.exceptions.add((host.name, None), text)
            died = AGENT_FAILED.search(text)
            if died and self.state["stop_reason"] is None:
                # torchrun saw a rank exit: name it now, before torchrun's own report and exit.
                local = int(died.group("local"))
                self.echo(f"[{label}] {body}")
                self.rank_failed(host, {"host": host.name, "rc": int(died.group("code")), "pid": died.group("pid"),
                                        "rank": self.rank_of.get((host.name, local)), "line": text[:500]})
                return
        self.echo(f"[{label}] {body}")

    def sample(self, host: LaunchHost, data: dict) -> None:
        self.samples[host.name] = data
        for item in data.get("ranks", []):
            self.rank_of[(host.name, item["local_rank"])] = item["rank"]
            self.pids[host.name][str(item["rank"])] = item["pid"]
        for event in self.watch.add(host.name, data):
            if event.startswith("every rank joined"):
                self.mark("joined")
            if event.startswith("training running"):
                self.mark("first collective done")
            self.echo(f"launch: {event}")

    def host_ended(self, host: LaunchHost, data: dict) -> None:
        rc = data.get("rc")
        self.ended[host.name] = rc
        self.timings[f"ended {host.name}"] = round(time.time() - self.t0, 3)
        self.logs[host.name].flush()
        if rc not in (0, None) and self.state["stop_reason"] is None:
            self.rank_failed(host, {"host": host.name, "rc": rc})

    def rank_failed(self, host: LaunchHost, failed: dict) -> None:
        """The first failure: name it through the diagnosis engine, then stop the job everywhere."""
        self.mark("failure seen")
        self.state["status"] = "failed"
        result = verdict.diagnose(list(self.logs_paths()), self.log_hosts())
        named = verdict.failure_finding(result, failed, dict(self.exceptions.last), self.hosts_of_rank())
        self.findings.insert(0, named)
        self.mark("named")
        self.echo(f"launch: NAMED: {named['code']} ({named.get('host')}, rank {named.get('rank')}): {named['cause']}")
        what = f"rank {failed['rank']}" if failed.get("rank") is not None else f"{host.name}'s launcher"
        self.stop_all(f"{what} on {host.name} exited with code {failed['rc']}")

    def hosts_of_rank(self) -> dict:
        return {rank: host for (host, dummy), rank in self.rank_of.items()}

    def log_hosts(self) -> dict:
        """{the host's log: the host}: whose log each file is, for the engine's lines without a host."""
        return {self.folder / f"{host.name}.log": host.name for host in self.hosts}

    def logs_paths(self):
        for handle in self.logs.values():
            handle.flush()
        return list(self.log_hosts()) + sorted(self.folder.glob("fr/*")) + \
            ([self.folder / "forensics.log"] if (self.folder / "forensics.log").exists() else [])

    def check_stall(self, now: float) -> None:
        stall = self.watch.stalled(now)
        if not stall:
            return
        self.mark("stall seen")
        self.collect_dumps()
        with record.private_file(self.folder / "forensics.log", "wb") as handle:
            handle.write("\n".join(verdict.forensics_lines(self.samples, stall)).encode() + b"\n")
        result = verdict.diagnose(list(self.logs_paths()), self.log_hosts())
        named = verdict.hang_finding(result, stall, self.hosts_of_rank())
        self.stall_reported = named
        self.findings.insert(0, named)
        self.timings.pop("named", None)
        self.mark("named")
        self.echo(f"launch: NAMED: {named['code']} ({named.get('host')}, rank {named.get('rank')}): {named['cause']}")
        if self.stop_on_hang:
            self.state["status"] = "hung"
            self.stop_all("a named hang (--stop-on-hang)")
        else:
            self.echo("launch: the job keeps running (stop it with Ctrl-C, or give --stop-on-hang)")

    def collect_dumps(self) -> None:
        """Flight Recorder dumps of NCCL process groups, asked for through the pipe file launch set."""
        gpu_hosts = [host for host in self.hosts if self.gpu.get(host.name) and host.name not in self.ended]
        answers = self.parallel(lambda h: self.call(h, "dump", ["5"]), gpu_hosts)
        for host, (dummy, data, dummy) in zip(gpu_hosts, answers, strict=True):
            for name, body in (data.get("dumps") or {}).items():
                (self.folder / "fr").mkdir(mode=0o700, exist_ok=True)
                with record.private_file(self.folder / "fr" / f"{host.name}-{os.path.basename(name)}", "wb") as out:
                    out.write(base64.b64decode(body))

    def stop_all(self, reason: str) -> None:
        self.state["stop_reason"] = reason
        self.mark("stop asked")
        answers = self.parallel(lambda h: self.call(h, "stop", [self.id, h.name, f"{self.grace:g}"],
                                                    timeout=self.grace + 30), self.hosts)
        for host, (rc, data, err) in zip(self.hosts, answers, strict=True):
            self.stopped[host.name] = data or {"error": err[-300:], "rc": rc}
        self.mark("stopped")
        left = {name: data.get("left") for name, data in self.stopped.items() if data.get("left")}
        self.echo(f"launch: stopped ({reason}); processes left: "
                  f"{sum(len(v) for v in left.values()) if left else 0}")
        # The wrappers record the launchers' exit codes: wait a little for the followers to say so.
        deadline = time.time() + 10
        while len(self.ended) < len(self.hosts) and time.time() < deadline:
            try:
                host, kind, data, dummy = self.events.get(timeout=0.5)
            except queue.Empty:
                continue
            if kind == "L":
                self.line(host, data)
            elif kind == "E":
                self.ended[host.name] = data.get("rc")
        for host in self.hosts:
            self.ended.setdefault(host.name, None)

    def verify(self) -> None:
        """After the end: no process of the job left on any host (a daemonized child after success too)."""
        if self.state["stop_reason"] is None and self.state["status"] in ("running", "starting"):
            started = [host for host in self.hosts if "wrapper" in self.pids[host.name]]
            results = self.parallel(lambda h: self.call(h, "stop", [self.id, h.name, f"{self.grace:g}"],
                                                        timeout=self.grace + 30), started)
            for host, (dummy, data, dummy) in zip(started, results, strict=True):
                self.stopped[host.name] = data
                if data.get("found"):
                    self.findings.append(verdict.finding(
                        "launch_processes_left", "warning", f"{host.name}: {len(data['found'])} process(es) of the "
                        "job were still running after its launcher ended (a daemonized child?); launch stopped them",
                        "end every child process in the script itself", host=host.name))
        left = {name: data.get("left") for name, data in self.stopped.items() if data and data.get("left")}
        if left:
            self.findings.append(verdict.finding(
                "launch_processes_left", "error", "processes of the job survived KILL: " + ", ".join(
                    f"{name}: pids {' '.join(map(str, pids))}" for name, pids in left.items()),
                "look at them on the host (state D: blocked in the driver or I/O)"))

    def clean_hosts(self) -> None:
        started = [host for host in self.hosts if "wrapper" in self.pids[host.name]]
        self.parallel(lambda h: self.call(h, "clean", [self.id], timeout=30), started)

    def finish(self) -> dict:
        for handle in self.logs.values():
            handle.flush()
        if self.state["status"] in ("running", "starting", "failed", "hung", "timed out", "interrupted"):
            self.verify()
            if self.state["status"] == "running":
                failed = {name: rc for name, rc in self.ended.items() if rc != 0}
                self.state["status"] = "failed" if failed else "succeeded"
                if failed and not any(f["severity"] == "error" for f in self.findings):
                    self.findings.insert(0, verdict.finding(
                        "rank_failed", "error", "launcher(s) ended without an exit code: " + ", ".join(failed),
                        "read the host's log in the run folder"))
            if not [f for f in self.findings if f["code"] == "launch_processes_left" and f["severity"] == "error"]:
                self.clean_hosts()
        for handle in self.logs.values():
            handle.close()
        transport.close_masters(self.hosts, self.control)
        shutil.rmtree(self.control, ignore_errors=True)
        self.mark("ended")
        document = self.document()
        record.write_record(self.folder, document)
        return document

    def exit_code(self) -> int:
        status = self.state["status"]
        if status == "interrupted":
            return exitcodes.INTERRUPTED
        if status == "unreachable" or any(f["code"] == "host_unreachable" for f in self.findings):
            return exitcodes.UNREACHABLE
        if status == "succeeded" and not any(f["severity"] == "error" for f in self.findings):
            return exitcodes.OK
        return exitcodes.PROBLEM

    def verdict_line(self) -> str:
        status, errors = self.state["status"], [f for f in self.findings if f["severity"] == "error"]
        if status == "succeeded" and not errors:
            return f"SUCCEEDED: every launcher exited 0 on {len(self.hosts)} host(s); no process left"
        if errors:
            root = errors[0]
            where = ", ".join(str(x) for x in (root.get("host"), f"rank {root['rank']}" if root.get("rank")
                                               is not None else None) if x)
            return f"{status.upper()}: {root['code']}" + (f" ({where})" if where else "") + f": {root['cause']}"
        return f"{status.upper()}: {self.state['stop_reason'] or 'see the findings'}"

    def document(self) -> dict:
        ranks = {name: {rank: pid for rank, pid in pids.items() if rank != "wrapper"}
                 for name, pids in self.pids.items()}
        return {
            "launch_id": self.id, "folder": str(self.folder), "status": self.state["status"],
            "exit_code": self.exit_code(), "verdict": self.verdict_line(), "stop_reason": self.state["stop_reason"],
            "argv": record.mask_argv(self.argv), "nproc_per_node": self.nproc, "stall_after_s": self.stall_after,
            "timeout_s": self.timeout, "stop_on_hang": self.stop_on_hang, "started_at": self.t0,
            "hosts": [dict(host.public(), env=record.mask_env(host.env), run_dir=self.run_dir(host),
                           exit_code=self.ended.get(host.name), wrapper_pid=self.pids[host.name].get("wrapper"),
                           ranks=ranks[host.name], stopped=self.stopped.get(host.name), gpu=self.gpu.get(host.name))
                      for host in self.hosts],
            "timings_s": self.timings, "findings": self.findings,
            # What every rank did at the last sample (state, main-thread stack): the end, or the stall.
            "last_samples": self.samples,
        }


def launch(inventory, argv, *, limit=None, nproc_per_node=None, stall_after=60.0, timeout=None, stop_on_hang=False,
           check=True, grace=10.0, chdir=None, report_parent="ncclkit-report", echo=print) -> dict:
    """Start `argv` (the training script and its arguments) with every host's launcher, watch it and
    stop it as `ncclkit launch` does; returns the record written to launch.json (its `exit_code` is
    the command's). LaunchInputError for bad input (the inventory, an empty argv)."""
    if not argv:
        raise LaunchInputError("no training script given: ncclkit launch -i INVENTORY -- train.py ARGS...")
    if stall_after <= 0 or (timeout is not None and timeout <= 0):
        raise LaunchInputError("--stall-after and --timeout take a number of seconds above 0")
    try:
        hosts = launch_hosts(Path(inventory), limit)
    except InventoryError as error:
        raise LaunchInputError(str(error)) from None
    session = Launch(hosts, argv, inventory=Path(inventory), nproc_per_node=nproc_per_node, stall_after=stall_after,
                     timeout=timeout, stop_on_hang=stop_on_hang, check=check, grace=grace, chdir=chdir,
                     report_parent=Path(report_parent), echo=echo, limit=limit)
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        # `kill` of the controller stops the job as Ctrl-C does.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return session.run()
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
