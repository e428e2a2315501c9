"""The resident engine: one warm process per workspace, answering one-shot commands.

It listens on a Unix socket (:func:`..store.locations.resident_files`: in the
index folder, mode 0600) and runs, one at a time, the command lines one-shot
processes hand it (:mod:`.client`), keeping the snapshot, the model and the
file watcher warm between them. One request is one JSON line; one reply is one
JSON object (a run's: a framed one), then the connection closes.

- ``{"op": "run", "argv", "cwd", "env", "workspace"}``: run a command, reply
  a line ``R<rc> <stdout bytes> <stderr bytes>`` then both outputs as they are
  (:func:`.client.run_reply`): the one-shot caller decodes it without
  importing ``json``.
- ``{"op": "status"}``: who it is and what its engines hold.
- ``{"op": "stop"}``: reply, then exit.

Every request carries the caller's package version and location; on a
mismatch the engine replies ``{"refused": ...}`` and exits, so a stale engine
is replaced by the next caller, never trusted. A caller of another uid is not
answered. The lock file, held for the engine's whole life and kept outside the
index folder, makes two starting at once end as one, even when that folder is
deleted under a live engine. It exits after ``idle_timeout_s`` without a
request (never while it is still embedding), on ``stop`` and on SIGTERM,
removing its socket; and, within a second, once its workspace is gone, its
socket is deleted or replaced (``rm -rf .enhanced-memory``, ``make clean``) or
``gone`` names an index folder deleted or replaced under a warm engine.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.errors import EnhancedMemoryError
from ..store.locations import ResidentFiles, resident_files
from .client import PROTOCOL, identity, run_reply

__all__ = ["AlreadyRunning", "ResidentServer", "RunCommand"]

log = logging.getLogger("langchain_enhanced_memory")

#: ``(argv, cwd, env) -> (status, stdout, stderr)``: how a command line is run.
RunCommand = Callable[[list[str], str, dict[str, str]], tuple[int, str, str]]

_MAX_REQUEST = 1 << 20
_LOCK_WAIT_S = 5.0  # an engine being replaced lets go of the lock within this


class AlreadyRunning(EnhancedMemoryError):
    """Another resident engine holds this workspace's lock."""


class _Stop(Exception):
    pass


class ResidentServer:
    """Serve one workspace's one-shot commands from this process.

    Args:
        workspace: The workspace folder.
        run: Runs one command line (the command layer's ``execute``, captured).
        idle_timeout_s: Exit after this long without a request (None: never).
        busy: Whether work is still going on (an embedding run): no idle exit then.
        status: Extra fields for the ``status`` reply.
        gone: Why the engines cannot go on (an index folder deleted), or None.
    """

    def __init__(
        self,
        workspace: Path,
        run: RunCommand,
        *,
        idle_timeout_s: float | None = None,
        busy: Callable[[], bool] = lambda: False,
        status: Callable[[], dict[str, Any]] = dict,
        gone: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.files: ResidentFiles = resident_files(workspace, create=True)
        self.run = run
        self.idle_timeout_s = idle_timeout_s
        self.busy = busy
        self.status = status
        self.gone = gone
        self.socket_id: tuple[int, int] | None = None  # the socket file this engine bound
        self.started = time.time()
        self.requests = 0

    def serve(self, ready: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Listen and answer until stopped, idle or refused by a newer caller.

        Args:
            ready: Called with the engine's description once it listens.

        Raises:
            AlreadyRunning: Another engine serves this workspace.
        """
        with self._lock(), self._listening() as sock:
            info = self._describe()
            _write_json(self.files.info, info)
            if ready is not None:
                ready(info)
            previous = signal.signal(signal.SIGTERM, _raise_stop)
            try:
                self._loop(sock)
            except _Stop:
                pass
            finally:
                signal.signal(signal.SIGTERM, previous)
                with contextlib.suppress(OSError):
                    self.files.info.unlink()

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        import fcntl

        path = self.files.lock
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() > deadline:
                    raise AlreadyRunning(
                        f"a resident engine already serves {self.files.workspace}",
                        "enhanced-memory daemon status",
                    ) from None
                time.sleep(0.05)
                continue
            st = os.fstat(fd)
            if _file_id(path) == (st.st_dev, st.st_ino):
                break
            os.close(fd)  # its holder removed it on leaving: lock the file there now
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                path.unlink()  # still held: no one else has it; leaves no file per workspace
            os.close(fd)  # releases the lock

    @contextlib.contextmanager
    def _listening(self) -> Iterator[socket.socket]:
        path = self.files.socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # we hold the lock: a socket left here is a dead engine's
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is 0600 from its first moment
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        try:
            os.chmod(path, 0o600)
            self.socket_id = _file_id(path)
            sock.listen(16)
            yield sock
        finally:
            sock.close()
            if _file_id(path) == self.socket_id:  # not a file someone put there since
                with contextlib.suppress(OSError):
                    path.unlink()

    def _describe(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "protocol": PROTOCOL,
            **identity(),
            "workspace": str(self.files.workspace),
            "socket": str(self.files.socket),
            "started": self.started,
            "idle_timeout_s": self.idle_timeout_s,
        }

    def _loop(self, sock: socket.socket) -> None:
        sock.settimeout(1.0)
        last = time.monotonic()
        while True:
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                reason = self._stale()
                if reason:
                    log.warning("resident engine %d stops: %s", os.getpid(), reason)
                    return
                idle = time.monotonic() - last
                if self.idle_timeout_s is not None and idle > self.idle_timeout_s:
                    if not self.busy():
                        return
                continue
            with conn:
                stop = self._answer(conn)
            last = time.monotonic()
            if stop:
                return

    def _stale(self) -> str | None:
        """Why this engine must not go on serving, or None."""
        if not self.files.workspace.is_dir():  # deleted or moved: nothing to serve
            return f"workspace {self.files.workspace} is gone"
        if _file_id(self.files.socket) != self.socket_id:  # its folder deleted or replaced
            return f"its socket {self.files.socket} was deleted or replaced"
        reason = self.gone()
        return f"index folder {reason} was deleted or replaced" if reason else None

    def _answer(self, conn: socket.socket) -> bool:
        """Answer one connection; True when the engine should exit."""
        if not _same_user(conn):
            return False
        reason = self._stale()
        if reason:  # the caller answers in-process, and the next one starts a fresh engine
            log.warning("resident engine %d stops: %s", os.getpid(), reason)
            _reply(conn, {"refused": reason})
            return True
        conn.settimeout(30.0)
        try:
            message = _read_line(conn)
        except (OSError, ValueError) as exc:
            _reply(conn, {"refused": f"bad request: {exc}"})
            return False
        mine = identity()
        if {k: message.get(k) for k in mine} != mine:
            # Another version or install asks: step aside so it can start its own.
            _reply(conn, {"refused": "another version of the package", **mine})
            return True
        op = message.get("op")
        if op == "stop":
            _reply(conn, {"stopped": True, "pid": os.getpid()})
            return True
        if op == "status":
            _reply(conn, {**self._describe(), "requests": self.requests, **self.status()})
            return False
        if op != "run" or not isinstance(message.get("argv"), list):
            _reply(conn, {"refused": f"unknown op {op!r}"})
            return False
        ws = message.get("workspace")
        if not isinstance(ws, str) or Path(ws).resolve() != self.files.workspace:
            _reply(conn, {"refused": f"this engine serves {self.files.workspace}"})
            return False
        self.requests += 1
        raw_env = message.get("env")
        env = {str(k): str(v) for k, v in raw_env.items()} if isinstance(raw_env, dict) else {}
        rc, out, err = self.run(
            [str(a) for a in message["argv"]], str(message.get("cwd") or "/"), env
        )
        with contextlib.suppress(OSError):  # the caller left: nothing to tell
            conn.sendall(run_reply(rc, out, err))
        return False


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop


def _same_user(conn: socket.socket) -> bool:
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is None:  # not Linux: the socket's 0600 mode is the guard
        return True
    creds = conn.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _read_line(conn: socket.socket) -> dict[str, Any]:
    buf = b""
    while b"\n" not in buf:
        data = conn.recv(1 << 16)
        if not data:
            break
        buf += data
        if len(buf) > _MAX_REQUEST:
            raise ValueError("request too large")
    message = json.loads(buf.split(b"\n", 1)[0].decode("utf-8"))
    if not isinstance(message, dict):
        raise ValueError("not a JSON object")
    return message


def _reply(conn: socket.socket, payload: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the caller left: nothing to tell
        conn.sendall(json.dumps(payload).encode("utf-8"))


def _write_json(path: Path, value: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(value, fh)
    os.replace(tmp, path)
