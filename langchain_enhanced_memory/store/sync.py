"""The text sync: files to chunks to postings, in one transaction per run.

Files are re-read only when their size or mtime changed and re-chunked only
when their hash changed. A run commits everything (files, chunks, postings,
the new generation) in one transaction, so a crash leaves the previous state.
The caller holds the writer lock.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.chunking import Chunk, line_texts
from ..core.recipe import recipe
from ..core.scoring import Postings
from ..core.settings import MemorySettings
from ..core.text import TOKENIZER_VERSION, path_text, phrases, tokenize
from .db import generation_of, get_meta
from .workspace import MemoryFile, UnreadableFileError, discover, read_lines, scan

__all__ = [
    "POSTINGS_FIELDS",
    "SyncReport",
    "chunker_signature",
    "embed_text",
    "is_stale",
    "keyword_text",
    "line_digests",
    "mean_lines",
    "sha",
    "sync_text",
    "unpack_postings",
    "vector_hash",
]

log = logging.getLogger("langchain_enhanced_memory")

POSTINGS_FIELDS = ("text", "phrase", "header", "path")
POSTINGS_FORMAT = 2  # 2: hashed term keys instead of a vocabulary list
_POSTINGS_PARTS = ("keys", "indptr", "docs", "tf", "doc_len")
_MAGIC = b"EMP2"  # raw arrays after a JSON layout; older blobs are npz archives


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
    if not settings.embed_headers:
        return chunk.text[: settings.embed_max_chars]
    return (" > ".join(chunk.headers) + "\n" + chunk.text)[: settings.embed_max_chars]


def mean_lines(text: str, settings: MemorySettings) -> list[str]:
    """The lines whose mean vector is the chunk's vector; empty when its text is embedded.

    With ``chunk_vectors="lines"`` a chunk with two or more embedded lines
    (:func:`..core.chunking.line_texts`) is not embedded a second time as a
    whole: the same words already went through the model line by line.
    """
    return line_texts(text, settings.embed_max_chars) if _lines_make_chunks(settings) else []


def _lines_make_chunks(settings: MemorySettings) -> bool:
    return settings.chunk_vectors == "lines" and settings.line_vector_share > 0


def vector_hash(chunk: Chunk, settings: MemorySettings, lines: list[str]) -> str:
    """The cache key of a chunk's vector: its embedded text's hash, or its lines' (a mean).

    Args:
        chunk: The chunk.
        settings: The recipe.
        lines: The chunk's embedded lines (:func:`..core.chunking.line_texts`).
    """
    if lines and _lines_make_chunks(settings):  # NUL-prefixed: no embedded text hashes so
        return sha("\x00mean of lines\x00" + "\n".join(lines))
    return sha(embed_text(chunk, settings))


def chunker_signature(settings: MemorySettings) -> str:
    """Settings that change what the chunks are; a change forces a re-chunk."""
    s = settings
    return json.dumps(
        [
            TOKENIZER_VERSION,  # stored terms are the tokenizer's output
            POSTINGS_FIELDS,
            POSTINGS_FORMAT,
            s.chunking,
            s.embed_headers,
            s.max_header_level,
            s.min_chunk_chars,
            s.max_chunk_chars,
            s.embed_max_chars,
            _lines_make_chunks(s),  # the keys of chunk vectors
            list(s.include),
            list(s.exclude),
        ]
    )


def pack_postings(posts: dict[str, Postings]) -> bytes:
    """The four posting lists as one blob: a JSON layout, then each array 8-byte aligned.

    :func:`unpack_postings` reads the arrays as views of the blob (no copy), so
    a fresh process holds the postings once, not twice.
    """
    layout, chunks, offset = [], [], 0
    for name, p in posts.items():
        for part in _POSTINGS_PARTS:
            a = np.ascontiguousarray(getattr(p, part))
            layout.append([f"{name}.{part}", a.dtype.str, a.size, offset])
            chunks += [a.tobytes(), b"\0" * (-a.nbytes % 8)]
            offset += a.nbytes + len(chunks[-1])
    head = json.dumps(layout).encode()
    head += b" " * (-(len(head) + 8) % 8)
    return _MAGIC + len(head).to_bytes(4, "little") + head + b"".join(chunks)


def unpack_postings(blob: bytes) -> dict[str, Postings]:
    """The posting lists of a :func:`pack_postings` blob (read-only views of it)."""
    if blob[:4] != _MAGIC:  # written by an older version: an npz archive
        z = np.load(io.BytesIO(blob), allow_pickle=False)
        arrays = {key: z[key] for key in z.files}
    else:
        size = int.from_bytes(blob[4:8], "little")
        base = 8 + size
        arrays = {
            key: np.frombuffer(blob, dtype=np.dtype(dtype), count=count, offset=base + offset)
            for key, dtype, count, offset in json.loads(blob[8:base])
        }
    names = {key.split(".", 1)[0] for key in arrays}
    return {
        name: Postings(**{part: arrays[f"{name}.{part}"] for part in _POSTINGS_PARTS})
        for name in names
    }


def is_stale(conn: sqlite3.Connection, workspace: Path, settings: MemorySettings) -> bool:
    """Cheap check (one ``scandir`` pass, a stat per file) for unindexed changes."""
    if get_meta(conn, "chunker") != chunker_signature(settings):
        return True
    known = {p: (s, m) for p, s, m in conn.execute("SELECT path, size, mtime_ns FROM files")}
    return scan(workspace, settings) != known


def sync_text(
    conn: sqlite3.Connection, workspace: Path, settings: MemorySettings, report: SyncReport
) -> None:
    """Bring files, chunks and postings up to date in one transaction (writer lock held)."""
    signature = chunker_signature(settings)
    rechunk_all = get_meta(conn, "chunker") != signature
    known = {
        row[0]: row[1:] for row in conn.execute("SELECT path, size, mtime_ns, hash FROM files")
    }
    files = discover(workspace, settings)
    report.files = len(files)
    chunker = recipe(settings).chunker
    fresh: list[tuple[MemoryFile, os.stat_result, str, list[Chunk]]] = []
    touched: list[tuple[str, int, int]] = []
    for f in files:
        old = known.get(f.path)
        try:
            st = f.abs_path.stat()
        except OSError:
            report.skipped.append(f.path)
            continue
        if old and not rechunk_all and (old[0], old[1]) == (st.st_size, st.st_mtime_ns):
            continue
        try:
            lines, st = read_stable(f)
        except UnreadableFileError as exc:
            log.warning("skipping %s", exc)
            report.skipped.append(f.path)
            continue
        digest = sha("\n".join(lines))
        if old and not rechunk_all and old[2] == digest:
            touched.append((f.path, st.st_size, st.st_mtime_ns))
            continue
        fresh.append((f, st, digest, chunker(lines, f.abs_path.name)))
    present = {f.path for f in files} - set(report.skipped)
    deleted = list(known) if rechunk_all else [p for p in known if p not in present]
    report.changed = [f.path for f, *_ in fresh]
    report.deleted = [p for p in deleted if p not in report.changed]

    conn.execute("BEGIN IMMEDIATE")
    try:
        if get_meta(conn, "line-hashes") == "missing":
            _fill_line_digests(conn, settings)
        conn.executemany(
            "UPDATE files SET size=?, mtime_ns=? WHERE path=?",
            [(size, mtime, path) for path, size, mtime in touched],
        )
        if report.changed_anything or rechunk_all:
            gone = set(deleted) | set(report.changed)
            before = None if rechunk_all else _rows_before(conn, gone)
            conn.executemany("DELETE FROM chunks WHERE path=?", [(p,) for p in gone])
            conn.executemany("DELETE FROM files WHERE path=?", [(p,) for p in gone])
            for f, st, digest, chunks in fresh:
                _insert_file(conn, f, st, digest, chunks, settings)
            generation = generation_of(conn) + 1
            write_postings(conn, generation, before)
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('generation', ?), ('chunker', ?)",
                (str(generation), signature),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    report.generation = generation_of(conn)
    report.chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]


def _insert_file(
    conn: sqlite3.Connection,
    f: MemoryFile,
    st: os.stat_result,
    digest: str,
    chunks: list[Chunk],
    settings: MemorySettings,
) -> None:
    conn.execute(
        "INSERT INTO files(path, size, mtime_ns, hash, kind, date) VALUES (?,?,?,?,?,?)",
        (f.path, st.st_size, st.st_mtime_ns, digest, f.kind, f.date and f.date.isoformat()),
    )
    conn.executemany(
        "INSERT INTO chunks(path, start_line, end_line, header, headers, text, embed_hash, terms,"
        " line_hashes) VALUES (?,?,?,?,?,?,?,?,?)",
        [_chunk_row(f.path, c, settings) for c in chunks],
    )


def _chunk_row(path: str, c: Chunk, settings: MemorySettings) -> tuple:
    lines = line_texts(c.text, settings.embed_max_chars)
    return (
        path,
        c.start_line,
        c.end_line,
        c.header,
        " > ".join(c.headers),
        c.text,
        vector_hash(c, settings, lines),
        " ".join(tokenize(keyword_text(c))),
        _digests(lines),
    )


def line_digests(text: str, settings: MemorySettings) -> bytes:
    """The SHA-256 digests of a chunk's embedded lines, concatenated (32 bytes each).

    Stored with the chunk, so finding which lines lack a vector reads them
    instead of hashing every line of the workspace again.
    """
    return _digests(line_texts(text, settings.embed_max_chars))


def _digests(lines: list[str]) -> bytes:
    return b"".join(hashlib.sha256(s.encode("utf-8", "surrogatepass")).digest() for s in lines)


def _fill_line_digests(conn: sqlite3.Connection, settings: MemorySettings) -> None:
    """Line digests of chunks written before they were stored (once, after the migration)."""
    rows = conn.execute("SELECT id, text FROM chunks WHERE line_hashes IS NULL").fetchall()
    conn.executemany(
        "UPDATE chunks SET line_hashes=? WHERE id=?",
        [(line_digests(text, settings), i) for i, text in rows],
    )
    conn.execute("DELETE FROM meta WHERE key='line-hashes'")


def read_stable(f: MemoryFile) -> tuple[list[str], os.stat_result]:
    """Read a file, re-reading when it changed under us (an agent appending to it)."""
    for _ in range(3):
        before = f.abs_path.stat()
        lines = read_lines(f.abs_path)
        after = f.abs_path.stat()
        if (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns):
            return lines, after
    return lines, after


def _rows_before(conn: sqlite3.Connection, gone: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """Chunk ids in row order, and which of them stay, before ``gone``'s chunks are deleted."""
    ids = np.fromiter((i for (i,) in conn.execute("SELECT id FROM chunks ORDER BY id")), np.int64)
    removed = [i for p in gone for (i,) in conn.execute("SELECT id FROM chunks WHERE path=?", (p,))]
    return ids, ~np.isin(ids, np.asarray(removed, dtype=np.int64))


def write_postings(
    conn: sqlite3.Connection,
    generation: int,
    before: tuple[np.ndarray, np.ndarray] | None = None,
) -> None:
    """Store the four posting lists of ``generation``.

    Args:
        conn: The connection, inside the sync's transaction.
        generation: The generation being written.
        before: The previous generation's chunk ids in row order and which of
            them stay; its stored postings then get the new chunks merged in
            (they have the highest ids, so their rows come last) instead of
            being rebuilt from every chunk.
    """
    prev = conn.execute("SELECT generation, data FROM derived WHERE name='postings'").fetchone()
    posts = None
    if before is not None and prev is not None and prev[0] == generation - 1:
        ids, keep = before
        old = unpack_postings(prev[1])
        if set(old) == set(POSTINGS_FIELDS) and all(p.n_docs == ids.size for p in old.values()):
            last = int(ids[keep].max()) if keep.any() else -1
            added = _build_postings(conn, "WHERE id > ?", (last,))
            posts = {name: old[name].merged(keep, added[name]) for name in POSTINGS_FIELDS}
    if posts is None:
        posts = _build_postings(conn, "", ())
    conn.execute(
        "INSERT OR REPLACE INTO derived VALUES ('postings', ?, ?)",
        (generation, pack_postings(posts)),
    )


def _build_postings(conn: sqlite3.Connection, where: str, args: tuple) -> dict[str, Postings]:
    """The four posting lists of the chunks ``where`` selects, from their stored terms."""
    query = f"SELECT terms, headers, path FROM chunks {where} ORDER BY id"
    rows = conn.execute(query, args).fetchall()
    # Header chains and paths repeat across chunks: tokenize each distinct one once.
    header_terms = {h: tokenize(h) for h in {r[1] for r in rows}}
    path_terms = {p: tokenize(path_text(p)) for p in {r[2] for r in rows}}
    return {
        "text": Postings.build(r[0].split() for r in rows),
        "phrase": Postings.build(phrases(r[0].split()) for r in rows),
        "header": Postings.build(header_terms[r[1]] for r in rows),
        "path": Postings.build(path_terms[r[2]] for r in rows),
    }
