"""The lab's state dir, /run/ncclkit-lab/<K>/: state.json, keys, sshd files, node layers, logs.

A lock file beside it, /run/ncclkit-lab/<K>.lock, serialises `up` and `down` of one lab; it is
removed again whenever the lab is down, so a downed lab leaves no file behind.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ncclkit.lab.errors import LabError
from ncclkit.lab.plan import STATE_ROOT, state_dir

STATE_VERSION = 1
LOCK_WAIT_S = 120


class StateDir:
    """Paths inside one lab's state dir, and its state.json."""

    def __init__(self, index: int):
        self.index = index
        self.path = state_dir(index)

    state_file = property(lambda self: self.path / "state.json")
    ssh_key = property(lambda self: self.path / "id_ed25519")          # the controller's key
    ssh_public_key = property(lambda self: self.path / "id_ed25519.pub")
    host_key = property(lambda self: self.path / "ssh_host_ed25519_key")  # shared by all nodes
    sshd_config = property(lambda self: self.path / "sshd_config")
    authorized_keys = property(lambda self: self.path / "authorized_keys")
    known_hosts = property(lambda self: self.path / "known_hosts")
    control_dir = property(lambda self: self.path / "cp")   # ssh ControlPath sockets
    log_dir = property(lambda self: self.path / "logs")
    lock_file = property(lambda self: STATE_ROOT / f"{self.index}.lock")

    def member_dir(self, name: str) -> Path:
        """upper/ and work/ of the node's overlays live here."""
        return self.path / "nodes" / name

    def log_file(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def exists(self) -> bool:
        return self.path.exists()

    def create(self) -> None:
        STATE_ROOT.mkdir(mode=0o755, exist_ok=True)
        self.path.mkdir(mode=0o700)   # sshd's StrictModes wants root-only dirs above its keys
        for folder in (self.control_dir, self.log_dir, self.path / "nodes"):
            folder.mkdir(mode=0o700)

    def read(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise LabError(f"cannot read {self.state_file}: {error}") from error

    def write(self, state: dict) -> None:
        write_atomically(self.state_file, json.dumps({"version": STATE_VERSION, **state}, indent=2)
                         + "\n", mode=0o600)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self.path.exists():
            shutil.rmtree(self.path)   # again, to raise the error that kept it

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold this lab's lock; when the lab is down on the way out, remove the lock file too."""
        fd = _acquire(self.lock_file, self.index)
        try:
            yield
        finally:
            if not self.exists():
                self.lock_file.unlink(missing_ok=True)
                try:
                    STATE_ROOT.rmdir()
                except OSError:
                    pass   # other labs still live there
            os.close(fd)


def _acquire(path: Path, index: int) -> int:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            STATE_ROOT.mkdir(mode=0o755, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            continue   # another lab's down removed the empty STATE_ROOT in between
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            if time.monotonic() > deadline:
                raise LabError(f"another ncclkit lab command holds lab {index} "
                               f"({path}); wait for it to finish") from None
            time.sleep(0.05)
            continue
        # The holder before us may have removed the file: then ours is a stale inode.
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def write_atomically(path: Path, text: str, mode: int = 0o644) -> None:
    """Readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", opener=lambda p, f: os.open(p, f, mode)) as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
