"""Postings in segments: read as one list, on disk as mapped files, ranked like a fresh build."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.core.ranking import rank
from langchain_enhanced_memory.core.scoring import FENCE, Postings, bm25, match_fraction
from langchain_enhanced_memory.core.segments import (
    ReadOnce,
    SegmentedPostings,
    compacted,
    place_rows,
)
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.core.text import tokenize
from langchain_enhanced_memory.store import postings, segment, sync
from langchain_enhanced_memory.store.chunkrows import SegmentRows
from langchain_enhanced_memory.store.db import chunk_ids
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.vector_segments import side_folder
from tests.unit_tests.test_scoring import brute_bm25, random_corpus

PARTS = ("keys", "indptr", "docs", "tf", "doc_len")
NOW = datetime(2026, 3, 1, 9, 0)
QUERIES = ["kestrel migration", "retro thursday grace", "owl budget", "heron", "plan the review"]
WORDS = "kestrel owl heron migration budget retro thursday grace review plan rollback".split()
WORDS += ["café", "迁移计划", "😀"]  # rows are kept as UTF-8 bytes: more than one byte a character


def _segmented(seed: int) -> tuple[list[list[str]], SegmentedPostings, list[Postings], list]:
    """Random documents cut into segments, some rows dropped; the live documents too."""
    rng = random.Random(seed)
    docs = random_corpus(seed, n_docs=rng.randint(1, 40), vocab=rng.randint(1, 30))
    cuts = sorted(rng.sample(range(1, len(docs) + 1), k=min(len(docs), rng.randint(1, 4))))
    ids = np.cumsum([rng.randint(1, 3) for _ in docs]).astype(np.int64)
    alive = np.asarray([rng.random() < 0.7 for _ in docs], dtype=bool)
    bounds = [0, *cuts] if cuts[-1] == len(docs) else [0, *cuts, len(docs)]
    segs = [Postings.build(docs[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]
    seg_ids = [ids[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    rows = place_rows(seg_ids, ids[alive])
    assert rows is not None
    live_docs = [d for d, a in zip(docs, alive, strict=True) if a]
    return live_docs, SegmentedPostings(segs, rows, int(alive.sum())), segs, rows


@pytest.mark.parametrize("seed", range(30))
def test_segments_read_exactly_like_one_build_of_the_live_rows(seed: int) -> None:
    live_docs, seg, parts, rows = _segmented(seed)
    want = Postings.build(live_docs)
    assert seg.n_docs == want.n_docs and np.array_equal(seg.doc_len, want.doc_len)
    vocab = sorted({t for d in random_corpus(seed, 40, 30) for t in d} | {"t0", "zzz"})
    for term in vocab:
        for got, exp in zip(seg.column(term), want.column(term), strict=True):
            assert got.dtype == exp.dtype and np.array_equal(got, exp), term
    terms = vocab[: 1 + seed % 5]
    if want.n_docs:
        assert np.array_equal(bm25(seg, terms, 1.2, 0.5), bm25(want, terms, 1.2, 0.5))
        brute = brute_bm25(live_docs, terms, 1.2, 0.5) if sum(map(len, live_docs)) else None
        if brute is not None:
            assert np.allclose(bm25(seg, terms, 1.2, 0.5), brute, rtol=1e-5, atol=1e-6)
    assert np.array_equal(match_fraction(seg, terms), match_fraction(want, terms))
    merged = compacted(parts, rows)
    for part in PARTS:
        assert np.array_equal(getattr(merged, part), getattr(want, part)), part


def test_rows_not_covered_once_are_refused() -> None:
    live = np.asarray([1, 2, 5], dtype=np.int64)
    assert place_rows([np.asarray([1, 2]), np.asarray([5, 7])], live) is not None
    assert place_rows([np.asarray([1, 2])], live) is None  # 5 is in no segment
    assert place_rows([np.asarray([1, 5]), np.asarray([2])], live) is None  # out of order
    assert place_rows([], np.zeros(0, np.int64)) == []


def _docs(snap, word: str) -> np.ndarray:
    """The rows whose text holds ``word``."""
    return snap.text_post.column(tokenize(word)[0])[0]


def _note(rng: random.Random) -> str:
    sections = []
    for s in range(rng.randint(1, 4)):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
        sections.append(f"## Part {s} {rng.choice(WORDS)}\n\n{words}.\n")
    return "# Note\n\n" + "\n".join(sections)


def _keyed(snap, query: str, settings: MemorySettings) -> dict[tuple[str, int], float]:
    scores = rank(snap, query, NOW, settings, None).scores
    return {(p, int(s)): float(v) for p, s, v in zip(snap.paths, snap.start, scores, strict=True)}


def _rows(snap) -> list[tuple]:
    """Each row of a snapshot as SQLite holds it, with its file's kind and date."""
    return list(
        zip(
            snap.ids.tolist(),
            snap.paths,
            snap.start.tolist(),
            snap.end.tolist(),
            list(snap.header),
            list(snap.headers),
            [snap.texts[i] for i in range(len(snap))],
            snap.kinds,
            snap.dates,
            snap.day.tolist(),
            strict=True,
        )
    )


def _sql_rows(idx: MemoryIndex) -> list[tuple]:
    with idx.connect() as conn:
        rows = conn.execute(
            "SELECT c.id, c.path, c.start_line, c.end_line, c.header, c.headers, c.text,"
            " f.kind, f.date FROM chunks c JOIN files f USING (path) ORDER BY c.id"
        ).fetchall()
    day = [datetime.fromisoformat(r[8]).toordinal() if r[8] else -1 for r in rows]
    return [(*r, d) for r, d in zip(rows, day, strict=True)]


def test_a_segmented_index_ranks_like_a_fresh_build_after_random_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small thresholds, so a few edits go through delta merges and full merges.
    monkeypatch.setattr(segment, "MAX_SEGMENTS", 3)
    monkeypatch.setattr(segment, "MERGE_SHARE", 0.6)
    monkeypatch.setattr(segment, "SEGMENT_CHUNKS", 8)  # a larger base stays out of some
    rng = random.Random(7)
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(_note(rng))
    for i in range(10):
        (ws / "memory" / f"2026-02-{i + 10}.md").write_text(_note(rng))
    settings = MemorySettings()
    idx = MemoryIndex(ws, settings)
    idx.sync()
    counts, kinds = [], set()
    for step in range(14):
        notes = sorted((ws / "memory").glob("*.md"))
        action = rng.choice(["edit", "edit", "add", "delete"] if len(notes) > 2 else ["add"])
        if action == "edit":
            rng.choice(notes).write_text(_note(rng))
        elif action == "add":
            (ws / "memory" / f"2026-01-{step + 10}.md").write_text(_note(rng))
        else:
            rng.choice(notes).unlink()
        idx.sync()
        snap = idx.snapshot()
        kinds.add(type(snap.text_post).__name__)
        kinds.add(type(snap.texts).__name__)
        assert _rows(snap) == _sql_rows(idx)  # each chunk's row, read from its segment
        with idx.connect() as conn:
            named = postings.named_segments(conn)
            rebuilt = postings.build_postings(conn, "", ())
        assert named is not None
        counts.append(len(named[0]))
        # The same rows, postings built fresh from every chunk: the very same ranking.
        fresh_rows = dataclasses.replace(
            snap,
            text_post=rebuilt["text"],
            phrase_post=rebuilt["phrase"],
            header_post=rebuilt["header"],
            path_post=rebuilt["path"],
            memo={},
        )
        # And an index built from nothing (its rows in another order: scores per chunk).
        fresh = MemoryIndex(ws, settings, path=tmp_path / f"fresh-{step}.sqlite")
        fresh.sync()
        for query in QUERIES:
            got = rank(snap, query, NOW, settings, None).scores
            assert np.array_equal(got, rank(fresh_rows, query, NOW, settings, None).scores)
            other = _keyed(fresh.snapshot(), query, settings)
            mine = _keyed(snap, query, settings)
            assert mine.keys() == other.keys()
            assert all(abs(mine[k] - other[k]) <= 1e-6 for k in mine), query
    assert {"SegmentedPostings", "PlacedStrings"} <= kinds, "some generation read several segments"
    assert max(counts) > 1 and min(counts[1:]) < max(counts), counts  # and merged them
    on_disk = {p.name for p in side_folder(idx.path).glob("*.seg")}
    assert on_disk == set(named[0])  # every segment no generation names was collected


def test_a_new_chunk_never_takes_the_id_of_a_replaced_one(workspace: Path) -> None:
    idx = MemoryIndex(workspace)
    idx.sync()
    with idx.connect() as conn:
        top, path = conn.execute("SELECT id, path FROM chunks ORDER BY id DESC").fetchone()
    (workspace / path).unlink()  # the chunks with the highest ids go
    idx.sync()
    (workspace / "memory" / "2026-03-01.md").write_text("# New\n\nA kestrel today.\n")
    idx.sync()
    with idx.connect() as conn:
        (low,) = conn.execute(
            "SELECT min(id) FROM chunks WHERE path='memory/2026-03-01.md'"
        ).fetchone()
    assert low > top
    assert _docs(idx.snapshot(), "kestrel").size == 1


def test_a_failed_sync_keeps_the_named_segments_and_its_orphan_goes_later(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = MemoryIndex(workspace)
    idx.sync()
    folder = side_folder(idx.path)
    before = set(p.name for p in folder.glob("*.seg"))
    real = postings.write_postings

    def written_then_killed(*a: object, **k: object) -> None:
        real(*a, **k)  # type: ignore[arg-type]
        raise KeyboardInterrupt  # as a kill between the file and the commit

    monkeypatch.setattr(sync, "write_postings", written_then_killed)
    (workspace / "memory" / "2026-03-01.md").write_text("# New\n\nA kestrel today.\n")
    with pytest.raises(KeyboardInterrupt):
        idx.sync()
    monkeypatch.undo()
    assert len(list(folder.glob("*.seg"))) > len(before)  # the orphan is there
    reader = MemoryIndex(workspace).snapshot()  # the previous generation, searchable
    assert reader.generation == 1 and _docs(reader, "kestrel").size == 0
    idx.sync()
    with idx.connect() as conn:
        named = postings.named_segments(conn)
    assert named is not None
    assert {p.name for p in folder.glob("*.seg")} == set(named[0])
    assert _docs(idx.snapshot(), "kestrel").size == 1


def test_a_damaged_postings_row_or_a_lost_segment_still_searches_and_is_rebuilt(
    workspace: Path,
) -> None:
    idx = MemoryIndex(workspace)
    idx.sync()
    want = _docs(idx.snapshot(), "postgres")
    assert want.size == 2
    with idx.connect() as conn:  # not a list of segments
        conn.execute("UPDATE catalog SET data=? WHERE name='postings'", (b"EMP2\0\0\0\0",))
    assert np.array_equal(_docs(MemoryIndex(workspace).snapshot(), "postgres"), want)
    (workspace / "memory" / "2026-03-01.md").write_text("# New\n\nPostgres again.\n")
    idx.sync()
    with idx.connect() as conn:
        named = postings.named_segments(conn)
    assert named is not None and len(named[0]) == 1  # rebuilt as one segment
    for p in side_folder(idx.path).glob("*.seg"):
        p.unlink()  # deleted by hand
    snap = MemoryIndex(workspace).snapshot()
    assert _docs(snap, "postgres").size == want.size + 1
    (workspace / "memory" / "2026-03-02.md").write_text("# Later\n\nNothing.\n")
    idx.sync()
    assert len(list(side_folder(idx.path).glob("*.seg"))) == 1


def test_compact_merges_the_segments_into_one(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segment, "MERGE_SHARE", 10.0)  # no merge before the compact
    idx = MemoryIndex(workspace)
    idx.sync()
    for day in range(3):
        (workspace / "memory" / f"2026-03-0{day + 1}.md").write_text(f"# Day\n\nKestrel {day}.\n")
        idx.sync()
    with idx.connect() as conn:
        named = postings.named_segments(conn)
    assert named is not None and len(named[0]) == 4
    scores = rank(idx.snapshot(), "kestrel postgres", NOW, MemorySettings(), None).scores
    idx.compact()
    with sqlite3.connect(idx.path) as conn:
        named = postings.named_segments(conn)
    assert named is not None and len(named[0]) == 1
    assert [p.name for p in side_folder(idx.path).glob("*.seg")] == named[0]
    fresh = MemoryIndex(workspace).snapshot()
    assert np.array_equal(
        rank(fresh, "kestrel postgres", NOW, MemorySettings(), None).scores, scores
    )


def test_a_fenced_lookup_finds_what_a_plain_one_does(tmp_path: Path) -> None:
    rng = random.Random(2)
    docs = [[f"w{rng.randint(0, 4000)}" for _ in range(rng.randint(1, 20))] for _ in range(900)]
    plain = Postings.build(docs)
    assert plain.keys.size > 4 * FENCE  # several pages of keys
    folder = tmp_path / "side"
    ids = np.arange(1, len(docs) + 1, dtype=np.int64)
    rows = SegmentRows.build([("MEMORY.md", i, i, "", "", " ".join(d)) for i, d in enumerate(docs)])
    posts = {f: plain for f in segment.FIELDS}
    seg = postings._write_segment(folder, 1, segment.Segment(rows, posts, ids=ids))
    fenced = seg.posts["text"]
    assert fenced.fence is not None and fenced.fence.size == -(-plain.keys.size // FENCE)
    searched = postings.open_segments(folder, [seg.name], searcher=True)
    assert searched is not None
    read = searched[0].searched()["text"]  # what a searcher scores: columns read on demand
    assert isinstance(read, postings.FilePostings) and np.array_equal(read.doc_len, plain.doc_len)
    for term in [f"w{i}" for i in range(-5, 4010)]:
        want = plain.column(term)
        for got in (fenced.column(term), read.column(term)):
            pairs = zip(got, want, strict=True)
            assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in pairs), term


def test_a_reader_whose_segments_a_writer_removed_reads_again(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    MemoryIndex(workspace).sync()
    monkeypatch.setattr(segment, "MAX_SEGMENTS", 1)  # every sync merges: old files go
    real_open, real_build = postings.open_segments, postings.build_postings
    calls = {"open": 0, "build": 0}

    def open_after_a_writer(folder, names, searcher=False):
        calls["open"] += 1
        if calls["open"] == 1:  # between this reader's read of the row and its open
            (workspace / "memory" / "2026-03-01.md").write_text("# New\n\nA kestrel.\n")
            MemoryIndex(workspace).sync()
            calls["build"] = 0
        return real_open(folder, names, searcher)

    def counted_build(*a, **k):
        calls["build"] += 1
        return real_build(*a, **k)

    monkeypatch.setattr(postings, "open_segments", open_after_a_writer)
    monkeypatch.setattr(postings, "build_postings", counted_build)
    snap = MemoryIndex(workspace).snapshot()
    assert snap.generation == 2 and _docs(snap, "kestrel").size == 1
    # The writer opened them too; then the reader read again, from the new segments.
    assert calls["open"] == 3 and calls["build"] == 0


def test_small_side_files_stay_maps(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_enhanced_memory.store import vector_segments

    monkeypatch.setattr(vector_segments, "READ_ABOVE", 4 << 20)
    monkeypatch.setattr(postings, "READ_ABOVE", 4 << 20)
    idx = MemoryIndex(workspace)
    idx.sync()
    snap = MemoryIndex(workspace).snapshot()
    assert isinstance(snap.text_post, Postings) and snap.text_post.fence is not None
    assert _docs(snap, "postgres").size == 2


def test_read_once_reads_each_column_once_and_scores_like_the_postings() -> None:
    post = Postings.build([["a", "b"], ["b"], ["c", "a", "a"]])
    reads: list[str] = []

    class Counting:
        doc_len, n_docs = post.doc_len, post.n_docs

        def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
            reads.append(term)
            return post.column(term)

    once = ReadOnce(Counting())
    assert np.array_equal(bm25(once, ["a", "b", "z"]), bm25(post, ["a", "b", "z"]))
    assert np.array_equal(match_fraction(once, ["a", "z"]), match_fraction(post, ["a", "z"]))
    assert sorted(reads) == ["a", "b", "z"]
    assert once.n_docs == 3 and np.array_equal(once.doc_len, post.doc_len)


def test_the_live_ids_the_sync_kept_are_read_only_for_their_generation(workspace: Path) -> None:
    idx = MemoryIndex(workspace)
    idx.sync()
    with idx.connect() as conn:
        assert np.array_equal(postings.live_ids(conn), chunk_ids(conn))
        conn.execute("UPDATE catalog SET data=? WHERE name='live'", (np.arange(3).tobytes(),))
        assert postings.live_ids(conn).size == 3  # what the row says, for its generation
        conn.execute("UPDATE catalog SET generation=generation - 1 WHERE name='live'")
        assert np.array_equal(postings.live_ids(conn), chunk_ids(conn))  # stale: not trusted
