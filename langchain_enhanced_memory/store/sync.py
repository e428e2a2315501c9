"""The text sync: files to chunks to postings, in one transaction per run.

Files are re-read only when their size, mtime or ctime changed (no one can set
a ctime: it catches an edit that kept the size and set the mtime back, ``touch
-r``) and re-chunked only when the hash of their bytes changed. A file is read
and chunked a block at a time, so a long note is never held whole, and the rows
of its new chunks wait for the commit on disk (:mod:`.rowspill`), so a sync's
memory does not grow with what it reads. A file that only grew (its old bytes
hash the same, and they ended a line) is chunked again only from where its old
chunking left a chunk open (``files.tail``); the chunks before it keep their
ids, postings and vectors. A run commits everything (files, chunks, postings,
the new generation) in one transaction, so a crash leaves the previous state.
The caller holds the writer lock.

A session transcript (:mod:`..core.transcripts`) is chunked by turns, and only
grows: it is read again from its last chunk's first message, whether or not
its old end was a line end (a last line still being written was left out).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..core.chunking import Chunk, Resume, line_texts
from ..core.recipe import Chunker, recipe
from ..core.settings import MemorySettings
from ..core.text import TOKENIZER_VERSION, escape_controls, tokenize
from ..core.transcripts import TranscriptChunker, TranscriptStream
from .db import disk_full, generation_of, get_meta, rollback
from .discovery import memory_files, scan, stamp
from .postings import named_segments, sweep_segments, write_postings
from .reading import BLOCK_BYTES, MAX_TRANSCRIPT_BYTES, Digest, UnreadableFileError, read_blocks
from .rowspill import RowSpill
from .segment import FIELDS, POSTINGS_FORMAT
from .workspace import MemoryFile, warn_once

__all__ = [
    "SyncReport",
    "chunk_row",
    "chunker_signature",
    "embed_text",
    "is_stale",
    "keyword_text",
    "lines_make_chunks",
    "mean_line_hashes",
    "read_chunks",
    "sha",
    "sync_text",
    "vector_hash",
]

TRANSCRIPT_FORMAT = 1  # how a transcript's turns become chunks


@dataclass
class FileRead:
    """A moved file as read and chunked.

    Attributes:
        file: The file.
        st: Its stat after the read.
        digest: SHA-256 of its bytes.
        chunks: How many chunks it has from line ``since`` on (1-based; 1: all of
            them); their rows are in the sync's :class:`.rowspill.RowSpill`, in order.
        since: Stored chunks starting at this line or later are replaced; earlier ones kept.
        tail: Where it can be chunked again from if it only grows (JSON), or None.
        faults: A transcript's lines skipped (not JSON) or mended, in words (None: none).
    """

    file: MemoryFile
    st: os.stat_result
    digest: str
    chunks: int
    since: int = 1
    tail: str | None = None
    faults: str | None = None


@dataclass
class SyncReport:
    """What one sync changed."""

    files: int = 0
    chunks: int = 0
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    generation: int = 0

    @property
    def changed_anything(self) -> bool:
        """Whether the text state moved to a new generation."""
        return bool(self.changed or self.deleted)


def sha(text: str) -> str:
    """SHA-256 hex digest of ``text`` (odd file names' surrogates hashed as they are)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def keyword_text(chunk: Chunk) -> str:
    """What the keyword signal indexes: the header chain, then the chunk."""
    return " ".join(chunk.headers) + "\n" + chunk.text


def embed_text(chunk: Chunk, settings: MemorySettings) -> str:
    """What the embedder sees: the original sent the bare chunk; we prepend its header chain."""
    if not settings.embedding.embed_headers:
        return chunk.text[: settings.embedding.embed_max_chars]
    return (" > ".join(chunk.headers) + "\n" + chunk.text)[: settings.embedding.embed_max_chars]


def mean_line_hashes(digests: bytes, settings: MemorySettings) -> list[str]:
    """Hashes of the lines whose mean vector is the chunk's; empty when its text is embedded.

    With ``chunk_vectors="lines"`` a chunk with two or more embedded lines
    (:func:`..core.chunking.line_texts`) is not embedded a second time as a
    whole: the same words already went through the model line by line.

    Args:
        digests: The chunk's stored ``line_hashes``.
        settings: The recipe.
    """
    if not lines_make_chunks(settings):
        return []
    return [digests[i : i + 32].hex() for i in range(0, len(digests), 32)]


def lines_make_chunks(settings: MemorySettings) -> bool:
    """Whether a chunk with lines has their mean for its vector (:func:`mean_line_hashes`)."""
    return settings.embedding.chunk_vectors == "lines" and settings.vectors.line_vector_share > 0


def vector_hash(chunk: Chunk, settings: MemorySettings, lines: list[str]) -> str:
    """The cache key of a chunk's vector: its embedded text's hash, or its lines' (a mean).

    Args:
        chunk: The chunk.
        settings: The recipe.
        lines: The chunk's embedded lines (:func:`..core.chunking.line_texts`).
    """
    if lines and lines_make_chunks(settings):  # NUL-prefixed: no embedded text hashes so
        return sha("\x00mean of lines\x00" + "\n".join(lines))
    return sha(embed_text(chunk, settings))


def chunker_signature(settings: MemorySettings) -> str:
    """Settings that change what the chunks are; a change forces a re-chunk."""
    s = settings
    return json.dumps(
        [
            TOKENIZER_VERSION,  # stored terms are the tokenizer's output
            FIELDS,
            POSTINGS_FORMAT,
            s.chunker.chunking,
            s.embedding.embed_headers,
            s.chunker.max_header_level,
            s.chunker.min_chunk_chars,
            s.chunker.max_chunk_chars,
            s.chunker.max_list_chars,
            s.embedding.embed_max_chars,
            lines_make_chunks(s),  # the keys of chunk vectors
            list(s.discovery.include),
            list(s.discovery.exclude),
            TRANSCRIPT_FORMAT,
            s.transcripts.session_window,
            s.transcripts.session_extras,
        ]
    )


def is_stale(conn: sqlite3.Connection, workspace: Path, settings: MemorySettings) -> bool:
    """Cheap check (one ``scandir`` pass, a stat per file) for unindexed changes."""
    if get_meta(conn, "chunker") != chunker_signature(settings):
        return True
    rows = conn.execute("SELECT path, size, mtime_ns, ctime_ns FROM files")
    known = {p: (s, m, c) for p, s, m, c in rows}
    return scan(workspace, settings) != known


def sync_text(
    conn: sqlite3.Connection,
    workspace: Path,
    settings: MemorySettings,
    report: SyncReport,
    folder: Path,
) -> None:
    """Bring files, chunks and postings up to date in one transaction (writer lock held).

    ``folder`` is the side folder, where the postings' segment files go.
    """
    signature = chunker_signature(settings)
    rechunk_all = get_meta(conn, "chunker") != signature
    known = {
        row[0]: row[1:]
        for row in conn.execute("SELECT path, size, mtime_ns, ctime_ns, hash, tail FROM files")
    }
    # One scandir pass with the stat it needs; only the files that moved are read.
    stats = scan(workspace, settings)
    report.files = len(stats)
    moved = sorted(p for p, st in stats.items() if rechunk_all or tuple(known.get(p, ())[:3]) != st)
    with RowSpill(folder) as spill:
        fresh, touched = _read_moved(workspace, moved, known, settings, rechunk_all, spill, report)
        spill.start_reading()
        present = set(stats) - set(report.skipped)
        deleted = list(known) if rechunk_all else [p for p in known if p not in present]
        _commit(conn, fresh, touched, deleted, report, signature, folder, rechunk_all, spill)


def _read_moved(
    workspace: Path,
    moved: list[str],
    known: dict[str, tuple],
    settings: MemorySettings,
    rechunk_all: bool,
    spill: RowSpill,
    report: SyncReport,
) -> tuple[list[FileRead], list[tuple[str, os.stat_result]]]:
    """Read and chunk the moved files into ``spill``: the changed ones, and those only touched."""
    chunker = recipe(settings).chunker
    turns = TranscriptChunker(settings)
    fresh: list[FileRead] = []
    touched: list[tuple[str, os.stat_result]] = []
    for f in memory_files(workspace, moved, settings):
        old = None if rechunk_all else known.get(f.path)
        mark = spill.mark()
        try:
            read = read_chunks(
                f,
                turns if f.kind == "session" else chunker,
                settings,
                spill,
                old and (old[0], old[3], old[4]),
            )
        except OSError as exc:
            if disk_full(exc, workspace):  # the spill's write, not the note: no index run
                raise
            spill.rewind(mark)  # gone since the scan
            report.skipped.append(f.path)
            continue
        except UnreadableFileError as exc:
            spill.rewind(mark)
            warn_once(f"skipping {exc.named(f.path)}")
            report.skipped.append(f.path)
            continue
        if read.faults:
            warn_once(f"{escape_controls(f.path)}: {read.faults}")
        if old and old[3] == read.digest:
            spill.rewind(mark)
            touched.append((f.path, read.st))
            continue
        fresh.append(read)
    return fresh, touched


def _commit(
    conn: sqlite3.Connection,
    fresh: list[FileRead],
    touched: list[tuple[str, os.stat_result]],
    deleted: list[str],
    report: SyncReport,
    signature: str,
    folder: Path,
    rechunk_all: bool,
    spill: RowSpill,
) -> None:
    """Write what the read found in one transaction; then sweep the unnamed segments."""
    report.changed = [r.file.path for r in fresh]
    report.deleted = [p for p in deleted if p not in report.changed]

    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(
            "UPDATE files SET size=?, mtime_ns=?, ctime_ns=? WHERE path=?",
            [(st.st_size, st.st_mtime_ns, st.st_ctime_ns, path) for path, st in touched],
        )
        if report.changed_anything or rechunk_all:
            first_new = _next_chunk_id(conn)
            # A grown file keeps its chunks before the line it was chunked again from.
            gone = [(p, 1) for p in deleted] + [(r.file.path, r.since) for r in fresh]
            conn.executemany("DELETE FROM chunks WHERE path=? AND start_line>=?", gone)
            conn.executemany("DELETE FROM files WHERE path=?", [(p,) for p, _ in gone])
            next_id = first_new
            for read in fresh:
                next_id = _insert_file(conn, read, spill, next_id)
            generation = generation_of(conn) + 1
            write_postings(conn, folder, generation, None if rechunk_all else first_new)
            # When: `status` says how old the index is.
            when = datetime.now(timezone.utc).isoformat(timespec="seconds")
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('generation', ?), ('chunker', ?),"
                " ('indexed_at', ?)",
                (str(generation), signature, when),
            )
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise
    if report.changed_anything or rechunk_all:
        sweep_segments(conn, folder)  # committed: the segments no generation names go
    report.generation = generation_of(conn)
    report.chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]


def _insert_file(conn: sqlite3.Connection, read: FileRead, spill: RowSpill, next_id: int) -> int:
    """Insert a file and its (new) chunks, ids from ``next_id``; returns the next free id."""
    f, st = read.file, read.st
    conn.execute(
        "INSERT INTO files(path, size, mtime_ns, ctime_ns, hash, kind, date, tail)"
        " VALUES (?,?,?,?,?,?,?,?)",
        (f.path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, read.digest, f.kind)
        + (f.date and f.date.isoformat(), read.tail),
    )
    # Row by row from the spill: a long file's rows and terms are never all in memory at once.
    conn.executemany(
        "INSERT INTO chunks(id, path, start_line, end_line, header, headers, text, embed_hash,"
        " terms, line_hashes) VALUES (?,?,?,?,?,?,?,?,?,?)",
        ((next_id + i, f.path, *row) for i, row in enumerate(spill.take(read.chunks))),
    )
    return next_id + read.chunks


def chunk_row(c: Chunk, settings: MemorySettings) -> tuple:
    """A chunk's row as inserted, after its id and path (a database note's rows are these too).

    ``(start_line, end_line, header, headers, text, embed_hash, terms, line_hashes)``.
    """
    lines = line_texts(c.text, settings.embedding.embed_max_chars)
    return (
        c.start_line,
        c.end_line,
        c.header,
        " > ".join(c.headers),
        c.text,
        vector_hash(c, settings, lines),
        " ".join(tokenize(keyword_text(c))),
        _digests(lines),
    )


def _next_chunk_id(conn: sqlite3.Connection) -> int:
    """The id the sync's first new chunk gets: past every id a chunk or a segment ever had.

    SQLite would reuse the ids of deleted last rows; a segment still lists
    them (masked out), so a new chunk must never take one.
    """
    named = named_segments(conn)
    top = conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
    return max(top or 0, named[1] if named else 0) + 1


def _digests(lines: list[str]) -> bytes:
    """The SHA-256 digests of a chunk's embedded lines, concatenated (32 bytes each).

    Stored with the chunk, so finding which lines lack a vector reads them
    instead of hashing every line of the workspace again.
    """
    return b"".join(hashlib.sha256(s.encode("utf-8", "surrogatepass")).digest() for s in lines)


def read_chunks(
    f: MemoryFile,
    chunker: Chunker,
    settings: MemorySettings,
    spill: RowSpill,
    stored: tuple[int, str, str | None] | None = None,
) -> FileRead:
    """Read and chunk a file into ``spill``, again when it changed under us (an agent appending).

    Args:
        f: The file.
        chunker: The recipe's chunker.
        settings: The recipe (what a chunk's row holds).
        spill: Where its chunks' rows go, a block's at a time.
        stored: The file's stored size, hash and tail, when its chunks may be kept:
            a file that only grew is chunked again from its tail.

    Raises:
        UnreadableFileError: As :func:`.reading.read_blocks`.
        OSError: The file is gone.
    """
    mark = spill.mark()
    rows = _Rows(spill, settings)
    for _ in range(3):
        spill.rewind(mark)
        rows.held.clear()
        before = f.abs_path.stat()
        read = _grown(f, chunker, rows, stored, before) or _chunked(f, chunker, rows, before)
        after = f.abs_path.stat()
        if stamp(before) == stamp(after):
            break
    rows.spill_held()
    read.st = after
    return read


#: Rows a read holds before it writes them to the spill: a note's rows are written after
#: its read, so no write of ours (which lets a writer thread run) falls inside the read.
_HELD_ROWS = 2048


@dataclass
class _Rows:
    """Where a read's chunks go: their rows, held, then into the spill."""

    spill: RowSpill
    settings: MemorySettings
    held: list[tuple] = field(default_factory=list)

    def add(self, chunks: list[Chunk]) -> int:
        before = len(self.held)
        self.held.extend(chunk_row(c, self.settings) for c in chunks)
        added = len(self.held) - before
        if len(self.held) >= _HELD_ROWS:
            self.spill_held()
        return added

    def spill_held(self) -> None:
        """Write the held rows to the spill."""
        self.spill.write(self.held)
        self.held.clear()


def _grown(
    f: MemoryFile,
    chunker: Chunker,
    rows: _Rows,
    stored: tuple[int, str, str | None] | None,
    st: os.stat_result,
) -> FileRead | None:
    """The chunks from a grown file's tail on; None unless it only grew past a line end."""
    if stored is None:
        return None
    old_size, old_digest, tail = stored
    if tail is None or st.st_size <= old_size:
        return None
    try:
        offset, line, point = json.loads(tail)
        resume = Resume.loads(point)
        digest = hashlib.sha256()
        with open(f.abs_path, "rb") as fh:
            if f.kind != "session" and os.pread(fh.fileno(), 1, old_size - 1) != b"\n":
                return None  # the old last line may go on: it is not a line of its own yet
            left = old_size
            while left and (data := fh.read(min(left, BLOCK_BYTES))):
                digest.update(data)
                left -= len(data)
    except (OSError, TypeError, ValueError):
        return None
    if resume is None or left or digest.hexdigest() != old_digest:
        return None  # not the bytes chunked before: read it all again
    return _chunked(f, chunker, rows, st, resume, int(offset), int(line), digest, old_size)


def _chunked(
    f: MemoryFile,
    chunker: Chunker,
    rows: _Rows,
    st: os.stat_result,
    resume: Resume | None = None,
    offset: int = 0,
    line: int = 0,
    digest: Digest | None = None,
    hashed: int = 0,
) -> FileRead:
    """Chunk a file as it is read, whole or (``resume``) from a block at ``offset``."""
    if digest is None:
        digest = hashlib.sha256()
    stream = chunker.stream(f.abs_path.name, resume)
    chunks = 0
    blocks: list[tuple[int, int]] = []  # (first line, byte offset) of each block
    session = f.kind == "session"
    limit = MAX_TRANSCRIPT_BYTES if session else None
    for first, at, lines in read_blocks(
        f.abs_path, offset, line, digest, hashed, limit, sniff=not session
    ):
        blocks.append((first, at))
        chunks += rows.add(stream.feed(lines, first))
    chunks += rows.add(stream.close())
    tail = None
    point = stream.resume
    if point is not None:
        # The block holding the line a resumed run starts at (a UTF-16 file's has no offset).
        first, at = max((b for b in blocks if b[0] <= point.line), default=(0, -1))
        if at >= 0:
            tail = json.dumps([at, first, point.dumps()])
    since = resume.line + 1 if resume else 1
    faults = stream.faults if isinstance(stream, TranscriptStream) else None
    return FileRead(f, st, digest.hexdigest(), chunks, since, tail, faults)
