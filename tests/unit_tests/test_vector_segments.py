"""Vectors in segments: a delta per change, scored as one matrix, merged, collected, compacted."""

from __future__ import annotations

import json
import random
import sqlite3
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.core import vectorset
from langchain_enhanced_memory.core.ranking import rank
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.core.vectorset import (
    THREADED_ROWS,
    VectorPart,
    VectorSet,
    approximate_cosines,
    cosines,
    dequantize,
    quantize,
    query_bits,
    sign_codes,
)
from langchain_enhanced_memory.store import folding, segment
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.upkeep import embed_missing
from langchain_enhanced_memory.store.vector_segments import side_folder
from tests.fakes import WordEmbeddings

MODEL = "fake/m"
NOW = datetime(2026, 3, 1, 9, 0)
WORDS = "kestrel owl heron migration budget retro thursday grace review plan rollback".split()
QUERIES = ["kestrel migration", "retro thursday grace", "owl budget", "plan the review"]


def _embed(emb: WordEmbeddings):
    return lambda texts: np.asarray(emb.embed_documents(texts), dtype=np.float32)


def _parts(seed: int) -> tuple[VectorSet, np.ndarray, list[list[np.ndarray]]]:
    """Random parts with masked rows; the dense live rows and each live row's lines."""
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 30))
    free = list(rng.permutation(n_rows))
    dense = np.zeros((n_rows, 8), np.float32)
    lines: list[list[np.ndarray]] = [[] for _ in range(n_rows)]
    parts = []
    while free:
        k = int(rng.integers(1, 6))
        take, free = free[:k], free[k:]
        rows = np.asarray(sorted(take) + [-1] * int(rng.integers(0, 3)), dtype=np.int64)
        rng.shuffle(rows)
        vecs = rng.normal(size=(rows.size, 8)).astype(np.float32)
        q, scale = quantize(vecs)
        counts = rng.integers(0, 4, size=rows.size)
        lv = rng.normal(size=(int(counts.sum()), 8)).astype(np.float32)
        lq, lscale = quantize(lv)
        owner = np.repeat(np.arange(rows.size, dtype=np.int32), counts)
        for i, r in enumerate(rows):
            if r >= 0:
                dense[r] = dequantize(q[i : i + 1], scale[i : i + 1])[0]
                lines[r] = list(dequantize(lq, lscale)[owner == i])
        parts.append(VectorPart(q, scale, rows, lq, lscale, owner))
    return VectorSet(parts, n_rows), dense, lines


@pytest.mark.parametrize(
    ("base_rows", "few"),
    [
        ([0, 1, 2, 3, 4], 64),
        ([0, 1, -1, 2, 3, -1, 4], 64),  # placed by copies around the replaced rows
        ([-1, 0, 1, 2, 3, 4, -1], 64),
        ([-1, 0, 1, -1, 2, 3, 4], 1),  # more replaced rows than that: placed by a mask
    ],
)
def test_a_base_with_replaced_rows_and_a_delta_score_like_one_matrix(
    base_rows: list[int], few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The usual layout after a one-file re-index: the base's live rows are one run
    # (placed by a copy), the delta's rows come after it.
    monkeypatch.setattr(vectorset, "FEW_DEAD", few)
    rng = np.random.default_rng(7)
    base_rows = np.asarray(base_rows)
    delta_rows = np.asarray([6, 5])
    n = 7
    dense = np.zeros((n, 8), np.float32)
    parts = []
    for rows in (base_rows, delta_rows):
        q8, scale = quantize(rng.normal(size=(rows.size, 8)).astype(np.float32))
        dense[rows[rows >= 0]] = dequantize(q8, scale)[rows >= 0]
        parts.append(VectorPart(q8, scale, rows))
    vs = VectorSet(parts, n)
    q = rng.normal(size=8).astype(np.float32)
    qr = dequantize(*quantize(q[None]))[0]
    assert np.allclose(vs.cosines(q), dense @ qr, atol=1e-5)
    alone = VectorSet(parts[:1], 5)  # the base alone, before the delta
    assert np.allclose(alone.cosines(q), dense[:5] @ qr, atol=1e-5)


@pytest.mark.parametrize("seed", range(25))
def test_parts_score_like_one_matrix_of_the_live_rows(seed: int) -> None:
    vs, dense, lines = _parts(seed)
    covered = np.zeros(len(lines), bool)
    for part in vs.parts:
        covered[part.rows[part.rows >= 0]] = True
    assert np.array_equal(vs.has_vector, covered)
    q = np.random.default_rng(seed + 99).normal(size=8).astype(np.float32)
    qr = dequantize(*quantize(q[None]))[0]  # int8 rows are scored with the query in int8
    assert np.allclose(vs.cosines(q), dense @ qr, atol=1e-5)
    assert np.allclose(vs.dense(), dense)
    rows = np.flatnonzero(np.random.default_rng(seed).random(len(lines)) < 0.5)
    got = vs.line_cosines(rows, q)
    want = [(float(v @ qr), int(r)) for r in rows for v in lines[r]]
    if got is None:
        assert not want or not vs.has_lines
        return
    assert (np.diff(got[1]) >= 0).all()  # each row's lines together, rows ascending
    got_pairs = sorted(zip(got[1].tolist(), got[0].tolist(), strict=True))
    want_pairs = sorted((r, v) for v, r in want)
    assert [r for r, _ in got_pairs] == [r for r, _ in want_pairs]
    assert np.allclose([v for _, v in got_pairs], [v for _, v in want_pairs], atol=1e-5)


def _note(rng: random.Random) -> str:
    sections = []
    for s in range(rng.randint(1, 3)):
        bullets = "\n".join(
            "- " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))
            for _ in range(rng.randint(1, 3))
        )
        sections.append(f"## Part {s}\n\n{bullets}\n")
    return "# Note\n\n" + "\n".join(sections)


def _embedded(
    tmp_path: Path, rng: random.Random, notes: int
) -> tuple[Path, MemoryIndex, WordEmbeddings]:
    """A workspace of ``notes`` daily notes, synced and embedded under ``MODEL``."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for i in range(notes):
        (ws / "memory" / f"2026-02-{i:02d}.md").write_text(_note(rng))
    emb = WordEmbeddings()
    idx = MemoryIndex(ws)
    idx.sync()
    embed_missing(idx, MODEL, _embed(emb))
    return ws, idx, emb


def _named_vec(idx: MemoryIndex) -> list[str]:
    with sqlite3.connect(idx.path) as conn:
        (data,) = conn.execute("SELECT data FROM catalog WHERE name=?", (f"vectors:{MODEL}",))
        return [s["file"] for s in json.loads(data[0])["segments"]]


def _keyed(snap, query: str, qvec: np.ndarray, settings: MemorySettings) -> dict:
    scores = rank(snap, query, NOW, settings, qvec).scores
    return {(p, int(s)): float(v) for p, s, v in zip(snap.paths, snap.start, scores, strict=True)}


def test_segmented_vectors_rank_like_a_fresh_build_after_random_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segment, "MAX_SEGMENTS", 3)
    monkeypatch.setattr(segment, "MERGE_SHARE", 0.6)
    monkeypatch.setattr(segment, "SEGMENT_CHUNKS", 8)  # a larger base stays out of some
    rng = random.Random(11)
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for i in range(10):
        (ws / "memory" / f"2026-02-{i + 10}.md").write_text(_note(rng))
    settings = MemorySettings()
    emb = WordEmbeddings()
    idx = MemoryIndex(ws, settings)
    idx.sync()
    embed_missing(idx, MODEL, _embed(emb))
    counts = []
    for step in range(12):
        notes = sorted((ws / "memory").glob("*.md"))
        action = rng.choice(["edit", "edit", "add", "delete"] if len(notes) > 2 else ["add"])
        if action == "edit":
            rng.choice(notes).write_text(_note(rng))
        elif action == "add":
            (ws / "memory" / f"2026-01-{step + 10}.md").write_text(_note(rng))
        else:
            rng.choice(notes).unlink()
        idx.sync()
        emb.texts.clear()
        embed_missing(idx, MODEL, _embed(emb))
        counts.append(len(_named_vec(idx)))
        snap = MemoryIndex(ws, settings).snapshot(MODEL)  # a fresh process maps the segments
        assert snap.has_vector is not None and snap.has_vector.all()
        fresh = MemoryIndex(ws, settings, path=tmp_path / f"fresh-{step}.sqlite")
        fresh.sync()
        embed_missing(fresh, MODEL, _embed(WordEmbeddings()))
        other = fresh.snapshot(MODEL)
        assert other.vectors is not None and len(other.vectors.parts) == 1
        for query in QUERIES:
            qvec = np.asarray(emb.embed_query(query), np.float32)
            mine, theirs = _keyed(snap, query, qvec, settings), _keyed(other, query, qvec, settings)
            assert mine.keys() == theirs.keys()
            assert all(abs(mine[k] - theirs[k]) <= 1e-5 for k in mine), query
        on_disk = {p.name for p in side_folder(idx.path).glob("*.vec")}
        assert on_disk == set(_named_vec(idx))  # what no generation names was collected
    assert max(counts) > 1 and min(counts[counts.index(max(counts)) :]) < max(counts), counts


def test_a_one_file_change_writes_a_small_delta_and_reads_only_its_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    ws, idx, emb = _embedded(tmp_path, rng, 30)
    (base,) = _named_vec(idx)
    (ws / "memory" / "2026-02-05.md").write_text("# Note\n\n- kestrel owl\n")
    idx.sync()
    read: list[int] = []
    real = folding.embed_cache.generation_keys

    def counted(conn, settings, ids=None):
        read.append(-1 if ids is None else len(ids))
        return real(conn, settings, ids)

    monkeypatch.setattr(folding.embed_cache, "generation_keys", counted)
    emb.texts.clear()
    embed_missing(idx, MODEL, _embed(emb))
    assert len(emb.texts) == 1 and "kestrel owl" in emb.texts[0]  # its one chunk (one line)
    assert read and all(0 <= n <= 1 for n in read), read  # the changed file's one chunk
    names = _named_vec(idx)
    assert names[0] == base and len(names) == 2  # the base is kept, a delta added
    folder = side_folder(idx.path)
    assert (folder / names[1]).stat().st_size < (folder / base).stat().st_size / 10


def test_compact_merges_vector_segments_and_collects_the_masked_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segment, "MERGE_SHARE", 10.0)  # deltas pile up until the compact
    rng = random.Random(5)
    ws, idx, emb = _embedded(tmp_path, rng, 6)
    for i in range(3):
        (ws / "memory" / f"2026-02-{i:02d}.md").write_text(_note(rng))
        idx.sync()
        embed_missing(idx, MODEL, _embed(emb))
    assert len(_named_vec(idx)) == 4
    held_before = idx.stats()["cached_vectors"]
    q = np.asarray(emb.embed_query("kestrel owl"), np.float32)
    before = rank(idx.snapshot(MODEL), "kestrel owl", NOW, MemorySettings(), q).scores
    idx.compact()
    (one,) = _named_vec(idx)
    assert [p.name for p in side_folder(idx.path).glob("*.vec")] == [one]
    assert idx.stats()["cached_vectors"] < held_before  # the replaced chunks' are collected
    after = MemoryIndex(ws).snapshot(MODEL)
    assert after.vectors is not None and len(after.vectors.parts) == 1
    assert np.allclose(rank(after, "kestrel owl", NOW, MemorySettings(), q).scores, before)
    assert not MemoryIndex(ws).missing_embeddings(MODEL)


def test_a_fold_killed_before_its_commit_leaves_the_named_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(9)
    ws, idx, emb = _embedded(tmp_path, rng, 8)
    named = _named_vec(idx)
    (ws / "memory" / "2026-02-03.md").write_text("# Note\n\n- heron review\n")
    idx.sync()
    real = folding.write

    def written_then_killed(*a, **k):
        real(*a, **k)
        raise KeyboardInterrupt  # as a kill between the file and the commit

    monkeypatch.setattr(folding, "write", written_then_killed)
    with pytest.raises(KeyboardInterrupt):
        embed_missing(idx, MODEL, _embed(emb))
    monkeypatch.undo()
    assert _named_vec(idx) == named
    snap = MemoryIndex(ws).snapshot(MODEL)  # searchable: the new chunk's vector is in the spool
    assert snap.has_vector is not None and snap.has_vector.all()
    embed_missing(idx, MODEL, _embed(emb))
    on_disk = {p.name for p in side_folder(idx.path).glob("*.vec")}
    assert on_disk == set(_named_vec(idx)) != set(named)  # the new segment, the orphan gone


def _rewrite_layouts(idx: MemoryIndex, change) -> None:
    """Rewrite the model's ``vectors:`` row, each layout changed in place by ``change``."""
    with sqlite3.connect(idx.path) as conn:
        (data,) = conn.execute("SELECT data FROM catalog WHERE name=?", (f"vectors:{MODEL}",))
        state = json.loads(data[0])
        for layout in state["segments"]:
            change(layout)
        conn.execute(
            "UPDATE catalog SET data=? WHERE name=?", (json.dumps(state), f"vectors:{MODEL}")
        )


def test_a_vector_file_of_an_unreleased_format_is_not_read_but_embedded_again(
    tmp_path: Path,
) -> None:
    rng = random.Random(4)
    ws, idx, emb = _embedded(tmp_path, rng, 5)
    (name,) = _named_vec(idx)
    _rewrite_layouts(idx, lambda layout: layout.pop("keys"))  # a layout no release wrote
    old = MemoryIndex(ws)
    assert old.missing_embeddings(MODEL)
    emb.texts.clear()
    embed_missing(old, MODEL, _embed(emb))
    assert emb.texts
    (new,) = _named_vec(old)
    assert new != name and not (side_folder(idx.path) / name).exists()
    assert MemoryIndex(ws).snapshot(MODEL).has_vector.all()


def test_a_vector_layout_as_0_1_0_wrote_it_is_read_as_it_is(tmp_path: Path) -> None:
    # 0.1.0 named each file with the flags "ids" and "codes" (always true) as well.
    rng = random.Random(6)
    ws, idx, emb = _embedded(tmp_path, rng, 5)
    names = _named_vec(idx)
    q = np.asarray(emb.embed_query("kestrel owl"), np.float32)
    before = rank(idx.snapshot(MODEL), "kestrel owl", NOW, MemorySettings(), q).scores
    _rewrite_layouts(idx, lambda layout: layout.update(ids=True, codes=True))
    old = MemoryIndex(ws)
    assert not old.missing_embeddings(MODEL)
    after = old.snapshot(MODEL)
    assert after.has_vector is not None and after.has_vector.all()
    assert np.array_equal(rank(after, "kestrel owl", NOW, MemorySettings(), q).scores, before)
    emb.texts.clear()
    embed_missing(old, MODEL, _embed(emb))
    assert not emb.texts and _named_vec(old) == names


@pytest.mark.parametrize("n", [0, 1, 7, 300])
def test_cosines_of_int8_rows_match_the_float_product(n: int) -> None:
    rng = np.random.default_rng(n)
    rows = rng.normal(size=(n, 48)).astype(np.float32)
    q, scale = vectorset.quantize(rows)
    qvec = rng.normal(size=48).astype(np.float32)
    want = vectorset.dequantize(q, scale) @ qvec
    got = vectorset.cosines(q, scale, qvec)
    assert got.shape == (n,) and got.dtype == np.float32
    # The query is rounded to int8 too: within half its step times each row's length.
    step = np.abs(qvec).max() / 127
    bound = np.abs(vectorset.dequantize(q, scale)).sum(axis=1) * step / 2 + 1e-5
    assert np.all(np.abs(got - want) <= bound)
    assert np.allclose(vectorset.cosines(rows, None, qvec), rows @ qvec, atol=1e-5)  # float rows


def test_a_threaded_scan_gives_the_one_thread_cosines() -> None:
    rng = np.random.default_rng(3)
    q8, scale = quantize(rng.normal(size=(THREADED_ROWS + 17, 8)).astype(np.float32))
    q = rng.normal(size=8).astype(np.float32)
    one = cosines(q8, scale, q, threads=1)
    for threads in (0, 2):
        assert np.array_equal(cosines(q8, scale, q, threads=threads), one)
    assert np.array_equal(VectorSet.of(q8, scale).cosines(q, threads=2), one)


def test_sign_codes_are_each_rows_packed_signs_about_the_mean() -> None:
    rng = np.random.default_rng(5)
    q8, scale = quantize(rng.normal(loc=0.5, size=(9, 20)).astype(np.float32))
    rows = dequantize(q8, scale)
    for block in (4, 1 << 16):  # read in blocks or at once: the same
        codes, center = sign_codes(q8, scale, block=block)
        assert codes.shape == (9, 3) and codes.dtype == np.uint8
        assert np.allclose(center, rows.mean(axis=0), atol=1e-6)
        bits = np.unpackbits(codes, axis=1)[:, :20]
        assert np.array_equal(bits, (rows > center).astype(np.uint8))


def test_query_bits_drop_the_querys_share_of_the_mean() -> None:
    center = np.asarray([2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], np.float32)
    q = np.asarray([5.0, -1.0, 1.0, 0.5, -0.5, 2.0, -2.0, 1.0], np.float32)
    # The first component is along the mean: removed, so its bit is 0 (not > 0).
    want = np.packbits(np.asarray([0, 0, 1, 1, 0, 1, 0, 1], np.uint8))[None]
    assert np.array_equal(query_bits(q, center), want)
    assert np.array_equal(query_bits(q, np.zeros(8, np.float32)), np.packbits(q > 0)[None])


def _hamming(codes: np.ndarray, center: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    bits = np.unpackbits(codes, axis=1)[:, : qvec.size]
    want = np.unpackbits(query_bits(qvec, center), axis=1)[:, : qvec.size]
    return (bits != want).sum(axis=1)


def test_approximate_cosines_are_exact_at_both_ends_and_linear_between() -> None:
    rng = np.random.default_rng(8)
    rows = rng.normal(size=(40_000, 64)).astype(np.float32)
    q8, scale = quantize(rows)
    qvec = rows[17] + 0.3 * rng.normal(size=64).astype(np.float32)
    exact = cosines(q8, scale, qvec)
    codes, center = sign_codes(q8, scale)
    got = approximate_cosines(q8, scale, codes, center, qvec)
    assert got.shape == exact.shape and got.dtype == np.float32
    dist = _hamming(codes, center, qvec)
    order = np.argsort(dist, kind="stable")
    scored = got == exact
    # The cut-offs come from a sample, so only the clear ends are certain.
    assert scored[order[: vectorset.APPROX_NEAREST // 2]].all()
    assert scored[order[-vectorset.APPROX_FARTHEST // 2 :]].all()
    assert int(np.argmax(got)) == int(np.argmax(exact)) == 17
    est = ~scored
    assert est.sum() > 20_000
    # The others lie on one line of the distance, between the ends' distances.
    slope, icept = np.polyfit(dist[est], got[est], 1)
    assert slope < 0 and np.allclose(got[est], slope * dist[est] + icept, atol=1e-4)


def test_approximate_cosines_of_a_small_matrix_are_exact() -> None:
    rng = np.random.default_rng(9)
    q8, scale = quantize(rng.normal(size=(500, 16)).astype(np.float32))
    qvec = rng.normal(size=16).astype(np.float32)
    got = approximate_cosines(q8, scale, *sign_codes(q8, scale), qvec)
    assert np.array_equal(got, cosines(q8, scale, qvec))


def test_only_a_large_part_with_sign_bits_is_approximated_and_rescore_makes_rows_exact() -> None:
    rng = np.random.default_rng(10)
    big, small = (quantize(rng.normal(size=(k, 32)).astype(np.float32)) for k in (20000, 40))
    codes, center = sign_codes(*big)
    parts = [
        VectorPart(big[0], big[1], np.arange(20000), codes=codes, center=center),
        VectorPart(small[0], small[1], np.arange(20000, 20040)),  # a delta without sign bits
    ]
    vs = VectorSet(parts, 20040)
    qvec = rng.normal(size=32).astype(np.float32)
    exact = vs.cosines(qvec)
    assert np.array_equal(vs.cosines(qvec, approximate_rows=0), exact)
    assert not vs.approximates(0) and not vs.approximates(20001) and vs.approximates(20000)
    got = vs.cosines(qvec, approximate_rows=20000)
    assert np.array_equal(got[20000:], exact[20000:]) and not np.array_equal(got, exact)
    rows = np.sort(rng.choice(20040, size=300, replace=False))
    vs.rescore(got, rows, qvec, 20000)
    assert np.array_equal(got[rows], exact[rows])


def test_an_approximate_scan_of_a_small_index_ranks_exactly_like_an_exact_one(
    tmp_path: Path,
) -> None:
    # Below APPROX_NEAREST + APPROX_FARTHEST rows every cosine is exact, so the
    # approximate path (sign bits from the side file, rescoring, second pass)
    # must give the exact path's scores.
    rng = random.Random(6)
    ws, idx, emb = _embedded(tmp_path, rng, 8)
    snap = MemoryIndex(ws).snapshot(MODEL)
    assert snap.vectors is not None
    (part,) = snap.vectors.parts
    codes, center = sign_codes(part.matrix, part.scale)
    assert part.codes is not None and np.array_equal(part.codes, codes)
    assert part.center is not None and np.array_equal(part.center, center)
    for share in (0.5, 0.0):
        exact = MemorySettings(line_vector_share=share, approximate_rows=0)
        approx = MemorySettings(line_vector_share=share, approximate_rows=1)
        for query in QUERIES:
            qvec = np.asarray(emb.embed_query(query), np.float32)
            want = rank(snap, query, NOW, exact, qvec)
            got = rank(snap, query, NOW, approx, qvec)
            assert np.array_equal(got.scores, want.scores), (share, query)


def _assert_same(got, want, query: str) -> None:  # type: ignore[no-untyped-def]
    """Two rankings' scores and every signal, bit for bit."""
    assert np.array_equal(got.scores, want.scores), query
    assert list(got.signals) == list(want.signals), query
    for name, signal in want.signals.items():
        assert np.array_equal(got.signals[name], signal), (query, name)


def test_a_scan_beside_the_keyword_signals_ranks_as_one_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A large snapshot's vector scan runs on the engine's scan thread while the
    # caller computes the keyword signals: the scores (filtered, approximate,
    # with PRF and line vectors) are those of the scan run inline. Beside the
    # caller, a sign-bit scan's kernel keeps to one thread; an exact one to the setting.
    import threading

    from langchain_enhanced_memory.core import ranking
    from langchain_enhanced_memory.core.filters import SearchFilter, filter_mask
    from langchain_enhanced_memory.engine.answer import scan_thread

    rng = random.Random(9)
    ws, idx, emb = _embedded(tmp_path, rng, 8)
    snap = MemoryIndex(ws).snapshot(MODEL)
    where = []
    inline = ranking._cosines

    def seen(snap, qvec, settings, threads):  # type: ignore[no-untyped-def]
        where.append((threading.current_thread().name, threads))
        return inline(snap, qvec, settings, threads)

    monkeypatch.setattr(ranking, "_cosines", seen)
    monkeypatch.setattr(ranking, "THREADED_ROWS", 1)  # as if the snapshot were large
    masks = [None, filter_mask(snap, SearchFilter(kind="daily"), NOW)]
    for settings in (MemorySettings(), MemorySettings(approximate_rows=1, prf_threshold=2.0)):
        for query in QUERIES:
            qvec = np.asarray(emb.embed_query(query), np.float32)
            for mask in masks:
                want = rank(snap, query, NOW, settings, qvec, mask=mask)
                assert where.pop() == (threading.current_thread().name, 0) and not where
                got = rank(snap, query, NOW, settings, qvec, mask=mask, beside=scan_thread())
                alongside = 1 if settings.vectors.approximate_rows == 1 else 0  # sign bits at 1 row
                assert where and all(
                    name.startswith("vector-scan") and threads == alongside
                    for name, threads in where
                )
                where.clear()
                _assert_same(got, want, query)


def test_bounds_hold_only_when_the_min_max_of_the_new_array_is_the_old() -> None:
    from langchain_enhanced_memory.core import fusion, ranking

    held = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        cos = rng.random(40, dtype=np.float32)
        if seed % 3 == 0:  # ties at both ends
            cos[[1, 2]], cos[[3, 4]] = cos.min(), cos.max()
        # Replaced rows often include the ones at a bound; new values at, inside or past one.
        ends = [int(cos.argmin()), int(cos.argmax())]
        picked = rng.choice(40, int(rng.integers(1, 6)), replace=False)
        rows = np.unique(np.r_[picked, rng.choice(ends, int(rng.integers(0, 3)))]).astype(int)
        bounds = fusion.minmax_bounds(cos)
        assert bounds is not None
        inside = rng.uniform(bounds[0], bounds[1], rows.size)
        choices = [cos[rows], inside, cos[rows] + 0.05, cos[rows] - 0.05]
        values = np.asarray(choices[int(rng.integers(0, 4))], dtype=np.float32)
        values[rng.random(rows.size) < 0.2] = bounds[int(rng.integers(0, 2))]
        after = cos.copy()
        after[rows] = values
        if ranking._bounds_hold(bounds, values, fusion.minmax_normalize(cos)[rows]):
            held += 1
            assert fusion.minmax_bounds(after) == bounds, seed
    assert 50 < held < 250  # both answers are tried


def test_rewriting_only_the_candidates_scores_as_a_second_full_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # When the candidates' new cosines keep the min-max, only their rows are
    # fused again; the scores and signals must be those of a full second pass.
    from langchain_enhanced_memory.core import ranking

    rng = random.Random(4)
    ws, idx, emb = _embedded(tmp_path, rng, 8)
    snap = MemoryIndex(ws).snapshot(MODEL)
    held = ranking._bounds_hold
    seen: list[bool] = []

    def spy(*args):  # type: ignore[no-untyped-def]
        seen.append(held(*args))
        return seen[-1]

    queries = [*QUERIES, "grace owl thursday", "migration review budget", "what did we plan"]
    queries += ["kestrel migration on Feb 3", "retro Feb 4 and Feb 6", "owl budget in February"]
    for settings in (
        MemorySettings(),
        MemorySettings(approximate_rows=1, line_candidates=3),
        MemorySettings(line_candidates=2),
    ):
        for query in queries:
            qvec = np.asarray(emb.embed_query(query), np.float32)
            monkeypatch.setattr(ranking, "_bounds_hold", lambda *a: False)
            want = rank(snap, query, NOW, settings, qvec)
            monkeypatch.setattr(ranking, "_bounds_hold", spy)
            got = rank(snap, query, NOW, settings, qvec)
            _assert_same(got, want, query)
    assert True in seen and False in seen  # both ways were taken


def test_the_date_boost_moves_only_its_rows_as_the_formula_says(tmp_path: Path) -> None:
    # Scores are f * mult + (mult - 1) * date_prior over every row, applied only where
    # a date's multiplier is not 1: the same float32 steps, bit for bit.
    ws, idx, emb = _embedded(tmp_path, random.Random(5), 9)
    snap = MemoryIndex(ws).snapshot(MODEL)
    plain = MemorySettings(line_vector_share=0.0, approximate_rows=0)
    flat = plain.replace(temporal_boost=1.0, range_boost=1.0)
    queries = ["kestrel migration on Feb 3", "owl budget in February", "retro Feb 4 and Feb 6"]
    for query in queries:
        for qvec in (np.asarray(emb.embed_query(query), np.float32), None):
            got = rank(snap, query, NOW, plain, qvec)
            mult = got.signals["date_boost"]
            assert (mult != 1.0).any(), query
            want = rank(snap, query, NOW, flat, qvec).scores.copy()
            want *= mult
            want += (mult - 1.0) * plain.ranking.date_prior
            assert np.array_equal(got.scores, want), query
