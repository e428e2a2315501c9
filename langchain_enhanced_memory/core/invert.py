"""Inverted indexes from term lists, as arrays: the build behind :class:`.scoring.Postings`.

Pure numpy and hashing, no I/O. Terms get dense ids in one dict pass, the
(term, document) pairs are counted in one sort of packed int64 codes, and
columns are ordered by term key. Adjacent term pairs (phrases) are built from
the term ids: a phrase is hashed once per distinct pair instead of being
joined, looked up and counted as a string at every occurrence (three
quarters of a cold index's postings build at 100k chunks).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Arrays", "TermIds", "pair_arrays", "term_arrays", "term_ids", "term_key", "term_keys"]

_PACKED_MAX = int(np.iinfo(np.int64).max)
#: keys, indptr, docs, tf, doc_len: the fields of a :class:`.scoring.Postings`.
Arrays = dict[str, np.ndarray]


def term_key(term: str) -> int:
    """Stable 64-bit key of a term (BLAKE2b).

    The vocabulary is a sorted ``uint64`` array of these keys instead of a
    dict of strings: a fresh process loads it without building millions of
    Python objects (phrase pairs make the vocabulary large), and a collision
    needs about 2**32 distinct terms.
    """
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def term_keys(terms: Iterable[str]) -> np.ndarray:
    """:func:`term_key` of each term, as one ``uint64`` array."""
    return _keys(t.encode("utf-8", "surrogatepass") for t in terms)


def _keys(encoded: Iterable[bytes]) -> np.ndarray:
    b2 = hashlib.blake2b
    return np.frombuffer(b"".join([b2(e, digest_size=8).digest() for e in encoded]), "<u8").copy()


class _Vocab(dict):
    """Term -> id, assigning the next id to an unseen term on lookup."""

    def __missing__(self, term: str) -> int:
        self[term] = n = len(self)
        return n


@dataclass(frozen=True)
class TermIds:
    """Documents as term ids.

    Attributes:
        ids: The id of each term occurrence, documents one after another.
        lengths: Terms in each document.
        vocab: The term of each id (ids in order of first occurrence).
    """

    ids: np.ndarray
    lengths: np.ndarray
    vocab: list[str]

    @property
    def doc(self) -> np.ndarray:
        """The document of each occurrence."""
        return np.repeat(np.arange(self.lengths.size, dtype=np.int64), self.lengths)


def term_ids(documents: Iterable[Sequence[str]]) -> TermIds:
    """Each document's terms (repeats kept) as ids."""
    vocab = _Vocab()
    # Machine ints, not a list of Python ones: a long note has millions of terms.
    ids = array("q")
    lengths = array("q")
    for terms in documents:
        lengths.append(len(terms))
        ids.extend(map(vocab.__getitem__, terms))
    return TermIds(np.frombuffer(ids, np.int64), np.frombuffer(lengths, np.int64), [*vocab])


def term_arrays(t: TermIds) -> Arrays:
    """The postings of the documents' terms: columns by term key, documents ascending."""
    keys = term_keys(t.vocab)
    order = np.argsort(keys, kind="stable")
    rank = np.empty(keys.size, dtype=np.int64)
    rank[order] = np.arange(keys.size)
    # Codes already in key order: the columns come out sorted.
    _, indptr, docs, tf = _columns(rank[t.ids], t.doc, t.lengths.size, keys.size)
    return _arrays(keys[order], indptr, docs, tf, t.lengths)


def pair_arrays(t: TermIds, sep: str) -> Arrays:
    """The postings of the documents' adjacent term pairs, each pair ``left + sep + right``.

    The same as :func:`term_arrays` of the pairs as strings
    (:func:`.text.phrases`), from the term ids: pairs are int64 codes, and
    only the distinct ones are hashed.
    """
    doc = t.doc
    inside = doc[1:] == doc[:-1]  # pairs do not cross documents
    n = max(len(t.vocab), 1)
    codes = (t.ids[:-1] * n + t.ids[1:])[inside]
    values, indptr, docs, tf = _columns(codes, doc[1:][inside], t.lengths.size, n * n)
    left = [(w + sep).encode("utf-8", "surrogatepass") for w in t.vocab]
    right = [w.encode("utf-8", "surrogatepass") for w in t.vocab]
    # encode(a + sep + b) == encode(a + sep) + encode(b): sep keeps surrogates apart.
    pairs = zip((values // n).tolist(), (values % n).tolist(), strict=True)
    keys = _keys([left[a] + right[b] for a, b in pairs])
    order = np.argsort(keys, kind="stable")
    counts = np.diff(indptr)[order]
    out = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    # Columns moved into key order: entry j of a moved column comes from its old start + j.
    src = np.repeat(indptr[:-1][order] - out[:-1], counts) + np.arange(int(out[-1]))
    return _arrays(keys[order], out, docs[src], tf[src], np.maximum(t.lengths - 1, 0))


def _columns(
    codes: np.ndarray, docs: np.ndarray, n_docs: int, span: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group (code, document) occurrences, ``0 <= code < span``, as columns by code.

    Returns:
        The distinct codes, the column pointers, and each distinct pair's
        document and count (codes ascending, documents ascending within one).
    """
    n = max(n_docs, 1)
    if span <= _PACKED_MAX // n:  # one sort of packed codes
        packed, tf = np.unique(codes * n + docs, return_counts=True)
        codes, docs = packed // n, packed % n
    else:
        order = np.lexsort((docs, codes))
        codes, docs = codes[order], docs[order]
        first = np.ones(codes.size, dtype=bool)
        first[1:] = (codes[1:] != codes[:-1]) | (docs[1:] != docs[:-1])
        at = np.flatnonzero(first)
        codes, docs, tf = codes[at], docs[at], np.diff(np.append(at, codes.size))
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if codes.size else codes[:0]
    return codes[starts], np.append(starts, codes.size).astype(np.int64), docs, tf


def _arrays(
    keys: np.ndarray, indptr: np.ndarray, docs: np.ndarray, tf: np.ndarray, lengths: np.ndarray
) -> Arrays:
    return {
        "keys": keys,
        "indptr": indptr,
        "docs": docs.astype(np.int32),
        "tf": tf.astype(np.float32),
        "doc_len": lengths.astype(np.float32),
    }
