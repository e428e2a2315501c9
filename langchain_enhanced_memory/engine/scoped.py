"""One search over several scopes: each ranks on its own, the hits are merged.

A scope's searcher is anything with ``run(SearchRequest) -> SearchResponse``
and ``settings``: a :class:`~.search.MemorySearch` for a workspace on this
host, a :class:`~.database.DatabaseSearch` for a scope in a database.
:class:`ScopedSearch` asks each for the request's ``k`` best hits (on threads
when there are several: each searcher is thread-safe) and keeps the ``k`` best
by ``weight * score`` (:func:`~..core.scopes.merge_hits`), each hit tagged
with its scope. It returns hits of the scopes it was built with only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..core.errors import ScopeError, SettingsError, shown
from ..core.request import SearchRequest
from ..core.results import Hit, SearchResponse
from ..core.scopes import ScopeRef, merge_hits, validate_scope
from ..core.settings import MemorySettings
from ..store.locations import resolve_workspace
from .answer import ms_since
from .config import EngineConfig
from .run import SearchEngine
from .search import MemorySearch

if TYPE_CHECKING:
    from ..store.database import Database
    from ..store.index import SyncReport
    from ..store.upkeep import ProgressFactory
    from .pool import SearchPool

__all__ = [
    "ScopeSearcher",
    "ScopeSpec",
    "ScopedSearch",
    "connect_database",
    "narrowed",
    "one_scope",
    "parse_scope_arg",
    "scope_specs",
    "scoped_search",
]

#: A scope as a caller names it: its reference, and its folder (None: a database scope).
ScopeSpec = tuple[ScopeRef, Path | None]


class Closable(Protocol):
    """Something :meth:`ScopedSearch.close` closes (a database's connections)."""

    def close(self) -> None:
        """Release what it holds."""
        ...


class ScopeSearcher(Protocol):
    """What :class:`ScopedSearch` needs of one scope's searcher."""

    @property
    def settings(self) -> MemorySettings:
        """Its recipe (the answer's JSON takes the snippet length from it)."""
        ...

    def run(self, request: SearchRequest) -> SearchResponse:
        """Answer one request over this scope."""
        ...


def parse_scope_arg(spec: str) -> ScopeSpec:
    """``NAME[:WEIGHT]`` (a database scope) or ``NAME[:WEIGHT]=FOLDER`` (a workspace here).

    A name holds neither ``:`` nor ``=``, so the first ``=`` ends it whatever the
    folder's name holds.

    Raises:
        ScopeError: An invalid name or weight, or an empty folder.
    """
    head, sep, folder = spec.partition("=")
    ref = ScopeRef.parse(head)
    if not sep:
        return ref, None
    if not folder:
        raise ScopeError(f"scope {ref.name}: give its folder after '=' (NAME=FOLDER)")
    return ref, Path(folder).expanduser()


def scope_specs(
    scopes: Mapping[str, str | Path | None] | Sequence[str] | None,
) -> list[ScopeSpec]:
    """Scopes as Python callers name them: ``{"NAME[:WEIGHT]": folder or None}`` or names.

    A list names database scopes (``["alice", "team:0.5"]``); a dict maps each
    scope to its folder here, or to None for a database scope.

    Raises:
        ScopeError: An invalid name or weight, a name given twice, or no scope.
    """
    if scopes is None:
        return []
    if isinstance(scopes, str):  # a str is a Sequence: one name, not its letters
        scopes = [scopes]
    if isinstance(scopes, Mapping):
        specs = [(ScopeRef.parse(k), None if v is None else Path(v)) for k, v in scopes.items()]
    else:
        specs = [(ScopeRef.parse(spec), None) for spec in scopes]
    if not specs:
        raise ScopeError("scopes: name at least one scope")
    return _checked(specs)


def narrowed(searcher: ScopeSearcher, scope: object) -> ScopeSearcher:
    """``searcher`` over the scopes a request names in ``scope`` (a name or a list; None: all).

    Raises:
        ScopeError: Not a name or a list of names, a scope ``searcher`` does not
            search, or any scope when it searches a single workspace.
    """
    if scope is None:
        return searcher
    names = [scope] if isinstance(scope, str) else scope
    if not isinstance(names, list) or not names:
        raise ScopeError(f"scope must be a scope's name or a list of names, got {shown(scope)}")
    if not isinstance(searcher, ScopedSearch):
        raise ScopeError(
            f"scope {shown(names[0])}: this search has no scopes",
            "start it with the scopes to search (--scope)",
        )
    return searcher.only(names)


def one_scope(searcher: SearchEngine | ScopedSearch, scope: object) -> SearchEngine:
    """The searcher of the one scope a read or a write names (``scope``; None: the only one).

    Raises:
        ScopeError: No ``scope`` where there are several, one ``searcher`` does
            not search, or any scope when it searches a single workspace.
    """
    if not isinstance(searcher, ScopedSearch):
        narrowed(searcher, scope)  # refuses any scope
        return searcher
    if scope is None:
        if len(searcher.members) > 1:
            raise ScopeError(
                f"scope: name one of {', '.join(searcher.scopes)}",
                "give the scope to read or write",
            )
        return searcher.members[0][1]
    return searcher.member(scope)


def _checked(specs: list[ScopeSpec]) -> list[ScopeSpec]:
    seen: set[str] = set()
    for ref, _ in specs:
        if ref.name in seen:
            raise ScopeError(f"scope {ref.name} is named twice")
        seen.add(ref.name)
    return specs


class ScopedSearch:
    """Searches several scopes as one: one ranking, each hit tagged with its scope.

    Args:
        members: Each scope and its searcher, in the order ties keep.
        pool: Threads to run the scopes on (default: its own, one per scope).
        holds: What :meth:`close` closes besides the searchers (their database).

    The response says how the answer was made, over all the scopes: ``mode``
    is ``hybrid`` when any scope ranked with a query vector and ``fallback``
    is set when any answered keyword-only (the first such scope's reason);
    ``stale`` names the scopes answered from an older generation (their
    database unreachable); ``embedded`` is the least embedded scope's share;
    ``filtered`` the sum over the scopes. The scopes run at once, so each
    stage's time in ``timings`` is the slowest scope's, and ``searchMs`` the
    whole call's.

    Threads: safe to call from many threads at once when its searchers are.

    Raises:
        ScopeError: No scope, or a scope named twice.
    """

    def __init__(
        self,
        members: Sequence[tuple[ScopeRef, SearchEngine]],
        *,
        pool: ThreadPoolExecutor | None = None,
        holds: Sequence[Closable] = (),
    ) -> None:
        if not members:
            raise ScopeError("name at least one scope")
        _checked([(ref, None) for ref, _ in members])
        self.members = list(members)
        self._owns_pool = pool is None and len(members) > 1
        if self._owns_pool:
            pool = ThreadPoolExecutor(len(members), thread_name_prefix="scope")
        self._pool = pool
        self._holds = list(holds)

    @property
    def scopes(self) -> list[str]:
        """The names of the scopes it searches, in order."""
        return [ref.name for ref, _ in self.members]

    @property
    def settings(self) -> MemorySettings:
        """The first scope's settings (the snippet length of the answer's JSON)."""
        return self.members[0][1].settings

    @property
    def workspace(self) -> Path | None:
        """None: it reads scopes, not one workspace's index."""
        return None

    def workspace_engine(self, tool: str = "this tool") -> MemorySearch:
        """Refused: ``tool`` reads one workspace's index (salience, cross-references, status).

        Raises:
            ScopeError: Always.
        """
        raise ScopeError(f"{tool} reads one workspace's index, not scopes")

    def member(self, name: object) -> SearchEngine:
        """The searcher of scope ``name``.

        Raises:
            ScopeError: An invalid name, or not a scope of this search.
        """
        return self.only([name]).members[0][1]

    def only(self, names: Sequence[object] | None) -> ScopedSearch:
        """The same search over some of its scopes (None: all of them).

        Raises:
            ScopeError: An invalid name, or one this search was not built with.
        """
        if names is None:
            return self
        by_name = {ref.name: (ref, searcher) for ref, searcher in self.members}
        chosen = []
        for given in names:
            name = validate_scope(given)
            if name not in by_name:
                raise ScopeError(
                    f"scope {shown(name)} is not one of this search's: {', '.join(by_name)}",
                    "name one of them, or start it with that scope too",
                )
            chosen.append(by_name[name])
        if [ref.name for ref, _ in chosen] == self.scopes:
            return self
        return ScopedSearch(chosen, pool=self._pool)

    def update_index(
        self, *, wait: bool = True, progress: ProgressFactory | None = None
    ) -> tuple[SyncReport | None, int]:
        """Sync and embed each folder's scope (a database scope is embedded by its writer).

        Args:
            wait: Block on another writer; when False and one is busy, skip.
            progress: Given the number of texts to embed, a callback per batch.

        Returns:
            No sync report (several folders have no one report; each engine's own
            :meth:`~.search.MemorySearch.update_index` gives its), and the number of
            texts embedded over every scope.

        Raises:
            EmbeddingError: An embedder failed (what was embedded is kept).
        """
        embedded = 0
        for _, searcher in self.members:
            embedded += searcher.update_index(wait=wait, progress=progress)[1]
        return None, embedded

    def check_databases(self) -> bool:
        """Read the generation of each of its database scopes (one query each).

        Returns:
            Whether it has database scopes.

        Raises:
            DatabaseError: Their database cannot be reached or read.
        """
        # A list, not a generator: every member is checked, not the first that has scopes.
        return any([searcher.check_databases() for _, searcher in self.members])

    def run(self, request: SearchRequest) -> SearchResponse:
        """Answer ``request`` over every scope: the ``request.k`` best hits of them all."""
        started = time.perf_counter()
        if self._pool is None or len(self.members) == 1:
            responses = [searcher.run(request) for _, searcher in self.members]
        else:
            futures = [self._pool.submit(s.run, request) for _, s in self.members]
            responses = [future.result() for future in futures]
        refs = [ref for ref, _ in self.members]
        hits = merge_hits(
            [(ref, r.hits) for ref, r in zip(refs, responses, strict=True)], request.k
        )
        return _combined(responses, hits, ms_since(started))

    def close(self) -> None:
        """Stop the threads, and each searcher that holds any (a workspace's watcher)."""
        if self._pool is not None and self._owns_pool:  # not the threads of the whole it is of
            self._pool.shutdown(wait=False)
        for _, searcher in self.members:
            close = getattr(searcher, "close", None)
            if close is not None:
                close()
        for held in self._holds:
            held.close()

    def __enter__(self) -> ScopedSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _combined(responses: list[SearchResponse], hits: list[Hit], search_ms: float) -> SearchResponse:
    """One response of the scopes' own: see :class:`ScopedSearch` for what each field says."""
    hybrid = [r for r in responses if r.mode == "hybrid"]
    lead = (hybrid or responses)[0]
    embedded = [r.embedded for r in responses if r.embedded is not None]
    filtered = [r.filtered for r in responses if r.filtered is not None]
    timings: dict[str, float] = {}
    for r in responses:
        for stage, ms in r.timings.items():
            timings[stage] = max(timings.get(stage, 0.0), ms)
    timings["searchMs"] = round(search_ms, 3)
    return SearchResponse(
        hits=hits,
        provider=lead.provider,
        model=lead.model,
        fallback=next((r.fallback for r in responses if r.fallback), None),
        temporal_dates=_union(r.temporal_dates for r in responses),
        prf_terms=_union(r.prf_terms for r in responses),
        filtered=sum(filtered) if filtered else None,
        embedded=min(embedded) if embedded else None,
        mode="hybrid" if hybrid else "keyword",
        filter_note=None
        if hits
        else next((r.filter_note for r in responses if r.filter_note), None),
        stale=[name for r in responses for name in r.stale],
        timings=timings,
    )


def _union(lists: Iterable[list[str]]) -> list[str]:
    out: dict[str, None] = {}
    for items in lists:
        out.update(dict.fromkeys(items))
    return list(out)


def connect_database(
    url: str,
    settings: MemorySettings | None = None,
    *,
    read_url: str | None = None,
    pool_size: int | None = None,
    cache: str | Path | None | Literal["default"] = "default",
    replica: bool = True,
) -> Database:
    """The database of ``url``, connected.

    Args:
        url: The primary (a ``postgresql://`` URL or a ``key=value`` string).
        settings: Chunking and embedding settings of what this process writes.
        read_url: A streaming replica searches read from.
        pool_size: The most connections to each server (None: 8).
        cache: Where this host keeps copies of segments (``Database.connect``'s).
        replica: Connect the replica too; False for a writer (a publish, a drop, a
            rename), which needs only the primary and must work while the replica is
            down: ``read_url`` is then not used.

    Raises:
        SettingsError: A pool size below 1.
        DatabaseError: The database cannot be reached.
    """
    from ..store.database import POOL_SIZE, Database

    pool_size = POOL_SIZE if pool_size is None else pool_size
    if pool_size < 1:
        raise SettingsError(f"must be at least 1, got {pool_size}", "pool_size")
    read_url = read_url if replica else None
    return Database.connect(url, settings, read_url, cache=cache, pool_size=pool_size)


def scoped_search(
    config: EngineConfig,
    specs: Sequence[ScopeSpec],
    database_url: str | None = None,
    *,
    read_url: str | None = None,
    pool_size: int | None = None,
    cache: str | Path | None | Literal["default"] = "default",
    pool: SearchPool | None = None,
) -> ScopedSearch:
    """The search over ``specs``: a folder's scope searches its workspace, the others the database.

    Args:
        config: The embedder and recipe every scope searches with; each folder
            keeps its own index (``index_path`` is not used).
        specs: The scopes (:func:`parse_scope_arg`, :func:`scope_specs`).
        database_url: Where the scopes without a folder live.
        read_url: A streaming replica their searches read from (:func:`connect_database`).
        pool_size: The most connections to each server (:func:`connect_database`).
        cache: Where this host keeps copies of segments (:func:`connect_database`).
        pool: The resident engine's warm engines and databases, reused (None: new
            ones, closed with the search).

    Raises:
        ScopeError: A scope without a folder and no database, or no scope.
        SettingsError: A bad pool size.
        DatabaseError: The database cannot be reached.
    """
    specs = _checked(list(specs))
    in_database = [ref for ref, folder in specs if folder is None]
    if in_database and not database_url:
        raise ScopeError(
            f"scope {in_database[0].name} names no folder and no database is given",
            "give NAME=FOLDER for a workspace here, or --database URL"
            " ($ENHANCED_MEMORY_DATABASE_URL)",
        )
    folders = [resolve_workspace(folder) if folder else None for _, folder in specs]
    scope_engine = None
    holds: list[Closable] = []
    if in_database and database_url:
        scope_engine = _scope_engines(config, database_url, read_url, pool_size, cache, pool, holds)
    members: list[tuple[ScopeRef, SearchEngine]] = []
    for (ref, _), folder in zip(specs, folders, strict=True):
        if folder is None:
            assert scope_engine is not None
            members.append((ref, scope_engine(ref.name)))
        else:
            local = replace(config, workspace=folder, index_path=None)
            members.append(
                (ref, MemorySearch.from_config(local) if pool is None else pool.get(local))
            )
    return ScopedSearch(members, holds=holds, pool=None if pool is None else pool.threads)


def _scope_engines(
    config: EngineConfig,
    url: str,
    read_url: str | None,
    pool_size: int | None,
    cache: str | Path | None | Literal["default"],
    pool: SearchPool | None,
    holds: list[Closable],
) -> Callable[[str], SearchEngine]:
    """How a database scope's engine is made: over a new connection, or ``pool``'s warm one."""
    from .database import DatabaseSearch

    def connect() -> Database:
        return connect_database(
            url, config.settings, read_url=read_url, pool_size=pool_size, cache=cache
        )

    if pool is None:
        database = connect()
        holds.append(database)
        return lambda name: DatabaseSearch.from_config(database, name, config)
    key = repr((url, read_url, pool_size, cache, config.settings))  # never shown: the password
    database = pool.database(key, connect)

    def engine(name: str) -> SearchEngine:
        return pool.scope(
            key, name, config, lambda: DatabaseSearch.from_config(database, name, config)
        )

    return engine
