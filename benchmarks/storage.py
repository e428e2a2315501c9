"""The storage choice, measured: today's store against a library-based one, same tokens and ranking.

Two stores index the same seeded synthetic workspace (``synthetic.py``, written
as ``speed.py`` writes it) and answer the same queries through the package's own
ranking (``core.ranking.rank`` over a ``core.snapshot.Snapshot``):

- **A, today's store**: ``MemorySearch`` / ``MemoryIndex`` as ``speed.py`` uses
  them (posting-list segments, chunk rows and vector segments in side files,
  the spool, folds and merges).
- **B, a library-based prototype** (in this file, not package code): SQLite
  FTS5 over the package's own terms (``core.text.tokenize`` of the same text,
  stored space-joined, FTS5's ``ascii`` tokenizer, which splits only at ASCII
  non-alphanumerics, so every term comes back whole: checked at each build)
  gives each term's candidate documents and term frequencies
  (``fts5vocab`` 'instance'); phrase pairs come from the same rows' positions;
  BM25 is the package's (``core.scoring.bm25``) over those columns, so the
  ranking is the same function of the same statistics. Vectors are one int8
  matrix of chunk rows and one of line rows per generation (``np.save``, read
  with ``mmap``), rewritten whole by every change, scored with the package's
  ``core.vectorset.VectorSet``. Full hybrid fusion runs on B's snapshot.

Each phase runs in a fresh process (peak RSS is the child's ``ru_maxrss``):
``cold`` (index from nothing, vectors from the model-free fake embedder),
``load`` (a fresh process: load, then one hybrid query), ``search`` (keyword,
vector and hybrid queries: p50 of ``rank`` + top-5 + reading the top rows'
path and text; the top-10s for the agreement check) and ``onechange`` (append
a section to the latest daily note, bring the index up to date; the note is
restored afterwards).

Run ``python benchmarks/storage.py --sizes 10000,100000 --runs 2`` (3-6 minutes on 2 busy
cores; workspaces and indexes go under ``--root``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import speed  # noqa: E402
import synthetic  # noqa: E402

EDIT = "\n## Added later\n\nBenchmark edit: moved the retro to Thursday with Grace.\n"
# Today's store, as the issue counts it (store/ and core/ modules of the log-structured index).
A_MODULES = [
    *(
        f"store/{m}.py"
        for m in (
            "postings chunkrows vector_segments folding spool snapshots embed_cache heap".split()
        )
    ),
    *(f"core/{m}.py" for m in "segments strings vectorset invert".split()),
]


# ------------------------------------------------------- B: prototype store (begin)
FTS = (("ft", "terms"), ("ft_h", "hterms"), ("ft_p", "pterms"))  # an FTS5 table per field


class FtsTerms:
    """One FTS5 table's term occurrences, read per term through its ``fts5vocab`` 'instance' table.

    The last :attr:`KEEP` terms' occurrences are kept: a query reads each of its
    terms for BM25, for the coverage and again for its phrase pairs (few
    enough that another query's terms are seldom still there).
    """

    KEEP = 8

    def __init__(self, conn: sqlite3.Connection, vocab: str) -> None:
        self.conn, self.vocab = conn, vocab
        self._kept: dict[str, np.ndarray] = {}

    def occurrences(self, term: str) -> np.ndarray:
        """``chunk id << 20 | position`` of each occurrence of ``term``, ascending.

        ``fts5vocab`` lists a term's instances by chunk id, then position
        (:meth:`FtsStore.build` checks it on the most common term).
        """
        if term not in self._kept:
            # One string per term, parsed by numpy: a row per occurrence through the
            # sqlite3 module would make a Python tuple each (100k of them for a common term).
            (text,) = self.conn.execute(
                f"SELECT group_concat((doc << 20) + offset, ' ') FROM {self.vocab} WHERE term = ?",
                (term,),
            ).fetchone()
            if len(self._kept) >= self.KEEP:
                del self._kept[next(iter(self._kept))]
            self._kept[term] = np.fromstring(text or "", dtype=np.int64, sep=" ")
        return self._kept[term]


class FtsColumns:
    """One field's postings as ``core.scoring.PostingLists``, from an FTS5 table's occurrences.

    Args:
        terms: The field's FTS5 table.
        doc_len: Terms in each row (float32).
        row_of: The snapshot row of each chunk id (-1: not live).
        pairs: Whether terms are phrase pairs ``a_b``, counted from positions.
    """

    def __init__(
        self, terms: FtsTerms, doc_len: np.ndarray, row_of: np.ndarray, pairs: bool = False
    ) -> None:
        self.terms, self.row_of, self.pairs = terms, row_of, pairs
        self._doc_len = doc_len

    @property
    def doc_len(self) -> np.ndarray:
        """Terms in each row."""
        return self._doc_len

    @property
    def n_docs(self) -> int:
        """Rows."""
        return int(self._doc_len.shape[0])

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Rows and term frequencies of ``term`` (rows ascending)."""
        from langchain_enhanced_memory.core.text import PHRASE_SEP

        if self.pairs:
            left, _, right = term.partition(PHRASE_SEP)
            # A pair occurs where the right term sits one position after the left, same chunk
            # (both lists ascending: a binary search each, not a hash of both).
            a, b = self.terms.occurrences(left) + 1, self.terms.occurrences(right)
            at = np.minimum(np.searchsorted(b, a), max(b.size - 1, 0))
            hit = a[b[at] == a] if b.size else b
        else:
            hit = self.terms.occurrences(term)
        # Occurrences are in chunk order: a chunk's are one run, its length the tf.
        chunk = hit >> 20
        starts = np.flatnonzero(np.r_[True, chunk[1:] != chunk[:-1]]) if chunk.size else chunk
        ids, tf = chunk[starts], np.diff(np.r_[starts, chunk.size])
        rows = self.row_of[ids]
        live = rows >= 0
        return rows[live].astype(np.int32), tf[live].astype(np.float32)


class LazyTexts(Sequence[str]):
    """Chunk texts read from SQLite when a row is shown or fed back (not held in memory)."""

    def __init__(self, conn: sqlite3.Connection, ids: np.ndarray) -> None:
        self.conn, self.ids = conn, ids

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        row = self.conn.execute("SELECT text FROM chunks WHERE id = ?", (int(self.ids[i]),))
        return row.fetchone()[0]


class FtsStore:
    """The library-based prototype: SQLite FTS5 for the text signals, int8 matrices for vectors.

    ``<workspace>/.storage-bench/`` holds ``b.sqlite`` (files, chunks with their
    terms, an external-content FTS5 table over them) and ``vec-<generation>/``
    (chunk and line rows, int8 with a scale each), named by the ``generation``
    row committed with the text.
    """

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);
    CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, size INT, mtime_ns INT,
        kind TEXT, date TEXT);
    CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, path TEXT, start_line INT,
        end_line INT, header TEXT, headers TEXT, text TEXT, terms TEXT, hterms TEXT, pterms TEXT,
        nterms INT, nh INT, np INT);
    CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
    CREATE VIRTUAL TABLE IF NOT EXISTS ft USING fts5(terms,
        content='chunks', content_rowid='id', tokenize='ascii');
    CREATE VIRTUAL TABLE IF NOT EXISTS ft_h USING fts5(hterms,
        content='chunks', content_rowid='id', tokenize='ascii');
    CREATE VIRTUAL TABLE IF NOT EXISTS ft_p USING fts5(pterms,
        content='chunks', content_rowid='id', tokenize='ascii');
    CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(ft, instance);
    CREATE VIRTUAL TABLE IF NOT EXISTS vocab_h USING fts5vocab(ft_h, instance);
    CREATE VIRTUAL TABLE IF NOT EXISTS vocab_p USING fts5vocab(ft_p, instance);
    """

    def __init__(self, workspace: str | Path) -> None:
        from langchain_enhanced_memory.core.settings import MemorySettings

        self.workspace = Path(workspace)
        self.folder = self.workspace / ".storage-bench"
        self.folder.mkdir(exist_ok=True)
        self.settings = MemorySettings()
        self.conn = sqlite3.connect(self.folder / "b.sqlite", isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(self.SCHEMA)

    # ---------------------------------------------------------------- writes
    def _chunks_of(self, files: list[Any]) -> tuple[list[tuple], list[str], list[list[str]]]:
        """Each file's chunk rows (as the package chunks and tokenizes), embed texts, lines."""
        from langchain_enhanced_memory.core.chunking import line_texts
        from langchain_enhanced_memory.core.recipe import recipe
        from langchain_enhanced_memory.core.text import path_text, tokenize
        from langchain_enhanced_memory.store.reading import read_lines
        from langchain_enhanced_memory.store.sync import embed_text, keyword_text

        s = self.settings
        chunker = recipe(s).chunker
        rows, texts, lines = [], [], []
        for f in files:
            pterms = tokenize(path_text(f.path))
            for c in chunker(read_lines(f.abs_path), f.abs_path.name):
                terms, hterms = tokenize(keyword_text(c)), tokenize(" > ".join(c.headers))
                rows.append(
                    (f.path, c.start_line, c.end_line, c.header, " > ".join(c.headers), c.text,
                     " ".join(terms), " ".join(hterms), " ".join(pterms),
                     len(terms), len(hterms), len(pterms))
                )  # fmt: skip
                texts.append(embed_text(c, s))
                lines.append(line_texts(c.text, s.embedding.embed_max_chars))
        return rows, texts, lines

    def _vectors(self, texts: list[str], lines: list[list[str]]) -> dict[str, np.ndarray]:
        """Chunk and line rows as the package forms them: a chunk with lines is their mean."""
        from langchain_enhanced_memory.core.vectorset import dequantize, quantize

        s = self.settings
        means = s.embedding.chunk_vectors == "lines" and s.vectors.line_vector_share > 0
        flat = [t for ls in lines for t in ls]
        owner = np.repeat(np.arange(len(lines), dtype=np.int64), [len(ls) for ls in lines])
        lq, ls_ = _quantized(flat)
        chunk = np.zeros((len(texts), synthetic.DIM), dtype=np.float32)
        own = [i for i, ls in enumerate(lines) if not (ls and means)]
        if own:
            q, sc = _quantized([texts[i] for i in own])
            chunk[own] = dequantize(q, sc)
        if means and flat:
            starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            sums = np.add.reduceat(dequantize(lq, ls_), starts, axis=0)
            mean = sums / np.bincount(owner)[owner[starts]][:, None]
            chunk[owner[starts]] = mean / np.linalg.norm(mean, axis=1, keepdims=True)
        cq, cs = quantize(chunk)
        return {"matrix": cq, "scale": cs, "lines": lq, "line_scale": ls_, "owner": owner}

    def _write_vectors(self, generation: int, arrays: dict[str, np.ndarray]) -> None:
        """The generation's matrices, written whole under a temporary name, then renamed."""
        tmp = self.folder / f"vec-{generation}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for name, arr in arrays.items():
            with open(tmp / f"{name}.npy", "wb") as fh:
                np.save(fh, np.ascontiguousarray(arr))
                fh.flush()
                os.fsync(fh.fileno())
        tmp.rename(self.folder / f"vec-{generation}")

    def _generation(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

    def _insert(self, rows: list[tuple]) -> None:
        first = (self.conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0) + 1
        self.conn.executemany(
            "INSERT INTO chunks(id, path, start_line, end_line, header, headers, text, terms,"
            " hterms, pterms, nterms, nh, np) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(first + i, *r) for i, r in enumerate(rows)],
        )
        for table, col in FTS:
            self.conn.execute(
                f"INSERT INTO {table}(rowid, {col}) SELECT id, {col} FROM chunks WHERE id >= ?",
                (first,),
            )

    def _files_row(self, f: Any) -> tuple:
        st = f.abs_path.stat()
        return (f.path, st.st_size, st.st_mtime_ns, f.kind, f.date and f.date.isoformat())

    def build(self) -> dict[str, Any]:
        """Index the workspace from nothing; check every term comes back whole from FTS5."""
        from langchain_enhanced_memory.store.discovery import discover

        t0 = time.perf_counter()
        files = discover(self.workspace, self.settings)
        rows, texts, lines = self._chunks_of(files)
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO files VALUES (?,?,?,?,?)", map(self._files_row, files))
        self._insert(rows)
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 1)")
        t1 = time.perf_counter()
        self._write_vectors(1, self._vectors(texts, lines))
        self.conn.execute("COMMIT")
        t2 = time.perf_counter()
        # Round trip: FTS5's vocabulary is exactly the package's terms, with the same counts.
        ours: dict[str, int] = {}
        for r in rows:
            for t in r[6].split():
                ours[t] = ours.get(t, 0) + 1
        query = "SELECT term, count(*) FROM vocab GROUP BY term"
        theirs = dict(self.conn.execute(query).fetchall())
        common = FtsTerms(self.conn, "vocab").occurrences(max(ours, key=ours.__getitem__))
        return {
            "chunks": len(rows),
            "text_s": t1 - t0,
            "vectors_s": t2 - t1,
            "terms_round_trip": ours == theirs and bool(np.all(np.diff(common) > 0)),
            "distinct_terms": len(ours),
        }

    def update(self) -> dict[str, Any]:
        """Bring the index up to date with the files; every change rewrites the matrices whole."""
        from langchain_enhanced_memory.store.discovery import memory_files, scan

        t0 = time.perf_counter()
        now = scan(self.workspace, self.settings)
        known = {
            p: (s, m) for p, s, m in self.conn.execute("SELECT path, size, mtime_ns FROM files")
        }
        changed = [p for p, sm in now.items() if known.get(p) != sm]
        gone = [p for p in known if p not in now]
        if not changed and not gone:
            return {"s": time.perf_counter() - t0, "changed": 0}
        generation = self._generation()
        old_ids, old = self._load_vectors(generation)
        self.conn.execute("BEGIN")
        for p in changed + gone:
            for table, col in FTS:
                self.conn.execute(
                    f"INSERT INTO {table}({table}, rowid, {col})"
                    f" SELECT 'delete', id, {col} FROM chunks WHERE path = ?",
                    (p,),
                )
            self.conn.execute("DELETE FROM chunks WHERE path = ?", (p,))
            self.conn.execute("DELETE FROM files WHERE path = ?", (p,))
        files = memory_files(self.workspace, changed)
        rows, texts, lines = self._chunks_of(files)
        self.conn.executemany("INSERT INTO files VALUES (?,?,?,?,?)", map(self._files_row, files))
        self._insert(rows)
        t1 = time.perf_counter()
        ids = np.array([r[0] for r in self.conn.execute("SELECT id FROM chunks ORDER BY id")])
        # The matrices again, whole: the kept rows (in id order), then the new chunks'.
        keep = np.isin(old_ids, ids)
        new = self._vectors(texts, lines)
        keep_lines = keep[old["owner"]]
        renumber = np.cumsum(keep) - 1
        arrays = {
            "matrix": np.concatenate([old["matrix"][keep], new["matrix"]]),
            "scale": np.concatenate([old["scale"][keep], new["scale"]]),
            "lines": np.concatenate([old["lines"][keep_lines], new["lines"]]),
            "line_scale": np.concatenate([old["line_scale"][keep_lines], new["line_scale"]]),
            "owner": np.concatenate(
                [renumber[old["owner"][keep_lines]], new["owner"] + int(keep.sum())]
            ),
        }
        self._write_vectors(generation + 1, arrays)
        self.conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (generation + 1,))
        self.conn.execute("COMMIT")
        shutil.rmtree(self.folder / f"vec-{generation}", ignore_errors=True)
        t2 = time.perf_counter()
        return {"s": t2 - t0, "text_s": t1 - t0, "vectors_s": t2 - t1, "changed": len(changed)}

    # ----------------------------------------------------------------- reads
    def _load_vectors(self, generation: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        folder = self.folder / f"vec-{generation}"
        arrays = {p.stem: np.load(p, mmap_mode="r") for p in folder.glob("*.npy")}
        ids = np.array([r[0] for r in self.conn.execute("SELECT id FROM chunks ORDER BY id")])
        return ids, arrays

    def snapshot(self) -> Any:
        """The current generation as a ``Snapshot`` the package's ranking reads."""
        from langchain_enhanced_memory.core.snapshot import Snapshot
        from langchain_enhanced_memory.core.vectorset import VectorPart, VectorSet, sign_codes

        self.conn.execute("BEGIN")  # one generation: the rows and the matrices it names
        generation = self._generation()
        files = {
            p: (kind, day, dt.date.fromisoformat(day).toordinal() if day else -1)
            for p, kind, day in self.conn.execute("SELECT path, kind, date FROM files")
        }
        cols = list(
            zip(
                *self.conn.execute(
                    "SELECT id, path, start_line, end_line, header, headers, nterms, nh, np"
                    " FROM chunks ORDER BY id"
                ),
                strict=True,
            )
        )
        _, arrays = self._load_vectors(generation)
        self.conn.execute("COMMIT")
        ids = np.asarray(cols[0], dtype=np.int64)
        row_of = np.full(int(ids[-1]) + 1, -1, dtype=np.int64)
        row_of[ids] = np.arange(ids.size)
        n_terms = np.asarray(cols[6], dtype=np.float32)
        paths = list(cols[1])
        n = ids.size
        codes = center = None
        if n >= self.settings.vectors.approximate_rows:
            codes, center = sign_codes(arrays["matrix"], arrays["scale"])
        part = VectorPart(
            arrays["matrix"], arrays["scale"], np.arange(n), arrays["lines"],
            arrays["line_scale"], arrays["owner"], codes, center,
        )  # fmt: skip
        vectors = VectorSet([part], n)
        text = FtsTerms(self.conn, "vocab")
        return Snapshot(
            generation=generation,
            ids=ids,
            paths=paths,
            start=np.asarray(cols[2], dtype=np.int32),
            end=np.asarray(cols[3], dtype=np.int32),
            header=list(cols[4]),
            headers=list(cols[5]),
            texts=LazyTexts(self.conn, ids),
            kinds=[files[p][0] for p in paths],
            dates=[files[p][1] for p in paths],
            day=np.asarray([files[p][2] for p in paths], dtype=np.int64),
            text_post=FtsColumns(text, n_terms, row_of),
            phrase_post=FtsColumns(text, np.maximum(n_terms - 1, 0), row_of, pairs=True),
            header_post=FtsColumns(
                FtsTerms(self.conn, "vocab_h"), np.asarray(cols[7], np.float32), row_of
            ),
            path_post=FtsColumns(
                FtsTerms(self.conn, "vocab_p"), np.asarray(cols[8], np.float32), row_of
            ),
            vectors=vectors,
            has_vector=vectors.has_vector,
            model=synthetic.ProjectionEmbeddings.model,
        )


def _quantized(texts: list[str], batch: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """The fake embedder's vectors of ``texts``, int8 with a scale each (in batches)."""
    from langchain_enhanced_memory.core.vectorset import quantize

    qs, ss = [np.zeros((0, synthetic.DIM), np.int8)], [np.zeros(0, np.float32)]
    for lo in range(0, len(texts), batch):
        q, s = quantize(synthetic.project(texts[lo : lo + batch]))
        qs.append(q)
        ss.append(s)
    return np.concatenate(qs), np.concatenate(ss)


# --------------------------------------------------------- B: prototype store (end)


# --------------------------------------------------------------------- phases
def _store(a: argparse.Namespace) -> tuple[Any, Any]:
    """The store's snapshot and settings (A: the package's index; B: the prototype)."""
    if a.store == "A":
        eng = speed._engine(a.workspace, True)
        return eng.index.snapshot(eng.model_id), eng.settings
    b = FtsStore(a.workspace)
    return b.snapshot(), b.settings


def _bytes(folder: Path, pattern: str = "**/*") -> int:
    return sum(p.stat().st_size for p in folder.glob(pattern) if p.is_file())


def phase_cold(a: argparse.Namespace) -> dict[str, Any]:
    if a.store == "A":
        out = speed.phase_cold(a)
        return {
            "chunks": out["chunks"],
            "text_s": out["sync_s"],
            "vectors_s": out["embed_s"] + out["first_load_s"],
            "index_bytes": out["index_bytes"],
            "vector_bytes": _bytes(
                Path(a.workspace) / ".enhanced-memory" / "index.vectors", "*.vec"
            ),
        }
    shutil.rmtree(Path(a.workspace) / ".storage-bench", ignore_errors=True)
    out = FtsStore(a.workspace).build()
    sqlite3.connect(Path(a.workspace) / ".storage-bench" / "b.sqlite").execute(
        "PRAGMA wal_checkpoint(TRUNCATE)"
    )
    folder = Path(a.workspace) / ".storage-bench"
    return {**out, "index_bytes": _bytes(folder), "vector_bytes": _bytes(folder, "vec-*/*")}


def phase_onechange(a: argparse.Namespace) -> dict[str, Any]:
    if a.store == "A":
        eng = speed._engine(a.workspace, True)
        t0 = time.perf_counter()
        report, embedded = eng.update_index()
        return {"s": time.perf_counter() - t0, "changed": len(report.changed)}
    return FtsStore(a.workspace).update()


def _query(snap: Any, settings: Any, q: str, qvec: np.ndarray | None, k: int) -> list[int]:
    """One search as a store serves it: rank, top-k, and the top rows' path and text read."""
    from langchain_enhanced_memory.core import scoring
    from langchain_enhanced_memory.core.ranking import rank
    from langchain_enhanced_memory.engine.answer import scan_thread

    r = rank(snap, q, synthetic.NOW, settings, qvec, beside=scan_thread())
    top = scoring.top_k(r.scores, k).tolist()
    for i in top:
        _ = (snap.paths[i], snap.texts[i])
    return top


def phase_load(a: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    snap, settings = _store(a)
    t1 = time.perf_counter()
    q = synthetic.queries(1)[0]
    _query(snap, settings, q, synthetic.project([q])[0], 5)
    return {"load_s": t1 - t0, "first_s": time.perf_counter() - t1}


def phase_search(a: argparse.Namespace) -> dict[str, Any]:
    from langchain_enhanced_memory.core import scoring

    snap, settings = _store(a)
    qs = synthetic.queries(a.queries)
    qvecs = synthetic.project(qs)
    idx = list(range(len(qs)))

    def key(i: int) -> str:
        return f"{snap.paths[i]}:{int(snap.start[i])}"

    def vector(i: int) -> list[int]:
        assert snap.vectors is not None
        return scoring.top_k(snap.vectors.cosines(qvecs[i]), 10).tolist()

    out: dict[str, Any] = {
        "keyword_s": speed._timed(lambda i: _query(snap, settings, qs[i], None, 5), idx),
        "vector_s": speed._timed(vector, idx),
        "hybrid_s": speed._timed(lambda i: _query(snap, settings, qs[i], qvecs[i], 5), idx),
    }
    for name, top in (
        ("keyword", lambda i: _query(snap, settings, qs[i], None, 10)),
        ("vector", vector),
        ("hybrid", lambda i: _query(snap, settings, qs[i], qvecs[i], 10)),
    ):
        out[f"top_{name}"] = [[key(j) for j in top(i)] for i in idx]
    # The store and its queries alone: before the retrievers below add their own engines.
    out["store_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.update(_invokes(a, snap, qs))
    return out


def _invokes(a: argparse.Namespace, snap: Any, qs: list[str]) -> dict[str, list[float]]:
    """``retriever.invoke`` timings, keyword-only and hybrid (B: its snapshot in the engine).

    B's engines keep A's freshness check (a watcher or a stat per file: the
    same for any store); everything from the snapshot on reads B.
    """
    from langchain_enhanced_memory import EnhancedMemoryRetriever

    out = {}
    for name, kw in (
        ("invoke_keyword_s", {"embedder": "none"}),
        ("invoke_hybrid_s", {"embeddings": synthetic.ProjectionEmbeddings()}),
    ):
        retriever = EnhancedMemoryRetriever(workspace=a.workspace, k=5, **kw)
        if a.store == "B":
            retriever.engine.index.snapshot = lambda model_id=None: snap
        out[name] = speed._timed(lambda q, r=retriever: r.invoke(q, now=synthetic.NOW), qs)
    return out


PHASES = {"cold": phase_cold, "onechange": phase_onechange, "load": phase_load}
PHASES["search"] = phase_search


# --------------------------------------------------------------------- driver
def run_phase(name: str, a: argparse.Namespace, store: str) -> dict[str, Any]:
    """Run one phase of one store in a fresh process; add its peak RSS (MB)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--phase", name, "--store", store]
    argv += ["--workspace", a.workspace, "--queries", str(a.queries)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"phase {name} of store {store} failed")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["rss_mb"] = usage.ru_maxrss / 1024  # Linux reports KiB
    return result


def bench_size(a: argparse.Namespace, size: int) -> dict[str, Any]:
    """Both stores, phase by phase, on one workspace (the edited note restored after)."""
    ws = speed.prepare(Path(a.root), size, a.seed)
    a.workspace = str(ws)
    changed = max((ws / "memory").glob("????-??-??.md"))
    original = changed.read_bytes()
    res: dict[str, Any] = {"size": size, "A": {}, "B": {}}
    try:
        for name in ("cold", "load", "search"):
            for store in ("A", "B"):
                print(f"  {size}: {store} {name} ...", file=sys.stderr, flush=True)
                res[store][name] = run_phase(name, a, store)
        with changed.open("a", encoding="utf-8") as fh:
            fh.write(EDIT)
        for store in ("A", "B"):
            print(f"  {size}: {store} onechange ...", file=sys.stderr, flush=True)
            res[store]["onechange"] = run_phase("onechange", a, store)
    finally:
        changed.write_bytes(original)
    return res


def agreement(r: dict[str, Any], name: str) -> str:
    """Queries whose top-10 lists are identical, and the mean share of the top-10 in common."""
    a, b = r["A"]["search"][f"top_{name}"], r["B"]["search"][f"top_{name}"]
    same = sum(x == y for x, y in zip(a, b, strict=True))
    shared = np.mean([len(set(x) & set(y)) / max(len(x), 1) for x, y in zip(a, b, strict=True)])
    return f"{same}/{len(a)} identical, {shared:.3f} shared"


def line_counts() -> dict[str, int]:
    """Lines of A's store modules, of all of ``store/``, and of B's prototype in this file.

    ``A`` counts :data:`A_MODULES` only, the log-structured index; ``store`` is every
    module under ``store/`` (what a fair count of "the store" holds).
    """

    def code(lines: list[str]) -> int:
        return sum(1 for s in lines if s.strip() and not s.strip().startswith("#"))

    pkg = HERE.parent / "langchain_enhanced_memory"
    a_lines = [s for m in A_MODULES for s in (pkg / m).read_text().splitlines()]
    mine = Path(__file__).read_text().splitlines()
    lo = next(i for i, s in enumerate(mine) if "B: prototype store (begin)" in s)
    hi = next(i for i, s in enumerate(mine) if "B: prototype store (end)" in s)
    return {
        "A": len(a_lines),
        "A_code": code(a_lines),
        "store": sum(len(p.read_text().splitlines()) for p in (pkg / "store").rglob("*.py")),
        "B": hi - lo - 1,
        "B_code": code(mine[lo + 1 : hi]),
    }


def table(results: list[dict[str, Any]]) -> str:
    """A vs B per size and run, as one markdown table."""
    cols: list[tuple[str, dict[str, Any], str]] = []
    for r in results:
        cols += [(f"{r['size']:,} A (run {r['run']})", r, "A")]
        cols += [(f"{r['size']:,} B (run {r['run']})", r, "B")]

    def p50(phase: str, key: str) -> Any:
        return lambda x: (
            f"{speed._pct(x[phase][key], 50):.2f} / {speed._pct(x[phase][key], 95):.1f}"
        )

    def split(x: dict[str, Any]) -> str:
        one = x["onechange"]
        return f"{one['text_s']:.3f} / {one['vectors_s']:.3f}" if "text_s" in one else "-"

    def rss(x: dict[str, Any]) -> str:
        return f"{x['search']['store_rss_mb']:.0f} / {x['search']['rss_mb']:.0f}"

    rows = [
        ("chunks", lambda x: f"{x['cold']['chunks']:,}"),
        ("cold build: text, s", lambda x: f"{x['cold']['text_s']:.1f}"),
        (
            "cold build: vectors (fake embedder included), s",
            lambda x: f"{x['cold']['vectors_s']:.1f}",
        ),
        ("query p50 / p95, keyword-only, ms", p50("search", "keyword_s")),
        ("query p50 / p95, vector scan + top-10, ms", p50("search", "vector_s")),
        ("query p50 / p95, hybrid, ms", p50("search", "hybrid_s")),
        ("retriever.invoke p50 / p95, keyword-only, ms", p50("search", "invoke_keyword_s")),
        ("retriever.invoke p50 / p95, hybrid, ms", p50("search", "invoke_hybrid_s")),
        ("one-file re-index, s", lambda x: f"{x['onechange']['s']:.3f}"),
        ("  of which text / vector rewrite, s", split),
        ("fresh process: load, s", lambda x: f"{x['load']['load_s']:.3f}"),
        ("fresh process: first hybrid query, s", lambda x: f"{x['load']['first_s']:.3f}"),
        ("search RSS: store + ranking / + two retrievers, MB", rss),
        ("index size on disk, MB", lambda x: f"{x['cold']['index_bytes'] / 2**20:.1f}"),
        ("  of which vector files, MB", lambda x: f"{x['cold']['vector_bytes'] / 2**20:.1f}"),
    ]
    head = "| | " + " | ".join(c[0] for c in cols) + " |"
    body = [
        "| " + label + " | " + " | ".join(fn(r[s]) for _, r, s in cols) + " |" for label, fn in rows
    ]
    return "\n".join([head, "|---|" + "---|" * len(cols), *body])


def main() -> int:
    """Parse arguments; run the comparison or, in a child, one phase of one store."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    p.add_argument("--runs", type=int, default=1, help="times each size is run")
    p.add_argument("--root", default="/tmp/storage-bench", help="where workspaces go")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--queries", type=int, default=60, help="queries timed per store and size")
    p.add_argument("--json", help="also write the raw results here")
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    p.add_argument("--store", choices=("A", "B"), help=argparse.SUPPRESS)
    p.add_argument("--workspace", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.phase:
        a.embed_cost_ms = 0.0
        print(json.dumps(PHASES[a.phase](a)))
        return 0
    try:
        sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        print(f"error: --sizes must be comma-separated integers, got {a.sizes!r}", file=sys.stderr)
        return 2
    Path(a.root).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = []
    for run in range(1, a.runs + 1):
        for size in sizes:
            results.append({**bench_size(a, size), "run": run})
            print(f"  {size}: done after {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    cpu = next(
        (s.split(":", 1)[1].strip() for s in Path("/proc/cpuinfo").read_text().splitlines()
         if s.startswith("model name")),
        platform.processor(),
    )  # fmt: skip
    now = dt.datetime.now(dt.timezone.utc)
    print(f"date: {now:%Y-%m-%d %H:%M} UTC; machine: {os.cpu_count()} cores,")
    print(f"{cpu}, load average {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]},")
    print(f"SQLite {sqlite3.sqlite_version}; total {time.perf_counter() - t0:.0f}s")
    print("command: python benchmarks/storage.py " + " ".join(sys.argv[1:]) + "\n")
    print(table(results) + "\n")
    for r in results:
        check = "; ".join(f"{n}: {agreement(r, n)}" for n in ("keyword", "vector", "hybrid"))
        trip = r["B"]["cold"]["terms_round_trip"]
        print(f"- {r['size']:,} run {r['run']}: top-10 A vs B, {check}; terms round-trip: {trip}")
    lc = line_counts()
    print(
        f"\nlines: A's store modules {lc['A']:,} ({lc['A_code']:,} not blank or comment),"
        f" all of store/ {lc['store']:,}; B's prototype {lc['B']} ({lc['B_code']})"
    )
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
