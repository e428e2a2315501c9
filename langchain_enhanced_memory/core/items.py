"""The LangGraph store's items, as pure data: namespaces, filters, TTLs, texts and snapshots.

:class:`StoredItem` is an item as both storages keep it (:mod:`..store.items`,
a workspace's markdown files; :mod:`..store.database.items`, PostgreSQL);
:class:`ItemStorage` is the one interface they implement, and the LangGraph
face (:mod:`..langgraph_store`) is written against it only. Nothing here does
I/O: the markdown codec is :mod:`.itemtext`.

An item's *sections* are what search reads: each indexed field's text (by
default each top-level field), its field name as the header. A namespace
prefix search ranks the sections of the items under the prefix as one
:class:`.snapshot.Snapshot`, with the ranking every other search uses.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

import numpy as np

from .errors import ItemError, shown
from .scoring import Postings
from .snapshot import Snapshot
from .text import PHRASE_SEP, path_text, tokenize
from .vectorset import VectorSet

__all__ = [
    "HeldPrefix",
    "ItemStorage",
    "Namespace",
    "Ref",
    "StoredItem",
    "check_key",
    "check_namespace",
    "expiry",
    "matches",
    "namespace_matches",
    "namespace_path",
    "sections",
    "snapshot_of",
    "text_hash",
]

Namespace = tuple[str, ...]
#: An item's address: its namespace and key.
Ref = tuple[Namespace, str]
#: ``PutOp.index``: the fields to index, False (none), or None (the store's).
IndexFields = list[str] | Literal[False] | None

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\*|-?\d+)\]")


@dataclass(frozen=True)
class StoredItem:
    """One item as a storage keeps it.

    Attributes:
        namespace: Its namespace (checked by :func:`check_namespace`).
        key: Its key within the namespace.
        value: Its value (a JSON object).
        created_at: When it was first put (kept by later puts).
        updated_at: When it was last put.
        expires_at: When it expires (None: never).
        ttl: Its time to live in minutes, what a read refreshes (None: none).
        index: The fields it was put with (``PutOp.index``).
        vectors: The vector of each embedded section's text, by :func:`text_hash`.
        model: The embedder of ``vectors`` (None: none).
    """

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    ttl: float | None = None
    index: IndexFields = None
    vectors: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    model: str | None = None

    @property
    def ref(self) -> Ref:
        """Its address."""
        return self.namespace, self.key

    def expired(self, now: datetime) -> bool:
        """Whether it has expired at ``now``."""
        return self.expires_at is not None and self.expires_at <= now

    def refreshed(self, now: datetime) -> StoredItem:
        """The item with its TTL started again at ``now`` (itself when it has none)."""
        if self.ttl is None:
            return self
        return replace(self, expires_at=expiry(now, self.ttl))

    def indexed(self, fields: Sequence[str] | None) -> list[tuple[str, str]]:
        """The sections search indexes: by its own ``index``, else the store's ``fields``.

        The one rule of an item's indexed texts (False or None: the store's), shared
        by search, the vectors embedded and kept, and a delete's purge.
        """
        return sections(self.value, self.index or fields)


class HeldPrefix:
    """A prefix's items at one version, and their snapshot once a query needed it.

    A search keeps it for the next search of the prefix while the version holds.
    """

    __slots__ = ("expires", "items", "of_item", "snap", "version")

    def __init__(self, version: Hashable, items: list[StoredItem]) -> None:
        self.version, self.items = version, items
        self.snap: Snapshot | None = None
        self.of_item = np.zeros(0, dtype=np.int64)
        # Each item's expiry as a timestamp (inf: never), so a search masks expired items at once.
        self.expires = np.asarray(
            [i.expires_at.timestamp() if i.expires_at else np.inf for i in items], dtype=float
        )

    def live(self, now: datetime, flt: dict[str, Any] | None) -> np.ndarray:
        """Which items are unexpired at ``now`` and match ``flt`` (checked on those only)."""
        live = self.expires > now.timestamp()
        if flt:
            for i in np.flatnonzero(live):
                live[i] = matches(self.items[i].value, flt)
        return live


class ItemStorage(Protocol):
    """Where items live: a workspace's markdown files or a PostgreSQL table.

    Every method is safe to call from several threads. Expired items are
    returned as they are (the face hides them); :meth:`sweep` deletes them.
    """

    def get_many(self, refs: Sequence[Ref]) -> dict[Ref, StoredItem]:
        """The items at ``refs`` that exist."""
        ...

    def put_many(self, items: Sequence[StoredItem], deletes: Sequence[Ref]) -> None:
        """Write ``items`` (replacing those at their refs) and delete ``deletes``, as one."""
        ...

    def version(self, prefix: Namespace) -> Hashable:
        """A value that changes whenever an item under ``prefix`` does (cheap to read)."""
        ...

    def under(self, prefix: Namespace) -> list[StoredItem]:
        """Every item whose namespace starts with ``prefix`` (all of them for ``()``)."""
        ...

    def namespaces(self, prefix: Namespace = ()) -> list[Namespace]:
        """Every namespace holding an item under ``prefix``."""
        ...

    def refresh(self, items: Sequence[StoredItem]) -> None:
        """Store the new ``expires_at`` of ``items`` (nothing else of theirs changes)."""
        ...

    def keep_vectors(self, items: Sequence[StoredItem]) -> None:
        """Store the vectors ``items`` carry (their values and times are as stored)."""
        ...

    def sweep(self, now: datetime) -> int:
        """Delete the items expired at ``now``; how many."""
        ...

    def close(self) -> None:
        """Release what it holds (files, connections)."""
        ...


def check_namespace(namespace: object, *, root: bool = True) -> Namespace:
    """``namespace`` as LangGraph accepts it: a tuple of non-empty strings without ``.``.

    Args:
        namespace: The namespace (or prefix) to check.
        root: Whether it names an item's namespace (non-empty, not under the
            reserved ``langgraph`` label) rather than a search prefix.

    Raises:
        ItemError: Not a tuple of valid labels.
    """
    if not isinstance(namespace, tuple):
        raise ItemError(f"a namespace is a tuple of strings, not {type(namespace).__name__}")
    if root and not namespace:
        raise ItemError("a namespace cannot be empty", "give at least one label, e.g. ('users',)")
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise ItemError(f"namespace {shown(namespace)}: a label must be a non-empty string")
        if "." in label or "\x00" in label:
            raise ItemError(f"namespace label {shown(label)} holds '.' or a NUL byte")
    if root and namespace[0] == "langgraph":
        raise ItemError('the root label "langgraph" is reserved', "choose another first label")
    return namespace


def check_key(key: object) -> str:
    """``key`` as an item's key: a non-empty string without NUL bytes.

    Raises:
        ItemError: Not such a string.
    """
    if not isinstance(key, str) or not key or "\x00" in key:
        raise ItemError(f"an item's key is a non-empty string, not {shown(key)}")
    return key


def namespace_path(namespace: Namespace) -> str:
    """The namespace as one string, each label percent-encoded then ``/``-terminated.

    ``("a", "b")`` is ``"a/b/"``: a namespace is under a prefix exactly when its
    path starts with the prefix's (so ``("a",)`` never matches ``("ab",)``),
    and sorting paths sorts namespaces.
    """
    return "".join(encode_name(label) + "/" for label in namespace)


def encode_name(name: str) -> str:
    """``name`` with every byte but ``[A-Za-z0-9_-]`` as ``%XX`` (safe as a file name)."""
    out = []
    for ch in name:
        if ch.isascii() and (ch.isalnum() or ch in "_-"):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def decode_name(encoded: str) -> str:
    """The name :func:`encode_name` encoded."""
    parts = encoded.split("%")
    raw = bytearray(parts[0].encode())
    for part in parts[1:]:
        raw += bytes.fromhex(part[:2]) + part[2:].encode()
    return raw.decode("utf-8", "surrogatepass")


def namespace_matches(namespace: Namespace, kind: str, path: Sequence[str]) -> bool:
    """LangGraph's ``MatchCondition``: ``path`` is a prefix or suffix (``*`` any label)."""
    if len(namespace) < len(path):
        return False
    if kind not in ("prefix", "suffix"):
        raise ItemError(f"unknown match type {shown(kind)}", "use 'prefix' or 'suffix'")
    if kind == "suffix":
        namespace, path = namespace[::-1], tuple(path)[::-1]
    pairs = zip(namespace, path, strict=False)
    return all(p == "*" or label == p for label, p in pairs)


def matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """Whether ``value`` meets a LangGraph filter (each field equal, or per operator).

    A field's condition is a value (equal; a dict compares its fields, a list
    element by element) or a dict of operators ``$eq $ne $gt $gte $lt $lte``.
    An ordering operator between values that cannot be compared is False.

    Raises:
        ItemError: An operator that is not one of these.
    """
    return not conditions or all(_meets(value.get(k), c) for k, c in conditions.items())


def _meets(value: Any, condition: Any) -> bool:
    if isinstance(condition, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in condition):
            return all(_operator(value, op, arg) for op, arg in condition.items())
        return isinstance(value, dict) and all(
            _meets(value.get(k), c) for k, c in condition.items()
        )
    if isinstance(condition, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(condition)
            and all(_meets(v, c) for v, c in zip(value, condition, strict=True))
        )
    return bool(value == condition)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op not in _OPERATORS:
        raise ItemError(
            f"unknown filter operator {shown(op)}", f"use one of {' '.join(_OPERATORS)}"
        )
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (value, arg))
    if not numbers and not (isinstance(value, str) and isinstance(arg, str)):
        return False
    if op == "$gt":
        return bool(value > arg)
    if op == "$gte":
        return bool(value >= arg)
    if op == "$lt":
        return bool(value < arg)
    return bool(value <= arg)


def expiry(now: datetime, minutes: float | None) -> datetime | None:
    """When an item put (or read) at ``now`` with a TTL of ``minutes`` expires."""
    return None if minutes is None else now + timedelta(minutes=float(minutes))


def text_hash(text: str) -> str:
    """The key a section's vector is kept and reused under (SHA-256 of its UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sections(value: dict[str, Any], fields: Sequence[str] | None) -> list[tuple[str, str]]:
    """``(field, text)`` of each section of ``value``: what search reads and embeds.

    Args:
        value: The item's value.
        fields: Paths to index (LangGraph's: ``a.b``, ``a[0]``, ``a[*]``, ``a.*``,
            ``$`` the whole value); None: each top-level field. A string is its
            own text, anything else its JSON; a path that finds nothing adds none.
    """
    if fields is None:
        pairs: Iterable[tuple[str, Any]] = value.items()
    else:
        pairs = ((f, found) for f in fields for found in _at_path(value, f))
    return [(name, _text(v)) for name, v in pairs if _text(v)]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _at_path(value: Any, path: str) -> list[Any]:
    if path in ("$", ""):
        return [value]
    found = [value]
    for name, index in _PATH_PART.findall(path):
        step: list[Any] = []
        for v in found:
            if name == "*" or index == "*":
                step.extend(v.values() if isinstance(v, dict) else v if isinstance(v, list) else [])
            elif name:
                if isinstance(v, dict) and name in v:
                    step.append(v[name])
            elif isinstance(v, list) and -len(v) <= int(index) < len(v):
                step.append(v[int(index)])
        found = step
    return found


def snapshot_of(
    items: Sequence[StoredItem],
    fields: Sequence[str] | None,
    model: str | None,
    generation: int = 0,
) -> tuple[Snapshot, np.ndarray]:
    """The sections of ``items`` as one snapshot, and each row's item (its index in ``items``).

    A row's header is its field, its path the item's namespace and key, its date
    the day it was last put, its lines (``start``, ``end``) its row number plus
    one; its vector the item's of that text under ``model`` (rows without one
    are left out of the vector signal).
    """
    rows: list[tuple[int, str, str, str]] = []  # item, path, field, text
    for i, item in enumerate(items):
        path = "/".join((*item.namespace, item.key))
        for name, text in item.indexed(fields):
            rows.append((i, path, name, text))
    n = len(rows)
    of_item = np.asarray([r[0] for r in rows], dtype=np.int64)
    days = [items[r[0]].updated_at.date() for r in rows]
    text_post, phrase_post = Postings.build_with_pairs(
        [tokenize(f"{name}\n{text}") for _, _, name, text in rows], PHRASE_SEP
    )
    snap = Snapshot(
        generation=generation,
        ids=np.arange(n, dtype=np.int64),
        paths=[r[1] for r in rows],
        start=np.arange(1, n + 1, dtype=np.int32),  # a hit's start_line is its row + 1
        end=np.arange(1, n + 1, dtype=np.int32),
        header=[r[2] for r in rows],
        headers=[r[2] for r in rows],
        texts=[r[3] for r in rows],
        kinds=["item"] * n,
        dates=[d.isoformat() for d in days],
        day=np.asarray([d.toordinal() for d in days], dtype=np.int64),
        text_post=text_post,
        phrase_post=phrase_post,
        header_post=Postings.build(tokenize(r[2]) for r in rows),
        path_post=Postings.build(tokenize(path_text(r[1])) for r in rows),
    )
    return _with_vectors(snap, items, rows, model), of_item


def _with_vectors(
    snap: Snapshot,
    items: Sequence[StoredItem],
    rows: list[tuple[int, str, str, str]],
    model: str | None,
) -> Snapshot:
    if model is None:
        return snap
    found = [
        items[i].vectors.get(text_hash(text)) if items[i].model == model else None
        for i, _, _, text in rows
    ]
    dims = {v.shape[0] for v in found if v is not None}
    if len(dims) != 1:
        return snap  # none yet (or sizes mixed by a change of model): keyword-only
    dim = dims.pop()
    has = np.asarray([v is not None and v.shape[0] == dim for v in found], dtype=bool)
    matrix = np.zeros((len(rows), dim), dtype=np.float32)
    for r in np.flatnonzero(has).tolist():
        matrix[r] = found[r]
    vectors = VectorSet.of(matrix)
    return replace(snap, vectors=vectors, has_vector=has, model=model)
