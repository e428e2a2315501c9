"""A database-backed scope's notes, written by remember and forget, hold what a folder of them does.

Notes written into a scope through the database note path (several bullets
remembered into two notes, one forgotten) are exported to a folder, and the
folder is indexed by the local store: both, on a real PostgreSQL server with
the real local model, hold the same chunk rows (text, lines, headers, kind,
dates), the same terms in each field, the same chunk and line vectors, and
answer the same hits with the same scores, under three recipes. The writes
themselves open no SQLite file and make no temporary folder: a note is
indexed in memory.
"""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.core.snapshot import Snapshot
from langchain_enhanced_memory.core.text import PHRASE_SEP, path_text, phrases, tokenize
from langchain_enhanced_memory.embeddings import LOCAL_MODEL
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.engine.database import DatabaseSearch
from langchain_enhanced_memory.store.database import Database

NOW = datetime(2026, 3, 4, 9, 30)
TOPIC = "memory/projects/atlas.md"
FACTS = [
    ("Kestrel hovers over the north field at dawn", None, None),
    ("Heron waits by the mill pond; it took a perch", "Birds", None),
    ("Osprey dives for trout below the weir", "Birds", None),
    ("The budget review moved to Friday; Dana owns the slides", "Meetings", None),
    ("Atlas ships the import tool in April", "Roadmap", TOPIC),
    ("Atlas drops the legacy exporter: nobody used it since 2024", "Roadmap", TOPIC),
    ("Atlas on-call rota: Priya, then Tomas", "Team", TOPIC),
    ("Curlew calls at dusk across the marsh", "Birds", None),
]
FORGOTTEN = "Osprey dives for trout"
QUERIES = [
    "which bird hovers at dawn",
    "who owns the budget slides",
    "Atlas roadmap import tool",
    "osprey trout",
    "on-call rota",
    "what happened at the mill pond",
]
RECIPES = {
    "default": MemorySettings(),
    "chunks embedded whole": MemorySettings(chunk_vectors="embedded"),
    "no line vectors": MemorySettings(line_vector_share=0.0),
}

Key = tuple[str, int, int]


def _refused(*_: Any, **__: Any) -> Any:
    raise AssertionError("a database write opened a SQLite file or made a temporary folder")


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_a_scope_note_holds_and_ranks_what_a_folder_of_it_does(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recipe: str
) -> None:
    settings = RECIPES[recipe]
    folder = tmp_path / "exported"
    with Database.connect(database_url, settings, cache=None) as db:
        scope = DatabaseSearch(db, "parity", settings=settings, embedder="local")
        with monkeypatch.context() as no_files:
            no_files.setattr(sqlite3, "connect", _refused)
            no_files.setattr(tempfile, "mkdtemp", _refused)
            for text, section, file in FACTS:
                scope.remember(text, section=section, file=file, now=NOW)
            assert [g.path for g in scope.forget(match=FORGOTTEN)] == ["memory/2026-03-04.md"]
        assert sorted(db.export("parity", folder)) == ["memory/2026-03-04.md", TOPIC]
        local = MemorySearch(folder, settings=settings, embedder="local")
        local.update_index()
        model = scope.model_id
        assert model is not None and model == local.model_id and LOCAL_MODEL in model
        theirs = db.snapshot("parity", model)
        ours = local.index.snapshot(model)
        assert _rows(theirs) == _rows(ours)
        assert not any(FORGOTTEN in t for t in theirs.texts)
        assert _terms(theirs, ours) == _terms(ours, ours)
        _same_vectors(theirs, ours)
        for query in QUERIES:
            assert _hits(scope, query) == _hits(local, query), query


def _rows(snap: Snapshot) -> dict[Key, tuple]:
    """Each chunk's row by path and lines: header, header chain, text, kind, date, day."""
    return {
        (snap.paths[i], int(snap.start[i]), int(snap.end[i])): (
            snap.header[i],
            snap.headers[i],
            snap.texts[i],
            snap.kinds[i],
            snap.dates[i],
            int(snap.day[i]),
        )
        for i in range(len(snap))
    }


def _keys(snap: Snapshot) -> list[Key]:
    return [(snap.paths[i], int(snap.start[i]), int(snap.end[i])) for i in range(len(snap))]


def _terms(snap: Snapshot, vocabulary_of: Snapshot) -> dict[tuple[str, str], dict[Key, float]]:
    """Per field and term (every term ``vocabulary_of``'s chunks hold): each chunk's frequency.

    With each field's length of each chunk, under the term ``""``.
    """
    keys = _keys(snap)
    words: dict[str, set[str]] = {"text": set(), "phrase": set(), "header": set(), "path": set()}
    for i in range(len(vocabulary_of)):
        chain = vocabulary_of.headers[i].replace(" > ", " ")
        tokens = tokenize(chain + "\n" + vocabulary_of.texts[i])
        words["text"] |= set(tokens)
        words["phrase"] |= set(phrases(tokens))
        words["header"] |= set(tokenize(vocabulary_of.headers[i]))
        words["path"] |= set(tokenize(path_text(vocabulary_of.paths[i])))
    assert any(PHRASE_SEP in w for w in words["phrase"])
    posts = {
        "text": snap.text_post,
        "phrase": snap.phrase_post,
        "header": snap.header_post,
        "path": snap.path_post,
    }
    out: dict[tuple[str, str], dict[Key, float]] = {}
    for field, post in posts.items():
        out[(field, "")] = {k: float(n) for k, n in zip(keys, post.doc_len, strict=True)}
        for word in sorted(words[field]):
            docs, tf = post.column(word)
            out[(field, word)] = {keys[d]: float(f) for d, f in zip(docs, tf, strict=True)}
    return out


def _same_vectors(theirs: Snapshot, ours: Snapshot) -> None:
    """The same chunk vectors, and lines scoring the same against a query, per chunk."""
    assert theirs.vectors is not None and ours.vectors is not None
    mine, other = theirs.dense_vectors(), ours.dense_vectors()
    assert mine is not None and other is not None
    by_key = dict(zip(_keys(ours), other, strict=True))
    for key, row in zip(_keys(theirs), mine, strict=True):
        assert np.array_equal(row, by_key[key]), key
    assert theirs.vectors.has_lines == ours.vectors.has_lines
    query = np.random.default_rng(7).normal(size=theirs.vectors.dim).astype(np.float32)
    assert _line_scores(theirs, query) == _line_scores(ours, query)


def _line_scores(snap: Snapshot, query: np.ndarray) -> dict[Key, list[float]]:
    assert snap.vectors is not None
    got = snap.vectors.line_cosines(np.arange(len(snap)), query)
    if got is None:
        return {}
    keys = _keys(snap)
    out: dict[Key, list[float]] = {}
    for value, owner in zip(*got, strict=True):
        out.setdefault(keys[int(owner)], []).append(float(value))
    return out


def _hits(engine: Any, query: str) -> list[tuple[str, int, int, float]]:
    hits = engine.search(query, k=10, now=NOW).hits
    return [(h.path, h.start_line, h.end_line, round(h.score, 6)) for h in hits]
