"""Where a workspace and its resident engine live, with the standard library only.

A one-shot ``enhanced-memory search`` asks the resident engine before it loads
anything heavy, so finding the workspace and the engine's socket must cost
next to nothing: no numpy, no pydantic, no SQLite here.

The resident engine's files (``resident.sock``, ``resident.json``,
``resident.lock``) sit in the workspace's index folder ``.enhanced-memory/``.
Where that folder cannot hold them (a read-only workspace, or a path too long
for a Unix socket address, about 100 bytes), they go to a private folder of
this user: ``$XDG_RUNTIME_DIR/enhanced-memory/`` or
``/tmp/enhanced-memory-<uid>/`` (mode 0700), under a hash of the workspace.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..core.errors import EnhancedMemoryError

__all__ = ["INDEX_DIRNAME", "ResidentFiles", "private_dir", "resident_files", "resolve_workspace"]

INDEX_DIRNAME = ".enhanced-memory"
# sun_path holds 108 bytes on Linux, 104 on macOS; keep a margin.
_MAX_SOCKET_PATH = 100


def resolve_workspace(arg: str | Path | None = None) -> Path:
    """The workspace: ``arg``, then ``$OPENCLAW_WORKSPACE_DIR``, then ``$MEMORY_DIR``, then ``.``.

    Raises:
        EnhancedMemoryError: The folder does not exist.
    """
    if arg:
        ws = Path(arg)
    elif os.environ.get("OPENCLAW_WORKSPACE_DIR"):
        ws = Path(os.environ["OPENCLAW_WORKSPACE_DIR"])
    elif os.environ.get("MEMORY_DIR"):
        # The original's MEMORY_DIR names the memory/ folder itself.
        mem = Path(os.environ["MEMORY_DIR"]).expanduser()
        ws = mem.parent if mem.name == "memory" else mem
    else:
        ws = Path.cwd()
    ws = ws.expanduser()
    if "\x00" in str(ws):
        raise EnhancedMemoryError("workspace path contains a NUL byte")
    if not ws.is_dir():
        raise EnhancedMemoryError(
            f"workspace not found: {ws}", "pass --workspace DIR or set OPENCLAW_WORKSPACE_DIR"
        )
    return ws


def writable(path: Path) -> bool:
    """Writable for us *and* not marked read-only (root passes ``os.access`` everywhere)."""
    try:
        return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)
    except OSError:
        return False


def private_dir() -> Path:
    """This user's private folder for sockets (created 0700; refused when not ours).

    Raises:
        EnhancedMemoryError: The folder exists but another user owns it or others can enter it.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = (
        Path(runtime) / "enhanced-memory"
        if runtime
        else Path(f"/tmp/enhanced-memory-{os.getuid()}")
    )
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = base.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise EnhancedMemoryError(
            f"{base} is not a private folder of this user", "remove it, or set XDG_RUNTIME_DIR"
        )
    return base


class ResidentFiles:
    """The socket, the description and the lock of one workspace's resident engine.

    Attributes:
        workspace: The workspace, resolved.
        socket: The Unix socket clients connect to.
        info: JSON describing the running engine (pid, version, workspace).
        lock: Held by the running engine for its whole life: one per workspace.
    """

    def __init__(self, workspace: Path, folder: Path, stem: str) -> None:
        self.workspace = workspace
        self.socket = folder / f"{stem}.sock"
        self.info = folder / f"{stem}.json"
        self.lock = folder / f"{stem}.lock"


def resident_files(workspace: Path, *, create: bool = False) -> ResidentFiles:
    """Where the resident engine of ``workspace`` keeps its socket (see the module doc).

    Args:
        workspace: The workspace folder.
        create: Create the folder (the engine does; a client only looks).
    """
    ws = workspace.resolve()
    local = ws / INDEX_DIRNAME
    if len(str(local / "resident.sock").encode()) <= _MAX_SOCKET_PATH and writable(
        local if local.exists() else ws
    ):
        if create:
            local.mkdir(exist_ok=True)
        return ResidentFiles(ws, local, "resident")
    import hashlib  # only here: loading OpenSSL costs a one-shot call milliseconds

    key = hashlib.sha256(str(ws).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return ResidentFiles(ws, private_dir(), f"resident-{key}")
