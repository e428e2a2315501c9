"""What a workspace's index holds, read without writing: ``status`` and the ``memory_status`` tool.

:func:`status` is the one place this is computed; the command line, the
LangChain tool and the MCP server show its :meth:`MemoryStatus.as_dict`. It
only reads: a folder with no index, or an index another version wrote (which
the next index run would upgrade or set aside), is said as such and left as
it is, and no resident engine is started. The cost is a ``scandir`` pass (the
stale files), a few counts and, with an embedder, the current generation's
vector map (which a search loads too).
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy as np

from ..core.errors import IndexUnavailableError
from ..store.db import SCHEMA_VERSION, generation_of, get_meta
from ..store.discovery import scan
from ..store.locations import resident_pid
from ..store.sync import chunker_signature
from ..store.workspace import classify

if TYPE_CHECKING:
    from ..engine import MemorySearch
    from ..store.database import Database, ScopeInfo

__all__ = ["CORPORA", "CorpusStatus", "MemoryStatus", "format_text", "status"]

#: OpenClaw's corpora: the notes and the session transcripts.
CORPORA = ("memory", "sessions")


@dataclass(frozen=True)
class CorpusStatus:
    """One corpus of the index.

    Attributes:
        files: Files indexed.
        chunks: Chunks indexed.
        embedded: Share of the chunks with a vector of the engine's embedder (0..1);
            None without an embedder or without chunks.
        stale: Files added, changed or deleted since the last index run.
    """

    files: int = 0
    chunks: int = 0
    embedded: float | None = None
    stale: int = 0


@dataclass(frozen=True)
class MemoryStatus:
    """A workspace's index, its embedder, its resident engine and a database's scopes.

    Attributes:
        workspace: The workspace folder.
        index: The index file.
        indexed: Whether there is an index this version reads (``problem`` says why not).
        problem: Why there is no readable index, else None.
        disk_bytes: What the index takes on disk (its file and side files).
        generation: The committed generation (0: never indexed).
        indexed_at: When that generation was committed (UTC, ISO), None when not recorded.
        corpora: ``memory`` and ``sessions``: :class:`CorpusStatus` each.
        provider: The embedder (``ollama``, ``local``, ``none``, ``custom``).
        model: Its model, or None.
        fallback: ``keyword-only`` when the embedder asked for is unavailable.
        reason: Why, in one line.
        profile: The scoring profile.
        graph: Whether the cross-reference graph is built.
        resident_pid: The resident engine serving the workspace, None when none runs.
        scopes: A database's scopes (with ``database``).
    """

    workspace: str
    index: str
    indexed: bool
    problem: str | None
    disk_bytes: int
    generation: int
    indexed_at: str | None
    corpora: dict[str, CorpusStatus]
    provider: str
    model: str | None
    fallback: str | None
    reason: str | None
    profile: str
    graph: bool
    resident_pid: int | None
    scopes: tuple[ScopeInfo, ...] = field(default=())

    @property
    def files(self) -> int:
        """Files indexed, all corpora."""
        return sum(c.files for c in self.corpora.values())

    @property
    def chunks(self) -> int:
        """Chunks indexed, all corpora."""
        return sum(c.chunks for c in self.corpora.values())

    @property
    def stale(self) -> bool:
        """Whether any file changed since the last index run (or there is no index)."""
        return not self.indexed or any(c.stale for c in self.corpora.values())

    def as_dict(self) -> dict[str, Any]:
        """The JSON of ``status --json`` and ``memory_status``."""
        out = asdict(self)
        share = [(c.embedded, c.chunks) for c in self.corpora.values() if c.embedded is not None]
        vectors = round(sum(e * n for e, n in share)) if share else 0
        out |= {"files": self.files, "chunks": self.chunks, "stale": self.stale}
        out |= {"vectors": vectors, "scopes": [s.as_dict() for s in self.scopes]}
        return out


def status(engine: MemorySearch, database: Database | None = None) -> MemoryStatus:
    """The state of ``engine``'s index (and of ``database``'s scopes), read without writing.

    Resolves the engine's embedder (``auto`` and ``ollama`` ask Ollama, for at most 2 s).

    Raises:
        NoMemoryError: No ``database``, and the workspace holds no memory.
        DatabaseError: ``database`` cannot be read.
        IndexUnavailableError: The index file named is not an enhanced-memory index
            (``--index notes.yaml``): refused as a search refuses it; or it cannot be
            opened.
    """
    if database is None:  # a database's scopes can be asked about from any folder
        engine.require_memory()
    choice = engine.choice
    corpora = {name: CorpusStatus() for name in CORPORA}
    generation, indexed_at, graph, problem = 0, None, False, None
    if not engine.index_path.is_file():
        problem = "no index yet: run `enhanced-memory index` (a search indexes too)"
    else:
        engine.refuse_foreign_index()
        try:
            generation, indexed_at, graph, problem, corpora = _read_index(engine)
        except sqlite3.OperationalError as exc:  # busy, or cannot be opened: not damage
            raise IndexUnavailableError(
                f"index {engine.index_path} is unavailable: {exc}"
            ) from None
        except sqlite3.DatabaseError as exc:  # damaged: the next index run sets it aside
            problem = (
                f"the index is unreadable ({exc}):"
                " the next `enhanced-memory index` sets it aside and rebuilds it"
            )
    return MemoryStatus(
        workspace=str(engine.workspace),
        index=str(engine.index_path),
        indexed=problem is None,
        problem=problem,
        disk_bytes=engine.disk_bytes(),
        generation=generation,
        indexed_at=indexed_at,
        corpora=corpora,
        provider=choice.provider,
        model=choice.model,
        fallback=choice.fallback,
        reason=choice.reason,
        profile=engine.settings.profile,
        graph=graph,
        resident_pid=resident_pid(engine.workspace),
        scopes=tuple(database.scopes()) if database is not None else (),
    )


def _read_index(
    engine: MemorySearch,
) -> tuple[int, str | None, bool, str | None, dict[str, CorpusStatus]]:
    """The index file's generation, time, graph, problem and corpora, opened read-only.

    Read-only: no schema created, upgraded or set aside, as opening it to search would.

    Raises:
        sqlite3.DatabaseError: The file is damaged.
    """
    uri = f"file:{quote(str(engine.index_path))}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            problem = (
                f"the index is of schema {version}, not {SCHEMA_VERSION}:"
                " the next `enhanced-memory index` upgrades or rebuilds it"
            )
            return 0, None, False, problem, {name: CorpusStatus() for name in CORPORA}
        graph = (
            conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='crossref_refs'"
            ).fetchone()
            is not None
        )
        indexed_at = get_meta(conn, "indexed_at") or None
        return generation_of(conn), indexed_at, graph, None, _corpora(engine, conn)


def _corpus(path: str) -> str:
    return "sessions" if classify(path)[0] == "session" else "memory"


def _corpora(engine: MemorySearch, conn: sqlite3.Connection) -> dict[str, CorpusStatus]:
    """Files, chunks, the share embedded and the stale files of each corpus."""
    settings = engine.settings
    known = {
        p: (s, m, c)
        for p, s, m, c in conn.execute("SELECT path, size, mtime_ns, ctime_ns FROM files")
    }
    rechunk = get_meta(conn, "chunker") != chunker_signature(settings)
    found = scan(engine.workspace, settings)
    counts: dict[str, dict[str, int]] = {n: {"files": 0, "chunks": 0, "stale": 0} for n in CORPORA}
    for path in known:
        counts[_corpus(path)]["files"] += 1
    for path in known.keys() | found.keys():
        if rechunk or known.get(path) != found.get(path):
            counts[_corpus(path)]["stale"] += 1
    for path, n in conn.execute("SELECT path, count(*) FROM chunks GROUP BY path"):
        counts[_corpus(path)]["chunks"] += n
    embedded: dict[str, float | None] = dict.fromkeys(CORPORA)
    model_id = engine.model_id
    if model_id is not None:
        snap = engine.snapshot(model_id)
        has = snap.has_vector if snap.has_vector is not None else np.zeros(len(snap), dtype=bool)
        session = np.fromiter((k == "session" for k in snap.kinds), bool, len(snap))
        for name, rows in (("memory", ~session), ("sessions", session)):
            if rows.any():
                embedded[name] = round(float(has[rows].mean()), 4)
    return {
        name: CorpusStatus(c["files"], c["chunks"], embedded[name], c["stale"])
        for name, c in counts.items()
    }


def format_text(got: MemoryStatus) -> str:
    """``status`` for people and for an LLM: a line for the index, each corpus, the rest."""
    lines = [f"workspace {got.workspace}"]
    if got.problem is not None:
        lines += [f"index {got.index}", got.problem]
    else:
        size = got.disk_bytes / 1e6
        when = f", indexed {got.indexed_at}" if got.indexed_at else ""
        lines.append(f"index {got.index} ({size:.1f} MB, generation {got.generation}{when})")
        for name, c in got.corpora.items():
            share = "" if c.embedded is None else f", {c.embedded:.0%} embedded"
            lines.append(
                f"{name}: {c.files} files, {c.chunks} chunks{share}, {c.stale} stale files"
            )
    embedder = f"embedder: {got.provider}" + (f" ({got.model})" if got.model else "")
    if got.fallback:
        embedder += f", fallback {got.fallback}" + (f": {got.reason}" if got.reason else "")
    lines.append(embedder)
    pid = got.resident_pid
    lines.append(f"resident engine: pid {pid}" if pid is not None else "resident engine: none")
    for s in got.scopes:
        lines.append(f"scope {s.name}: generation {s.generation}, {s.chunks} chunks ({s.backing})")
    return "\n".join(lines)
