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
automatic start after a query that loaded the local model; the search that
starts one says so on stderr, with how to stop it and how to opt out).
"""

from __future__ import annotations

import _socket  # socket's C core: the socket module's enums cost a one-shot call milliseconds
import os
import stat
import sys
import time

from ..config import FORWARDED, Environment, load
from ..core.errors import EnhancedMemoryError
from ..store.locations import (
    ResidentFiles,
    locked,
    resident_files,
    resident_location,
    workspace_dir,
)

try:  # json's own C escaper: the json package (and re, which it loads) are not imported
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - not CPython
    from json.encoder import py_encode_basestring_ascii as _quote

TYPE_CHECKING = False  # not typing's: a one-shot call should not import typing
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

__all__ = [
    "AUTO_IDLE_S",
    "PROTOCOL",
    "ROUTED",
    "ask",
    "call_resident",
    "identity",
    "is_forwarded",
    "opted_out",
    "parse_run_reply",
    "request",
    "run_reply",
    "start_and_wait",
    "start_resident",
    "wait_until",
    "workspace_of",
]

#: Commands the resident engine runs for a one-shot process.
ROUTED = frozenset({"search", "eval"})
PROTOCOL = 1
#: Idle timeout (seconds) of an engine started automatically; explicit starts have none.
AUTO_IDLE_S = 900.0
_MAX_REPLY = 64 * 1024 * 1024
_START_WAIT_S = 60.0


def identity() -> dict[str, str]:
    """This package's version and location: an engine must match both."""
    from ..core.version import __version__

    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    return {"version": __version__, "location": package}


def opted_out(env: Environment, argv: list[str] | None = None) -> bool:
    """Whether ``--no-daemon`` or ``ENHANCED_MEMORY_DAEMON=0`` says not to use one."""
    return (argv is not None and "--no-daemon" in argv) or not env.daemon


def is_forwarded(name: str) -> bool:
    """Whether the resident engine takes ``name`` from the caller's environment."""
    return name in FORWARDED


def workspace_of(argv: list[str], env: Environment) -> str | None:
    """The workspace a command line names (as the command would find it), or None."""
    arg: str | None = None
    for n, a in enumerate(argv):
        if a == "--workspace" and n + 1 < len(argv):
            arg = argv[n + 1]
        elif a.startswith("--workspace="):
            arg = a.split("=", 1)[1]
    try:
        return workspace_dir(arg or env.workspace)
    except EnhancedMemoryError:
        return None


def _trusted(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _exchange(path: str, payload: bytes, timeout_s: float) -> bytes:
    """Send ``payload`` to the trusted engine socket at ``path``; its whole reply.

    Raises:
        OSError: No trusted engine answers (none runs, a dead one, a foreign socket).
        ValueError: The reply is too large.
    """
    if not _trusted(path):
        raise ConnectionRefusedError(f"no trusted resident engine at {path}")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(path)
        sock.sendall(payload)
        chunks, size = [], 0
        while True:
            data = sock.recv(1 << 16)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if size > _MAX_REPLY:
                raise ValueError("reply too large")
    finally:
        sock.close()
    return b"".join(chunks)


def _encode(value: Any) -> str:
    """Compact JSON of strings, lists and dicts of them (what a run request holds)."""
    if isinstance(value, str):
        return str(_quote(value))
    if isinstance(value, list):
        return "[" + ",".join(map(_encode, value)) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_quote(k)}:{_encode(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot encode {type(value).__name__}")


def parse_run_reply(data: bytes) -> tuple[int, str, str] | None:
    """A run's framed reply (:func:`run_reply`); None for anything else (a refusal)."""
    head, sep, body = data.partition(b"\n")
    parts = head[1:].split() if head[:1] == b"R" and sep else []
    if len(parts) != 3 or not all(p.lstrip(b"-").isdigit() for p in parts):
        return None
    rc, n_out, n_err = (int(p) for p in parts)
    if len(body) != n_out + n_err:
        return None
    out, err = body[:n_out], body[n_out:]
    return rc, out.decode("utf-8", "surrogatepass"), err.decode("utf-8", "surrogatepass")


def run_reply(rc: int, out: str, err: str) -> bytes:
    """The reply to a run: a header line, then stdout and stderr as they are (no JSON)."""
    o, e = out.encode("utf-8", "surrogatepass"), err.encode("utf-8", "surrogatepass")
    return b"R%d %d %d\n" % (rc, len(o), len(e)) + o + e


def request(files: ResidentFiles, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Send one request (``status``, ``stop``) to a resident engine and return its reply.

    Raises:
        OSError: No trusted engine answers (none runs, a dead one, a foreign socket).
        ValueError: The reply is not a JSON object.
    """
    import json

    payload = json.dumps({**message, **identity()}).encode("utf-8") + b"\n"
    reply = json.loads(_exchange(str(files.socket), payload, timeout_s).decode("utf-8"))
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
    if not argv or argv[0] not in ROUTED or "-h" in argv or "--help" in argv:
        return None
    env = load()
    if opted_out(env, argv) or any(a.startswith(("--scope", "--database")) for a in argv):
        return None  # scopes are searched here: an engine serves its own workspace only
    ws = workspace_of(argv, env)
    if ws is None:
        return None  # the command itself says what is wrong
    try:
        resolved, folder, stem = resident_location(ws)
        message = {
            "op": "run",
            "argv": argv,
            "cwd": os.getcwd(),
            "env": env.forwarded,
            "workspace": resolved,  # the engine's folder is not ours
            **identity(),
        }
        path = os.path.join(folder, f"{stem}.sock")
        payload = (_encode(message) + "\n").encode()
        return parse_run_reply(_exchange(path, payload, env.daemon_timeout_s))
    except (OSError, ValueError, TypeError, EnhancedMemoryError):
        return None


def start_resident(
    workspace: Path, idle_timeout_s: float | None = None
) -> subprocess.Popen[bytes] | None:
    """Start the resident engine of ``workspace`` in the background (detached).

    Its messages go to ``resident.log`` next to its socket.

    Returns:
        The process; None when one already runs or is starting (it holds the
        lock): one per workspace.
    """
    import subprocess  # not on the path of a call answered by a running engine

    files = resident_files(workspace, create=True)
    if locked(files.lock):
        return None
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
    found: dict[str, Any] = {}
    child: subprocess.Popen[bytes] | None = None

    def up() -> bool:
        nonlocal child
        if child is None:  # while another holds the lock (starting, or leaving): not yet
            child = start_resident(workspace, idle_timeout_s)
        elif child.poll() not in (None, 0):
            log = resident_files(workspace).socket.with_suffix(".log")
            raise EnhancedMemoryError("the resident engine did not start", f"see {log}")
        found.update(ask(workspace, "status") or {})
        return bool(found)

    wait_until(up, "it did not answer")
    return found
