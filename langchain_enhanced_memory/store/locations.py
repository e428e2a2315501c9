"""Where a workspace and its resident engine live, with the standard library only.

A one-shot ``enhanced-memory search`` asks the resident engine before it loads
anything heavy, so finding the workspace and the engine's socket must cost
next to nothing: no numpy, no pydantic, no SQLite here.

The resident engine's socket and description (``resident.sock``,
``resident.json``) sit in the workspace's index folder ``.enhanced-memory/``.
Where that folder cannot hold them (a read-only workspace, or a path too long
for a Unix socket address, about 100 bytes), they go to a private folder of
this user: ``$XDG_RUNTIME_DIR/enhanced-memory/`` or
``/tmp/enhanced-memory-<uid>/`` (mode 0700), under a hash of the workspace.
Its lock is always there (``resident-<hash>.lock``): deleting the index
folder must not let a second engine start beside a live one.

Everything the package writes beside the notes is private to its owner, as the
notes may be: folders are created 0700 (:func:`make_private`) and files 0600
(:func:`open_private`), whatever the umask; :func:`tighten` takes group and
other permissions off an index folder an earlier version left open. Modes are
given at creation, never by ``os.umask`` (process-wide: other threads).
"""

from __future__ import annotations

import os
import stat

from ..core.errors import EnhancedMemoryError
from . import process

TYPE_CHECKING = False  # not typing's: this runs before a one-shot call imports anything
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "INDEX_DIRNAME",
    "ResidentFiles",
    "host_id",
    "locked",
    "make_private",
    "open_private",
    "private_dir",
    "resident_files",
    "resident_location",
    "resident_pid",
    "resolve_workspace",
    "tighten",
    "workspace_dir",
]

INDEX_DIRNAME = ".enhanced-memory"
# sun_path holds 108 bytes on Linux, 104 on macOS; keep a margin.
_MAX_SOCKET_PATH = 100


def workspace_dir(arg: str | None = None) -> str:
    """The workspace folder ``arg`` names (``~`` expanded), else the current folder.

    The entry point gives the environment's folder when no flag or argument names
    one (:func:`..config.workspace`). As a string (pathlib costs a one-shot call
    milliseconds of imports); :func:`resolve_workspace` is the same as a ``Path``.

    Raises:
        EnhancedMemoryError: The folder does not exist.
    """
    ws = os.path.expanduser(arg) if arg else os.getcwd()
    if "\x00" in ws:
        raise EnhancedMemoryError("workspace path contains a NUL byte")
    if not os.path.isdir(ws):
        raise EnhancedMemoryError(
            f"workspace not found: {ws}", "pass --workspace DIR or set OPENCLAW_WORKSPACE_DIR"
        )
    return ws


def resolve_workspace(arg: str | Path | None = None) -> Path:
    """:func:`workspace_dir` as a ``Path``.

    Raises:
        EnhancedMemoryError: The folder does not exist.
    """
    from pathlib import Path

    return Path(workspace_dir(os.fspath(arg) if arg else None))


def writable(path: str | Path) -> bool:
    """Writable for us *and* not marked read-only (root passes ``os.access`` everywhere)."""
    try:
        return os.access(path, os.W_OK) and bool(os.stat(path).st_mode & 0o222)
    except OSError:
        return False


def make_private(folder: str | os.PathLike[str]) -> None:
    """Create ``folder`` and each missing folder above it with mode 0700 (an existing one stays)."""
    path = os.fspath(folder)
    parent = os.path.dirname(path)
    if parent and parent != path and not os.path.isdir(parent):
        make_private(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open(path, flags)`` creating the file with mode 0600 (only its owner reads it)."""
    return os.open(path, flags | os.O_CREAT, 0o600)


def tighten(folder: str | os.PathLike[str]) -> None:
    """Take group and other permissions off ``folder`` and what it holds, when we own it.

    For an index folder made before the index was private: its folders become
    0700 and its files keep only their owner's bits (0600). Symlinks are left
    alone; a folder that is already private is not walked.
    """
    path = os.fspath(folder)
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or not st.st_mode & 0o077:
            return
        os.chmod(path, 0o700)
        with os.scandir(path) as it:
            entries = list(it)
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                tighten(entry.path)
            elif not entry.is_symlink():
                st = entry.stat(follow_symlinks=False)
                if st.st_uid == os.getuid() and st.st_mode & 0o077:
                    os.chmod(entry.path, stat.S_IMODE(st.st_mode) & 0o700)
        except OSError:
            continue


def host_id() -> str:
    """This host's random id (made once, kept in the state folder's ``enhanced-memory/host-id``).

    What tells the publishers of scopes apart: unlike a hostname and a path, two
    machines (containers with a fixed hostname, one folder bind-mounted in both)
    cannot share it by accident, only by sharing or copying that file.

    Raises:
        EnhancedMemoryError: The state folder cannot be read or written.
    """
    folder = os.path.join(process.current().state_home, "enhanced-memory")
    path = os.path.join(folder, "host-id")
    try:
        try:
            with open(path, encoding="ascii") as f:
                return f.read().strip()
        except FileNotFoundError:
            pass
        make_private(folder)
        temp = f"{path}.{os.getpid()}.tmp"
        with os.fdopen(open_private(temp, os.O_WRONLY | os.O_TRUNC), "w") as f:
            f.write(f"{os.urandom(16).hex()}\n")
        try:
            os.link(temp, path)  # whole, and the first of two processes making it wins
        except FileExistsError:
            pass
        finally:
            os.unlink(temp)
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise EnhancedMemoryError(
            f"cannot keep this host's id in {folder}: {getattr(exc, 'strerror', None) or exc}",
            "set XDG_STATE_HOME to a folder this user can write",
        ) from None


def private_dir() -> str:
    """This user's private folder for sockets (created 0700; refused when not ours).

    Raises:
        EnhancedMemoryError: The folder exists but another user owns it or others can enter it.
    """
    runtime = process.current().runtime_dir
    base = (
        os.path.join(runtime, "enhanced-memory")
        if runtime
        else f"/tmp/enhanced-memory-{os.getuid()}"
    )
    os.makedirs(base, mode=0o700, exist_ok=True)
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise EnhancedMemoryError(
            f"{base} is not a private folder of this user", "remove it, or set XDG_RUNTIME_DIR"
        )
    return base


def resident_location(workspace: str) -> tuple[str, str, str]:
    """``(workspace resolved, folder, stem)`` of a workspace's resident engine files.

    The index folder when it can hold a socket, else :func:`private_dir` under
    a hash of the workspace (see the module doc).
    """
    ws = os.path.realpath(workspace)
    local = os.path.join(ws, INDEX_DIRNAME)
    sock = os.path.join(local, "resident.sock")
    if len(sock.encode()) <= _MAX_SOCKET_PATH and writable(local if os.path.exists(local) else ws):
        return ws, local, "resident"
    return ws, private_dir(), _private_stem(ws)


def _private_stem(ws: str) -> str:
    """``resident-<hash of the resolved workspace>``: its files' name in :func:`private_dir`."""
    import hashlib  # only here: loading OpenSSL costs a one-shot call milliseconds

    return "resident-" + hashlib.sha256(ws.encode("utf-8", "surrogateescape")).hexdigest()[:16]


class ResidentFiles:
    """The socket, the description and the lock of one workspace's resident engine.

    Attributes:
        workspace: The workspace, resolved.
        socket: The Unix socket clients connect to.
        info: JSON describing the running engine (pid, version, workspace).
        lock: Held by the running engine for its whole life: one per workspace.
    """

    def __init__(self, workspace: Path, folder: Path, stem: str, lock: Path) -> None:
        self.workspace = workspace
        self.socket = folder / f"{stem}.sock"
        self.info = folder / f"{stem}.json"
        self.lock = lock


def resident_files(workspace: Path, *, create: bool = False) -> ResidentFiles:
    """Where the resident engine of ``workspace`` keeps its socket (see the module doc).

    Args:
        workspace: The workspace folder.
        create: Create the folder (the engine does; a client only looks).
    """
    from pathlib import Path

    ws, folder, stem = resident_location(os.fspath(workspace))
    if create:
        make_private(folder)
    try:
        lock = os.path.join(private_dir(), f"{_private_stem(ws)}.lock")
    except (OSError, EnhancedMemoryError):  # no private folder: the index folder's own
        lock = os.path.join(folder, f"{stem}.lock")
    return ResidentFiles(Path(ws), Path(folder), stem, Path(lock))


def locked(path: str | os.PathLike[str]) -> bool:
    """Whether an engine holds the lock at ``path`` (a shared try: it waits for no one)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases a lock taken
    return False


def resident_pid(workspace: Path) -> int | None:
    """The pid of the resident engine that serves ``workspace``, None when none runs.

    Only looks: the engine holds its lock for life, and its description names its pid.
    """
    import json

    try:
        files = resident_files(workspace)
        if not locked(files.lock):
            return None
        with open(files.info, encoding="utf-8") as fh:
            pid = json.load(fh).get("pid")
    except (OSError, ValueError, AttributeError, EnhancedMemoryError):
        return None  # starting (no description yet), or one that is not ours to read
    return pid if isinstance(pid, int) else None
