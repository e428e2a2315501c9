"""Guards against super-linear time that do not depend on how busy the machine is.

A test never asserts a speed: it runs the same work at two sizes and checks
that the time grows about in proportion (the ratio of the two, each the best
of a few runs, measured in the same test). Linear work at ``factor`` times the
size takes about ``factor`` times as long; quadratic work ``factor**2`` times.
The bound sits between the two, far from either.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _best(run: Callable[[T], object], data: T, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        run(data)
        best = min(best, time.process_time() - start)
    return best


def assert_grows_linearly(
    make: Callable[[int], T],
    run: Callable[[T], object],
    size: int,
    *,
    factor: int = 8,
    repeats: int = 3,
    floor_s: float = 0.002,
) -> None:
    """Fail when the work at ``size * factor`` costs over ``factor**1.5`` times that at ``size``.

    Args:
        make: Builds the input of a given size (not timed).
        run: The work under test.
        size: The small size; the large one is ``size * factor``.
        factor: How much larger the second input is.
        repeats: Runs per size; the fastest counts (noise only ever adds time).
        floor_s: The small run's time is taken as at least this, so a run too
            fast for the clock cannot make the ratio explode.
    """
    small = max(_best(run, make(size), repeats), floor_s)
    large = _best(run, make(size * factor), repeats)
    bound = factor**1.5
    assert large / small < bound, (
        f"time grew {large / small:.1f}x for {factor}x the input"
        f" ({small * 1000:.1f} ms -> {large * 1000:.1f} ms; linear is ~{factor}x,"
        f" quadratic ~{factor**2}x, the bound {bound:.0f}x)"
    )
