"""``VectorSet.take``: a subset of a generation's vectors as one part, checked by brute force."""

from __future__ import annotations

import numpy as np
import pytest

from langchain_enhanced_memory.core.vectorset import VectorPart, VectorSet, dequantize, quantize


def _parts(rng: np.random.Generator, n: int, dim: int) -> VectorSet:
    """Three parts holding ``n`` live rows in a shuffled layout, some rows replaced, with lines."""
    live = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), 2, replace=False))
    parts = []
    for share in np.split(live, cuts):
        dead = rng.integers(0, 3)  # replaced chunks stay in their part, masked out
        rows = np.concatenate([np.sort(share), np.full(dead, -1)])
        rng.shuffle(rows)
        matrix, scale = quantize(rng.normal(size=(rows.size, dim)).astype(np.float32))
        counts = rng.integers(0, 4, rows.size)  # 0 to 3 lines per chunk row
        owner = np.repeat(np.arange(rows.size), counts).astype(np.int32)
        lines, line_scale = quantize(rng.normal(size=(owner.size, dim)).astype(np.float32))
        parts.append(VectorPart(matrix, scale, rows, lines, line_scale, owner))
    return VectorSet(parts, n)


def _lines_of(vs: VectorSet, row: int) -> np.ndarray:
    """The float line vectors of live ``row`` by brute force, in their part's order."""
    for part in vs.parts:
        assert part.owner is not None and part.lines is not None
        mine = np.flatnonzero(part.rows[part.owner] == row)
        if mine.size or (part.rows == row).any():
            assert part.line_scale is not None
            return dequantize(np.asarray(part.lines)[mine], np.asarray(part.line_scale)[mine])
    raise AssertionError(row)


@pytest.mark.parametrize("seed", range(8))
def test_take_gives_each_rows_chunk_and_line_vectors(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vs = _parts(rng, 40, 16)
    rows = rng.choice(40, int(rng.integers(0, 41)), replace=False)  # any order
    part = vs.take(rows)
    assert np.array_equal(part.rows, np.arange(rows.size))
    assert np.allclose(dequantize(part.matrix, part.scale), vs.dense()[rows])
    owner = np.zeros(0, np.int32) if part.owner is None else part.owner
    assert (np.diff(owner) >= 0).all()
    for j, row in enumerate(rows.tolist()):
        mine = np.flatnonzero(owner == j)
        got = np.zeros((0, 16), np.float32)
        if mine.size:
            assert part.lines is not None and part.line_scale is not None
            got = dequantize(np.asarray(part.lines)[mine], np.asarray(part.line_scale)[mine])
        assert np.allclose(got, _lines_of(vs, row))
    # Scored as a set of its own, the part answers as the original rows do.
    alone = VectorSet([part], rows.size)
    q = rng.normal(size=16).astype(np.float32)
    assert np.allclose(alone.cosines(q), vs.cosines(q)[rows], atol=1e-5)


def test_take_refuses_a_row_without_a_vector() -> None:
    vs = VectorSet([VectorPart(*quantize(np.ones((2, 4), np.float32)), np.array([0, 2]))], 3)
    with pytest.raises(ValueError, match="no vector"):
        vs.take(np.array([1]))
