"""Embedding what lacks a vector: batches in flight at once, committed as they land.

The texts are read and embedded a part of the chunk rows at a time
(:class:`.embed_cache.MissingPlan`), each part stored before the next is read,
so a run holds one part's texts and vectors, whatever the workspace's size.

Runs under the index's embedding lock, so two runs at once embed each text once;
a text sync does not wait for it. Before
the first batch the original skill's ``memory/vectors.json`` is reused when it
fits (:mod:`.migrate`). Batches are committed together every half second
(:class:`.embed_cache.CacheWriter`); a failure keeps every batch already embedded, so
the next run embeds only the rest.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ..core.errors import EmbeddingError
from ..core.vectorset import dequantize, normalised_means, quantize
from .embed_cache import CacheWriter, Missing
from .index import MemoryIndex

__all__ = ["EmbedJob", "ProgressFactory", "embed_missing"]

log = logging.getLogger("langchain_enhanced_memory")

Batch = list[tuple[str, str]]
#: Given how many texts will be embedded, a callback for each batch done (or None).
ProgressFactory = Callable[[int], "Callable[[int], None] | None"]


def embed_missing(
    index: MemoryIndex,
    model: str,
    embed: Callable[[list[str]], np.ndarray],
    *,
    progress: ProgressFactory | None = None,
    wait: bool = True,
) -> int:
    """Embed every chunk and line lacking a vector for ``model``, committing as batches land.

    Args:
        index: The (synced) index.
        model: Model id the vectors are cached under.
        embed: Texts to an ``(n, d)`` array; raises ``EmbeddingError`` on failure.
        progress: Given the number of texts to embed, a callback for each batch done.
        wait: Block on another embedding run; when False and one is busy, embed nothing.

    Returns:
        How many texts were embedded.
    """
    with index.embed_lock(wait) as locked:
        return _embed_locked(index, model, embed, progress) if locked else 0


def _embed_locked(
    index: MemoryIndex,
    model: str,
    embed: Callable[[list[str]], np.ndarray],
    progress: ProgressFactory | None,
) -> int:
    index.forget_lost(model)  # a search reads past a lost side file; the run forgets it
    plan = index.missing_plan(model)
    # Reuse the original skill's memory/vectors.json (read once per version).
    from .migrate import seed_from_vectors_json  # here: a search that embeds nothing skips it

    if plan and seed_from_vectors_json(index, model):
        plan = index.missing_plan(model)
    tick = progress(len(plan)) if progress and len(plan) else None
    run = _Run(index, model, embed, tick, index.vector_dim(model) if len(plan) else None)
    with index.embedding_writer(model) as writer:
        # A part of the rows at a time: its texts and vectors are all the run holds.
        for todo in index.missing_parts(plan):
            run.part(todo, writer)
            writer.flush()  # the next part's means find these lines' vectors stored
    return run.done


@dataclass
class _Run:
    """One embedding run's state across the parts of its texts."""

    index: MemoryIndex
    model: str
    embed: Callable[[list[str]], np.ndarray]
    tick: Callable[[int], None] | None
    dim: int | None
    done: int = 0

    def part(self, todo: Missing, writer: CacheWriter) -> None:
        """Embed one part's texts and store them, with the means they complete."""
        texts = todo.texts
        settings = self.index.settings
        size = settings.embedding.embed_batch_size
        batches = [texts[i : i + size] for i in range(0, len(texts), size)]
        means = _Means(self.index, self.model, todo.means, [h for h, _ in texts])
        # With nothing cached yet, the first batch fixes the dimension on its own:
        # batches in flight together reach the server in any order, and a server
        # misbehaving for a moment must not set the size every later vector is held to.
        head = batches[:1] if self.dim is None else []
        runs = itertools.chain(
            _in_flight(self.embed, head, 1),
            _in_flight(self.embed, batches[len(head) :], settings.embedding.embed_concurrency),
        )
        ready, rows = means.feed([], np.zeros((0, self.dim or 0), dtype=np.float32))
        if ready:  # chunks whose lines all have a vector already
            writer.store(ready, *quantize(rows))
        for group in _landed(runs):
            # Batches in flight at once were not checked against each other: one size only.
            if self.dim is None:
                self.dim = group[0][1].shape[1]
            dim = self.dim
            fit = next((i for i, (_, v) in enumerate(group) if v.shape[1] != dim), len(group))
            good = group[:fit]
            if good:
                hashes = [h for batch, _ in good for h, _ in batch]
                q, scale = quantize(np.concatenate([v for _, v in good]))
                # As stored (int8): a mean is the same whether its lines came now or before.
                chunks, rows = means.feed(hashes, dequantize(q, scale))
                writer.store(hashes, q, scale)
                if chunks:  # in the same commit as the last of their lines
                    writer.store(chunks, *quantize(rows))
                self.done += len(hashes)
                if self.tick:
                    self.tick(len(hashes))
            if fit < len(group):
                raise EmbeddingError(
                    f"embedder returned {group[fit][1].shape[1]}-d vectors, expected {dim}"
                    f" (the size already cached for {self.model})",
                    kind="invalid_output",
                )


#: Landed batches are quantized, averaged and stored together, up to this many
#: texts or this long after the group began waiting (a slow embedder's batch is
#: stored as soon as it lands): per-call costs are then paid once a group, not
#: once per 20-text batch.
GROUP_TEXTS = 512
GROUP_WAIT_S = 0.25


def _landed(runs: Iterator[tuple[Batch, np.ndarray]]) -> Iterator[list[tuple[Batch, np.ndarray]]]:
    """``runs`` in consecutive groups; on a failure, the batches landed before it, then it."""
    group: list[tuple[Batch, np.ndarray]] = []
    size, since = 0, time.monotonic()
    try:
        for item in runs:
            group.append(item)
            size += len(item[0])
            if size >= GROUP_TEXTS or time.monotonic() - since >= GROUP_WAIT_S:
                yield group
                group, size, since = [], 0, time.monotonic()
    except BaseException:
        if group:  # stored before the error goes on: a failure keeps what was embedded
            yield group
        raise
    if group:
        yield group


class _Means:
    """Chunk vectors as the normalised mean of their lines' vectors, each once its lines are in.

    Texts are embedded in order and a chunk's lines come together, so a chunk
    is done once the last of its lines to embed is: its vector is stored in
    the same commit as that line's, and only lines still awaited stay in memory.
    The mean is taken over the lines as stored (int8), so it does not depend
    on whether they were embedded in this run or an earlier one.
    """

    def __init__(
        self, index: MemoryIndex, model: str, means: list[tuple[str, list[str]]], order: list[str]
    ) -> None:
        at = {h: n for n, h in enumerate(order)}
        # A chunk waits for the last of its lines in the run; -1: all have a vector already.
        self.waiting = sorted(
            ((max(at.get(h, -1) for h in lines), chunk, lines) for chunk, lines in means),
            key=lambda w: w[0],
        )
        self.needed = Counter(h for _, lines in means for h in set(lines))
        others = [h for h in self.needed if h not in at]
        self.known = index.cached_vectors(model, others) if others else {}
        self.seen = self.next = 0

    def feed(self, hashes: list[str], stored: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Take a batch (as stored); the hashes and vectors of the chunks it completes."""
        known, needed = self.known, self.needed
        for h, v in zip(hashes, stored, strict=True):
            if h in needed:
                known[h] = v
        self.seen += len(hashes)
        done: list[str] = []
        ends: list[int] = []
        picked: list[np.ndarray] = []
        while self.next < len(self.waiting) and self.waiting[self.next][0] < self.seen:
            _, chunk, lines = self.waiting[self.next]
            self.next += 1
            if all(h in known for h in lines):  # else left to the next run
                done.append(chunk)
                picked += [known[h] for h in lines]
                ends.append(len(picked))
            for h in set(lines):
                needed[h] -= 1
                if not needed[h]:
                    del needed[h]
                    known.pop(h, None)
        if not done:
            return done, np.zeros((0, stored.shape[1]), dtype=np.float32)
        # One copy of the lines' rows; each chunk's sum and norm are as if taken alone.
        return done, normalised_means(np.asarray(picked, dtype=np.float32), np.asarray(ends))


def _in_flight(
    embed: Callable[[list[str]], np.ndarray], batches: list[Batch], concurrency: int
) -> Iterator[tuple[Batch, np.ndarray]]:
    """Yield ``(batch, vectors)`` in order, with up to ``concurrency`` batches in flight.

    On a failure the batches not yet started are cancelled and the error is
    raised once every earlier batch has been yielded (and so stored).
    """
    if concurrency <= 1 or len(batches) <= 1:
        for batch in batches:
            yield batch, embed([t for _, t in batch])
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="embed")
    try:
        futures = [pool.submit(embed, [t for _, t in batch]) for batch in batches]
        for batch, future in zip(batches, futures, strict=True):
            yield batch, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class EmbedJob:
    """Embeds what lacks a vector on a thread, so searches answer in the meantime.

    Batches are committed as they land (as in :func:`embed_missing`), so a kill
    loses at most the last half second of batches and the next job resumes. A
    failure is logged and kept in :attr:`error`; :meth:`due` holds off a retry
    for ``retry_s`` seconds so a dead embedder is not asked again on every search.

    Args:
        index: The index to fill.
        model: Model id the vectors are cached under.
        embed: Texts to an ``(n, d)`` array; raises on failure.
        retry_s: How long after a failure :meth:`due` stays False.
    """

    def __init__(
        self,
        index: MemoryIndex,
        model: str,
        embed: Callable[[list[str]], np.ndarray],
        retry_s: float = 60.0,
    ) -> None:
        self.index = index
        self.model = model
        self.embed = embed
        self.retry_s = retry_s
        self.total = 0
        self.done = 0
        self.error: BaseException | None = None
        self._failed_at = -float("inf")
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether the thread is still embedding."""
        return self._thread is not None and self._thread.is_alive()

    def due(self) -> bool:
        """Whether a new run may start (none running, no failure in the last ``retry_s``)."""
        return not self.running and time.monotonic() - self._failed_at >= self.retry_s

    def start(self) -> None:
        """Start a run on a daemon thread (no-op while one runs)."""
        if self.running:
            return
        self.error, self.total, self.done = None, 0, 0
        self._thread = threading.Thread(target=self._run, name="embed-missing", daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the running run to end."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _progress(self, total: int) -> Callable[[int], None]:
        self.total = total

        def tick(n: int) -> None:
            self.done += n

        return tick

    def _run(self) -> None:
        try:
            embed_missing(self.index, self.model, self.embed, progress=self._progress)
        except Exception as exc:  # the searches go on keyword-only; say why once
            self.error = exc
            self._failed_at = time.monotonic()
            log.warning("background embedding stopped: %s", exc)
