"""Pure scoring functions over arrays: no I/O, no global state.

Each lexical field (chunk text, header chain, file path) is an inverted index
(:class:`Postings`) built once at index time; a query touches only the posting
lists of its own terms, so scoring cost grows with matches, not corpus size.
Fusing the signals into one score is :mod:`.fusion`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .invert import pair_arrays, term_arrays, term_ids, term_key

FENCE = 512  # keys per page (4 KB) of a mapped key array


class PostingLists(Protocol):
    """What scoring reads of a field's postings (:class:`Postings`, or segments of them)."""

    @property
    def doc_len(self) -> np.ndarray: ...  # noqa: D102

    @property
    def n_docs(self) -> int: ...  # noqa: D102

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]: ...  # noqa: D102


@dataclass(frozen=True)
class Postings:
    """Term -> documents inverted index in CSC layout (one column per term).

    Attributes:
        keys: Sorted :func:`term_key` of each column's term.
        indptr: ``docs[indptr[t]:indptr[t+1]]`` are the documents holding term ``t``.
        docs: Document ids, grouped by term.
        tf: Term frequency aligned with ``docs``.
        doc_len: Number of terms in each document.
        fence: Every :data:`FENCE`-th key, when ``keys`` is a map of a file: a
            lookup then reads one page of keys instead of a page per step of
            a binary search (each page a map touches counts in the RSS).
    """

    keys: np.ndarray
    indptr: np.ndarray
    docs: np.ndarray
    tf: np.ndarray
    doc_len: np.ndarray
    fence: np.ndarray | None = None  # keys[::FENCE]: find a term's page, then search it

    @property
    def n_docs(self) -> int:
        """Number of documents."""
        return int(self.doc_len.shape[0])

    @classmethod
    def build(cls, documents: Iterable[Sequence[str]]) -> Postings:
        """Build from each document's terms (repeats counted).

        Columns are ordered by term key; within a term, documents are ascending.
        """
        return cls(**term_arrays(term_ids(documents)))

    @classmethod
    def build_with_pairs(
        cls, documents: Iterable[Sequence[str]], sep: str
    ) -> tuple[Postings, Postings]:
        """:meth:`build` of the documents, and of their adjacent term pairs joined by ``sep``.

        The pairs' postings are those of :meth:`build` over ``[a + sep + b for
        each adjacent a, b]`` (:func:`.text.phrases`), without making a string
        per occurrence.
        """
        ids = term_ids(documents)
        return cls(**term_arrays(ids)), cls(**pair_arrays(ids, sep))

    def merged(self, keep: np.ndarray, added: Postings) -> Postings:
        """These postings less the documents ``keep`` is False for, then ``added``'s after them.

        Equal to :meth:`build` over the kept documents followed by the added
        ones, in time linear in the postings (array passes, no tokenizing, no
        sort): a re-index after one changed file merges that file's chunks in
        instead of rebuilding every list.
        """
        alive = keep[self.docs]
        term_of = np.repeat(np.arange(self.keys.size), np.diff(self.indptr))[alive]
        docs = (np.cumsum(keep) - 1)[self.docs[alive]]
        # Both key arrays are sorted and unique: insert the few new ones (no sort).
        at = np.searchsorted(self.keys, added.keys)
        fresh = np.ones(added.keys.size, dtype=bool)
        if self.keys.size:
            fresh = self.keys[np.minimum(at, self.keys.size - 1)] != added.keys
        keys = np.insert(self.keys, at[fresh], added.keys[fresh])
        old_t = np.searchsorted(keys, self.keys)[term_of]
        new_t = np.searchsorted(keys, added.keys)[
            np.repeat(np.arange(added.keys.size), np.diff(added.indptr))
        ]
        n_old = np.bincount(old_t, minlength=keys.size)
        n_new = np.bincount(new_t, minlength=keys.size)
        live = (n_old + n_new) > 0  # terms only the removed documents had go
        renumber = np.cumsum(live) - 1
        old_t, new_t = renumber[old_t], renumber[new_t]
        n_old, n_new = n_old[live], n_new[live]
        indptr = np.zeros(int(live.sum()) + 1, dtype=np.int64)
        np.cumsum(n_old + n_new, out=indptr[1:])
        # Both sides are term-major with ascending documents, and every added
        # document comes after every kept one: each entry's slot is its term's
        # start plus its rank within the term (after the kept ones, for added).
        old_pos = indptr[old_t] + np.arange(old_t.size) - (np.cumsum(n_old) - n_old)[old_t]
        new_pos = (
            indptr[new_t] + n_old[new_t] + np.arange(new_t.size) - (np.cumsum(n_new) - n_new)[new_t]
        )
        out_docs = np.empty(int(indptr[-1]), dtype=np.int32)
        out_tf = np.empty(int(indptr[-1]), dtype=np.float32)
        out_docs[old_pos], out_tf[old_pos] = docs, self.tf[alive]
        out_docs[new_pos], out_tf[new_pos] = added.docs + int(keep.sum()), added.tf
        return Postings(
            keys=keys[live],
            indptr=indptr,
            docs=out_docs,
            tf=out_tf,
            doc_len=np.concatenate([self.doc_len[keep], added.doc_len]).astype(np.float32),
        )

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Documents and term frequencies of ``term`` (empty when unknown)."""
        key = term_key(term)
        if self.fence is None:
            t = int(np.searchsorted(self.keys, np.uint64(key)))
        else:
            lo = max(int(np.searchsorted(self.fence, np.uint64(key), "right")) - 1, 0) * FENCE
            t = lo + int(np.searchsorted(self.keys[lo : lo + FENCE], np.uint64(key)))
        if t >= self.keys.size or int(self.keys[t]) != key:
            return self.docs[:0], self.tf[:0]
        lo, hi = self.indptr[t], self.indptr[t + 1]
        return self.docs[lo:hi], self.tf[lo:hi]


def bm25_norms(doc_len: np.ndarray, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """Each document's BM25 length term, ``k1 * (1 - b + b * len / avgdl)``.

    The same for every query of a generation: computed once, a query's terms
    only gather it (at 1M chunks a common term's column is most documents).
    """
    avgdl = max(float(doc_len.mean()), 1e-9) if doc_len.size else 1e-9
    return k1 * (1.0 - b + b * doc_len / avgdl)


def bm25(
    post: PostingLists,
    terms: Sequence[str],
    k1: float = 1.2,
    b: float = 0.75,
    norms: np.ndarray | None = None,
    whole: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Okapi BM25 (Lucene's non-negative IDF) of every document for ``terms``.

    ``norms`` is :func:`bm25_norms` of ``post.doc_len`` (computed here when None).
    ``whole`` holds, for some terms, this function's own result for that term
    alone (a caller keeps it for a common term: adding a whole array is cheaper
    than scattering most documents of a column again); the sum is bit for bit
    the same.
    """
    scores = np.zeros(post.n_docs, dtype=np.float32)
    if post.n_docs == 0:
        return scores
    if norms is None:
        norms = bm25_norms(post.doc_len, k1, b)
    first = True
    for term in terms:
        kept = whole.get(term) if whole else None
        if kept is not None:  # zero where the term is absent: x + 0 is x
            if first:
                scores[:] = kept
                first = False
            else:
                scores += kept
            continue
        docs, tf = post.column(term)
        if docs.size == 0:
            continue
        idf = math.log1p((post.n_docs - docs.size + 0.5) / (docs.size + 0.5))
        part = tf * idf  # in place from here: each step rounds as the plain formula does
        part *= k1 + 1.0
        part /= tf + norms[docs]
        if first:  # a column's documents are distinct: the first term is written, not added
            scores[docs] = part
            first = False
        else:
            scores[docs] += part
    return scores


def match_fraction(
    post: PostingLists, terms: Sequence[str], whole: Mapping[str, np.ndarray] | None = None
) -> np.ndarray:
    """Share of ``terms`` present (as whole terms) in each document.

    ``whole``: :func:`bm25`'s of some terms alone, read as where they are
    (Lucene's IDF is positive, so a term's BM25 is above 0 exactly where it is).
    Where no term is present at all, zeros as a read-only view of one value
    (most queries match no file path: no array of a million rows to make).
    """
    scores: np.ndarray | None = None
    for term in terms:
        kept = whole.get(term) if whole else None
        if kept is not None:
            if scores is None:
                scores = np.zeros(post.n_docs, dtype=np.float32)
            scores += kept > 0  # the documents holding it get 1, the others 0
            continue
        docs = post.column(term)[0]
        if docs.size == 0:
            continue
        if scores is None:  # distinct documents: written, not added (a common term is most rows)
            scores = np.zeros(post.n_docs, dtype=np.float32)
            scores[docs] = 1.0
        else:
            scores[docs] += 1.0
    if scores is None:
        return np.broadcast_to(np.float32(0.0), (post.n_docs,))
    scores /= len(terms)
    return scores


def substring_fraction(texts: Sequence[str], words: Sequence[str]) -> np.ndarray:
    """The original skill's overlap: share of ``words`` found as substrings of each text.

    ``texts`` must already be lowercased. Kept only to replay the original
    ("art" matches "start"); the default profile uses whole terms.
    """
    if not words:
        return np.zeros(len(texts), dtype=np.float32)
    return np.fromiter(
        (sum(w in t for w in words) / len(words) for t in texts), dtype=np.float32, count=len(texts)
    )


def group_rows(groups: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Positions in ``groups`` (non-decreasing) of every row whose group is in ``members``.

    Args:
        groups: Group of each row, sorted (e.g. the chunk of each line vector).
        members: Groups wanted, sorted and unique; rows come out in their order.
    """
    if members.dtype != groups.dtype and members.dtype.kind in "iu" and groups.dtype.kind in "iu":
        # In the haystack's dtype: searchsorted would otherwise copy all of ``groups``
        # (a million line owners, a millisecond per call). Groups it cannot hold match none.
        info = np.iinfo(groups.dtype)
        members = members[(members >= info.min) & (members <= info.max)].astype(groups.dtype)
    lo = np.searchsorted(groups, members, "left")
    counts = np.searchsorted(groups, members, "right") - lo
    total = int(counts.sum())
    # Consecutive runs lo[i] .. lo[i]+counts[i]-1, without a Python loop.
    run_start = np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(lo, counts) + np.arange(total) - run_start


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best scores, best first (ties by lower index)."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        kth = kth_largest(scores, k)
        reach = np.flatnonzero(scores >= kth)  # one pass over all; the split is over a few
        above = reach[scores[reach] > kth]
        part = np.concatenate([above, reach[scores[reach] == kth][: k - above.size]])
    else:
        part = np.arange(n)
    return part[np.lexsort((part, -scores[part]))]


def kth_largest(scores: np.ndarray, k: int) -> float:
    """The ``k``-th largest of ``scores`` (``1 <= k <= len``), without a selection over all.

    A full ``argpartition`` over a million scores costs tens of passes over
    them. Block maxima give a bound instead: at least ``k`` scores
    reach ``t``, the ``k``-th largest block maximum, so the answer is ``t`` when
    fewer than ``k`` exceed it, else the ``k``-th largest of those that do
    (they lie in fewer than ``k`` blocks, a few thousand scores in practice).
    """
    n = scores.shape[0]
    width = n // (8 * k)  # about 8k blocks
    peaks = np.zeros(0, dtype=scores.dtype)
    if width >= 16:
        whole = n - n % width
        peaks = scores[:whole].reshape(-1, width).max(axis=1)
        if whole < n:
            peaks = np.append(peaks, scores[whole:].max())
    if peaks.size == 0 or np.isnan(peaks).any():  # small, or NaN (ranked last, as a score)
        return float(-np.partition(-scores, k - 1)[k - 1])
    t = np.partition(peaks, peaks.size - k)[peaks.size - k]
    over = scores[scores > t]
    if over.size < k:
        return float(t)
    return float(np.partition(over, over.size - k)[over.size - k])


def feedback_terms(
    texts: Sequence[Sequence[str]],
    exclude: Iterable[str],
    *,
    max_terms: int,
    min_len: int,
    min_count: int,
) -> list[str]:
    """Pseudo-relevance feedback: frequent terms of the top documents.

    Args:
        texts: Terms of each top document.
        exclude: Terms never proposed (the query's own, stopwords).
        max_terms: How many terms to return at most.
        min_len: Shortest term accepted.
        min_count: Fewest occurrences across ``texts``.
    """
    skip = set(exclude)
    counts = Counter(t for terms in texts for t in terms)
    picked = [
        t
        for t, c in counts.most_common()
        if c >= min_count and len(t) >= min_len and t not in skip and not t.isdigit()
    ]
    return picked[:max_terms]
