"""The persistent, incremental index: one SQLite file per workspace.

Layout: ``files`` (path, size, mtime, hash), ``chunks`` (spans, headers, text,
terms), ``embed_cache`` (vectors keyed by model and text hash, so a changed
file re-embeds only its changed chunks and a model switch re-embeds once) and
``derived`` (the postings, the vector matrix and the line-vector matrix as
ready-to-load numpy blobs, so a fresh process searches without re-tokenizing
anything). Line vectors need no table of their own: a chunk's lines are
derived from its text (:func:`.chunking.line_texts`) and looked up in
``embed_cache`` by their hash.

Safety: every sync commits in one transaction, so a crash leaves the previous
state; readers use WAL and see a consistent snapshot while a writer runs; an
advisory file lock serializes writers; a file that is not a valid index is set
aside and rebuilt from the markdown, which is never written.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import itertools
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from .chunking import Chunk, chunk_lines, line_texts
from .scoring import Postings
from .settings import MemorySettings
from .text import TOKENIZER_VERSION, path_text, phrases, tokenize
from .workspace import MemoryFile, UnreadableFileError, discover, read_lines

log = logging.getLogger("langchain_enhanced_memory")

SCHEMA_VERSION = 1
POSTINGS_FIELDS = ("text", "phrase", "header", "path")
POSTINGS_FORMAT = 2  # 2: hashed term keys instead of a vocabulary list
INDEX_DIRNAME = ".enhanced-memory"
INDEX_FILENAME = "index.sqlite"
ORIGINAL_INDEX_FILENAME = "index-original.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL, kind TEXT NOT NULL, date TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, header TEXT NOT NULL, headers TEXT NOT NULL,
    text TEXT NOT NULL, chunk_id TEXT NOT NULL, embed_hash TEXT NOT NULL,
    terms TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE TABLE IF NOT EXISTS embed_cache (
    model TEXT NOT NULL, text_hash TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS derived (
    name TEXT PRIMARY KEY, generation INTEGER NOT NULL, data BLOB NOT NULL
);
"""


class IndexUnavailableError(RuntimeError):
    """The index cannot be opened or written (one-line message)."""


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


@dataclass
class Snapshot:
    """A consistent, in-memory view of one index generation, ready for scoring."""

    generation: int
    ids: np.ndarray
    paths: list[str]
    start: np.ndarray
    end: np.ndarray
    header: list[str]
    headers: list[str]
    texts: list[str]
    kinds: list[str]
    dates: list[str | None]
    day: np.ndarray  # date ordinal of the chunk's daily note, -1 when undated
    text_post: Postings
    phrase_post: Postings  # adjacent term pairs of the chunk text
    header_post: Postings
    path_post: Postings
    vectors: np.ndarray | None = None
    has_vector: np.ndarray | None = None
    line_vectors: np.ndarray | None = None  # float16, a row per embedded line (line_vector_share)
    line_owner: np.ndarray | None = None  # the chunk (row) of each line vector, ascending
    model: str | None = None

    def __len__(self) -> int:
        return len(self.paths)

    # Lowercased views for the original profile's substring matching.
    @functools.cached_property
    def lower_texts(self) -> list[str]:
        """Lowercased chunk texts."""
        return [t.lower() for t in self.texts]

    @functools.cached_property
    def lower_headers(self) -> list[str]:
        """Lowercased chunk headers."""
        return [h.lower() for h in self.header]

    @functools.cached_property
    def lower_paths(self) -> list[str]:
        """Paths as lowercased words (``-``, ``_``, ``/`` read as spaces)."""
        return [path_text(p).lower() for p in self.paths]


def default_index_path(workspace: Path, name: str = INDEX_FILENAME) -> Path:
    """``WORKSPACE/.enhanced-memory/index.sqlite``, or a user cache path when read-only.

    A read-only workspace (a mounted share, a benchmark folder) still gets a
    persistent index, under ``$XDG_CACHE_HOME/enhanced-memory/<hash>/``.
    """
    local = workspace / INDEX_DIRNAME
    if _writable(local if local.exists() else workspace):
        return local / name
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
    return cache / "enhanced-memory" / key / name


def _writable(path: Path) -> bool:
    # Root passes os.access everywhere; a folder with no write bit is still meant read-only.
    try:
        return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)
    except OSError:
        return False


def keyword_text(chunk: Chunk) -> str:
    """What the keyword signal indexes: the header chain, then the chunk."""
    return " ".join(chunk.headers) + "\n" + chunk.text


def embed_text(chunk: Chunk, settings: MemorySettings) -> str:
    """What the embedder sees: the original sent the bare chunk; we prepend its header chain."""
    if not settings.embed_headers:
        return chunk.text[: settings.embed_max_chars]
    return (" > ".join(chunk.headers) + "\n" + chunk.text)[: settings.embed_max_chars]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_POSTINGS_PARTS = ("keys", "indptr", "docs", "tf", "doc_len")


def _pack_postings(posts: dict[str, Postings]) -> bytes:
    arrays: dict[str, Any] = {}
    for name, p in posts.items():
        for part in _POSTINGS_PARTS:
            arrays[f"{name}.{part}"] = getattr(p, part)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _unpack_postings(blob: bytes) -> dict[str, Postings]:
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    names = {key.split(".", 1)[0] for key in z.files}
    return {
        name: Postings(**{part: z[f"{name}.{part}"] for part in _POSTINGS_PARTS}) for name in names
    }


def _embed_batches(
    embed: Callable[[list[str]], np.ndarray],
    batches: list[list[tuple[str, str]]],
    concurrency: int,
) -> Iterator[tuple[list[tuple[str, str]], np.ndarray]]:
    """Yield ``(batch, vectors)`` in order, with up to ``concurrency`` batches in flight.

    On a failure the batches not yet started are cancelled and the error is
    raised once every earlier batch has been yielded (and so stored).
    """
    if concurrency <= 1 or len(batches) <= 1:
        for batch in batches:
            yield batch, embed([t for _, t in batch])
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="embed")
    try:
        futures = [pool.submit(embed, [t for _, t in batch]) for batch in batches]
        for batch, future in zip(batches, futures, strict=True):
            yield batch, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class MemoryIndex:
    """The on-disk index of one workspace.

    Args:
        workspace: The workspace folder (holds ``MEMORY.md`` and ``memory/``).
        settings: Discovery, chunking and embedding settings.
        path: Where the SQLite file lives; see :func:`default_index_path`.
    """

    def __init__(
        self,
        workspace: str | Path,
        settings: MemorySettings | None = None,
        path: str | Path | None = None,
    ) -> None:
        self.workspace = Path(workspace).expanduser()
        if not self.workspace.is_dir():
            raise IndexUnavailableError(f"workspace not found: {self.workspace}")
        self.settings = settings or MemorySettings()
        # The original profile chunks differently: its own file, so switching
        # profiles never re-chunks (and thrashes) the other one's index.
        name = ORIGINAL_INDEX_FILENAME if self.settings.chunking == "original" else INDEX_FILENAME
        self.path = Path(path) if path else default_index_path(self.workspace, name)
        self._snapshot: Snapshot | None = None
        self._vector_cache: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}
        self._line_cache: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ sqlite
    @property
    def chunker_signature(self) -> str:
        """Settings that change what the chunks are; a change forces a re-chunk."""
        s = self.settings
        return json.dumps(
            [
                SCHEMA_VERSION,
                TOKENIZER_VERSION,  # stored terms are the tokenizer's output
                POSTINGS_FIELDS,
                POSTINGS_FORMAT,
                s.chunking,
                s.embed_headers,
                s.max_header_level,
                s.min_chunk_chars,
                s.max_chunk_chars,
                s.embed_max_chars,
                list(s.include),
                list(s.exclude),
            ]
        )

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexUnavailableError(
                f"cannot create the index folder {self.path.parent}: {exc.strerror or exc}"
            ) from None
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    @contextlib.contextmanager
    def _open(self) -> Iterator[sqlite3.Connection]:
        conn = self._open_checked()
        try:
            yield conn
        finally:
            conn.close()

    def _open_checked(self) -> sqlite3.Connection:
        """Open, creating or migrating the schema; set aside a file that is not an index."""
        try:
            conn = self._connect()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                log.warning(
                    "index %s has schema %s, this version uses %s: rebuilding it",
                    self.path,
                    version,
                    SCHEMA_VERSION,
                )
                conn.close()
                self._set_aside("old-schema")
                conn = self._connect()
                version = 0
            if version != SCHEMA_VERSION:
                # Only when needed: setting user_version is a write, and a write on
                # every open makes each reader commit and checkpoint on close.
                conn.executescript(_SCHEMA)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("SELECT count(*) FROM meta").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            # Busy, locked or not openable is not damage: setting the file aside
            # would throw away every cached vector.
            if any(w in str(exc) for w in ("locked", "busy", "unable to open", "readonly")):
                raise IndexUnavailableError(f"index {self.path} is unavailable: {exc}") from None
            return self._rebuild_damaged(exc)
        except sqlite3.DatabaseError as exc:
            return self._rebuild_damaged(exc)

    def _rebuild_damaged(self, exc: Exception) -> sqlite3.Connection:
        log.warning("index %s is unreadable (%s): rebuilding it from the markdown", self.path, exc)
        self._set_aside("corrupt")
        conn = self._connect()
        conn.executescript(_SCHEMA)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        return conn

    def _set_aside(self, why: str) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                p.replace(p.with_name(f"{p.name}.{why}-{stamp}"))

    @contextlib.contextmanager
    def writer_lock(self, wait: bool = True) -> Iterator[bool]:
        """Hold the workspace's writer lock; yields False when ``wait`` is off and it is busy."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    @staticmethod
    def _meta(conn: sqlite3.Connection, key: str, default: str = "") -> str:
        row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def generation(self) -> int:
        """The committed generation of the text state (0 when never synced)."""
        with self._open() as conn:
            return int(self._meta(conn, "generation", "0"))

    # ------------------------------------------------------------------- sync
    def is_stale(self) -> bool:
        """Cheap check (one directory walk and a stat per file) for unindexed changes."""
        try:
            with self._open() as conn:
                if self._meta(conn, "chunker") != self.chunker_signature:
                    return True
                known = {
                    p: (s, m) for p, s, m in conn.execute("SELECT path, size, mtime_ns FROM files")
                }
        except sqlite3.Error:
            return True
        files = discover(self.workspace, self.settings)
        if len(files) != len(known):
            return True
        for f in files:
            try:
                st = f.abs_path.stat()
            except OSError:
                return True
            if known.get(f.path) != (st.st_size, st.st_mtime_ns):
                return True
        return False

    def sync(self, wait: bool = True) -> SyncReport:
        """Bring the text state (files, chunks, postings) up to date in one transaction.

        Args:
            wait: Block on another writer; when False and one is busy, return at once.
        """
        report = SyncReport()
        with self.writer_lock(wait) as locked:
            if not locked:
                return report
            with self._open() as conn:
                self._sync_locked(conn, report)
        self._snapshot = None
        return report

    def _sync_locked(self, conn: sqlite3.Connection, report: SyncReport) -> None:
        settings = self.settings
        rechunk_all = self._meta(conn, "chunker") != self.chunker_signature
        known = {
            row[0]: row[1:] for row in conn.execute("SELECT path, size, mtime_ns, hash FROM files")
        }
        files = discover(self.workspace, settings)
        report.files = len(files)
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
                lines, st = self._read_stable(f)
            except UnreadableFileError as exc:
                log.warning("skipping %s", exc)
                report.skipped.append(f.path)
                continue
            digest = _sha("\n".join(lines))
            if old and not rechunk_all and old[2] == digest:
                touched.append((f.path, st.st_size, st.st_mtime_ns))
                continue
            original = settings.chunking == "original"
            chunks = chunk_lines(
                lines, default_header=f.abs_path.name, settings=settings, original=original
            )
            fresh.append((f, st, digest, chunks))
        present = {f.path for f in files} - set(report.skipped)
        deleted = [p for p in known if p not in present]
        if rechunk_all:
            deleted = list(known)
        report.changed = [f.path for f, *_ in fresh]
        report.deleted = [p for p in deleted if p not in report.changed]

        conn.execute("BEGIN IMMEDIATE")
        try:
            for path, size, mtime in touched:
                conn.execute(
                    "UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime, path)
                )
            if report.changed_anything or rechunk_all:
                gone = set(deleted) | set(report.changed)
                conn.executemany("DELETE FROM chunks WHERE path=?", [(p,) for p in gone])
                conn.executemany("DELETE FROM files WHERE path=?", [(p,) for p in gone])
                for f, st, digest, chunks in fresh:
                    conn.execute(
                        "INSERT INTO files(path, size, mtime_ns, hash, kind, date)"
                        " VALUES (?,?,?,?,?,?)",
                        (
                            f.path,
                            st.st_size,
                            st.st_mtime_ns,
                            digest,
                            f.kind,
                            f.date.isoformat() if f.date else None,
                        ),
                    )
                    conn.executemany(
                        "INSERT INTO chunks(path, start_line, end_line, header, headers, text,"
                        " chunk_id, embed_hash, terms) VALUES (?,?,?,?,?,?,?,?,?)",
                        [
                            (
                                f.path,
                                c.start_line,
                                c.end_line,
                                c.header,
                                " > ".join(c.headers),
                                c.text,
                                _sha(f.path + "\n" + c.text)[:16],
                                _sha(embed_text(c, settings)),
                                " ".join(tokenize(keyword_text(c))),
                            )
                            for c in chunks
                        ],
                    )
                generation = int(self._meta(conn, "generation", "0")) + 1
                self._write_postings(conn, generation)
                conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('generation', ?), ('chunker', ?)",
                    (str(generation), self.chunker_signature),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        report.generation = int(self._meta(conn, "generation", "0"))
        report.chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]

    @staticmethod
    def _read_stable(f: MemoryFile) -> tuple[list[str], os.stat_result]:
        """Read a file, re-reading when it changed under us (an agent appending to it)."""
        for _ in range(3):
            before = f.abs_path.stat()
            lines = read_lines(f.abs_path)
            after = f.abs_path.stat()
            if (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns):
                return lines, after
        return lines, after

    @staticmethod
    def _write_postings(conn: sqlite3.Connection, generation: int) -> None:
        rows = conn.execute("SELECT terms, headers, path FROM chunks ORDER BY id").fetchall()
        # Header chains and paths repeat across chunks: tokenize each distinct one once.
        header_terms = {h: tokenize(h) for h in {r[1] for r in rows}}
        path_terms = {p: tokenize(path_text(p)) for p in {r[2] for r in rows}}
        posts = {
            "text": Postings.build(r[0].split() for r in rows),
            "phrase": Postings.build(phrases(r[0].split()) for r in rows),
            "header": Postings.build(header_terms[r[1]] for r in rows),
            "path": Postings.build(path_terms[r[2]] for r in rows),
        }
        conn.execute(
            "INSERT OR REPLACE INTO derived VALUES ('postings', ?, ?)",
            (generation, _pack_postings(posts)),
        )

    # -------------------------------------------------------------- embedding
    def missing_embeddings(self, model: str) -> list[tuple[str, str]]:
        """``(embed_hash, text)`` of chunks, then lines, lacking a vector for ``model`` (unique)."""
        with self._open() as conn:
            if self._complete(conn, model):
                return []
            # One scan of the cached hashes beats a primary-key probe per chunk: the
            # cache's B-tree holds the vectors inline, so each probe reads a few pages.
            cached = {
                h
                for (h,) in conn.execute(
                    "SELECT text_hash FROM embed_cache WHERE model=?", (model,)
                )
            }
            ids = [
                i
                for i, h in conn.execute("SELECT id, embed_hash FROM chunks ORDER BY id")
                if h not in cached
            ]
            rows = []
            for lo in range(0, len(ids), 500):
                part = ids[lo : lo + 500]
                rows += conn.execute(
                    "SELECT embed_hash, header, headers, text FROM chunks"
                    f" WHERE id IN ({','.join('?' * len(part))}) ORDER BY id",
                    part,
                ).fetchall()
            lines = self._line_hashes(conn) if self.settings.line_vector_share else []
        out: dict[str, str] = {}
        for h, header, headers, text in rows:
            chunk = Chunk(0, 0, header, tuple(headers.split(" > ")), text)
            out.setdefault(h, embed_text(chunk, self.settings))
        for _, h, line in lines:
            if h not in cached:
                out.setdefault(h, line)
        return list(out.items())

    def _complete(self, conn: sqlite3.Connection, model: str) -> bool:
        """Whether this generation's matrices were stored, which happens only when complete.

        Saves a re-index with nothing to do from hashing every line and scanning
        the whole embedding cache.
        """
        names = [f"matrix:{model}"]
        if self.settings.line_vector_share:
            names.append(f"line-owner:{model}")
        (stored,) = conn.execute(
            "SELECT count(*) FROM derived WHERE generation=?"
            f" AND name IN ({','.join('?' * len(names))})",
            (int(self._meta(conn, "generation", "0")), *names),
        ).fetchone()
        return bool(stored == len(names))

    def _line_hashes(self, conn: sqlite3.Connection) -> list[tuple[int, str, str]]:
        """``(chunk row, hash, text)`` of every chunk's lines, in chunk order."""
        max_chars = self.settings.embed_max_chars
        return [
            (row, _sha(line), line)
            for row, (text,) in enumerate(conn.execute("SELECT text FROM chunks ORDER BY id"))
            for line in line_texts(text, max_chars)
        ]

    def store_embeddings(self, model: str, hashes: list[str], vectors: np.ndarray) -> None:
        """Add vectors to the embedding cache (one transaction; survives a later failure)."""
        with self._open() as conn:
            self._store(conn, model, hashes, vectors)

    @staticmethod
    def _store(
        conn: sqlite3.Connection, model: str, hashes: list[str], vectors: np.ndarray
    ) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        conn.execute("BEGIN IMMEDIATE")
        rows = [(model, h, v.shape[0], v.tobytes()) for h, v in zip(hashes, vectors, strict=False)]
        conn.executemany("INSERT OR REPLACE INTO embed_cache VALUES (?,?,?,?)", rows)
        conn.execute("COMMIT")

    def vector_dim(self, model: str) -> int | None:
        """Dimension of the vectors cached for ``model``, None when there are none."""
        with self._open() as conn:
            row = conn.execute(
                "SELECT dim FROM embed_cache WHERE model=? LIMIT 1", (model,)
            ).fetchone()
        return int(row[0]) if row else None

    def embed_missing(
        self,
        model: str,
        embed: Callable[[list[str]], np.ndarray],
        *,
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
        wait: bool = True,
    ) -> int:
        """Embed every chunk lacking a vector for ``model``, committing batch by batch.

        Holds the writer lock, so two runs at once embed each text once, not twice.

        Args:
            model: Model id the vectors are cached under.
            embed: Texts to an ``(n, d)`` array; raises on failure.
            batch_size: Texts per call (defaults to the settings).
            progress: Called with the number of texts done after each batch.
            wait: Block on another writer; when False and one is busy, embed nothing.

        Returns:
            How many texts were embedded.
        """
        with self.writer_lock(wait) as locked:
            return self._embed_missing_locked(model, embed, batch_size, progress) if locked else 0

    def _embed_missing_locked(
        self,
        model: str,
        embed: Callable[[list[str]], np.ndarray],
        batch_size: int | None,
        progress: Callable[[int], None] | None,
    ) -> int:
        todo = self.missing_embeddings(model)
        if todo:
            from .migrate import seed_from_vectors_json

            # Reuse the original skill's memory/vectors.json (read once per version).
            if seed_from_vectors_json(self, model):
                self._forget_vectors(model)
                todo = self.missing_embeddings(model)
        size = batch_size or self.settings.embed_batch_size
        batches = [todo[i : i + size] for i in range(0, len(todo), size)]
        done = 0
        dim = self.vector_dim(model) if batches else None
        # With nothing cached yet, the first batch fixes the dimension on its own:
        # batches in flight together reach the server in any order, and a server
        # misbehaving for a moment must not set the size every later vector is held to.
        head = batches[:1] if dim is None else []
        runs = itertools.chain(
            _embed_batches(embed, head, 1),
            _embed_batches(embed, batches[len(head) :], self.settings.embed_concurrency),
        )
        # One connection for the run: a commit per batch, not a checkpoint per batch.
        with self._open() as conn:
            for batch, vectors in runs:
                # Batches in flight at once were not checked against each other: one size only.
                if dim is not None and vectors.shape[1] != dim:
                    from .embeddings import EmbeddingError

                    raise EmbeddingError(
                        f"embedder returned {vectors.shape[1]}-d vectors, expected {dim}"
                        f" (the size already cached for {model})",
                        kind="invalid_output",
                    )
                dim = vectors.shape[1]
                self._store(conn, model, [h for h, _ in batch], vectors)
                done += len(batch)
                if progress:
                    progress(len(batch))
        if todo:
            self._forget_vectors(model)
        return done

    def _forget_vectors(self, model: str) -> None:
        """Drop this process's copy of ``model``'s matrix: new vectors were stored."""
        self._vector_cache.pop(model, None)
        self._line_cache.pop(model, None)
        if self._snapshot is not None and self._snapshot.model == model:
            self._snapshot.model = None

    # ---------------------------------------------------------------- reading
    def snapshot(self, model: str | None = None) -> Snapshot:
        """The current generation as arrays (cached until the generation changes)."""
        with self._open() as conn:
            conn.execute("BEGIN")
            try:
                generation = int(self._meta(conn, "generation", "0"))
                snap = self._snapshot
                if snap is None or snap.generation != generation:
                    snap = self._load_snapshot(conn, generation)
                    self._snapshot = snap
                if model is not None and snap.model != model:
                    snap.vectors, snap.has_vector = self._load_vectors(conn, model, generation)
                    snap.line_vectors = snap.line_owner = None
                    if self.settings.line_vector_share:
                        snap.line_vectors, snap.line_owner = self._load_lines(
                            conn, model, generation, snap.vectors.shape[1]
                        )
                    snap.model = model
                elif model is None:
                    snap.vectors = snap.has_vector = snap.model = None
                    snap.line_vectors = snap.line_owner = None
            finally:
                conn.execute("COMMIT")
        return snap

    def _load_snapshot(self, conn: sqlite3.Connection, generation: int) -> Snapshot:
        rows = conn.execute(
            "SELECT c.id, c.path, c.start_line, c.end_line, c.header, c.headers, c.text,"
            " f.kind, f.date FROM chunks c JOIN files f ON f.path = c.path ORDER BY c.id"
        ).fetchall()
        blob = conn.execute("SELECT data FROM derived WHERE name='postings'").fetchone()
        if blob is None:
            empty = Postings.build([])
            posts = {name: empty for name in POSTINGS_FIELDS}
        else:
            posts = _unpack_postings(blob[0])
        cols = list(zip(*rows, strict=False)) if rows else [()] * 9
        dates = list(cols[8])
        return Snapshot(
            generation=generation,
            ids=np.asarray(cols[0], dtype=np.int64),
            paths=list(cols[1]),
            start=np.asarray(cols[2], dtype=np.int32),
            end=np.asarray(cols[3], dtype=np.int32),
            header=list(cols[4]),
            headers=list(cols[5]),
            texts=list(cols[6]),
            kinds=list(cols[7]),
            dates=dates,
            day=np.asarray(
                [date.fromisoformat(d).toordinal() if d else -1 for d in dates], dtype=np.int64
            ),
            text_post=posts["text"],
            phrase_post=posts["phrase"],
            header_post=posts["header"],
            path_post=posts["path"],
        )

    def _load_vectors(
        self, conn: sqlite3.Connection, model: str, generation: int
    ) -> tuple[np.ndarray, np.ndarray]:
        cached = self._vector_cache.get(model)
        if cached and cached[0] == generation:
            return cached[1], cached[2]
        # Raw float32 rows, read without a copy (the matrix is the biggest thing in memory).
        name = f"matrix:{model}"
        row = conn.execute("SELECT generation, data FROM derived WHERE name=?", (name,)).fetchone()
        if row and row[0] == generation:
            n = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            flat = np.frombuffer(row[1], dtype=np.float32)
            vectors = flat.reshape(n, -1) if n else np.zeros((0, 0), np.float32)
            mask = np.ones(n, dtype=bool)
        else:
            vectors, mask = self._assemble_vectors(conn, model)
        if mask.all() and not (row and row[0] == generation):
            self._save_vectors(name, generation, vectors)
        self._vector_cache[model] = (generation, vectors, mask)
        return vectors, mask

    def _load_lines(
        self, conn: sqlite3.Connection, model: str, generation: int, dim: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Line vectors and the chunk row of each; lines not embedded yet are left out."""
        cached = self._line_cache.get(model)
        if cached and cached[0] == generation:
            return cached[1], cached[2]
        names = (f"lines:{model}", f"line-owner:{model}")
        stored = dict(
            conn.execute(
                "SELECT name, data FROM derived WHERE name IN (?, ?) AND generation=?",
                (*names, generation),
            ).fetchall()
        )
        owner = np.frombuffer(stored.get(names[1], b""), dtype=np.int32)
        flat = np.frombuffer(stored.get(names[0], b""), dtype=np.float16)
        if len(stored) == 2 and flat.size == owner.size * dim:
            vectors = flat.reshape(owner.size, dim)
        else:  # not stored yet for this generation (or by an older version)
            vectors, owner, complete = self._assemble_lines(conn, model)
            if complete:
                self._save_vectors(names[0], generation, vectors)
                self._save_vectors(names[1], generation, owner)
        self._line_cache[model] = (generation, vectors, owner)
        return vectors, owner

    def _assemble_lines(
        self, conn: sqlite3.Connection, model: str
    ) -> tuple[np.ndarray, np.ndarray, bool]:
        lines = self._line_hashes(conn)
        found: dict[str, bytes] = {}
        wanted = sorted({h for _, h, _ in lines})
        for lo in range(0, len(wanted), 500):
            part = wanted[lo : lo + 500]
            found.update(
                conn.execute(
                    "SELECT text_hash, vector FROM embed_cache WHERE model=?"
                    f" AND text_hash IN ({','.join('?' * len(part))})",
                    (model, *part),
                ).fetchall()
            )
        dim = next((len(b) // 4 for b in found.values()), 0)
        kept = [(row, found[h]) for row, h, _ in lines if len(found.get(h, b"")) == dim * 4 > 0]
        # Half precision: lines outnumber chunks several times over, and a cosine
        # needs no more than three digits to rank.
        vectors = np.zeros((len(kept), dim), dtype=np.float16)
        for i, (_, blob) in enumerate(kept):
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
        owner = np.asarray([row for row, _ in kept], dtype=np.int32)
        return vectors, owner, len(kept) == len(lines)

    @staticmethod
    def _assemble_vectors(conn: sqlite3.Connection, model: str) -> tuple[np.ndarray, np.ndarray]:
        rows = conn.execute(
            "SELECT e.vector FROM chunks c LEFT JOIN embed_cache e"
            " ON e.model=? AND e.text_hash=c.embed_hash ORDER BY c.id",
            (model,),
        ).fetchall()
        dim = next((len(r[0]) // 4 for r in rows if r[0] is not None), 0)
        vectors = np.zeros((len(rows), dim), dtype=np.float32)
        mask = np.zeros(len(rows), dtype=bool)
        for i, (blob,) in enumerate(rows):
            if blob is not None and len(blob) == dim * 4:
                vectors[i] = np.frombuffer(blob, dtype=np.float32)
                mask[i] = True
        return vectors, mask

    def _save_vectors(self, name: str, generation: int, vectors: np.ndarray) -> None:
        """Persist a complete array (kept in its dtype) so the next process loads it in one read."""
        try:
            with self._open() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO derived VALUES (?, ?, ?)",
                    (name, generation, np.ascontiguousarray(vectors).tobytes()),
                )
        except sqlite3.Error as exc:  # read-only index: fine, we assemble again next time
            log.debug("could not cache the vector matrix: %s", exc)

    def stats(self) -> dict[str, int]:
        """Counts of files, chunks and cached vectors."""
        with self._open() as conn:
            return {
                "files": conn.execute("SELECT count(*) FROM files").fetchone()[0],
                "chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
                "cached_vectors": conn.execute("SELECT count(*) FROM embed_cache").fetchone()[0],
                "generation": int(self._meta(conn, "generation", "0")),
            }
