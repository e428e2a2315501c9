"""A database-backed scope's writes build and embed before the scope's lock, on a real server.

An append embeds only the texts the scope holds no vector of, and a writer
that commits between another's read and its lock makes that one read and
build again: both land, each once.
"""

from __future__ import annotations

import numpy as np
import psycopg

from langchain_enhanced_memory.store.database import Database, Embedding

MODEL = "fake/words"
NOTE = "memory/topics/birds.md"


def _vectors(texts: list[str]) -> np.ndarray:
    """A stand-in embedder: a unit vector per text, the same for the same text."""
    out = np.stack([np.random.default_rng(sum(t.encode())).normal(size=8) for t in texts])
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def _by_text(db: Database) -> dict[str, np.ndarray]:
    snap = db.snapshot("team", MODEL)
    dense = snap.dense_vectors()
    assert dense is not None
    return {snap.texts[i]: dense[i] for i in range(len(snap))}


def test_a_second_append_embeds_only_the_new_chunk(database_url: str) -> None:
    asked: list[list[str]] = []

    def counting(texts: list[str]) -> np.ndarray:
        asked.append(list(texts))
        return _vectors(texts)

    embedding = Embedding(MODEL, counting)
    birds = ["kestrel", "heron", "osprey", "plover"]
    with Database.connect(database_url, cache=None) as db:
        for bird in birds:
            db.append(
                "team", f"A {bird} nests here.", section=bird.title(), file=NOTE, embed=embedding
            )
        before = _by_text(db)
        assert len(before) == len(birds)  # one chunk per section
        asked.clear()
        db.append("team", "A curlew nests here.", section="Curlew", file=NOTE, embed=embedding)
        after = _by_text(db)
    texts = [t for call in asked for t in call]
    assert len(texts) == 1 and "curlew" in texts[0]  # the new chunk only
    assert len(after) == len(birds) + 1
    for text, vector in before.items():  # the others keep the vectors they had
        assert np.array_equal(after[text], vector)


def test_a_write_between_read_and_lock_is_read_again_and_both_land(database_url: str) -> None:
    tries: list[list[str]] = []
    locked: list[bool] = []
    with (
        Database.connect(database_url, cache=None) as db,
        Database.connect(database_url, cache=None) as other,
    ):
        db.append("team", "A kestrel hovers.", file=NOTE, embed=Embedding(MODEL, _vectors))

        def meanwhile(texts: list[str]) -> np.ndarray:
            tries.append(list(texts))
            if len(tries) == 1:  # this write has read the note and is embedding it
                with psycopg.connect(database_url, autocommit=True) as probe:
                    try:
                        probe.execute(
                            "SELECT 1 FROM em_scopes WHERE name = 'team' FOR UPDATE NOWAIT"
                        )
                        locked.append(False)
                    except psycopg.errors.LockNotAvailable:
                        locked.append(True)
                if not locked[0]:
                    other.append(
                        "team", "A heron waits.", file=NOTE, embed=Embedding(MODEL, _vectors)
                    )
            return _vectors(texts)

        db.append("team", "An osprey dives.", file=NOTE, embed=Embedding(MODEL, meanwhile))
        assert locked == [False]  # the scope was free while this write embedded
        assert len(tries) == 2 and any("osprey" in t for t in tries[1])  # read and built again
        text = db.read("team", NOTE).text
        snap = db.snapshot("team", MODEL)
    for bird in ("kestrel", "heron", "osprey"):
        assert text.count(bird) == 1, text
        assert any(bird in t for t in snap.texts)
