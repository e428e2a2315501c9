"""The one-shot side of the resident engine: hand a command line over, relay the answer.

``enhanced-memory search`` (and ``eval``, and the skill scripts, which run
``search``) calls :func:`call_resident` before it imports anything heavy: when
the workspace's resident engine runs, the command runs there, warm (snapshot,
model and watcher loaded), and this process only relays its output. When none
runs, or it cannot be trusted, the caller answers in-process.

Trust: the socket must be a socket owned by this user (mode 0600, in a folder
of this user); the engine checks the caller's uid too (``SO_PEERCRED``). An
engine of another package version or location refuses and exits, a dead one
refuses the connection, and either way the caller answers itself, so a stale
engine is replaced, never trusted. Standard library only.

Opting out: ``--no-daemon`` or ``ENHANCED_MEMORY_DAEMON=0`` (also stops the
automatic start after a query that loaded the local model).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import time
from pathlib import Path

from ..core.errors import EnhancedMemoryError
from ..store.locations import ResidentFiles, resident_files, resolve_workspace

TYPE_CHECKING = False  # not typing's: a one-shot call should not import typing
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "AUTO_IDLE_S",
    "DAEMON_ENV",
    "PROTOCOL",
    "ROUTED",
    "ask",
    "call_resident",
    "forwarded_env",
    "identity",
    "is_forwarded",
    "opted_out",
    "request",
    "start_and_wait",
    "start_resident",
    "wait_until",
    "workspace_of",
]

#: Commands the resident engine runs for a one-shot process.
ROUTED = frozenset({"search", "eval"})
DAEMON_ENV = "ENHANCED_MEMORY_DAEMON"
TIMEOUT_ENV = "ENHANCED_MEMORY_DAEMON_TIMEOUT"
PROTOCOL = 1
#: Idle timeout (seconds) of an engine started automatically; explicit starts have none.
AUTO_IDLE_S = 900.0
_OFF = {"0", "false", "no", "off"}
# Environment the engine reads, besides ENHANCED_MEMORY_*: sent with each request.
_ENV_NAMES = ("OPENCLAW_WORKSPACE_DIR", "MEMORY_DIR", "EMBED_MODEL", "OLLAMA_URL", "XDG_CACHE_HOME")
_MAX_REPLY = 64 * 1024 * 1024
_START_WAIT_S = 60.0


def identity() -> dict[str, str]:
    """This package's version and location: an engine must match both."""
    from ..core.version import __version__

    return {"version": __version__, "location": str(Path(__file__).resolve().parent.parent)}


def opted_out(argv: list[str] | None = None) -> bool:
    """Whether ``--no-daemon`` or ``ENHANCED_MEMORY_DAEMON=0`` says not to use one."""
    if argv is not None and "--no-daemon" in argv:
        return True
    return os.environ.get(DAEMON_ENV, "").strip().lower() in _OFF


def forwarded_env() -> dict[str, str]:
    """The environment a command reads, as the resident engine must see it."""
    return {k: v for k, v in os.environ.items() if is_forwarded(k)}


def is_forwarded(name: str) -> bool:
    """Whether the resident engine takes ``name`` from the caller's environment."""
    return name.startswith("ENHANCED_MEMORY_") or name in _ENV_NAMES


def workspace_of(argv: list[str]) -> Path | None:
    """The workspace a command line names (as the command would resolve it), or None."""
    arg: str | None = None
    for n, a in enumerate(argv):
        if a == "--workspace" and n + 1 < len(argv):
            arg = argv[n + 1]
        elif a.startswith("--workspace="):
            arg = a.split("=", 1)[1]
    try:
        return resolve_workspace(arg)
    except EnhancedMemoryError:
        return None


def _trusted(path: Path) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def request(files: ResidentFiles, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Send one request to a resident engine and return its reply.

    Raises:
        OSError: No trusted engine answers (none runs, a dead one, a foreign socket).
        ValueError: The reply is not a JSON object.
    """
    if not _trusted(files.socket):
        raise ConnectionRefusedError(f"no trusted resident engine at {files.socket}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(str(files.socket))
        sock.sendall(json.dumps({**message, **identity()}).encode("utf-8") + b"\n")
        chunks, size = [], 0
        while True:
            data = sock.recv(1 << 16)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if size > _MAX_REPLY:
                raise ValueError("reply too large")
    reply = json.loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(reply, dict):
        raise ValueError("reply is not a JSON object")
    return reply


def call_resident(argv: list[str]) -> tuple[int, str, str] | None:
    """Run ``argv`` in the workspace's resident engine: ``(status, stdout, stderr)``.

    Returns:
        None when the command is not one it runs, none runs, it refuses
        (another version, another workspace) or does not answer in time; the
        caller then runs the command itself.
    """
    if not argv or argv[0] not in ROUTED or opted_out(argv) or "-h" in argv or "--help" in argv:
        return None
    ws = workspace_of(argv)
    if ws is None:
        return None  # the command itself says what is wrong
    try:
        files = resident_files(ws)
        timeout = float(os.environ.get(TIMEOUT_ENV) or 600)
        reply = request(
            files,
            {
                "op": "run",
                "argv": argv,
                "cwd": os.getcwd(),
                "env": forwarded_env(),
                "workspace": str(files.workspace),  # resolved: the engine's folder is not ours
            },
            timeout,
        )
    except (OSError, ValueError, EnhancedMemoryError):
        return None
    if reply.get("refused") or not isinstance(reply.get("rc"), int):
        return None
    return reply["rc"], str(reply.get("stdout", "")), str(reply.get("stderr", ""))


def start_resident(workspace: Path, idle_timeout_s: float | None = None) -> subprocess.Popen[bytes]:
    """Start the resident engine of ``workspace`` in the background (detached).

    It exits at once when one already runs (one per workspace); its messages go
    to ``resident.log`` next to its socket.
    """
    import subprocess  # not on the path of a call answered by a running engine

    files = resident_files(workspace, create=True)
    cmd = [sys.executable, "-m", "langchain_enhanced_memory.cli", "daemon", "run"]
    cmd += ["--workspace", str(files.workspace)]
    if idle_timeout_s is not None:
        cmd += ["--idle-timeout", str(idle_timeout_s)]
    log_path = files.socket.with_suffix(".log")
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,  # survives the caller's exit and its terminal's signals
            close_fds=True,
        )
    finally:
        os.close(fd)


def ask(workspace: Path, op: str) -> dict[str, Any] | None:
    """The reply of the resident engine of ``workspace`` to ``op``; None when none answers."""
    try:
        reply = request(resident_files(workspace), {"op": op}, timeout_s=30.0)
    except (OSError, ValueError, EnhancedMemoryError):
        return None
    return None if reply.get("refused") else reply


def wait_until(done: Callable[[], bool], message: str) -> None:
    """Poll ``done`` for up to a minute (raises ``EnhancedMemoryError`` with ``message``)."""
    deadline = time.monotonic() + _START_WAIT_S
    while not done():
        if time.monotonic() > deadline:
            raise EnhancedMemoryError(f"resident engine: {message}")
        time.sleep(0.05)


def start_and_wait(workspace: Path, idle_timeout_s: float | None = None) -> dict[str, Any]:
    """Start the resident engine of ``workspace`` unless one runs; its status once it answers.

    Raises:
        EnhancedMemoryError: It exited or did not answer within a minute.
    """
    status = ask(workspace, "status")
    if status is not None:
        return status
    child = start_resident(workspace, idle_timeout_s)
    found: dict[str, Any] = {}

    def up() -> bool:
        if child.poll() not in (None, 0):
            log = resident_files(workspace).socket.with_suffix(".log")
            raise EnhancedMemoryError("the resident engine did not start", f"see {log}")
        found.update(ask(workspace, "status") or {})
        return bool(found)

    wait_until(up, "it did not answer")
    return found
