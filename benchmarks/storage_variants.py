"""The two SQLite prototypes ``storage.py`` measures against the package's store.

- :class:`BlobStore` (C): posting lists as BLOB rows, one per field and term
  (``post``: term key -> the chunk ids and term frequencies as packed arrays);
  a change rewrites, in its one transaction, the rows of every term its old
  and new chunks hold (``fwd`` keeps each chunk's term keys to find them).
- :class:`FtsStore` (B'): an FTS5 table over the package's own terms (space
  joined, FTS5's ``ascii`` tokenizer, so FTS5's tokens are the package's terms:
  checked at each build) gives each query term's candidates, all its matches,
  with FTS5's ``bm25()``. FTS5 does not hand out a term frequency, but its
  ``bm25()`` of one term is a known function of it (k1 1.2, b 0.75, the row's
  and the average size in tokens, the term's IDF from its match count): the
  frequency is solved from it and checked against the package's at each build.

Both hand the package's BM25 (``core.scoring``, through ``core.ranking``) the
same rows and frequencies ``Postings`` would, so both rank as the package does.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

import numpy as np
from storage_proto import Batch, ProtoStore

FIELDS = ("text", "phrase", "header", "path")
FWD = np.dtype([("f", "u1"), ("k", "<i8")])  # a chunk's (field, term key) in C's ``fwd``


def postings(batch: Batch) -> list[Any]:
    """The batch's four fields as the package's ``Postings`` (documents from 0)."""
    from langchain_enhanced_memory.core.scoring import Postings
    from langchain_enhanced_memory.core.text import PHRASE_SEP

    text, pairs = Postings.build_with_pairs(batch.terms, PHRASE_SEP)
    return [text, pairs, Postings.build(batch.hterms), Postings.build(batch.pterms)]


def _listed(ids: np.ndarray) -> str:
    """Chunk ids as an SQL list (integers: nothing to quote)."""
    return ",".join(map(str, ids.tolist()))


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, np.int32), np.zeros(0, np.float32)


# ------------------------------------------------------------------ C: BLOB rows
class _Lengths:
    """What the package's BM25 reads of a field besides its columns: each row's length."""

    _doc_len: np.ndarray

    @property
    def doc_len(self) -> np.ndarray:
        """The field's length (terms) of each row."""
        return self._doc_len

    @property
    def n_docs(self) -> int:
        """Rows."""
        return int(self._doc_len.shape[0])


class BlobColumns(_Lengths):
    """One field's posting lists, read from its BLOB row per term."""

    def __init__(self, conn: sqlite3.Connection, field: int, doc_len: np.ndarray, rows: Any):
        self.conn, self.field, self.row_of = conn, field, rows
        self._doc_len = doc_len

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Rows (ascending: ids are) and term frequencies of ``term``."""
        from langchain_enhanced_memory.core.invert import term_key

        key = np.uint64(term_key(term)).view(np.int64)
        row = self.conn.execute(
            "SELECT docs, tf FROM post WHERE f = ? AND k = ?", (self.field, int(key))
        ).fetchone()
        if row is None:
            return _empty()
        rows = self.row_of[np.frombuffer(row[0], "<i4")].astype(np.int32)
        return rows, np.frombuffer(row[1], "<u2").astype(np.float32)


class BlobStore(ProtoStore):
    """C: SQLite holding posting lists as BLOB rows, vectors per segment."""

    NAME = "c"
    SCHEMA = """
    CREATE TABLE IF NOT EXISTS post(f INT, k INT, docs BLOB, tf BLOB,
        PRIMARY KEY (f, k)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS fwd(id INTEGER PRIMARY KEY, keys BLOB);
    """
    _gone: tuple[np.ndarray, set[tuple[int, int]]] | None = None

    def _drop_terms(self, ids: np.ndarray) -> None:
        """Note the chunks going and their terms: :meth:`_add_terms` rewrites those rows once."""
        q = f"SELECT keys FROM fwd WHERE id IN ({_listed(ids)})"
        recs = np.frombuffer(b"".join(b for (b,) in self.conn.execute(q)), FWD)
        self.conn.execute(q.replace("SELECT keys", "DELETE"))
        self._gone = (np.sort(ids), set(zip(recs["f"].tolist(), recs["k"].tolist(), strict=True)))

    def _add_terms(self, batch: Batch) -> None:
        posts = postings(batch)
        new: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        per_doc = []
        for f, p in enumerate(posts):
            keys = p.keys.view(np.int64)
            docs = (p.docs + batch.first).astype("<i4")
            tf = p.tf.astype("<u2")
            bounds = p.indptr.tolist()
            for t, k in enumerate(keys.tolist()):
                new[(f, k)] = docs[bounds[t] : bounds[t + 1]], tf[bounds[t] : bounds[t + 1]]
            rec = np.empty(p.docs.size, FWD)
            rec["f"], rec["k"] = f, np.repeat(keys, np.diff(p.indptr))
            per_doc.append((p.docs, rec))
        gone_ids, gone_keys = self._gone or (np.zeros(0, np.int64), set())
        self._gone = None
        rows = []
        for fk in set(new) | gone_keys:
            docs, tf = new.get(fk, (np.zeros(0, "<i4"), np.zeros(0, "<u2")))
            if gone_ids.size or fk in gone_keys:  # an existing row: keep its live chunks
                old = self.conn.execute("SELECT docs, tf FROM post WHERE f = ? AND k = ?", fk)
                have = old.fetchone()
                if have is not None:
                    od, ot = np.frombuffer(have[0], "<i4"), np.frombuffer(have[1], "<u2")
                    at = np.minimum(np.searchsorted(gone_ids, od), gone_ids.size - 1)
                    keep = gone_ids[at] != od if gone_ids.size else np.ones(od.size, bool)
                    docs, tf = np.concatenate([od[keep], docs]), np.concatenate([ot[keep], tf])
            rows.append((*fk, docs.tobytes(), tf.tobytes()))
        self.conn.executemany(
            "DELETE FROM post WHERE f = ? AND k = ?", [r[:2] for r in rows if not r[2]]
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO post VALUES (?,?,?,?)", [r for r in rows if r[2]]
        )
        self._write_fwd(batch, per_doc)

    def _write_fwd(self, batch: Batch, per_doc: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Each new chunk's (field, key) records, to find its rows when it goes."""
        doc = np.concatenate([d for d, _ in per_doc])
        order = np.argsort(doc, kind="stable")
        rec = np.concatenate([r for _, r in per_doc])[order].tobytes()
        at = (np.searchsorted(doc[order], np.arange(len(batch.rows) + 1)) * FWD.itemsize).tolist()
        self.conn.executemany(
            "INSERT INTO fwd VALUES (?, ?)",
            [(batch.first + i, rec[at[i] : at[i + 1]]) for i in range(len(batch.rows))],
        )

    def _fields(self, doc_len: dict[str, np.ndarray], row_of: np.ndarray) -> dict[str, Any]:
        return {
            name: BlobColumns(self.conn, f, doc_len[name], row_of) for f, name in enumerate(FIELDS)
        }


# ----------------------------------------------------------- B': FTS5 candidates
class FtsColumns(_Lengths):
    """One field's posting lists from FTS5: a term's matches, its frequency solved from bm25().

    Args:
        conn: The store's connection.
        column: The FTS5 column of the field (``terms`` for text and phrase pairs).
        doc_len: The field's length of each row (what the package's BM25 reads).
        tokens: Each row's size in FTS5 tokens, all columns (what FTS5's bm25() reads).
        row_of: The snapshot row of each chunk id.
        pairs: Whether the terms are phrase pairs ``a_b`` (an FTS5 phrase ``"a b"``).
    """

    K1, B = 1.2, 0.75  # FTS5's bm25() constants

    def __init__(
        self,
        conn: sqlite3.Connection,
        column: str,
        doc_len: np.ndarray,
        tokens: np.ndarray,
        row_of: np.ndarray,
        pairs: bool = False,
    ) -> None:
        self.conn, self.col, self.row_of, self.pairs = conn, column, row_of, pairs
        self._doc_len, self.tokens = doc_len, tokens
        self.avgdl = float(tokens.sum()) / max(tokens.size, 1)

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Rows (ascending: FTS5 returns rowids in order) and term frequencies of ``term``."""
        from langchain_enhanced_memory.core.text import PHRASE_SEP

        phrase = " ".join(term.split(PHRASE_SEP)) if self.pairs else term
        (ids, scores) = self.conn.execute(
            "SELECT group_concat(r, ' '), group_concat(s, ' ') FROM"
            " (SELECT rowid AS r, printf('%.17g', rank) AS s FROM ft WHERE ft MATCH ?)",
            (f'{self.col} : "{phrase}"',),
        ).fetchone()
        if not ids:
            return _empty()
        rows = self.row_of[np.array(ids.split(), dtype=np.int64)]
        s = -np.array(scores.split(), dtype=np.float64)
        n, hit = self.tokens.size, rows.size
        idf = math.log((n - hit + 0.5) / (hit + 0.5))
        idf = idf if idf > 0 else 1e-6  # as FTS5 clamps it
        norm = self.K1 * (1 - self.B + self.B * self.tokens[rows] / self.avgdl)
        tf = np.rint(s * norm / (idf * (self.K1 + 1) - s))
        return rows.astype(np.int32), tf.astype(np.float32)


class FtsStore(ProtoStore):
    """B': FTS5 for candidates, the package's BM25 over them, vectors per segment.

    N is every match: each query term's FTS5 matches are its candidates, so the
    package's BM25 over them is exact (a top-N cut by FTS5's bm25() is measured
    apart, :meth:`candidates`).
    """

    NAME = "b2"
    SCHEMA = """
    CREATE VIRTUAL TABLE IF NOT EXISTS ft USING fts5(terms, hterms, pterms, tokenize='ascii');
    """

    def _drop_terms(self, ids: np.ndarray) -> None:
        self.conn.execute(f"DELETE FROM ft WHERE rowid IN ({_listed(ids)})")

    def _add_terms(self, batch: Batch) -> None:
        self.conn.executemany(
            "INSERT INTO ft(rowid, terms, hterms, pterms) VALUES (?,?,?,?)",
            [
                (int(i), " ".join(t), " ".join(h), " ".join(p))
                for i, t, h, p in zip(
                    batch.ids, batch.terms, batch.hterms, batch.pterms, strict=True
                )
            ],
        )

    def _fields(self, doc_len: dict[str, np.ndarray], row_of: np.ndarray) -> dict[str, Any]:
        tokens = (doc_len["text"] + doc_len["header"] + doc_len["path"]).astype(np.float64)
        cols = {"text": "terms", "phrase": "terms", "header": "hterms", "path": "pterms"}
        return {
            name: FtsColumns(self.conn, cols[name], doc_len[name], tokens, row_of, name == "phrase")
            for name in FIELDS
        }

    def candidates(self, terms: list[str], n: int) -> list[tuple[int, str]]:
        """FTS5's top ``n`` chunks by its own bm25() for any of ``terms`` (OR-ed), with their terms.

        What a top-N B' reads before re-scoring: each candidate's id and its
        terms (to count their frequencies); the re-scoring itself is not done.
        """
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        query = "SELECT rowid, terms FROM ft WHERE ft MATCH ? ORDER BY rank LIMIT ?"
        return self.conn.execute(query, (match, n)).fetchall() if terms else []

    def build(self) -> dict[str, Any]:
        """Index from nothing; check FTS5's frequencies are the package's (``terms_round_trip``)."""
        out = super().build()
        return {**out, "terms_round_trip": self.round_trip()}

    def round_trip(self, sample: int = 12) -> bool:
        """Whether the most common and some rare terms of each field read back as ``Postings``.

        Rebuilds the package's postings of the whole workspace (the store's ids
        are 1..n after a build) and compares rows and frequencies term by term.
        """
        from langchain_enhanced_memory.core.text import phrases
        from langchain_enhanced_memory.store.discovery import discover

        batch = self._batch(discover(self.workspace, self.settings))
        snap = self.snapshot()
        fields = [snap.text_post, snap.phrase_post, snap.header_post, snap.path_post]
        pairs = [phrases(d) for d in batch.terms[:2000]]  # enough for the common pairs
        vocab = [batch.terms, pairs, batch.hterms, batch.pterms]
        for post, theirs, terms in zip(postings(batch), fields, vocab, strict=True):
            counts = np.diff(post.indptr)
            picked = {*np.argsort(-counts)[:sample], *range(0, counts.size, counts.size // sample)}
            for t in _names(terms, set(post.keys[sorted(picked)].tolist())):
                want, got = post.column(t), theirs.column(t)
                if not (np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])):
                    return False
        return True


def _names(docs: list[list[str]], keys: set[int]) -> list[str]:
    """The terms of ``docs`` whose key is one of ``keys``."""
    from langchain_enhanced_memory.core.invert import term_keys

    distinct = sorted({t for d in docs for t in d})
    return [t for t, k in zip(distinct, term_keys(distinct).tolist(), strict=True) if k in keys]
