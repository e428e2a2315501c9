"""Strings kept as UTF-8 bytes read exactly like the list of strings they were built from."""

from __future__ import annotations

import random

import numpy as np
import pytest

from langchain_enhanced_memory.core.strings import PlacedStrings, Strings

ALPHABET = ["a", "b", " ", "é", "迁", "😀", "\n", "\x00", "\ud800"]  # a lone surrogate too


def _random(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choices(ALPHABET, k=rng.randint(0, 6))) for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_strings_read_like_the_list(seed: int) -> None:
    rng = random.Random(seed)
    want = _random(rng, rng.randint(0, 40))
    got = Strings.encode(want)
    assert len(got) == len(want)
    assert list(got) == want
    assert got.tolist() == want
    assert Strings.encode([w.encode("ascii", "ignore").decode() for w in want]).tolist() == [
        w.encode("ascii", "ignore").decode() for w in want
    ]  # the all-ASCII way
    assert [got[i] for i in range(len(want))] == want
    assert [got[-i] for i in range(1, len(want) + 1)] == [want[-i] for i in range(1, len(want) + 1)]
    assert got[1:7:2] == want[1:7:2]
    with pytest.raises(IndexError):
        got[len(want)]
    with pytest.raises(IndexError):
        got[-len(want) - 1]


@pytest.mark.parametrize("seed", range(5))
def test_take_and_concat_keep_the_rows_they_select(seed: int) -> None:
    rng = random.Random(seed)
    parts = [_random(rng, rng.randint(0, 30)) for _ in range(rng.randint(1, 4))]
    keeps = [sorted(rng.sample(range(len(p)), rng.randint(0, len(p)))) for p in parts]
    taken = [
        Strings.encode(p).take(np.asarray(k, np.int64)) for p, k in zip(parts, keeps, strict=True)
    ]
    want = [[p[i] for i in k] for p, k in zip(parts, keeps, strict=True)]
    assert [list(t) for t in taken] == want
    assert list(Strings.concat(taken)) == [s for w in want for s in w]


def test_placed_strings_read_each_row_from_its_part() -> None:
    a, b = Strings.encode(["x0", "x1", "x2"]), Strings.encode(["y0", "y1"])
    placed = PlacedStrings([a, b], np.array([0, 1, 0, 1]), np.array([0, 0, 2, 1]))
    assert list(placed) == ["x0", "y0", "x2", "y1"]
    assert placed[-1] == "y1" and placed[1:3] == ["y0", "x2"]
    with pytest.raises(IndexError):
        placed[4]
