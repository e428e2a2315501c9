"""A workspace's LangGraph store items: a markdown file per item, readable and editable.

An item lives at ``memory/items/<namespace>/<key>.md``: the namespace's labels
and the key each encoded by :func:`..core.items.encode_name` (every byte but
``[A-Za-z0-9_-]`` as ``%XX``), the labels joined by ``.`` (which no label
holds), so ``("users", "u1")`` is the folder ``users.u1`` and a prefix never
matches a longer label. A name over :data:`_NAME_BYTES` bytes is cut and
ended by ``~`` and a hash (``~`` is never in an encoded name); the item's
first line keeps its namespace and key exactly (:mod:`..core.itemtext`).

The files are memory like any note: the notes search reads them, a person may
edit them (the next :meth:`WorkspaceItems.get_many` returns the edit). They
are written through :func:`.append.rewrite_note` (the notes' one writer: a
temporary file renamed over the note, under the notes' lock, only if the note
is still what was read; a file there that is not an item is never replaced).
A delete removes the file, then purges its texts from the index as ``forget``
does (:func:`.forget.purge_workspace`). Section vectors are kept in
``items.sqlite`` in the index folder (private like the index), by model and
text hash, so an unchanged text is never embedded twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
from collections.abc import Hashable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np

from ..core.errors import ItemError, WriteError
from ..core.items import Namespace, Ref, StoredItem, decode_name, encode_name, sections, text_hash
from ..core.itemtext import parse_item, render_item, with_expiry
from ..core.settings import MemorySettings
from .append import NOTES_LOCK, folder_lock, rewrite_note
from .db import index_folder
from .forget import purge_workspace
from .locations import make_private, open_private
from .outlines import forget_outline

__all__ = ["ITEMS_FOLDER", "WorkspaceItems", "item_path"]

ITEMS_FOLDER = "memory/items"
_NAME_BYTES = 160


def _short(encoded: str) -> str:
    if len(encoded) <= _NAME_BYTES:
        return encoded
    digest = hashlib.sha256(encoded.encode()).hexdigest()[:16]
    return f"{encoded[: _NAME_BYTES - 17]}~{digest}"


def folder_name(namespace: Namespace) -> str:
    """The folder of a namespace under :data:`ITEMS_FOLDER`."""
    return _short(".".join(encode_name(label) for label in namespace))


def item_path(ref: Ref) -> str:
    """The workspace-relative path of the item at ``ref``."""
    namespace, key = ref
    return f"{ITEMS_FOLDER}/{folder_name(namespace)}/{_short(encode_name(key))}.md"


class WorkspaceItems:
    """The :class:`..core.items.ItemStorage` of a workspace (thread-safe).

    Args:
        workspace: The workspace folder.
        settings: The settings of the index a delete purges.
        fields: The store's ``index.fields`` (an item put without its own is indexed
            by them: their texts' vectors are kept, and purged at its delete).
    """

    def __init__(
        self,
        workspace: str | Path,
        settings: MemorySettings | None = None,
        fields: Sequence[str] | None = None,
    ) -> None:
        self.workspace = Path(workspace).expanduser().resolve()
        self.settings = settings or MemorySettings()
        self.fields = list(fields) if fields is not None else None
        self.root = self.workspace / ITEMS_FOLDER
        self._parsed: dict[str, tuple[tuple[int, int, int], StoredItem]] = {}
        self._lock = threading.Lock()
        self._vectors = _Vectors(index_folder(self.workspace) / "items.sqlite", self.fields)

    # -- reading

    def _read(self, path: str | Path) -> StoredItem | None:
        """The item in ``path`` (parsed once per version of the file), None when gone."""
        try:
            st = os.stat(path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            key = str(path)
            with self._lock:
                held = self._parsed.get(key)
            if held is not None and held[0] == stamp:
                return held[1]
            with open(path, encoding="utf-8") as f:
                item = parse_item(f.read())
        except (FileNotFoundError, UnicodeDecodeError, ItemError):
            return None  # gone meanwhile, or not an item (a note someone put here)
        with self._lock:
            self._parsed[key] = (stamp, item)
        return item

    def get_many(self, refs: Sequence[Ref]) -> dict[Ref, StoredItem]:
        """The items at ``refs`` that exist (each with its vectors)."""
        found = {}
        for ref in refs:
            item = self._read(self.workspace / item_path(ref))
            if item is not None and item.ref == ref:
                found[ref] = item
        return self._vectors.attach(found)

    def _folders(self, prefix: Namespace) -> list[Path]:
        """The folders of the namespaces under ``prefix``."""
        want = folder_name(prefix) if prefix else ""
        try:
            with os.scandir(self.root) as entries:
                names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        if want and "~" in want:
            return [self.root / n for n in names if n == want]  # a long name: exact only
        keep = [n for n in names if not want or n == want or n.startswith(want + ".")]
        return [self.root / n for n in sorted(keep)]

    def _files(self, prefix: Namespace) -> list[tuple[str, tuple[int, int, int]]]:
        """Each item file under ``prefix`` and its stamp, sorted.

        Paths as strings: making and sorting 10,000 ``Path`` objects took 400 ms a search.
        """
        out = []
        for folder in self._folders(prefix):
            with contextlib.suppress(FileNotFoundError), os.scandir(folder) as entries:
                for e in entries:
                    if e.name.endswith(".md") and e.is_file(follow_symlinks=False):
                        st = e.stat(follow_symlinks=False)
                        out.append((e.path, (st.st_mtime_ns, st.st_size, st.st_ino)))
        out.sort()
        return out

    def version(self, prefix: Namespace) -> Hashable:
        """Each item file's path and stamp under ``prefix`` (an edit by hand changes it)."""
        return tuple(self._files(prefix))

    def under(self, prefix: Namespace) -> list[StoredItem]:
        """Every item whose namespace starts with ``prefix``."""
        items = {}
        for path, _ in self._files(prefix):
            item = self._read(path)
            if item is not None and item.namespace[: len(prefix)] == prefix:
                items[item.ref] = item
        return list(self._vectors.attach(items).values())

    def namespaces(self, prefix: Namespace = ()) -> list[Namespace]:
        """Every namespace holding an item under ``prefix``."""
        out = set()
        for folder in self._folders(prefix):
            if "~" not in folder.name:
                out.add(tuple(decode_name(label) for label in folder.name.split(".")))
                continue
            out.update(item.namespace for item in self.under_folder(folder))
        return sorted(out)

    def under_folder(self, folder: Path) -> list[StoredItem]:
        """The items of one namespace folder."""
        paths = sorted(folder.glob("*.md"))
        return [item for item in map(self._read, paths) if item is not None]

    # -- writing

    def put_many(self, items: Sequence[StoredItem], deletes: Sequence[Ref]) -> None:
        """Write each item's file, and delete ``deletes`` (one file at a time)."""
        for item in items:
            rel = item_path(item.ref)

            def edit(old: str, item: StoredItem = item, rel: str = rel) -> str:
                return render_item(_replacing(old, item, rel))

            rewrite_note(self.workspace, rel, edit, create=True)
        self._vectors.keep(items)
        if deletes:
            self._delete(deletes)

    def keep_vectors(self, items: Sequence[StoredItem]) -> None:
        """Store the vectors ``items`` carry (the files are left as they are)."""
        self._vectors.keep(items)

    def refresh(self, items: Sequence[StoredItem]) -> None:
        """Write the new expiry of ``items`` (an item edited meanwhile keeps the edit)."""
        for item in items:
            rel = item_path(item.ref)

            def edit(old: str, expires: datetime | None = item.expires_at) -> str | None:
                if not old:
                    return None
                return with_expiry(old, expires)  # all else byte for byte

            with contextlib.suppress(WriteError, ItemError):
                rewrite_note(self.workspace, rel, edit)

    def _delete(self, refs: Sequence[Ref]) -> None:
        gone: list[StoredItem] = []
        with folder_lock(self.workspace / "memory", NOTES_LOCK):
            for ref in refs:
                path = self.workspace / item_path(ref)
                item = self._read(path)
                if item is None or item.ref != ref:
                    continue
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                forget_outline(self.workspace / "memory", Path(os.path.realpath(path)))
                with self._lock:
                    self._parsed.pop(str(path), None)
                with contextlib.suppress(OSError):
                    path.parent.rmdir()  # the namespace's last item
                gone.append(item)
        if gone:
            self._purge(gone)

    def _purge(self, gone: list[StoredItem]) -> None:
        """Every copy of the deleted items' texts out of the index, the logs and the vectors."""
        texts = [t for item in gone for t in _all_texts(item, self.fields)]
        live = {text_hash(t) for item in self.under(()) for t in _all_texts(item, self.fields)}
        self._vectors.drop({text_hash(t) for t in texts} - live)
        purge_workspace(self.workspace, sorted(set(texts)), self.settings)

    def sweep(self, now: datetime) -> int:
        """Delete the items expired at ``now``."""
        expired = [item.ref for item in self.under(()) if item.expired(now)]
        if expired:
            self._delete(expired)
        return len(expired)

    def close(self) -> None:
        """Close the vectors' file."""
        self._vectors.close()


def _all_texts(item: StoredItem, fields: Sequence[str] | None) -> list[str]:
    """Every text of ``item`` a file, the index or a vector may hold (sections, indexed)."""
    both = sections(item.value, None) + item.indexed(fields)
    return [text for _, text in both]


def _replacing(old: str, item: StoredItem, rel: str) -> StoredItem:
    """``item`` as it replaces the file's text ``old`` (its ``created_at`` kept).

    Read under the notes' lock: of two puts making one item at once, the second
    keeps the first's ``created_at``.

    Raises:
        ItemError: ``old`` is a note that is not an item (it is never replaced).
    """
    if not old.strip():
        return item
    try:
        was = parse_item(old)
    except ItemError:
        raise ItemError(
            f"refused: {rel} is not an item's file; it is left as it is",
            "move it away, or use another key",
        ) from None
    return replace(item, created_at=was.created_at) if was.ref == item.ref else item


class _Vectors:
    """Section vectors by model and text hash, in a private SQLite file."""

    def __init__(self, path: Path, fields: Sequence[str] | None) -> None:
        self.path = path
        self.fields = fields
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if self._conn is None:
            if not create and not self.path.exists():
                return None
            make_private(self.path.parent)
            os.close(open_private(self.path, os.O_RDWR))
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=10000")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, hash TEXT NOT NULL,"
                " vector BLOB NOT NULL, PRIMARY KEY (model, hash))"
            )
            self._conn = conn
        return self._conn

    def attach(self, items: dict[Ref, StoredItem]) -> dict[Ref, StoredItem]:
        """``items`` with the vectors of their sections' texts under each one's model."""
        wanted = {
            (item.model, text_hash(t))
            for item in items.values()
            if item.model is not None
            for t in _all_texts(item, self.fields)
        }
        with self._lock:
            conn = self._connect(create=False)
            if conn is None or not wanted:
                return items
            found: dict[tuple[str, str], np.ndarray] = {}
            ordered = sorted(wanted)
            for k in range(0, len(ordered), 400):
                part = ordered[k : k + 400]
                where = " OR ".join(["(model = ? AND hash = ?)"] * len(part))
                args = [x for pair in part for x in pair]
                for m, h, blob in conn.execute(
                    f"SELECT model, hash, vector FROM vectors WHERE {where}", args
                ):
                    found[m, h] = np.frombuffer(blob, dtype=np.float32)
        return {
            ref: replace(item, vectors={h: v for (m, h), v in found.items() if m == item.model})
            for ref, item in items.items()
        }

    def keep(self, items: Sequence[StoredItem]) -> None:
        """Store the vectors ``items`` carry."""
        rows = [
            (item.model, h, np.asarray(v, dtype=np.float32).tobytes())
            for item in items
            if item.model is not None
            for h, v in item.vectors.items()
        ]
        if not rows:
            return
        with self._lock:
            conn = self._connect(create=True)
            assert conn is not None
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

    def drop(self, hashes: set[str]) -> None:
        """Delete the vectors of ``hashes`` (texts no item holds any more)."""
        with self._lock:
            conn = self._connect(create=False)
            if conn is None or not hashes:
                return
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("DELETE FROM vectors WHERE hash = ?", [(h,) for h in hashes])
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
