"""Find the memory files of a workspace and read them safely.

Discovery walks the workspace once with :func:`os.scandir`, keeps the ``.md``
files that match ``settings.include`` and not ``settings.exclude``, and never
leaves the workspace's places (:class:`Places`): the workspace, the folder a
symlinked ``memory/`` leads to (a synced folder, an Obsidian vault) and the
files the links at its top (``MEMORY.md`` -> a dotfiles repository) lead to.
Deeper directory symlinks are not followed (no loops; each is named once in
the log), and a deeper file symlink counts only when its target lies in those
places. A ``memory`` link to a folder that holds the workspace (``/``) or to
the home folder is not followed either. Hidden paths (any component starting with
``.``) are skipped, so the index folder ``.enhanced-memory/`` is never indexed.
Each warning is logged once per process (a search scans twice).

Session transcripts (``*.jsonl``) are listed from the folders
``settings.session_dirs`` names (``sessions/`` in the workspace by default; an
absolute folder, or one ``$ENHANCED_MEMORY_SESSION_DIRS`` adds, may lie
outside it), one level deep. A transcript's path is workspace-relative
(``sessions/<id>.jsonl``); one in a folder outside the workspace is named under
``sessions/<folder>/`` (``sessions/main/<id>.jsonl`` for OpenClaw's
``~/.openclaw/agents/main/sessions``), a name only discovery resolves. An
OpenClaw workspace (``STATE/workspace`` for the agent ``main``,
``STATE/workspace-<agent>`` for another) brings its agent's transcript folder
``STATE/agents/<agent>/sessions`` in by itself (``openclaw_sessions``).

:func:`read_lines` turns a file into the exact lines an editor shows, so that
1-based line numbers reported by search point at the right place;
:func:`read_blocks` yields the same lines a block at a time, so a long note
is never held whole.
"""

from __future__ import annotations

import datetime
import io
import itertools
import logging
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ..core.errors import NoMemoryError
from ..core.globs import Globs, glob_match
from ..core.settings import CORE_FILES, MemorySettings
from ..core.text import escape_controls
from ..core.transcripts import TRANSCRIPT_SUFFIX

__all__ = [
    "BINARY_SNIFF_BYTES",
    "BLOCK_BYTES",
    "MAX_FILE_BYTES",
    "MAX_TRANSCRIPT_BYTES",
    "FileKind",
    "MemoryFile",
    "Places",
    "UnreadableFileError",
    "classify",
    "discover",
    "holds_memory",
    "require_memory",
    "memory_files",
    "places",
    "read_blocks",
    "read_lines",
    "scan",
    "stamp",
    "warn_once",
]

logger = logging.getLogger("langchain_enhanced_memory")

#: Files larger than this are refused by :func:`read_lines` (notes are never this big;
#: a file that is is almost surely a dump that would swamp the index).
MAX_FILE_BYTES = 64 * 1024 * 1024

#: How many leading bytes are checked for NUL bytes to spot binary files.
BINARY_SNIFF_BYTES = 8192

#: A transcript may be larger: it is read a block at a time and, as it grows, only its tail.
MAX_TRANSCRIPT_BYTES = 1 << 30

#: Bytes :func:`read_blocks` reads at a time (a block is then cut after its last newline).
BLOCK_BYTES = 1 << 20

FileKind = Literal["core", "daily", "topic", "session"]

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
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


class UnreadableFileError(Exception):
    """A memory file that cannot be turned into text lines.

    Attributes:
        path: The file that could not be read.
        reason: A short human-readable reason ("looks binary", "too large", ...).
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"cannot read {escape_controls(str(path))}: {escape_controls(reason)}")

    def named(self, rel: str) -> str:
        """``rel: reason``, for a message that names the file as the user knows it."""
        return f"{escape_controls(rel)}: {escape_controls(self.reason)}"


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
    ``settings.session_dirs`` (where the entry points add ``$ENHANCED_MEMORY_SESSION_DIRS``)
    and, for an OpenClaw workspace, its agent's folder.
    """
    named = list(settings.session_dirs)
    if settings.openclaw_sessions:
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

    It is when it holds what discovery looks for first (``settings.include``'s
    first names: ``MEMORY.md`` or another core file, a ``memory/`` folder, even
    empty) or a transcript folder (``sessions/``, one named in the settings or
    ``$ENHANCED_MEMORY_SESSION_DIRS``, an OpenClaw agent's). A pattern that
    starts with a wildcard could match anything: then every folder is one.
    ``remember`` makes a folder one: it creates ``memory/``.
    """
    root = Path(workspace)
    for pattern in settings.include:
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
    root = _root(workspace)
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
                warn_once(f"skipping {MEMORY_LINK}: {_reason(exc)}")
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


def discover(
    workspace: Path | str,
    settings: MemorySettings | None = None,
    *,
    warn: bool = True,
    transcripts: bool = False,
) -> list[MemoryFile]:
    """List the workspace's memory files, sorted by relative path.

    Selection: ``.md`` files matching ``settings.include`` and no ``settings.exclude``
    glob (see :func:`glob_match`; an exclude glob that matches a directory excludes
    everything below it). Hidden files and folders are skipped. Of the directory
    symlinks only a top-level ``memory`` is followed; a file symlink is kept only
    when its resolved target is a regular file in the workspace's :class:`Places`.
    Files reached twice (hard links, symlinks, ``MEMORY.md``/``memory.md`` on a
    case-insensitive disk) are listed once, preferring the real file over a link,
    then the first path. Unreadable folders and files are skipped with a warning
    (logged once per process).

    Args:
        workspace: The workspace root.
        settings: Discovery settings; defaults to :class:`MemorySettings()`.
        warn: Log what is skipped (``get`` looks up one file and says nothing of others).
        transcripts: List the session transcripts too (the index and ``get`` do).

    Returns:
        The memory files, sorted by ``path``.

    Raises:
        FileNotFoundError: The workspace does not exist.
        NotADirectoryError: The workspace is not a directory.
    """
    settings = settings or MemorySettings()
    where = places(workspace, warn=warn, settings=settings if transcripts else None)
    # (is_symlink, rel_path) sorts real files first, then by path, for de-duplication.
    found = sorted(_candidates(where, settings, warn), key=lambda c: (c[0], c[1]))
    seen: set[object] = set()
    files: list[MemoryFile] = []
    for _is_link, rel, entry, _st, inode in found:
        if inode in seen:
            continue
        seen.add(inode)
        kind, day = classify(rel)
        files.append(MemoryFile(path=rel, abs_path=Path(entry.path), kind=kind, date=day))
    files.sort(key=lambda f: f.path)
    return files


def stamp(st: os.stat_result) -> tuple[int, int, int]:
    """``(size, mtime_ns, ctime_ns)``: what tells that a file may have changed.

    The ctime too: an edit that keeps the size and sets the mtime back
    (``sed -i`` then ``touch -r``) still moves it, and nothing can set it back.
    """
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns


def scan(
    workspace: Path | str, settings: MemorySettings | None = None
) -> dict[str, tuple[int, int, int]]:
    """``{path: stamp}`` (:func:`stamp`) of the files the index reads, in one cheap pass.

    The files :func:`discover` lists, transcripts included.

    The freshness check of every search without a watcher: one ``os.scandir``
    walk and the ``stat`` it needs, no ``Path`` per file and no classification.
    A file reached twice counts once, as in :func:`discover`.

    Raises:
        FileNotFoundError: The workspace does not exist.
        NotADirectoryError: The workspace is not a directory.
    """
    out: dict[str, tuple[int, int, int]] = {}
    seen: dict[object, tuple[bool, str]] = {}
    settings = settings or MemorySettings()
    for is_link, rel, _entry, st, inode in _candidates(
        places(workspace, settings=settings), settings, True
    ):
        first = seen.get(inode)
        if first is not None:
            # The same preference as discover: the real file, then the first path.
            if first <= (is_link, rel):
                continue
            del out[first[1]]
        seen[inode] = (is_link, rel)
        out[rel] = stamp(st)
    return out


def memory_files(
    workspace: Path | str, paths: list[str], settings: MemorySettings | None = None
) -> list[MemoryFile]:
    """The :class:`MemoryFile` of each of ``paths``, relative paths :func:`scan` listed.

    ``settings`` names the transcript folders (whose paths may name a folder outside).
    """
    root = _root(workspace)
    folders = dict(session_folders(root, settings)) if settings is not None else {}

    def located(rel: str) -> Path:
        head, _, name = rel.rpartition("/")
        return folders[head] / name if head in folders else root / rel

    return [MemoryFile(p, located(p), *classify(p)) for p in paths]


def _root(workspace: Path | str) -> Path:
    root = Path(workspace).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"workspace not found: {escape_controls(str(root))}")
    if not root.is_dir():
        raise NotADirectoryError(f"workspace is not a directory: {escape_controls(str(root))}")
    return root.resolve()


def _candidates(
    where: Places, settings: MemorySettings, warn: bool
) -> Iterator[tuple[bool, str, os.DirEntry[str], os.stat_result, object]]:
    """``(is_symlink, rel, entry, stat, inode key)`` of every selected regular file."""
    root_str = str(where.root)
    say = warn_once if warn else _silent
    found = _walk(where, Globs(settings.include, settings.exclude), say)
    for rel, entry in itertools.chain(found, _transcripts(where, settings, say)):
        if not rel.isascii() and not _is_utf8(rel):
            # An undecodable name cannot be stored, searched or printed as JSON.
            say(f"skipping {escape_controls(rel)}: file name is not valid UTF-8")
            continue
        try:
            is_link = entry.is_symlink()
            if is_link and not where.holds(Path(entry.path)):
                say(f"skipping {escape_controls(rel)}: symlink points outside the workspace")
                continue
            st = entry.stat()  # follows a (checked) file symlink
        except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop on old Pythons
            say(f"skipping {escape_controls(rel)}: {_reason(exc)}")
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        # st_ino is 0 where the OS does not report it; fall back to the path then.
        key: object = (st.st_dev, st.st_ino) if st.st_ino else (root_str, rel)
        yield is_link, rel, entry, st, key


def _transcripts(
    where: Places, settings: MemorySettings, say: Callable[[str], None]
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield (path, entry) for the ``*.jsonl`` files at the top of each transcript folder."""
    for prefix, folder in where.sessions:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            say(f"skipping folder {escape_controls(prefix)}: {_reason(exc)}")
            continue
        for entry in entries:
            rel = f"{prefix}/{entry.name}"
            if entry.name.startswith(".") or not entry.name.endswith(TRANSCRIPT_SUFFIX):
                continue
            if not any(glob_match(rel, g) for g in settings.exclude):
                yield rel, entry


def _walk(
    where: Places, globs: Globs, say: Callable[[str], None]
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield (relative path, entry) for candidate ``.md`` files of the workspace."""
    stack: list[tuple[str, tuple[str, ...]]] = [(str(where.root), ())]
    while stack:
        dir_path, dir_parts = stack.pop()
        prefix = "/".join(dir_parts) + "/" if dir_parts else ""
        try:
            with os.scandir(dir_path) as it:
                entries = list(it)
        except OSError as exc:
            say(f"skipping folder {escape_controls(prefix or '.')}: {_reason(exc)}")
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue  # hidden, including the index folder .enhanced-memory/
            rel = prefix + name
            parts = (*dir_parts, name)
            try:
                # follow_symlinks=False: a symlinked directory is entered only as memory/.
                if entry.is_dir(follow_symlinks=False) or (
                    not dir_parts and name == MEMORY_LINK and where.memory is not None
                ):
                    if globs.may_contain(rel, parts):
                        stack.append((entry.path, parts))
                    continue
                if entry.is_symlink() and entry.is_dir():
                    # A refused memory link: places() said why.
                    if (dir_parts or name != MEMORY_LINK) and globs.may_contain(rel, parts):
                        say(
                            f"skipping {escape_controls(rel)}: a symlinked folder is not followed"
                            " (only the workspace's memory/ link is)"
                        )
                    continue
            except OSError as exc:
                say(f"skipping {escape_controls(rel)}: {_reason(exc)}")
                continue
            if name.endswith(".md") and globs.selects(rel):
                yield rel, entry


# --------------------------------------------------------------------------- reading


class Digest(Protocol):
    """A running hash (``hashlib``'s objects)."""

    def update(self, data: bytes, /) -> None:
        """Add bytes."""
        ...

    def hexdigest(self) -> str:
        """The hash of the bytes so far."""
        ...


def read_lines(path: Path | str) -> list[str]:
    r"""Read a text file as the lines an editor shows.

    Line ``N`` (1-based) of the result is line ``N`` in an editor: only ``\n`` and
    ``\r\n`` end lines (a lone ``\r``, ``\x0b``, ``\x1c`` or ``\u2028`` stays inside
    its line), a final newline does not add an empty line, a UTF-8 BOM is dropped
    and invalid UTF-8 becomes U+FFFD. Files starting with a UTF-16 BOM are decoded
    as UTF-16.

    Args:
        path: The file.

    Returns:
        The lines without their line endings; ``[]`` for an empty file.

    Raises:
        UnreadableFileError: The file cannot be read, is larger than
            :data:`MAX_FILE_BYTES`, or looks binary (NUL bytes in its first
            :data:`BINARY_SNIFF_BYTES` bytes).
    """
    return [line for _, _, block in read_blocks(path) for line in block]


def read_blocks(
    path: Path | str,
    offset: int = 0,
    line: int = 0,
    digest: Digest | None = None,
    hashed: int = 0,
    max_bytes: int | None = None,
    sniff: bool = True,
) -> Iterator[tuple[int, int, list[str]]]:
    r"""Read a file from ``offset`` as :func:`read_lines` does, a block of whole lines at a time.

    Each block is about :data:`BLOCK_BYTES` and ends after a newline (the
    last one where the file ends), so UTF-8 decodes the same as the whole
    file's. A UTF-16 file is read whole, as one block at offset -1 (its
    newlines are not the byte ``\n``).

    Args:
        path: The file.
        offset: Where to start: 0, or the byte offset of a block's first line.
        line: That line's index (0-based).
        digest: Fed the bytes read from ``hashed`` on (the caller fed it the ones before).
        hashed: Bytes ``digest`` has already seen.
        max_bytes: The largest file read (:data:`MAX_FILE_BYTES` when None;
            :data:`MAX_TRANSCRIPT_BYTES` for a transcript).
        sniff: Refuse a file with NUL bytes near the start as binary (False for a
            transcript, whose lines are judged one by one: a NUL costs its line).

    Yields:
        ``(first line index, byte offset of the block, lines)``.

    Raises:
        UnreadableFileError: As :func:`read_lines`.
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 (a generator: closed in finally)
    except OSError as exc:
        raise UnreadableFileError(path, exc.strerror or type(exc).__name__) from exc
    try:
        size = os.fstat(fh.fileno()).st_size
        if max_bytes is None:
            max_bytes = MAX_FILE_BYTES
        if size > max_bytes:
            raise UnreadableFileError(path, _too_large(size, max_bytes))
        head = os.pread(fh.fileno(), BINARY_SNIFF_BYTES, 0)
        if any(head.startswith(bom) for bom in _UTF16_BOMS):
            yield line, -1, split_lines(_decode(_read_all(path, fh, digest, hashed)))
            return
        if sniff and b"\x00" in head:
            raise UnreadableFileError(path, "looks binary (NUL bytes near the start)")
        fh.seek(offset)
        at, rest = offset, b""
        while raw := fh.read(BLOCK_BYTES):
            if digest is not None and at + len(raw) > hashed:
                digest.update(raw[max(hashed - at, 0) :])
            at += len(raw)
            if at > max_bytes:
                raise UnreadableFileError(path, _too_large(at, max_bytes))
            data = rest + raw
            cut = data.rfind(b"\n") + 1
            if cut:
                lines = split_lines(_decode(data[:cut], offset == 0))
                yield line, offset, lines
                line, offset, rest = line + len(lines), offset + cut, data[cut:]
            else:
                rest = data
        if rest:
            yield line, offset, split_lines(_decode(rest, offset == 0))
    except OSError as exc:
        raise UnreadableFileError(path, exc.strerror or type(exc).__name__) from exc
    finally:
        fh.close()


def _read_all(path: Path | str, fh: io.BufferedReader, digest: Digest | None, hashed: int) -> bytes:
    # Read one byte past the cap in case the file grew since fstat.
    data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise UnreadableFileError(path, _too_large(len(data)))
    if digest is not None:
        digest.update(data[hashed:])
    return data


def split_lines(text: str) -> list[str]:
    r"""Lines of decoded text: ``\r\n`` and ``\n`` end a line, a final one adds none."""
    if not text:
        return []
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start one
    return lines


def _decode(data: bytes, at_start: bool = True) -> str:
    """Text of the file's bytes (``at_start``: from its first byte, where a BOM may be)."""
    if at_start:
        for bom, codec in _UTF16_BOMS.items():
            if data.startswith(bom):
                return data[len(bom) :].decode(codec, errors="replace")
        if data.startswith(_UTF8_BOM):
            data = data[len(_UTF8_BOM) :]
    return data.decode("utf-8", errors="replace")


def _is_utf8(name: str) -> bool:
    # os.scandir decodes undecodable bytes to lone surrogates (surrogateescape).
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _silent(_message: str) -> None:
    pass


def _reason(exc: BaseException) -> str:
    """Why an OS call failed, without the path the message already names."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return escape_controls(str(exc))


def _too_large(size: int, limit: int = MAX_FILE_BYTES) -> str:
    return f"too large ({size / 1048576:.1f} MB, limit {limit // 1048576} MB)"
