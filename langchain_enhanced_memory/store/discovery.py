"""Find the memory files of a workspace: one walk with :func:`os.scandir`.

Discovery keeps the ``.md`` files that match ``settings.discovery.include`` and not
``settings.discovery.exclude``, and never leaves the workspace's places
(:class:`.workspace.Places`). Deeper directory symlinks than the workspace's
``memory/`` are not followed (no loops; each is named once in the log), and a
deeper file symlink counts only when its target lies in those places. Hidden
paths (any component starting with ``.``) are skipped, so the index folder
``.enhanced-memory/`` is never indexed. Session transcripts are listed from
the transcript folders (:func:`.workspace.session_folders`), one level deep.
:func:`scan` is the same walk reduced to each file's :func:`stamp`.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from ..core.globs import Globs, glob_match
from ..core.settings import MemorySettings
from ..core.text import escape_controls
from ..core.transcripts import TRANSCRIPT_SUFFIX
from .workspace import (
    MEMORY_LINK,
    MemoryFile,
    Places,
    classify,
    os_reason,
    places,
    session_folders,
    warn_once,
    workspace_root,
)

__all__ = ["discover", "memory_files", "scan", "stamp"]


def discover(
    workspace: Path | str,
    settings: MemorySettings | None = None,
    *,
    warn: bool = True,
    transcripts: bool = False,
) -> list[MemoryFile]:
    """List the workspace's memory files, sorted by relative path.

    Selection: ``.md`` files matching ``settings.discovery.include`` and no
    ``settings.discovery.exclude`` glob (see :func:`glob_match`; an exclude glob that
    matches a directory excludes everything below it). Hidden files and folders are
    skipped. Of the directory symlinks only a top-level ``memory`` is followed; a file
    symlink is kept only when its resolved target is a regular file in the
    workspace's :class:`Places`.
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
    root = workspace_root(workspace)
    folders = dict(session_folders(root, settings)) if settings is not None else {}

    def located(rel: str) -> Path:
        head, _, name = rel.rpartition("/")
        return folders[head] / name if head in folders else root / rel

    return [MemoryFile(p, located(p), *classify(p)) for p in paths]


def _candidates(
    where: Places, settings: MemorySettings, warn: bool
) -> Iterator[tuple[bool, str, os.DirEntry[str], os.stat_result, object]]:
    """``(is_symlink, rel, entry, stat, inode key)`` of every selected regular file."""
    root_str = str(where.root)
    say = warn_once if warn else _silent
    found = _walk(where, Globs(settings.discovery.include, settings.discovery.exclude), say)
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
            say(f"skipping {escape_controls(rel)}: {os_reason(exc)}")
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
            say(f"skipping folder {escape_controls(prefix)}: {os_reason(exc)}")
            continue
        for entry in entries:
            rel = f"{prefix}/{entry.name}"
            if entry.name.startswith(".") or not entry.name.endswith(TRANSCRIPT_SUFFIX):
                continue
            if not any(glob_match(rel, g) for g in settings.discovery.exclude):
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
            say(f"skipping folder {escape_controls(prefix or '.')}: {os_reason(exc)}")
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
                say(f"skipping {escape_controls(rel)}: {os_reason(exc)}")
                continue
            if name.endswith(".md") and globs.selects(rel):
                yield rel, entry


def _is_utf8(name: str) -> bool:
    # os.scandir decodes undecodable bytes to lone surrogates (surrogateescape).
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _silent(_message: str) -> None:
    pass
