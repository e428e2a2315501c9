"""LangChain document loader over a memory workspace: one Document per chunk."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from .config import load, with_sessions
from .core.recipe import recipe
from .core.settings import MemorySettings
from .store.discovery import discover
from .store.reading import UnreadableFileError, read_lines

__all__ = ["MemoryDirectoryLoader", "chunk_id"]

logger = logging.getLogger("langchain_enhanced_memory")


def chunk_id(path: str, text: str, occurrence: int = 1) -> str:
    """Stable id of a chunk: the first 16 hex digits of a SHA-256.

    The hash covers the workspace-relative ``path`` and the chunk ``text`` (joined by
    a NUL byte), so the id survives edits elsewhere in the file. When the same text
    occurs several times in one file, the n-th occurrence (n >= 2) also hashes
    ``n`` so that ids stay unique.

    Args:
        path: Workspace-relative path with ``/`` separators.
        text: The chunk's text.
        occurrence: 1 for the first chunk with this text in this file, 2 for the next...

    Returns:
        16 lowercase hex characters.
    """
    h = hashlib.sha256()
    # surrogatepass: odd file names decoded with surrogateescape must not crash hashing.
    h.update(path.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update(text.encode("utf-8", "surrogatepass"))
    if occurrence > 1:
        h.update(b"\x00%d" % occurrence)
    return h.hexdigest()[:16]


class MemoryDirectoryLoader(BaseLoader):
    """Load a memory workspace as chunk-sized Documents.

    Each Document's ``page_content`` is the chunk text and its metadata holds
    ``path`` (workspace-relative, ``/``), ``startLine`` and ``endLine`` (1-based,
    inclusive), ``header``, ``headers`` (the header chain joined with ``" > "``),
    ``kind`` (``core``/``daily``/``topic``), ``date`` (ISO date of a daily note or
    ``None``) and ``chunk_id`` (see :func:`chunk_id`). Unreadable files are skipped
    with a warning on the ``langchain_enhanced_memory`` logger.

    Example:
        .. code-block:: python

            docs = MemoryDirectoryLoader("~/.openclaw/workspace").load()
    """

    def __init__(self, workspace: str | Path, settings: MemorySettings | None = None) -> None:
        """Create the loader.

        Args:
            workspace: The workspace root.
            settings: Discovery and chunking settings (``chunking="original"``
                cuts like the original skill); defaults to ``MemorySettings()``.
                ``$ENHANCED_MEMORY_SESSION_DIRS`` adds transcript folders to them.
        """
        self.workspace = Path(workspace).expanduser()
        self.settings = with_sessions(settings or MemorySettings(), load().session_dirs)

    def lazy_load(self) -> Iterator[Document]:
        """Yield one Document per chunk, files in path order, chunks in line order.

        Raises:
            FileNotFoundError: The workspace does not exist.
            NotADirectoryError: The workspace is not a directory.
        """
        chunker = recipe(self.settings).chunker
        for mfile in discover(self.workspace, self.settings):
            try:
                lines = read_lines(mfile.abs_path)
            except UnreadableFileError as exc:
                logger.warning("skipping %s: %s", mfile.path, exc.reason)
                continue
            name = mfile.path.rsplit("/", 1)[-1]
            chunks = chunker(lines, name)
            seen: dict[str, int] = {}
            for chunk in chunks:
                seen[chunk.text] = seen.get(chunk.text, 0) + 1
                yield Document(
                    page_content=chunk.text,
                    metadata={
                        "path": mfile.path,
                        "startLine": chunk.start_line,
                        "endLine": chunk.end_line,
                        "header": chunk.header,
                        "headers": " > ".join(chunk.headers),
                        "kind": mfile.kind,
                        "date": mfile.date.isoformat() if mfile.date else None,
                        "chunk_id": chunk_id(mfile.path, chunk.text, seen[chunk.text]),
                    },
                )
