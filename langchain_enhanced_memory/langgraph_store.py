"""``EnhancedMemoryStore``: a LangGraph ``BaseStore`` over a workspace or a PostgreSQL database.

Pass it to ``graph.compile(store=...)`` (nodes read it with ``get_store()``)
or to LangMem's memory tools. Items are kept by one
:class:`~.core.items.ItemStorage`: a workspace's markdown files
(:class:`~.store.items.WorkspaceItems`) or the database's ``em_items`` table
(:class:`~.store.database.items.DatabaseItems`); this class is the one face
over both. A search with a query ranks the sections of the items under the
namespace prefix with the hybrid ranking every search of the package uses
(:func:`~.engine.answer.ranked_hits`: keywords, phrases, the field names as
headers, namespace and key as the path, the day each item was last put, and
vectors when the store has an embedder), the filter applied as a row mask
before the top-k. The snapshot of a prefix is built once per version of its
items and kept in a bounded LRU (:data:`CACHED_PREFIXES`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from .core.errors import ItemError, SettingsError
from .core.items import (
    HeldPrefix,
    ItemStorage,
    Namespace,
    Ref,
    StoredItem,
    check_key,
    check_namespace,
    expiry,
    namespace_matches,
    sections,
    snapshot_of,
    text_hash,
)
from .core.request import MAX_K, SearchRequest
from .core.settings import MemorySettings
from .core.text import clean_json
from .engine.answer import ranked_hits
from .engine.config import Embedder, EngineConfig
from .engine.embedder import QueryEmbedder

__all__ = ["CACHED_PREFIXES", "EnhancedMemoryStore"]

log = logging.getLogger("langchain_enhanced_memory")

#: Namespace prefixes whose items and snapshot a store keeps (least recently searched go).
CACHED_PREFIXES = 2048
_KINDS = ("auto", "local", "ollama", "none")


class _Sweeper:
    """A TTL sweeper: its thread, its stop event, and the future its end resolves."""

    def __init__(self, sweep: Callable[[], int], interval: float) -> None:
        self.sweep, self.interval = sweep, interval
        self.stop = threading.Event()  # its own: a sweeper started after it never revives it
        self.done: Future[None] = Future()
        self.done.add_done_callback(lambda f: self.stop.set() if f.cancelled() else None)
        self.thread = threading.Thread(target=self._loop, name="ttl-sweeper", daemon=True)

    def _loop(self) -> None:
        try:
            while not self.stop.wait(self.interval):
                try:
                    self.sweep()
                except Exception as exc:  # noqa: BLE001 (a failed sweep is tried again next time)
                    log.warning("TTL sweep failed: %s", exc)
        finally:
            with contextlib.suppress(InvalidStateError):  # cancelled: done already
                self.done.set_result(None)


class EnhancedMemoryStore(BaseStore):
    """A LangGraph store of items kept as markdown in a workspace or rows in PostgreSQL.

    Args:
        workspace: The workspace whose ``memory/items/`` holds the items.
        database_url: A PostgreSQL database (its ``em_items`` table) instead.
        index: LangGraph's index config: ``fields`` (paths of the value to
            index; default each top-level field), ``embed`` (a LangChain
            ``Embeddings``, a ``provider:model`` string, or the package's
            ``"local"``, ``"ollama"``, ``"auto"``), ``dims`` (checked against the
            vectors). Without ``embed`` search is keywords, headers and dates.
        ttl: LangGraph's TTL config: ``default_ttl`` (minutes), ``refresh_on_read``
            (default True), ``sweep_interval_minutes`` (for :meth:`start_ttl_sweeper`).
        settings: The ranking recipe (default: the package's).
        pool_size: The most connections to the database.
        cached_prefixes: Namespace prefixes kept searched (an LRU).

    Raises:
        SettingsError: Neither or both of ``workspace`` and ``database_url``, a
            workspace that is not a folder, or a bad config.
        DatabaseError: The database cannot be reached or migrated.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        workspace: str | Path | None = None,
        *,
        database_url: str | None = None,
        index: IndexConfig | dict[str, Any] | None = None,
        ttl: TTLConfig | dict[str, Any] | None = None,
        settings: MemorySettings | None = None,
        pool_size: int | None = None,
        cached_prefixes: int = CACHED_PREFIXES,
    ) -> None:
        if (workspace is None) == (database_url is None):
            raise SettingsError("give one of workspace and database_url", "workspace")
        self.settings = settings or MemorySettings()
        self.index_config: dict[str, Any] | None = dict(index) if index else None
        self.ttl_config = TTLConfig(**ttl) if ttl else None  # type: ignore[typeddict-item]
        self._fields = _fields(self.index_config)
        self._embedder = _embedder(self.index_config, workspace, self.settings)
        self._storage = _storage(workspace, database_url, self.settings, pool_size, self._fields)
        self._held: OrderedDict[Namespace, HeldPrefix] = OrderedDict()
        self._cached = max(1, int(cached_prefixes))
        self._lock = threading.Lock()
        self._sweeper: _Sweeper | None = None

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; consecutive puts are written together (one transaction)."""
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        puts: list[PutOp] = []
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                puts.append(op)
                continue
            if puts:
                self._put(puts)
                puts = []
            results[i] = self._run(op)
        if puts:
            self._put(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list(op)
        raise ItemError(f"unknown store operation {type(op).__name__}")

    # ------------------------------------------------------------------ writes

    def _put(self, ops: Sequence[PutOp]) -> None:
        last: dict[Ref, PutOp] = {}
        for op in ops:  # the last put of a ref wins, as in LangGraph's stores
            last[check_namespace(op.namespace), check_key(op.key)] = op
        for ref, op in last.items():
            if op.value is not None and not isinstance(op.value, dict):
                raise ItemError(f"an item's value is a dict, not {type(op.value).__name__}")
            if op.value is not None:  # text enters clean (lone surrogates as U+FFFD)
                last[ref] = op._replace(value=clean_json(dict(op.value)))
        now = datetime.now(timezone.utc)
        old = self._storage.get_many(list(last))
        wanted = self._embedded_texts(last.values())
        vectors = self._vectors(wanted, old.values())
        items = [
            StoredItem(
                namespace=ref[0],
                key=ref[1],
                value=op.value,  # type: ignore[arg-type]
                created_at=old[ref].created_at if ref in old else now,
                updated_at=now,
                expires_at=expiry(now, op.ttl),
                ttl=op.ttl,
                index=op.index,
                vectors={
                    h: vectors[h] for h in map(text_hash, wanted.get(ref, [])) if h in vectors
                },
                model=self._embedder.model_id if self._embedder and ref in wanted else None,
            )
            for ref, op in last.items()
            if op.value is not None
        ]
        deletes = [ref for ref, op in last.items() if op.value is None and ref in old]
        self._storage.put_many(items, deletes)

    def _embedded_texts(self, ops: Iterable[PutOp]) -> dict[Ref, list[str]]:
        """Each put's texts to embed (none without an embedder or with ``index=False``)."""
        if self._embedder is None:
            return {}
        out = {}
        for op in ops:
            if op.value is None or op.index is False:
                continue
            fields = op.index if op.index else self._fields
            out[op.namespace, op.key] = [t for _, t in sections(dict(op.value), fields)]
        return out

    def _vectors(
        self, wanted: dict[Ref, list[str]], old: Iterable[StoredItem]
    ) -> dict[str, np.ndarray]:
        """The vector of each text: reused by hash from the items replaced, else embedded."""
        assert self._embedder is not None or not wanted
        if not wanted or self._embedder is None:
            return {}
        model = self._embedder.model_id
        known = {h: v for item in old if item.model == model for h, v in item.vectors.items()}
        missing = {text_hash(t): t for texts in wanted.values() for t in texts}
        missing = {h: t for h, t in missing.items() if h not in known}
        if missing and model is not None:
            try:
                matrix = self._embedder.embed_documents(list(missing.values()), self._dims())
            except Exception as exc:  # noqa: BLE001 (any embedder failure: kept keyword-only)
                log.warning("embedder failed; the items are kept without vectors: %s", exc)
                return known
            known.update(zip(missing, matrix, strict=True))
        return known

    def _dims(self) -> int | None:
        dims = (self.index_config or {}).get("dims")
        return int(dims) if dims else None

    # ------------------------------------------------------------------ reads

    def _get(self, op: GetOp) -> Item | None:
        ref = (check_namespace(op.namespace), check_key(op.key))
        item = self._storage.get_many([ref]).get(ref)
        now = datetime.now(timezone.utc)
        if item is None or item.expired(now):
            return None
        if op.refresh_ttl and item.ttl is not None:
            item = item.refreshed(now)
            self._storage.refresh([item])
        return _item(item)

    def _held_items(self, prefix: Namespace) -> HeldPrefix:
        """The items under ``prefix`` at their current version (kept for the next search)."""
        version = self._storage.version(prefix)
        with self._lock:
            held = self._held.get(prefix)
            if held is not None and held.version == version:
                self._held.move_to_end(prefix)
                return held
        held = HeldPrefix(version, sorted(self._storage.under(prefix), key=_newest_first))
        with self._lock:
            self._held[prefix] = held
            self._held.move_to_end(prefix)
            while len(self._held) > self._cached:
                self._held.popitem(last=False)
        return held

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = check_namespace(tuple(op.namespace_prefix), root=False)
        held = self._held_items(prefix)
        now = datetime.now(timezone.utc)
        live = held.live(now, op.filter)
        found: list[tuple[int, float | None]]
        if op.query and op.query.strip():
            found = list(self._ranked(held, op.query, live, op.offset + op.limit))
        else:
            found = [(int(i), None) for i in np.flatnonzero(live)]
        found = found[op.offset : op.offset + op.limit]
        items = [held.items[i] for i, _ in found]
        if op.refresh_ttl:
            refreshed = [it.refreshed(now) for it in items if it.ttl is not None]
            if refreshed:
                self._storage.refresh(refreshed)
                fresh = {it.ref: it for it in refreshed}
                items = [fresh.get(it.ref, it) for it in items]
        return [_item(it, score) for it, (_, score) in zip(items, found, strict=True)]

    def _ranked(
        self, held: HeldPrefix, query: str, live: np.ndarray, need: int
    ) -> list[tuple[int, float]]:
        """The first ``need`` live items matching ``query``, each with its best section's score.

        Hits are built for a few sections an item needed (more only when items
        of several sections filled them), not for every section of the prefix.
        """
        model = self._embedder.model_id if self._embedder else None
        if held.snap is None:
            self._fill_vectors(held)
            held.snap, held.of_item = snapshot_of(held.items, self._fields, model)
        snap = held.snap
        if not len(snap):
            return []
        qvec = None
        if self._embedder is not None and snap.vectors is not None:
            try:
                qvec = self._embedder.embed_query(query)
            except Exception as exc:  # noqa: BLE001 (keyword-only, as every search degrades)
                self._embedder.failed(exc)
        now = datetime.now(timezone.utc).replace(tzinfo=None)  # the items' days are UTC days
        keep = live[held.of_item]
        k, most = min(len(snap), 4 * need + 16), min(MAX_K, len(snap))
        while True:
            request = SearchRequest(query=query, k=min(k, most), now=now)
            answer = ranked_hits(snap, request, now, self.settings, qvec, None, keep=keep)
            best: dict[int, float] = {}
            for hit in answer.hits:  # best first: an item's first hit is its best section
                best.setdefault(int(held.of_item[hit.start_line - 1]), float(hit.score or 0.0))
            if len(best) >= need or len(answer.hits) < request.k or request.k >= most:
                return sorted(best.items(), key=lambda pair: -pair[1])
            k *= 4

    def _fill_vectors(self, held: HeldPrefix) -> None:
        """Embed the sections of embedded items that lack a vector (up to ``embed_inline_max``).

        A section edited by hand, or one whose embedding failed at its put, gets
        its vector at the first search that needs it; the storage keeps it.
        """
        model = self._embedder.model_id if self._embedder else None
        if self._embedder is None or model is None:
            return
        missing: dict[str, str] = {}
        lacking: list[int] = []
        for i, item in enumerate(held.items):
            if item.model != model or item.index is False:
                continue
            texts = [t for _, t in item.indexed(self._fields)]
            gaps = {text_hash(t): t for t in texts if text_hash(t) not in item.vectors}
            if gaps:
                missing.update(gaps)
                lacking.append(i)
        if not missing or len(missing) > self.settings.embedding.embed_inline_max:
            return
        try:
            matrix = self._embedder.embed_documents(list(missing.values()), self._dims())
        except Exception as exc:  # noqa: BLE001 (kept keyword-only until a later search)
            log.warning("embedder failed; sections stay without vectors: %s", exc)
            return
        made = dict(zip(missing, matrix, strict=True))
        filled = [
            replace(item, vectors={**item.vectors, **made})
            for item in (held.items[i] for i in lacking)
        ]
        self._storage.keep_vectors(filled)
        for i, item in zip(lacking, filled, strict=True):
            held.items[i] = item

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        literal: Namespace = ()  # the labels before a wildcard of the first prefix condition
        for cond in conditions:
            if cond.match_type == "prefix":
                path = tuple(cond.path)
                literal = path[: path.index("*")] if "*" in path else path
                break
        found = self._storage.namespaces(check_namespace(literal, root=False))
        for cond in conditions:
            path = tuple(cond.path)
            found = [ns for ns in found if namespace_matches(ns, cond.match_type, path)]
        if op.max_depth is not None:
            found = sorted({ns[: op.max_depth] for ns in found})
        return found[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ TTL

    def sweep_ttl(self) -> int:
        """Delete the items whose TTL has passed; how many."""
        return self._storage.sweep(datetime.now(timezone.utc))

    async def asweep_ttl(self) -> int:
        """:meth:`sweep_ttl` on a worker thread."""
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Future[None]:
        """Sweep on a daemon thread every ``sweep_interval_minutes`` (default: the TTL config's).

        Returns:
            As LangGraph's stores: a future resolved when the sweeper stops
            (:meth:`stop_ttl_sweeper`, :meth:`close`); cancelling it stops the
            sweeper. A sweeper already running is not started twice: its future.
        """
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        interval = 60.0 * float(minutes or 5)
        with self._lock:
            running = self._sweeper
            if running is not None and running.thread.is_alive() and not running.stop.is_set():
                return running.done
            sweeper = _Sweeper(self.sweep_ttl, interval)
            self._sweeper = sweeper
        sweeper.thread.start()
        return sweeper.done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; whether it has stopped (True when none ran)."""
        sweeper = self._sweeper
        if sweeper is None:
            return True
        sweeper.stop.set()
        sweeper.thread.join(timeout)
        return not sweeper.thread.is_alive()

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Stop the sweeper and release the storage (files, connections)."""
        self.stop_ttl_sweeper()
        self._storage.close()

    def __enter__(self) -> EnhancedMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _newest_first(item: StoredItem) -> tuple[float, Namespace, str]:
    return (-item.updated_at.timestamp(), item.namespace, item.key)


def _item(item: StoredItem, score: float | None = ...) -> Any:  # type: ignore[assignment]
    """LangGraph's ``Item`` (``SearchItem`` when a search produced it)."""
    made: dict[str, Any] = {"namespace": item.namespace, "key": item.key, "value": item.value}
    made.update(created_at=item.created_at, updated_at=item.updated_at)
    return Item(**made) if score is ... else SearchItem(**made, score=score)


def _fields(config: dict[str, Any] | None) -> list[str] | None:
    fields = (config or {}).get("fields")
    if fields is None or fields == ["$"]:
        return None
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise SettingsError("must be a list of field paths", "index.fields")
    return fields


def _embedder(
    config: dict[str, Any] | None, workspace: str | Path | None, settings: MemorySettings
) -> QueryEmbedder | None:
    """The embedder of ``index.embed`` (None: keyword-only)."""
    embed = (config or {}).get("embed")
    if embed is None:
        return None
    kind: Embedder = "auto"
    embeddings = None
    if isinstance(embed, str) and embed.lower() in _KINDS:
        kind = cast(Embedder, embed.lower())
    else:
        from langgraph.store.base.embed import ensure_embeddings

        embeddings = ensure_embeddings(embed)
    engine = EngineConfig(
        workspace=Path(workspace or "."), settings=settings, embedder=kind, embeddings=embeddings
    )
    embedder = QueryEmbedder(engine, dim_of=lambda _model: None)
    return None if embedder.model_id is None else embedder


def _storage(
    workspace: str | Path | None,
    database_url: str | None,
    settings: MemorySettings,
    pool_size: int | None,
    fields: list[str] | None,
) -> ItemStorage:
    if database_url is not None:
        from .store.database.connect import POOL_SIZE
        from .store.database.items import DatabaseItems

        return DatabaseItems(database_url, pool_size or POOL_SIZE)
    from .store.items import WorkspaceItems

    assert workspace is not None
    if not Path(workspace).expanduser().is_dir():
        raise SettingsError(f"{workspace} is not a folder (create it first)", "workspace")
    return WorkspaceItems(workspace, settings, fields)
