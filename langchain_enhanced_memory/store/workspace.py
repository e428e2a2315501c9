"""What a workspace is: its places, the kind of each file, whether a folder is one.

A workspace's notes lie in its places (:class:`Places`): the workspace, the
folder a symlinked ``memory/`` leads to (a synced folder, an Obsidian vault)
and the files the links at its top (``MEMORY.md`` -> a dotfiles repository)
lead to. A ``memory`` link to a folder that holds the workspace (``/``) or to
the home folder is not followed. :mod:`.discovery` walks them; :mod:`.reading`
reads a file.

Session transcripts (``*.jsonl``) lie in the folders
``settings.discovery.session_dirs`` names (``sessions/`` in the workspace by default; an
absolute folder, or one ``$ENHANCED_MEMORY_SESSION_DIRS`` adds, may lie
outside it). A transcript's path is workspace-relative
(``sessions/<id>.jsonl``); one in a folder outside the workspace is named under
``sessions/<folder>/`` (``sessions/main/<id>.jsonl`` for OpenClaw's
``~/.openclaw/agents/main/sessions``), a name only discovery resolves. An
OpenClaw workspace (``STATE/workspace`` for the agent ``main``,
``STATE/workspace-<agent>`` for another) brings its agent's transcript folder
``STATE/agents/<agent>/sessions`` in by itself (``openclaw_sessions``).
Each warning is logged once per process (a search scans twice).
"""

from __future__ import annotations

import datetime
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..core.errors import NoMemoryError
from ..core.settings import CORE_FILES, MemorySettings
from ..core.text import escape_controls
from ..core.transcripts import TRANSCRIPT_SUFFIX

__all__ = [
    "MEMORY_LINK",
    "FileKind",
    "MemoryFile",
    "Places",
    "classify",
    "holds_memory",
    "os_reason",
    "places",
    "require_memory",
    "session_folders",
    "warn_once",
    "workspace_root",
]

logger = logging.getLogger("langchain_enhanced_memory")


FileKind = Literal["core", "daily", "topic", "session"]

# A daily note's name starts with an ISO date not followed by another digit.
_DATE_PREFIX = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?!\d)")
_CORE_SET = frozenset(CORE_FILES)
#: The one folder link discovery follows: the workspace's own ``memory/``.
MEMORY_LINK = "memory"

_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(message: str) -> None:
    """Log ``message`` as a warning the first time this process has it (scans repeat)."""
    with _warned_lock:
        if message in _warned:
            return
        _warned.add(message)
    logger.warning("%s", message)


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One discovered memory file.

    Attributes:
        path: Workspace-relative path with ``/`` separators, e.g. ``memory/2026-02-08.md``.
        abs_path: Absolute path (under the resolved workspace) to open the file with.
        kind: ``core`` (a core file at the root), ``daily`` (name starts with a date),
            ``session`` (a transcript, ``.jsonl``) or ``topic`` (anything else).
        date: The date of a daily note, else ``None``.
    """

    path: str
    abs_path: Path
    kind: FileKind
    date: datetime.date | None


def classify(rel_path: str) -> tuple[FileKind, datetime.date | None]:
    r"""Tell the kind of a memory file (and its date) from its relative path.

    Args:
        rel_path: Workspace-relative path; ``/`` or ``\`` separators.

    Returns:
        ``("core", None)`` for a core file at the root, ``("daily", date)`` for a file
        whose name starts with a valid ``YYYY-MM-DD`` date (at any depth, slugs
        allowed), else ``("topic", None)``.
    """
    norm = rel_path.replace("\\", "/").lstrip("/")
    if norm.startswith("./"):
        norm = norm[2:]
    if norm in _CORE_SET:
        return "core", None
    if norm.endswith(TRANSCRIPT_SUFFIX):
        return "session", None  # dated per chunk, by its messages' time
    name = norm.rsplit("/", 1)[-1]
    m = _DATE_PREFIX.match(name)
    if m:
        try:
            day = datetime.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:  # 2026-02-30 and friends are not dates
            return "topic", None
        return "daily", day
    return "topic", None


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True, slots=True)
class Places:
    """Where a workspace's notes may lie (see the module doc); all paths resolved.

    Attributes:
        root: The workspace.
        memory: The folder a symlinked ``memory/`` leads to, None when it is not a followed link.
        files: The files the links at the top of the workspace lead to.
        sessions: The transcript folders (:func:`session_folders`): as named, and resolved.
    """

    root: Path
    memory: Path | None
    files: frozenset[Path]
    sessions: tuple[tuple[str, Path], ...] = ()

    def holds(self, path: Path) -> bool:
        """Whether ``path``, resolved, lies in these places."""
        real = path.resolve()
        if _is_within(real, self.root) or real in self.files:
            return True
        if any(_is_within(real, folder) for _, folder in self.sessions):
            return True
        return self.memory is not None and _is_within(real, self.memory)

    def outside(self) -> list[Path]:
        """The places that do not lie in the workspace (a watch of it misses their events)."""
        linked = [*self.files, *(folder for _, folder in self.sessions)]
        if self.memory is not None:
            linked.append(self.memory)
        return [p for p in linked if not _is_within(p, self.root)]


def session_folders(root: Path, settings: MemorySettings) -> tuple[tuple[str, Path], ...]:
    """``(prefix, resolved folder)`` of each transcript folder that exists.

    ``prefix`` starts a transcript's path: the folder relative to the workspace
    (``sessions``), or for a folder outside it ``sessions/`` and its name (its
    parent's when it is named ``sessions``). Folders come from
    ``settings.discovery.session_dirs`` (where the entry points add
    ``$ENHANCED_MEMORY_SESSION_DIRS``) and, for an OpenClaw workspace, its agent's folder.
    """
    named = list(settings.discovery.session_dirs)
    if settings.discovery.openclaw_sessions:
        named += _openclaw_sessions(root)
    out: dict[Path, str] = {}
    for raw in named:
        given = Path(raw.strip()).expanduser()
        folder = given if given.is_absolute() else root / given
        try:
            real = folder.resolve(strict=True)
        except (OSError, RuntimeError):
            continue  # not there (yet): no transcripts
        if not real.is_dir() or real in out:
            continue
        if _is_within(folder, root):
            prefix = folder.relative_to(root).as_posix()
        else:
            name = real.parent.name if real.name == "sessions" else real.name
            prefix = base = f"sessions/{name}"
            n = 1
            while prefix in out.values():
                n += 1
                prefix = f"{base}-{n}"
        out[real] = prefix
    return tuple((prefix, real) for real, prefix in out.items())


def _openclaw_sessions(root: Path) -> list[str]:
    """The transcript folder OpenClaw keeps beside the workspace ``root`` of one of its agents."""
    name = root.name
    agent = "main" if name == "workspace" else name.removeprefix("workspace-")
    if agent == name or not agent:
        return []  # not laid out as OpenClaw lays out an agent's workspace
    return [str(root.parent / "agents" / agent / "sessions")]


def holds_memory(workspace: Path | str, settings: MemorySettings) -> bool:
    """Whether ``workspace`` is one: a folder that holds memory to search.

    It is when it holds what discovery looks for first (``settings.discovery.include``'s
    first names: ``MEMORY.md`` or another core file, a ``memory/`` folder, even
    empty) or a transcript folder (``sessions/``, one named in the settings or
    ``$ENHANCED_MEMORY_SESSION_DIRS``, an OpenClaw agent's). A pattern that
    starts with a wildcard could match anything: then every folder is one.
    ``remember`` makes a folder one: it creates ``memory/``.
    """
    root = Path(workspace)
    for pattern in settings.discovery.include:
        first = pattern.split("/", 1)[0]
        if any(c in first for c in "*?[{") or os.path.lexists(root / first):
            return True
    return bool(session_folders(root, settings))


def require_memory(workspace: Path | str, settings: MemorySettings) -> None:
    """Refuse ``workspace`` when it holds no memory (:func:`holds_memory`); writes nothing.

    What every command and tool that reads a workspace answers a wrong folder with,
    before anything (an index, a resident engine) is written there.

    Raises:
        NoMemoryError: It holds none (most often the wrong folder).
    """
    if not holds_memory(workspace, settings):
        raise NoMemoryError(
            f"no memory in {workspace} (no MEMORY.md, memory/ or sessions/):"
            " name the workspace with --workspace DIR or $OPENCLAW_WORKSPACE_DIR",
            "or start one in this folder: enhanced-memory remember TEXT",
        )


def places(
    workspace: Path | str, *, warn: bool = True, settings: MemorySettings | None = None
) -> Places:
    """The :class:`Places` of ``workspace``; ``warn``: log why a ``memory`` link is not followed.

    ``settings`` names the transcript folders (none without it).

    Raises:
        FileNotFoundError: The workspace does not exist.
        NotADirectoryError: The workspace is not a directory.
    """
    root = workspace_root(workspace)
    memory: Path | None = None
    files: set[Path] = set()
    try:
        with os.scandir(root) as it:
            links = [e for e in it if e.is_symlink()]
    except OSError:
        links = []
    for entry in links:
        try:
            target = Path(entry.path).resolve(strict=True)
            is_dir = target.is_dir()
        except (OSError, RuntimeError) as exc:  # dangling, a loop
            if warn and entry.name == MEMORY_LINK:
                warn_once(f"skipping {MEMORY_LINK}: {os_reason(exc)}")
            continue
        if not is_dir:
            if entry.name.endswith(".md"):
                files.add(target)
        elif entry.name == MEMORY_LINK:
            if _is_within(root, target) or str(target) == os.path.realpath(os.path.expanduser("~")):
                if warn:
                    warn_once(
                        f"skipping {MEMORY_LINK}: the link leads to {escape_controls(str(target))},"
                        " a folder that holds the workspace or the home folder"
                    )
            else:
                memory = target
    sessions = session_folders(root, settings) if settings is not None else ()
    return Places(root, memory, frozenset(files), sessions)


def workspace_root(workspace: Path | str) -> Path:
    """The workspace folder, resolved.

    Raises:
        FileNotFoundError: The workspace does not exist.
        NotADirectoryError: The workspace is not a directory.
    """
    root = Path(workspace).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"workspace not found: {escape_controls(str(root))}")
    if not root.is_dir():
        raise NotADirectoryError(f"workspace is not a directory: {escape_controls(str(root))}")
    return root.resolve()


def os_reason(exc: BaseException) -> str:
    """Why an OS call failed, without the path the message already names."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return escape_controls(str(exc))
