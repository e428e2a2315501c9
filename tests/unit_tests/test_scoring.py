"""Pure scoring functions against brute-force references on random data."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from langchain_enhanced_memory.core import invert
from langchain_enhanced_memory.core.fusion import (
    blend_group_max,
    date_multiplier,
    fuse_lexical,
    rrf,
)
from langchain_enhanced_memory.core.invert import term_key, term_keys
from langchain_enhanced_memory.core.scoring import (
    Postings,
    bm25,
    bm25_norms,
    feedback_terms,
    group_rows,
    kth_largest,
    match_fraction,
    top_k,
)
from langchain_enhanced_memory.core.settings import FusionWeights
from langchain_enhanced_memory.core.text import PHRASE_SEP, phrases


def random_corpus(seed: int, n_docs: int = 40, vocab: int = 25) -> list[list[str]]:
    rng = random.Random(seed)
    return [[f"t{rng.randint(0, vocab)}" for _ in range(rng.randint(0, 15))] for _ in range(n_docs)]


def brute_bm25(docs: list[list[str]], terms: list[str], k1: float, b: float) -> np.ndarray:
    """Okapi BM25 with Lucene's IDF, written straight from the formula."""
    n = len(docs)
    avgdl = sum(map(len, docs)) / n
    out = np.zeros(n)
    for term in terms:
        df = sum(term in d for d in docs)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = d.count(term)
            if tf:
                out[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_postings_build_matches_counts(seed: int) -> None:
    docs = random_corpus(seed)
    post = Postings.build(docs)
    assert post.n_docs == len(docs)
    assert post.doc_len.tolist() == [len(d) for d in docs]
    vocab = list(dict.fromkeys(t for d in docs for t in d))
    assert post.keys.size == len(vocab) and (post.keys[1:] > post.keys[:-1]).all()
    assert post.indptr[-1] == post.docs.size == post.tf.size
    for term in vocab:
        got_docs, got_tf = post.column(term)
        expected = [(i, d.count(term)) for i, d in enumerate(docs) if term in d]
        assert got_docs.tolist() == [i for i, _ in expected]
        assert got_tf.tolist() == [c for _, c in expected]


def reference_postings(docs: list[list[str]]) -> dict[str, np.ndarray]:
    """The postings arrays written straight from their definition (one dict per term)."""
    counts: dict[str, Counter[int]] = {}
    for i, d in enumerate(docs):
        for t in d:
            counts.setdefault(t, Counter())[i] += 1
    terms = sorted(counts, key=term_key)
    cols = [sorted(counts[t].items()) for t in terms]
    return {
        "keys": np.asarray([term_key(t) for t in terms], dtype=np.uint64),
        "indptr": np.cumsum([0] + [len(c) for c in cols]).astype(np.int64),
        "docs": np.asarray([i for c in cols for i, _ in c], dtype=np.int32),
        "tf": np.asarray([n for c in cols for _, n in c], dtype=np.float32),
        "doc_len": np.asarray([len(d) for d in docs], dtype=np.float32),
    }


def assert_postings_equal(got: Postings, want: dict[str, np.ndarray]) -> None:
    for part, b in want.items():
        a = getattr(got, part)
        assert a.dtype == b.dtype and np.array_equal(a, b), part


def tricky_corpus(seed: int) -> list[list[str]]:
    """Random documents with empty and one-term ones, repeats, CJK, and a lone surrogate."""
    rng = random.Random(seed)
    words = ["a", "b", "星河", "河项", "é", "x" * 40, "\ud800", "12"]
    docs = random_corpus(seed, n_docs=rng.randint(0, 30), vocab=rng.randint(0, 12))
    for d in docs:
        d += rng.choices(words, k=rng.choice([0, 0, 1, 3]))
        rng.shuffle(d)
    return docs + [[], ["only"], ["t1", "t1", "t1"]][: rng.randint(0, 3)]


@pytest.mark.parametrize("seed", range(60))
def test_postings_build_equals_the_reference_arrays(seed: int) -> None:
    docs = tricky_corpus(seed)
    assert_postings_equal(Postings.build(docs), reference_postings(docs))
    assert_postings_equal(Postings.build(iter(docs)), reference_postings(docs))


@pytest.mark.parametrize("seed", range(60))
def test_pair_postings_equal_a_build_of_the_phrase_strings(seed: int) -> None:
    docs = tricky_corpus(seed)
    text, pairs = Postings.build_with_pairs(docs, PHRASE_SEP)
    assert_postings_equal(text, reference_postings(docs))
    assert_postings_equal(pairs, reference_postings([phrases(d) for d in docs]))


def test_pair_postings_of_no_documents_and_of_documents_without_pairs() -> None:
    for docs in ([], [[]], [["a"], [], ["b"]]):
        text, pairs = Postings.build_with_pairs(docs, PHRASE_SEP)
        assert_postings_equal(text, reference_postings(docs))
        assert_postings_equal(pairs, reference_postings([phrases(d) for d in docs]))
        assert pairs.n_docs == len(docs) and not pairs.doc_len.any()


def test_term_keys_are_the_keys_of_each_term() -> None:
    terms = ["a", "星河", "\ud800", "", "meteor_shower"]
    assert term_keys(terms).tolist() == [term_key(t) for t in terms]
    assert term_keys([]).dtype == np.uint64


def test_wide_codes_take_the_lexsort_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Packed (code, doc) pairs overflow int64 past about 3e9 terms: a lexsort then.
    docs = tricky_corpus(3) + [["p", "q", "p", "q"], ["q", "p"]]
    monkeypatch.setattr(invert, "_PACKED_MAX", 0)
    text, pairs = Postings.build_with_pairs(docs, PHRASE_SEP)
    assert_postings_equal(text, reference_postings(docs))
    assert_postings_equal(pairs, reference_postings([phrases(d) for d in docs]))


@pytest.mark.parametrize("seed", range(40))
def test_merged_postings_equal_a_rebuild(seed: int) -> None:
    rng = random.Random(seed)
    docs = random_corpus(seed, n_docs=rng.randint(0, 30), vocab=rng.randint(1, 30))
    keep = np.asarray([rng.random() < 0.7 for _ in docs], dtype=bool)
    added = random_corpus(seed + 1000, n_docs=rng.randint(0, 6), vocab=rng.randint(1, 40))
    got = Postings.build(docs).merged(keep, Postings.build(added))
    want = Postings.build([d for d, k in zip(docs, keep, strict=True) if k] + added)
    for part in ("keys", "indptr", "docs", "tf", "doc_len"):
        a, b = getattr(got, part), getattr(want, part)
        assert a.dtype == b.dtype and np.array_equal(a, b), part


def test_postings_column_of_unknown_term_and_empty_corpus() -> None:
    post = Postings.build([["a", "b"], []])
    docs, tf = post.column("zzz")
    assert docs.size == 0 and tf.size == 0
    empty = Postings.build([])
    assert empty.n_docs == 0 and empty.column("a")[0].size == 0
    assert bm25(empty, ["a"]).size == 0


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (2.0, 0.3), (0.5, 1.0)])
def test_bm25_matches_brute_force(seed: int, k1: float, b: float) -> None:
    docs = random_corpus(seed)
    if not any(docs):
        docs[0] = ["t1"]
    rng = random.Random(seed + 100)
    terms = list(dict.fromkeys(f"t{rng.randint(0, 30)}" for _ in range(4)))
    got = bm25(Postings.build(docs), terms, k1, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, brute_bm25(docs, terms, k1, b), rtol=1e-5, atol=1e-6)


def _bm25_plain(post: Postings, terms: list[str], k1: float, b: float) -> np.ndarray:
    """The formula written out, one term at a time, as the scoring first did it."""
    scores = np.zeros(post.n_docs, dtype=np.float32)
    avgdl = max(float(post.doc_len.mean()), 1e-9)
    for term in terms:
        docs, tf = post.column(term)
        if docs.size:
            idf = math.log1p((post.n_docs - docs.size + 0.5) / (docs.size + 0.5))
            norm = k1 * (1.0 - b + b * post.doc_len[docs] / avgdl)
            scores[docs] += idf * tf * (k1 + 1.0) / (tf + norm)
    return scores


@pytest.mark.parametrize("seed", range(8))
def test_bm25_in_place_is_bit_identical_to_the_plain_formula(seed: int) -> None:
    docs = random_corpus(seed)
    if not any(docs):
        docs[0] = ["t1"]
    post = Postings.build(docs)
    rng = random.Random(seed + 200)
    terms = [f"t{rng.randint(0, 30)}" for _ in range(5)] + ["unknown"]  # repeats too
    for k1, b in [(1.2, 0.75), (2.0, 0.3)]:
        want = _bm25_plain(post, terms, k1, b)
        assert np.array_equal(bm25(post, terms, k1, b), want)
        norms = bm25_norms(post.doc_len, k1, b)  # kept per generation by the recipe
        assert np.array_equal(bm25(post, terms, k1, b, norms), want)


@pytest.mark.parametrize("seed", range(6))
def test_kept_whole_terms_score_and_count_bit_for_bit_like_their_columns(seed: int) -> None:
    # A caller keeps a common term's BM25 over every document (recipe._common); the
    # sums and the coverage built from it are those the columns give, to the bit.
    docs = random_corpus(seed, vocab=8)
    post = Postings.build(docs)
    rng = random.Random(seed)
    terms = list(dict.fromkeys(f"t{rng.randint(0, 9)}" for _ in range(5))) + ["unknown"]
    norms = bm25_norms(post.doc_len, 1.2, 0.5)
    for kept in ([], terms[:1], terms[1:3], terms):
        whole = {t: bm25(post, [t], 1.2, 0.5, norms) for t in kept}
        want = bm25(post, terms, 1.2, 0.5)
        assert np.array_equal(bm25(post, terms, 1.2, 0.5, norms, whole), want)
        assert np.array_equal(match_fraction(post, terms, whole), match_fraction(post, terms))
    assert not match_fraction(post, ["unknown", "nope"]).any()


def test_bm25_prefers_rarer_terms_and_shorter_documents() -> None:
    docs = [["rare", "x"], ["common", "x"], ["common", "y"], ["common", "rare"] + ["z"] * 20]
    post = Postings.build(docs)
    scores = bm25(post, ["rare", "common"])
    assert scores[0] > scores[1]  # the rare term weighs more
    assert scores[0] > scores[3] > 0  # same term, the long document is penalised


@pytest.mark.parametrize("seed", range(5))
def test_match_fraction_is_share_of_terms_present(seed: int) -> None:
    docs = random_corpus(seed, vocab=10)
    terms = ["t1", "t2", "t3", "nope"]
    got = match_fraction(Postings.build(docs), terms)
    expected = [sum(t in d for t in terms) / len(terms) for d in docs]
    np.testing.assert_allclose(got, expected)
    assert not match_fraction(Postings.build(docs), []).any()


def test_no_match_is_read_only_zeros_and_fuses_like_an_array_of_zeros() -> None:
    post = Postings.build([["a"], ["b", "a"], []])
    none = match_fraction(post, ["zzz", "yyy"])
    assert none.tolist() == [0.0, 0.0, 0.0] and not none.flags.writeable
    weights = FusionWeights(vector=0.3, keyword=0.4, header=0.1, filepath=0.2)
    keyword = np.asarray([0.5, 1.0, 0.0], np.float32)
    header = match_fraction(post, ["a", "zzz"])  # a real array: a is in two documents
    dense = fuse_lexical(weights, keyword, header, np.zeros(3, np.float32))
    assert np.array_equal(fuse_lexical(weights, keyword, header, none), dense)
    assert np.array_equal(fuse_lexical(weights, keyword, none, none), keyword * np.float32(0.4))


def test_match_fraction_counts_whole_terms_not_substrings() -> None:
    post = Postings.build([["start"], ["art", "art"]])
    assert match_fraction(post, ["art"]).tolist() == [0.0, 1.0]


def test_top_k_orders_best_first_and_breaks_ties_by_index() -> None:
    scores = np.asarray([0.5, 0.9, 0.5, 0.1, 0.9, 0.5], dtype=np.float32)
    assert top_k(scores, 3).tolist() == [1, 4, 0]
    assert top_k(scores, 4).tolist() == [1, 4, 0, 2]
    assert top_k(scores, 10).tolist() == [1, 4, 0, 2, 5, 3]
    assert top_k(scores, 0).size == 0
    assert top_k(np.zeros(0, dtype=np.float32), 5).size == 0


@pytest.mark.parametrize("seed", range(10))
def test_top_k_matches_a_full_stable_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, size=200).astype(np.float32)  # many ties
    k = int(rng.integers(1, 60))
    expected = sorted(range(200), key=lambda i: (-scores[i], i))[:k]
    assert top_k(scores, k).tolist() == expected


@pytest.mark.parametrize("seed", range(12))
def test_top_k_of_many_scores_matches_a_full_stable_sort(seed: int) -> None:
    # Large enough for kth_largest's block bound, with heavy ties (zeros, equal maxima).
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20_000, 60_000))
    scores = rng.random(n).astype(np.float32)
    if seed % 3 == 0:
        scores[rng.random(n) < 0.97] = 0.0  # mostly unmatched chunks
    if seed % 3 == 1:
        scores = np.round(scores * 4) / 4  # five distinct values
    if seed % 4 == 0:
        scores[: n // 2] = 0.0  # one half of the blocks all zero
    k = int(rng.choice([1, 5, 10, 200, 201]))
    expected = np.lexsort((np.arange(n), -scores))[:k]
    assert top_k(scores, k).tolist() == expected.tolist()
    assert kth_largest(scores, k) == float(np.sort(scores)[::-1][k - 1])


def test_kth_largest_ranks_nan_last_like_a_selection() -> None:
    scores = np.linspace(0, 1, 50_000, dtype=np.float32)
    scores[7] = np.nan
    assert kth_largest(scores, 3) == float(scores[-3])
    assert 7 not in top_k(scores, 10).tolist()


def test_date_multiplier_days_win_over_ranges() -> None:
    days = np.asarray([-1, 10, 11, 12, 20], dtype=np.int64)
    mult = date_multiplier(days, [12], [(10, 12)], day_boost=3.0, range_boost=1.5)
    assert mult.tolist() == [1.0, 1.5, 1.5, 3.0, 1.0]
    assert date_multiplier(days, [], [], 3.0, 1.5).tolist() == [1.0] * 5


def test_date_multiplier_matches_a_loop_for_few_and_many_days() -> None:
    # A few days are compared one by one, more go through isin: the same boosts.
    rng = np.random.default_rng(4)
    chunk_days = rng.integers(-1, 40, 500)
    for count in range(1, 8):
        days = rng.choice(40, count, replace=False).tolist()
        ranges = [(5, 9)] if count % 2 else []
        want = [
            3.0 if d in days else 1.5 if any(a <= d <= b for a, b in ranges) else 1.0
            for d in chunk_days.tolist()
        ]
        assert date_multiplier(chunk_days, days, ranges, 3.0, 1.5).tolist() == want, days


def test_date_multiplier_undated_chunks_stay_unboosted_by_real_dates() -> None:
    days = np.asarray([-1, 738000], dtype=np.int64)
    mult = date_multiplier(days, [738000], [(737990, 738010)], 3.0, 1.5)
    assert mult.tolist() == [1.0, 3.0]


def test_feedback_terms_picks_frequent_long_new_terms() -> None:
    texts = [
        ["postgres", "migration", "2026", "2026", "db", "db"],
        ["postgres", "migration", "rollback", "rollback"],
        ["postgres", "vacuum", "query", "query"],
    ]
    got = feedback_terms(texts, ["query"], max_terms=5, min_len=4, min_count=2)
    assert got == ["postgres", "migration", "rollback"]  # by count; digits, short, excluded out
    assert feedback_terms(texts, [], max_terms=1, min_len=4, min_count=2) == ["postgres"]
    assert feedback_terms(texts, [], max_terms=5, min_len=4, min_count=4) == []


@pytest.mark.parametrize("seed", range(5))
def test_feedback_terms_matches_brute_force(seed: int) -> None:
    texts = random_corpus(seed, n_docs=3, vocab=8)
    exclude = {"t1", "t2"}
    counts = Counter(t for doc in texts for t in doc)
    ranked = sorted(counts, key=lambda t: -counts[t])  # stable: first-seen order on ties
    expected = [t for t in ranked if counts[t] >= 2 and len(t) >= 2 and t not in exclude][:3]
    assert feedback_terms(texts, exclude, max_terms=3, min_len=2, min_count=2) == expected


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("share", [0.0, 0.3, 0.5, 1.0])
def test_blend_group_max_matches_a_loop(seed: int, share: float) -> None:
    rng = np.random.default_rng(seed)
    n = 12
    groups = np.sort(rng.integers(0, n, size=int(rng.integers(0, 40)))).astype(np.int32)
    values = rng.normal(size=groups.size).astype(np.float32)
    base = rng.normal(size=n).astype(np.float32)
    kept = base.copy()
    want = base.copy()
    for g in range(n):
        members = values[groups == g]
        if members.size:
            want[g] = share * members.max() + (1 - share) * base[g]
    got = blend_group_max(values, groups, base, share)
    assert np.allclose(got, want, rtol=0, atol=1e-6)
    assert np.array_equal(got[want == base], base[want == base])  # no member: base as it is
    assert np.array_equal(base, kept)  # the base array is not written to


@pytest.mark.parametrize("seed", range(6))
def test_group_rows_are_the_rows_of_the_wanted_groups(seed: int) -> None:
    rng = np.random.default_rng(seed)
    groups = np.sort(rng.integers(0, 15, size=int(rng.integers(0, 50))))
    members = np.unique(rng.integers(0, 15, size=int(rng.integers(0, 8))))
    want = [i for m in members for i in np.flatnonzero(groups == m)]
    assert group_rows(groups, members).tolist() == want
    # Groups narrower than the members (int32 line owners, int64 rows), and wanted
    # groups beyond what the narrow type holds (they match nothing).
    narrow = groups.astype(np.int32)
    wide = np.r_[members, 2**40].astype(np.int64)
    assert group_rows(narrow, wide).tolist() == want
    assert group_rows(groups.astype(np.uint16), wide - 2**40 - 1).tolist() == []


def test_rrf_sums_reciprocal_ranks_of_the_retrieving_signals() -> None:
    dense = np.array([0.9, 0.1, 0.5], dtype=np.float32)  # ranks 1, 3, 2
    keyword = np.array([0.0, 2.0, 1.0], dtype=np.float32)  # ranks -, 1, 2
    got = rrf([(dense, np.ones(3, bool)), (keyword, keyword > 0)], k=60)
    want = [1 / 61, 1 / 63 + 1 / 61, 1 / 62 + 1 / 62]
    assert np.allclose(got, want)
    assert rrf([], k=60).shape == (0,)
