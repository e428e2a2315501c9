"""Writing a scope: a folder's files published, segments stored, small ones merged.

Every write runs in the caller's one transaction, after it locked the scope's
``em_scopes`` row (``SELECT ... FOR UPDATE``): writers of one scope take turns,
readers never wait (they read the last committed generation), and a write
killed at any moment leaves the previous generation as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.errors import ScopeError
from ...core.snapshot import Snapshot
from ..chunkrows import SegmentRows
from ..index import MemoryIndex
from ..reading import UnreadableFileError, read_lines
from ..segment import SEGMENT_CHUNKS, Segment, live_rows, merge_pick, merged, postings_of, to_bytes

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "PublishReport",
    "name_files",
    "publish_folder",
    "purge",
    "purge_dead",
    "store",
    "tidy",
]

Fetch = Callable[[list[int]], dict[int, Segment]]


@dataclass
class PublishReport:
    """What a publish changed.

    Attributes:
        scope: The scope.
        generation: Its generation after the publish (unchanged when nothing changed).
        files: Files the scope holds now.
        chunks: Chunks it holds now.
        changed: Files written anew (new or changed).
        deleted: Files dropped.
        segments: Segments it holds now.
        merged: Segments merged into one by this publish (0: none).
    """

    scope: str
    generation: int
    files: int
    chunks: int
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    segments: int = 0
    merged: int = 0


def lock_scope(
    conn: psycopg.Connection, scope: str, backing: str, model: str | None, chunker: str
) -> tuple[Any, ...]:
    """The scope's row, locked for this transaction (created with ``backing`` when new).

    Returns:
        ``(backing, owner, generation, model, chunker)``.

    Raises:
        ScopeError: A drop or rename of the scope (:mod:`.scopes`) held its row when this
            came to it, and committed: nothing of this write is left.
    """
    conn.execute(
        "INSERT INTO em_scopes (name, backing, model, chunker) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (name) DO NOTHING",
        (scope, backing, model, chunker),
    )
    row = conn.execute(
        "SELECT backing, owner, generation, model, chunker FROM em_scopes WHERE name = %s"
        " FOR UPDATE",
        (scope,),
    ).fetchone()
    if row is None:  # a drop or rename took it between the two statements, then committed
        raise ScopeError(
            f"scope {scope} was dropped or renamed while this write waited for it;"
            " nothing was written",
            "run it again to write to a scope of that name anew",
        )
    return tuple(row)


def check_publisher(conn: psycopg.Connection, scope: str, owner: str, take_over: bool) -> None:
    """Refuse at once what :func:`publish_folder` would refuse of ``owner`` (no lock, no write).

    Raises:
        ScopeError: The scope is database-backed, or published by another owner.
    """
    row = conn.execute("SELECT backing, owner FROM em_scopes WHERE name = %s", (scope,)).fetchone()
    if row is not None:
        _may_publish(scope, row[0], row[1], owner, take_over)


def _may_publish(scope: str, backing: str, had: str | None, owner: str, take_over: bool) -> None:
    if backing != "folder":
        raise ScopeError(
            f"scope {scope} is database-backed: its notes are written with remember, not"
            " published from a folder (not even with --take-over); to publish a folder as it,"
            f" export its notes, then drop it: enhanced-memory scopes drop {scope} --yes",
            f"enhanced-memory export --scope {scope} DIR keeps a copy of its notes first",
        )
    # An owner written before host ids is "host:path": this host's then, as it was.
    if had and had not in (owner, owner.partition(" (host ")[0]) and not take_over:
        raise ScopeError(
            f"scope {scope} is published from {had}; pass --take-over to publish it from here"
        )


def publish_folder(
    conn: psycopg.Connection,
    scope: str,
    index: MemoryIndex,
    model_id: str | None,
    owner: str,
    take_over: bool,
    fetch: Fetch,
    compact: bool = False,
) -> PublishReport:
    """Publish ``index``'s workspace as folder-backed ``scope`` (in ``conn``'s transaction).

    Only files whose content hash differs from the scope's are written (one new
    segment, split at :data:`SEGMENT_CHUNKS`), files gone from the folder are
    dropped; a change of model or chunker writes every file again. With
    ``compact``, every segment still holding rows no file uses (a changed or
    deleted file's old rows: the text of lines forgotten in the folder) is
    deleted, rewritten without them when other files still use it
    (:func:`purge_dead`).

    Raises:
        ScopeError: The scope is database-backed, or published by another owner
            (unless ``take_over``), or the index lacks vectors of ``model_id``.
    """
    chunker = index.chunker_signature
    backing, had_owner, generation, had_model, had_chunker = lock_scope(
        conn, scope, "folder", model_id, chunker
    )
    _may_publish(scope, backing, had_owner, owner, take_over)
    rewrite = had_model != model_id or had_chunker != chunker
    known = {
        path: digest
        for path, digest in conn.execute(
            "SELECT path, hash FROM em_files WHERE scope = %s", (scope,)
        )
    }
    # No sync moves the generation while its rows and terms are read.
    with index.writer_lock(), index.connect() as lite:
        snap = index.snapshot(model_id)
        if model_id is not None and (snap.has_vector is None or not snap.has_vector.all()):
            raise ScopeError(
                f"the index of {index.workspace} lacks vectors of {model_id} for some chunks",
                "run enhanced-memory index first (it embeds them), then publish",
            )
        hashes = dict(lite.execute("SELECT path, hash FROM files").fetchall())
        changed = sorted(p for p, h in hashes.items() if rewrite or known.get(p) != h)
        deleted = sorted(p for p in known if p not in hashes)
        segments = _cut(lite, snap, set(changed)) if changed else []
    if rewrite:  # another model or chunker: every file is written again
        conn.execute("DELETE FROM em_files WHERE scope = %s", (scope,))
        conn.execute("DELETE FROM em_notes WHERE scope = %s", (scope,))
    elif deleted:
        conn.execute("DELETE FROM em_files WHERE scope = %s AND path = ANY(%s)", (scope, deleted))
        conn.execute("DELETE FROM em_notes WHERE scope = %s AND path = ANY(%s)", (scope, deleted))
    store(conn, scope, [(seg, {p: hashes[p] for p in seg.names()}) for seg in segments])
    held = {p for seg in segments for p in seg.names()}
    # A file without chunks (an empty note) is named with segment 0: no segment.
    name_files(conn, scope, [(p, 0, hashes[p], 0) for p in changed if p not in held])
    _store_notes(conn, scope, index, changed)
    merged_count = tidy(conn, scope, fetch)
    purged = purge_dead(conn, scope, fetch) if compact else 0
    moved = bool(changed or deleted or rewrite or had_owner != owner or purged)
    if moved:
        row = conn.execute(
            "UPDATE em_scopes SET generation = nextval('em_generations'), owner = %s,"
            " model = %s, dim = %s, chunker = %s, updated = now() WHERE name = %s"
            " RETURNING generation",
            (owner, model_id, snap.vectors.dim if snap.vectors else None, chunker, scope),
        ).fetchone()
        generation = int(row[0]) if row else generation
    files, chunks, count = counts(conn, scope)
    return PublishReport(
        scope, int(generation), files, chunks, changed, deleted, count, merged_count
    )


def _cut(lite: Any, snap: Snapshot, files: set[str]) -> list[Segment]:
    """The segments of ``files``' rows of ``snap``: whole files, :data:`SEGMENT_CHUNKS` or so."""
    picked = np.fromiter((p in files for p in snap.paths), bool, len(snap))
    rows = np.flatnonzero(picked)
    by_file: dict[str, list[int]] = {}
    for r in rows.tolist():
        by_file.setdefault(snap.paths[r], []).append(r)
    out, bucket = [], []
    for file_rows in by_file.values():
        bucket += file_rows
        if len(bucket) >= SEGMENT_CHUNKS:
            out.append(from_snapshot(lite, snap, np.sort(np.asarray(bucket, dtype=np.int64))))
            bucket = []
    if bucket:
        out.append(from_snapshot(lite, snap, np.sort(np.asarray(bucket, dtype=np.int64))))
    return out


def from_snapshot(lite: Any, snap: Snapshot, rows: np.ndarray) -> Segment:
    """The segment of ``snap``'s ``rows`` (ascending: some files' chunks) of a local index.

    The postings are built from the chunks' stored terms (``lite``, the index's
    SQLite file, read in the generation ``snap`` is of) by the local sync's own
    builder; the vectors are ``snap``'s (all of them: :meth:`VectorSet.take`).

    Raises:
        ValueError: A chunk's terms are not in the index (it moved on: read again).
    """
    picked = rows.tolist()
    paths = [snap.paths[i] for i in picked]
    terms: dict[int, str] = {}
    # The file's own kind and date (a transcript chunk's row is dated by its
    # messages: row_columns dates it again from its header, as the index does).
    table: dict[str, tuple[str, str]] = {}
    for path in dict.fromkeys(paths):
        terms.update(lite.execute("SELECT id, terms FROM chunks WHERE path=?", (path,)))
        for kind, day in lite.execute("SELECT kind, date FROM files WHERE path=?", (path,)):
            table[path] = (kind, day or "")
    ids = snap.ids[rows].tolist()
    if any(i not in terms for i in ids) or len(table) != len(set(paths)):
        raise ValueError("the index moved on while it was read")
    posts = postings_of(
        (terms[i], snap.headers[r], p) for i, r, p in zip(ids, picked, paths, strict=True)
    )
    seg_rows = SegmentRows.build(
        [
            (
                p,
                int(snap.start[r]),
                int(snap.end[r]),
                snap.header[r],
                snap.headers[r],
                snap.texts[r],
            )
            for r, p in zip(picked, paths, strict=True)
        ]
    )
    return Segment(
        seg_rows,
        posts,
        kinds=[kind for kind, _ in table.values()],
        dates=[day for _, day in table.values()],
        vectors=None if snap.vectors is None else snap.vectors.take(rows),
    )


def store(
    conn: psycopg.Connection, scope: str, segments: Iterable[tuple[Segment, dict[str, str]]]
) -> None:
    """Insert each segment and name it for its files (with their content hashes)."""
    for seg, hashes in segments:
        row = conn.execute("SELECT nextval('em_segment_ids')").fetchone()
        assert row is not None
        seg_id = int(row[0])
        conn.execute(
            "INSERT INTO em_segments (scope, id, chunks, data) VALUES (%s, %s, %s, %s)",
            (scope, seg_id, seg.chunks, to_bytes(seg)),
        )
        per_file = np.bincount(seg.rows.path, minlength=len(seg.rows.paths)).tolist()
        names = zip(seg.names(), per_file, strict=True)
        name_files(conn, scope, [(name, seg_id, hashes[name], n) for name, n in names])


def name_files(
    conn: psycopg.Connection, scope: str, files: list[tuple[str, int, str, int]]
) -> None:
    """Name ``(path, segment, hash, chunks)`` as the live files of ``scope``."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO em_files (scope, path, segment, hash, chunks)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (scope, path) DO UPDATE SET"
            " segment = excluded.segment, hash = excluded.hash, chunks = excluded.chunks",
            [(scope, *f) for f in files],
        )


def _store_notes(
    conn: psycopg.Connection, scope: str, index: MemoryIndex, paths: list[str]
) -> None:
    """Store the text of the published ``paths`` (``get`` without the folder)."""
    rows = []
    for path in paths:
        try:
            lines = read_lines(index.workspace / path)
        except (OSError, UnreadableFileError):
            continue  # gone or unreadable since the sync: its chunks are published, not its text
        rows.append((scope, path, "".join(line + "\n" for line in lines)))
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO em_notes (scope, path, body) VALUES (%s, %s, %s)"
            " ON CONFLICT (scope, path) DO UPDATE SET body = excluded.body",
            rows,
        )


def counts(conn: psycopg.Connection, scope: str) -> tuple[int, int, int]:
    """Files, chunks and segments ``scope`` holds."""
    row = conn.execute(
        "SELECT count(*), coalesce(sum(chunks), 0),"
        " (SELECT count(*) FROM em_segments WHERE scope = %s) FROM em_files WHERE scope = %s",
        (scope, scope),
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def _drop_unnamed(conn: psycopg.Connection, scope: str) -> None:
    """Delete the segments of ``scope`` no file names."""
    conn.execute(
        "DELETE FROM em_segments s WHERE s.scope = %s AND NOT EXISTS"
        " (SELECT 1 FROM em_files f WHERE f.scope = s.scope AND f.segment = s.id)",
        (scope,),
    )


def purge(conn: psycopg.Connection, scope: str, ids: Iterable[int], fetch: Fetch) -> None:
    """Delete segments ``ids``: those no file names at once, the others rewritten without dead rows.

    What a forget needs: a file's old rows must not stay in a segment other files
    still name (a merge's, or a first publish's), where a search no longer reads
    them but the database still holds their text.
    """
    _drop_unnamed(conn, scope)
    left = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM em_segments WHERE scope = %s AND id = ANY(%s)", (scope, list(ids))
        )
    ]
    if left:
        _merge(conn, scope, left, fetch)


def purge_dead(conn: psycopg.Connection, scope: str, fetch: Fetch) -> int:
    """:func:`purge` every segment of ``scope`` holding rows no file uses; how many there were."""
    dead = [
        int(r[0])
        for r in conn.execute(
            "SELECT s.id FROM em_segments s"
            " LEFT JOIN em_files f ON f.scope = s.scope AND f.segment = s.id"
            " WHERE s.scope = %s GROUP BY s.id, s.chunks"
            " HAVING s.chunks > coalesce(sum(f.chunks), 0)",
            (scope,),
        )
    ]
    if dead:
        purge(conn, scope, dead, fetch)
    return len(dead)


def tidy(conn: psycopg.Connection, scope: str, fetch: Fetch) -> int:
    """Drop segments no file names; merge small or mostly replaced ones. Returns how many merged."""
    _drop_unnamed(conn, scope)
    stats = conn.execute(
        "SELECT s.id, s.chunks, coalesce(sum(f.chunks), 0) FROM em_segments s"
        " LEFT JOIN em_files f ON f.scope = s.scope AND f.segment = s.id"
        " WHERE s.scope = %s GROUP BY s.id, s.chunks ORDER BY s.id",
        (scope,),
    ).fetchall()
    picked = merge_pick([int(s[1]) for s in stats], [int(s[2]) for s in stats])
    if not picked:
        return 0
    pick = [int(stats[i][0]) for i in picked]
    _merge(conn, scope, pick, fetch)
    return len(pick)


def _merge(conn: psycopg.Connection, scope: str, pick: list[int], fetch: Fetch) -> None:
    """Replace segments ``pick`` by one holding only their live rows."""
    got = fetch(pick)
    live_paths: dict[int, set[str]] = {i: set() for i in pick}
    for path, seg_id in conn.execute(
        "SELECT path, segment FROM em_files WHERE scope = %s AND segment = ANY(%s)", (scope, pick)
    ):
        live_paths[int(seg_id)].add(path)
    segs = [got[i] for i in pick]
    one = merged(segs, [live_rows(s, live_paths[i]) for s, i in zip(segs, pick, strict=True)])
    hashes: dict[str, str] = dict(
        conn.execute(
            "SELECT path, hash FROM em_files WHERE scope = %s AND segment = ANY(%s)", (scope, pick)
        ).fetchall()
    )
    store(conn, scope, [(one, hashes)] if one.chunks else [])
    conn.execute("DELETE FROM em_segments WHERE scope = %s AND id = ANY(%s)", (scope, pick))
