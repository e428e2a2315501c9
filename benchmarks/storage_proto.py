"""What the two SQLite prototypes of ``storage.py`` share: rows, vector segments, the snapshot.

A prototype keeps, under ``<workspace>/.storage-bench/<name>/``:

- ``index.sqlite``: ``files`` (size, mtime, kind, date), ``chunks`` (one row
  per chunk: place, header, text and each field's length in terms) and
  ``meta`` (the next chunk id and the list of vector segments), plus what the
  variant keeps of the terms (:mod:`storage_variants`);
- ``vec-<n>/``: one vector segment per change set, the int8 chunk rows and
  line rows of the chunks that change set added (``np.save``, read with
  ``mmap``), as the package's vector segments are: a change writes only its
  new chunks' vectors, a replaced chunk's old row is masked (its id is no
  longer a live chunk).

Chunks, terms and vectors are made exactly as the package makes them (its
chunker, ``keyword_text``, ``tokenize``, ``Postings.build_with_pairs``, the
line-vector means), so the package's ``core.ranking.rank`` ranks a
prototype's :meth:`ProtoStore.snapshot` as it ranks the package's.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import synthetic

VECTOR_FILES = ("ids", "matrix", "scale", "lines", "line_scale", "owner")


@dataclass
class Batch:
    """Some files' chunks as the package makes them, numbered from chunk id ``first``."""

    first: int
    rows: list[tuple]  # (path, start, end, header, headers, text, n text, n header, n path terms)
    terms: list[list[str]]  # the text field's terms of each chunk
    hterms: list[list[str]]
    pterms: list[list[str]]
    texts: list[str]  # what is embedded for each chunk
    lines: list[list[str]]  # its line texts

    @property
    def ids(self) -> np.ndarray:
        """The batch's chunk ids."""
        return np.arange(self.first, self.first + len(self.rows), dtype=np.int64)


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


class ProtoStore:
    """The part of a prototype store both variants share; a variant adds its terms' tables.

    Subclasses set :attr:`NAME` and :attr:`SCHEMA` and implement
    :meth:`_add_terms` (index a batch's terms), :meth:`_drop_terms` (forget the
    terms of chunks about to go) and :meth:`_fields` (the four fields' posting
    lists for a snapshot).
    """

    NAME = ""
    SCHEMA = ""
    BASE = """
    CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);
    CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, size INT, mtime_ns INT,
        ctime_ns INT, kind TEXT, date TEXT);
    CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, path TEXT, start_line INT,
        end_line INT, header TEXT, headers TEXT, text TEXT, nt INT, nh INT, np INT);
    CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
    """

    def __init__(self, workspace: str | Path) -> None:
        from langchain_enhanced_memory.core.settings import MemorySettings

        self.workspace = Path(workspace)
        self.folder = self.workspace / ".storage-bench" / self.NAME
        self.folder.mkdir(parents=True, exist_ok=True)
        self.settings = MemorySettings()
        self.conn = sqlite3.connect(self.folder / "index.sqlite", isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(self.BASE + self.SCHEMA)

    # ------------------------------------------------------------- variant hooks
    def _add_terms(self, batch: Batch) -> None:
        raise NotImplementedError

    def _drop_terms(self, ids: np.ndarray) -> None:
        raise NotImplementedError

    def _fields(self, doc_len: dict[str, np.ndarray], row_of: np.ndarray) -> dict[str, Any]:
        raise NotImplementedError

    # -------------------------------------------------------------------- writes
    def _meta(self, key: str, default: Any) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def _set_meta(self, key: str, value: Any) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def _batch(self, files: list[Any]) -> Batch:
        """The files' chunks and terms, as the package chunks and tokenizes them."""
        from langchain_enhanced_memory.core.chunking import line_texts
        from langchain_enhanced_memory.core.recipe import recipe
        from langchain_enhanced_memory.core.text import path_text, tokenize
        from langchain_enhanced_memory.store.reading import read_lines
        from langchain_enhanced_memory.store.sync import embed_text, keyword_text

        s = self.settings
        chunker = recipe(s).chunker
        b = Batch(self._meta("next_id", 1), [], [], [], [], [], [])
        for f in files:
            pterms = tokenize(path_text(f.path))
            for c in chunker(read_lines(f.abs_path), f.abs_path.name):
                terms, hterms = tokenize(keyword_text(c)), tokenize(" > ".join(c.headers))
                b.rows.append(
                    (f.path, c.start_line, c.end_line, c.header, " > ".join(c.headers), c.text,
                     len(terms), len(hterms), len(pterms))
                )  # fmt: skip
                b.terms.append(terms)
                b.hterms.append(hterms)
                b.pterms.append(pterms)
                b.texts.append(embed_text(c, s))
                b.lines.append(line_texts(c.text, s.embedding.embed_max_chars))
        return b

    def _insert(self, files: list[Any], batch: Batch) -> None:
        """The batch's files and chunk rows, its terms (the variant's), the next id."""
        self.conn.executemany("INSERT INTO files VALUES (?,?,?,?,?,?)", map(_files_row, files))
        self.conn.executemany(
            "INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(int(i), *r) for i, r in zip(batch.ids, batch.rows, strict=True)],
        )
        self._add_terms(batch)
        self._set_meta("next_id", batch.first + len(batch.rows))

    def _write_segment(self, batch: Batch) -> str:
        """The batch's vectors as a new segment (files fsynced; named once the text commits)."""
        arrays = {"ids": batch.ids, **_vectors(self.settings, batch.texts, batch.lines)}
        name = f"vec-{batch.first}"
        folder = self.folder / name
        folder.mkdir(exist_ok=True)
        for key, arr in arrays.items():
            with open(folder / f"{key}.npy", "wb") as fh:
                np.save(fh, np.ascontiguousarray(arr))
                fh.flush()
                os.fsync(fh.fileno())
        return name

    def build(self) -> dict[str, Any]:
        """Index the workspace from nothing."""
        from langchain_enhanced_memory.store.discovery import discover

        t0 = time.perf_counter()
        files = discover(self.workspace, self.settings)
        batch = self._batch(files)
        self.conn.execute("BEGIN")
        self._insert(files, batch)
        t1 = time.perf_counter()
        self._set_meta("segments", [self._write_segment(batch)])
        self.conn.execute("COMMIT")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        t2 = time.perf_counter()
        return {"chunks": len(batch.rows), "text_s": t1 - t0, "vectors_s": t2 - t1}

    def update(self) -> dict[str, Any]:
        """Bring the index up to date in one transaction; only new chunks' vectors are written."""
        from langchain_enhanced_memory.store.discovery import memory_files, scan

        t0 = time.perf_counter()
        now = scan(self.workspace, self.settings)
        stamps = self.conn.execute("SELECT path, size, mtime_ns, ctime_ns FROM files")
        known = {p: tuple(st) for p, *st in stamps}
        changed = [p for p, st in now.items() if known.get(p) != st]
        gone = [p for p in known if p not in now]
        if not changed and not gone:
            return {"s": time.perf_counter() - t0, "changed": 0}
        files = memory_files(self.workspace, changed)
        batch = self._batch(files)
        self.conn.execute("BEGIN")
        old: list[int] = []
        for p in changed + gone:
            old += [i for (i,) in self.conn.execute("SELECT id FROM chunks WHERE path = ?", (p,))]
        self._drop_terms(np.asarray(old, dtype=np.int64))
        for p in changed + gone:
            self.conn.execute("DELETE FROM chunks WHERE path = ?", (p,))
            self.conn.execute("DELETE FROM files WHERE path = ?", (p,))
        self._insert(files, batch)
        t1 = time.perf_counter()
        self._set_meta("segments", [*self._meta("segments", []), self._write_segment(batch)])
        self.conn.execute("COMMIT")
        t2 = time.perf_counter()
        return {"s": t2 - t0, "text_s": t1 - t0, "vectors_s": t2 - t1, "changed": len(changed)}

    # --------------------------------------------------------------------- reads
    def snapshot(self) -> Any:
        """The committed state as a ``Snapshot`` the package's ranking reads."""
        from langchain_enhanced_memory.core.snapshot import Snapshot, file_facts, row_columns

        self.conn.execute("BEGIN")  # one state: the rows and the segments it names
        table = [file_facts(*r) for r in self.conn.execute("SELECT path, kind, date FROM files")]
        query = "SELECT id, path, start_line, end_line, header, headers, nt, nh, np"
        cols = list(zip(*self.conn.execute(query + " FROM chunks ORDER BY id"), strict=True))
        segments = self._meta("segments", [])
        self.conn.execute("COMMIT")
        ids = np.asarray(cols[0], dtype=np.int64)
        row_of = np.full(int(self._meta("next_id", 1)), -1, dtype=np.int64)
        row_of[ids] = np.arange(ids.size)
        where = {f[0]: i for i, f in enumerate(table)}
        of_row = np.asarray([where[p] for p in cols[1]], dtype=np.int64)
        header = list(cols[4])
        paths, kinds, dates, day = row_columns(table, of_row, header)
        nt = np.asarray(cols[6], np.float32)
        doc_len = {
            "text": nt,
            "phrase": np.maximum(nt - 1, 0),
            "header": np.asarray(cols[7], np.float32),
            "path": np.asarray(cols[8], np.float32),
        }
        fields = self._fields(doc_len, row_of)
        vectors = self._vector_set(segments, row_of, ids.size)
        return Snapshot(
            generation=int(self._meta("next_id", 1)),
            ids=ids,
            paths=paths,
            start=np.asarray(cols[2], dtype=np.int32),
            end=np.asarray(cols[3], dtype=np.int32),
            header=header,
            headers=list(cols[5]),
            texts=LazyTexts(self.conn, ids),
            kinds=kinds,
            dates=dates,
            day=day,
            text_post=fields["text"],
            phrase_post=fields["phrase"],
            header_post=fields["header"],
            path_post=fields["path"],
            vectors=vectors,
            has_vector=vectors.has_vector,
            model=synthetic.ProjectionEmbeddings.model,
        )

    def _vector_set(self, segments: list[str], row_of: np.ndarray, n: int) -> Any:
        """Each segment mapped, its replaced chunks' rows masked (-1)."""
        from langchain_enhanced_memory.core.vectorset import VectorPart, VectorSet, sign_codes

        parts = []
        for name in segments:
            a = {k: np.load(self.folder / name / f"{k}.npy", mmap_mode="r") for k in VECTOR_FILES}
            codes = center = None
            if a["matrix"].shape[0] >= self.settings.vectors.approximate_rows:
                codes, center = sign_codes(a["matrix"], a["scale"])
            parts.append(
                VectorPart(
                    a["matrix"],
                    a["scale"],
                    row_of[np.asarray(a["ids"])],
                    a["lines"],
                    a["line_scale"],
                    a["owner"],
                    codes,
                    center,
                )  # fmt: skip
            )
        return VectorSet(parts, n)


def _files_row(f: Any) -> tuple:
    from langchain_enhanced_memory.store.discovery import stamp

    return (f.path, *stamp(f.abs_path.stat()), f.kind, f.date and f.date.isoformat())


def _vectors(settings: Any, texts: list[str], lines: list[list[str]]) -> dict[str, np.ndarray]:
    """Chunk and line rows as the package forms them: a chunk with lines is their mean."""
    from langchain_enhanced_memory.core.vectorset import dequantize, quantize

    means = settings.embedding.chunk_vectors == "lines" and settings.vectors.line_vector_share > 0
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


def _quantized(texts: list[str], batch: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """The fake embedder's vectors of ``texts``, int8 with a scale each (in batches)."""
    from langchain_enhanced_memory.core.vectorset import quantize

    qs, ss = [np.zeros((0, synthetic.DIM), np.int8)], [np.zeros(0, np.float32)]
    for lo in range(0, len(texts), batch):
        q, s = quantize(synthetic.project(texts[lo : lo + batch]))
        qs.append(q)
        ss.append(s)
    return np.concatenate(qs), np.concatenate(ss)
