"""The PostgreSQL store: scopes many hosts publish, append to and search (``--database``).

:class:`Database` is its one face. A scope is either **folder-backed** (a host
publishes its workspace's index: :meth:`Database.publish`) or
**database-backed** (notes appended here: :meth:`Database.append`). Either
way its index is immutable segments (:mod:`..segment`) that searchers fetch
once, keep decoded, and assemble into the :class:`..core.snapshot.Snapshot`
ranking reads: the same arrays, so the same ranking, as the local store.

With ``cache``, a host keeps copies of the segments it fetched
(:mod:`.cache`), so a fresh process maps them instead of fetching them again.
While the database cannot be reached, a scope this host has loaded before is
assembled from those copies (:meth:`Database.held`), and a process that could
not connect at all still opens: each call tries to connect again.

Freshness: every committed write bumps the scope's generation; a reader
compares it on each :meth:`Database.snapshot` (one query) and fetches only the
segments it does not hold. Reads go to ``read_url`` (a replica) when given,
except a scope this process wrote at a generation the replica has not reached
yet: that read goes to the primary (read-your-writes).

psycopg is imported only when a database is connected (the ``postgres`` extra).
"""

from __future__ import annotations

import socket
import threading
from datetime import date, datetime
from pathlib import Path
from typing import Literal

from ...core.errors import DatabaseError, ScopeError
from ...core.scopes import validate_scope
from ...core.settings import MemorySettings
from ...core.snapshot import Snapshot
from ..append import AppendResult, plan
from ..forget import Forgotten, check_match
from ..index import MemoryIndex
from ..locations import host_id
from ..notes import MemoryLines, check_range
from .cache import (
    SegmentCache,
    default_cache_folder,
    known_identity,
)
from .connect import POOL_SIZE, Pool, release, shown_url
from .held import Held, generation_of, of_model
from .link import Link, writing
from .notes import Embedding, append_note, export_notes, forget_note, read_note
from .publish import PublishReport, check_publisher, publish_folder
from .scopes import ScopeInfo, describe_scopes, drop_scope, rename_scope, unknown

__all__ = ["POOL_SIZE", "Database", "Embedding", "PublishReport", "ScopeInfo", "local_owner"]


def local_owner(workspace: str | Path) -> str:
    """Who publishes ``workspace`` from here (a scope's owner): ``host:realpath (host ID)``.

    The id (:func:`..locations.host_id`) tells apart two hosts of one hostname and path.
    """
    return f"{socket.gethostname()}:{Path(workspace).expanduser().resolve()} (host {host_id()})"


class Database:
    """A PostgreSQL database of scopes (open with :meth:`connect`; thread-safe).

    Args:
        writer: The pool of the primary (None: not connected yet, see ``link``).
        reader: The pool searches read from (the primary's, or a replica's).
        settings: Chunking and embedding settings of what this process writes.
        cache: This host's copies of segments (None: fetch every segment it lacks).
        link: How to connect (again) when ``writer`` is None.
    """

    def __init__(
        self,
        writer: Pool | None,
        reader: Pool | None,
        settings: MemorySettings,
        cache: SegmentCache | None = None,
        link: Link | None = None,
    ) -> None:
        if writer is None or reader is None:
            assert link is not None, "a database without pools needs its link"
            self._url, self._connected, self._pools = link.url, None, []
        else:
            self._url, self._connected = writer.url, (writer, reader)
            self._pools = [writer] if reader is writer else [writer, reader]  # released by close
        self._link = link
        self._held = Held(cache, shown_url(self._url))
        self.settings = settings
        self._lock = threading.Lock()
        self._connecting = threading.Lock()
        self._written: dict[str, int] = {}  # scope -> the generation this process committed

    @classmethod
    def connect(
        cls,
        url: str,
        settings: MemorySettings | None = None,
        read_url: str | None = None,
        *,
        cache: str | Path | None | Literal["default"] = "default",
        pool_size: int = POOL_SIZE,
    ) -> Database:
        """Connect (pools shared per URL and size in this process) and bring the schema up to date.

        Args:
            url: The primary (``postgresql://`` URL or ``key=value`` string).
            settings: Chunking and embedding settings of what this process writes.
            read_url: A replica searches read from (read-your-writes kept).
            cache: A folder where this host keeps copies of the segments it read
                (:mod:`.cache`): a fresh process maps them instead of fetching.
                By default the user's cache folder's ``enhanced-memory/segments``
                (the entry points pass ``$ENHANCED_MEMORY_DATABASE_CACHE``); None: no copies.
            pool_size: The most connections this process opens to each server.

        When the database cannot be reached but this host has connected to it
        with ``url`` before (and keeps copies), it opens unconnected: each call
        tries to connect again, and :meth:`held` answers from the copies meanwhile.

        Raises:
            DatabaseError: Unreachable (and never connected from this host), refused,
                or a schema newer than this package's.
        """
        if cache == "default":
            cache = default_cache_folder()
        root = None if cache is None else Path(cache).expanduser()
        link = Link(url, read_url, pool_size, root)
        settings = settings or MemorySettings()
        try:
            writer, reader, copies = link.open()
        except DatabaseError as exc:
            # Only for a server that did not answer: never a refusal, a bad URL or a newer schema.
            uid = None if root is None or not exc.unreachable else known_identity(root, url)
            if root is None or uid is None:
                raise
            return cls(None, None, settings, SegmentCache(root, uid), link)
        return cls(writer, reader, settings, copies, link)

    def _online(self, doing: str = "") -> tuple[Pool, Pool]:
        """The writer's and the reader's pools, connecting first when it could not before.

        Raises:
            DatabaseError: The database still cannot be reached.
        """
        pools = self._connected
        if pools is not None:
            return pools
        with self._connecting:
            if self._connected is None:
                assert self._link is not None
                writer, reader, copies = self._link.open(doing)
                self._held.connected(copies)
                with self._lock:
                    self._pools = [writer] if reader is writer else [writer, reader]
                    self._connected = (writer, reader)
            return self._connected

    @property
    def _writer(self) -> Pool:
        return self._online()[0]

    @property
    def _reader(self) -> Pool:
        return self._online()[1]

    @property
    def shown(self) -> str:
        """The database's URL as messages show it (password as ``***``)."""
        return shown_url(self._url)

    def close(self) -> None:
        """Release the connections (the last user of a URL's pool closes it)."""
        with self._lock:
            pools, self._pools = self._pools, []
        for pool in pools:
            release(pool)

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writes
    def publish(
        self,
        scope: str,
        index: MemoryIndex,
        model_id: str | None,
        *,
        owner: str,
        take_over: bool = False,
        compact: bool = False,
    ) -> PublishReport:
        """Publish ``index``'s workspace (synced, embedded) as folder-backed ``scope``.

        One transaction: the changed files' rows as a new segment, deleted files
        dropped, their notes' text stored, small segments merged, the generation
        bumped. A publish killed at any moment leaves the previous generation.

        Args:
            scope: The scope's name.
            index: The local index (its chunks must all have vectors of ``model_id``).
            model_id: The model of the vectors published (None: keyword-only).
            owner: Who publishes (:func:`local_owner`): another owner is refused ...
            take_over: ... unless this is set.
            compact: Also delete every segment holding rows no file uses (the old
                rows of changed or deleted files: lines forgotten in the folder),
                rewritten without them when other files still use it.

        Raises:
            ScopeError: Bad name, a database-backed scope, another owner, missing vectors.
            DatabaseError: The database failed (nothing was written).
        """
        validate_scope(scope)
        with self._writer.connection(f"publishing scope {scope}") as conn:
            report = publish_folder(
                conn,
                scope,
                index,
                model_id,
                owner,
                take_over,
                self._held.fetcher(conn, scope),
                compact,
            )
        self._wrote(scope, report.generation)
        if compact:
            self._drop_copies(scope)
        return report

    def check_publisher(self, scope: str, *, owner: str, take_over: bool = False) -> None:
        """Refuse now a :meth:`publish` of ``scope`` by ``owner`` that would be refused.

        For a caller with work to do before publishing (indexing the folder).

        Raises:
            ScopeError: Bad name, a database-backed scope, or another owner.
            DatabaseError: The database failed.
        """
        validate_scope(scope)
        with self._writer.connection(f"publishing scope {scope}", transaction=False) as conn:
            check_publisher(conn, scope, owner, take_over)

    def append(
        self,
        scope: str,
        text: str,
        *,
        section: str | None = None,
        now: datetime | date | None = None,
        file: str | None = None,
        embed: Embedding | None = None,
    ) -> AppendResult:
        """Append a bullet to a note of database-backed ``scope`` (created by its first append).

        As :func:`..append.append_memory` places it (today's daily note, or ``file``;
        under ``section``), in one transaction with the note's new chunks (and
        vectors, with ``embed``), so every host's next search finds it. The note
        is indexed before the scope's row lock is taken (:mod:`.notes`).

        Raises:
            WriteError: Bad text, section or file (as ``append_memory``).
            ScopeError: Bad name, a folder-backed scope, or one with vectors of another model.
            DatabaseError: The database failed (nothing was written).
        """
        validate_scope(scope)
        todo = plan(text, section=section, file=file, now=now)
        with self._writer.connection(f"appending to scope {scope}", transaction=False) as conn:
            result, generation = append_note(
                conn, scope, todo, self.settings, embed, self._held.fetcher(conn, scope)
            )
        self._wrote(scope, generation)
        return result

    def forget(
        self,
        scope: str,
        *,
        path: str | None = None,
        line: int | None = None,
        match: str | None = None,
        dry_run: bool = False,
        allow_many: bool = False,
        embed: Embedding | None = None,
    ) -> list[Forgotten]:
        """Remove lines from the notes of database-backed ``scope`` (as the workspace's forget).

        Indexed first, then one transaction under the scope's row lock (:mod:`.notes`):
        the notes' new text, their new segment (indexed with ``embed`` when the
        scope holds vectors), and every segment that held their old rows deleted
        (rewritten without them when other files still use it). This host's copies
        of those segments are removed after the commit; another host's, when it
        next loads the scope.

        Raises:
            WriteError: Bad arguments, a missing note, several matches without ``allow_many``.
            ScopeError: Bad name, no such scope, a folder-backed scope, or one with
                vectors of another model.
            DatabaseError: The database failed (nothing was changed).
        """
        validate_scope(scope)
        key = check_match(match) if match is not None else None
        with self._writer.connection(f"forgetting in scope {scope}", transaction=False) as conn:
            gone, generation = forget_note(
                conn,
                scope,
                (path, line, key, dry_run, allow_many),
                self.settings,
                embed,
                self._held.fetcher(conn, scope),
            )
        if generation is not None:
            self._wrote(scope, generation)
            self._drop_copies(scope)
        return gone

    def _drop_copies(self, scope: str) -> None:
        """Forget this process's segments of ``scope``, and this host's copies, it no longer has."""
        with self._writer.connection(f"reading scope {scope}", transaction=False) as conn:
            ids = {
                int(r[0])
                for r in conn.execute(
                    "SELECT id FROM em_segments WHERE scope = %s", (scope,)
                ).fetchall()
            }
        self._held.keep(scope, ids)

    def _wrote(self, scope: str, generation: int) -> None:
        with self._lock:
            self._written[scope] = max(self._written.get(scope, 0), generation)

    # ------------------------------------------------------------------- reads
    def read(
        self, scope: str, path: str, from_line: int = 1, lines: int | None = None
    ) -> MemoryLines:
        """Lines of a note of ``scope`` (``get``; folder-backed scopes store their notes too).

        Raises:
            MissingNoteError: No such note.
            NoteError: A refused path or bad range.
        """
        validate_scope(scope)
        check_range(from_line, lines)
        with self._reader.connection(f"reading scope {scope}") as conn:
            return read_note(conn, scope, path, from_line, lines)

    def export(self, scope: str, folder: str | Path) -> list[str]:
        """Write the notes of ``scope`` under ``folder`` as a workspace; the paths written.

        Raises:
            ScopeError: Bad name, or a different file in the way (nothing written then).
        """
        validate_scope(scope)
        with self._reader.connection(f"exporting scope {scope}") as conn:
            return export_notes(conn, scope, Path(folder).expanduser())

    def generations(self, names: list[str]) -> dict[str, int]:
        """Each named scope's committed generation (scopes that do not exist left out)."""
        for name in names:
            validate_scope(name)
        self._online("reading generations")
        rows = self._generations(self._reader, names)
        behind = [n for n in names if rows.get(n, 0) < self._written.get(n, 0)]
        if behind and self._reader is not self._writer:
            rows |= self._generations(self._writer, behind)
        return rows

    @staticmethod
    def _generations(pool: Pool, names: list[str]) -> dict[str, int]:
        with pool.connection("reading generations", transaction=False) as conn:
            found = conn.execute(
                "SELECT name, generation FROM em_scopes WHERE name = ANY(%s)", (names,)
            ).fetchall()
        return {name: int(gen) for name, gen in found}

    def scopes(self) -> list[ScopeInfo]:
        """Every scope of the database, by name (``enhanced-memory scopes list``)."""
        with self._reader.connection("listing scopes") as conn:
            return describe_scopes(conn)

    def scope(self, name: str) -> ScopeInfo:
        """One scope: its backing, owner, generation, files and chunks.

        Raises:
            ScopeError: A bad name, or no such scope.
        """
        validate_scope(name)
        with self._reader.connection(f"reading scope {name}") as conn:
            found = describe_scopes(conn, [name])
        if not found:
            raise unknown(name)
        return found[0]

    def drop_scope(self, name: str) -> ScopeInfo:
        """Delete scope ``name`` and everything it holds, in one transaction; what it held.

        It takes the scope's row as a publish or an append does: one that
        committed first is dropped with the rest, one waiting on it then fails
        in one line, or makes the scope anew. Readers holding it see it empty
        on their next search (a scope made again never repeats a generation).

        Raises:
            ScopeError: A bad name, or no such scope.
            DatabaseError: The database failed, or this role may not write (nothing dropped).
        """
        validate_scope(name)
        with writing(self._writer, f"dropping scope {name}") as conn:
            info = drop_scope(conn, name)
        with self._lock:
            self._written.pop(name, None)
        return info

    def rename_scope(self, old: str, new: str) -> ScopeInfo:
        """Give scope ``old`` the name ``new`` (content kept, generation moved on); it renamed.

        One transaction under the scope's row lock, as :meth:`drop_scope`. A
        folder-backed scope keeps its owner, who publishes it as ``new`` from then on.

        Raises:
            ScopeError: A bad name, no scope ``old``, or a scope ``new`` exists already.
            DatabaseError: The database failed, or this role may not write (nothing renamed).
        """
        validate_scope(old)
        validate_scope(new)
        if old == new:
            raise ScopeError(f"scope {old} is named {new} already")
        with writing(self._writer, f"renaming scope {old}") as conn:
            info = rename_scope(conn, old, new)
        with self._lock:
            self._written.pop(old, None)
        self._wrote(new, info.generation)
        return info

    def snapshot(self, scope: str, model_id: str | None) -> Snapshot:
        """The scope's committed generation as a snapshot (vectors when of ``model_id``).

        One query when the generation is the one this process holds; else the
        segments it lacks are fetched (the rest are kept decoded) and assembled.
        A scope that does not exist yet reads as empty. Never writes the database
        (with ``cache``, this host keeps copies of the segments it fetched).

        Raises:
            DatabaseError: The database failed, or a segment is damaged.
        """
        validate_scope(scope)
        self._online(f"reading scope {scope}")
        floor = self._written.get(scope, 0) if self._reader is not self._writer else 0
        snap = self._snapshot(self._reader, scope, floor)
        if snap is None:  # the replica has not replayed this process's own write yet
            snap = self._snapshot(self._writer, scope, 0)
        assert snap is not None
        return of_model(snap, model_id)

    def held(self, scope: str, model_id: str | None, *, copies: bool = False) -> Snapshot | None:
        """The generation of ``scope`` last read (no query), None if none yet.

        What a search answers from while the database cannot be reached: the
        segments it holds stay valid, but newer writes are missing.

        Args:
            scope: The scope.
            model_id: The searcher's model (vectors of another are left out).
            copies: A scope this process has not read is assembled from this host's
                copies, as its last load here recorded it (None when a copy is
                missing). For a server that did not answer
                (``DatabaseError.unreachable``), never for a refusal it made.
        """
        snap = self._held.last(scope)
        if snap is None and copies:
            snap = self._held.recorded(scope)
        return None if snap is None else of_model(snap, model_id)

    def let_go(self, scope: str) -> None:
        """Forget the generation of ``scope`` last read and its segments no other scope holds.

        For a process that serves many scopes: its next read loads the scope again
        (or, unreachable, :meth:`held` assembles it from this host's copies).
        """
        self._held.let_go(scope)

    def _snapshot(self, pool: Pool, scope: str, floor: int) -> Snapshot | None:
        """The scope's generation read from ``pool``; None when it is older than ``floor``."""
        with pool.connection(f"reading scope {scope}", transaction=False) as conn:
            generation, _ = generation_of(conn, scope)
            if generation < floor:
                return None
            held = self._held.last(scope)
            if held is not None and held.generation == generation:
                return held  # the one query of a search whose scope did not move
            return self._held.load(conn, scope, pool)
