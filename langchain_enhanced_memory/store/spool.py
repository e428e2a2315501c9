"""Vectors embedded but in no segment yet: one append-only spool file per model.

A record is a text hash's key (:func:`.vector_segments.hash_keys`), the row's float32
scale and its int8 values. A run appends the records it holds, flushes them,
and in one transaction sets the ``catalog`` row ``spool:MODEL`` to the file
and how many records are committed. That commit is the switch: readers read up
to the committed count, and bytes past it (a kill between the write and the
commit) are cut off by the next append. The fold that writes a generation's
segment (:mod:`.folding`) drops the row in the commit naming the segment; the
file goes after it.

Every file is created, written and named inside one write transaction of the
index (an append holds it), so a spool file no row names is a crash's leftover,
and the next new spool removes it.

A cold index at 1M chunks used to put 2.8M int8 blobs through SQLite (committed
on random pages of a cache table, read back, emptied and VACUUMed away);
here they are written once, in order, and read back from the page cache.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .locations import make_private, open_private
from .sync import sha
from .vector_segments import find_sorted, fsync_dir

__all__ = ["SUFFIX", "Spool", "SpoolState", "append", "drop_state", "spool_state"]

SUFFIX = ".spool"


def _record(dim: int) -> np.dtype:
    return np.dtype([("key", "<u8"), ("scale", "<f4"), ("row", "i1", (dim,))])


@dataclass(frozen=True)
class SpoolState:
    """A committed spool: its file in the side folder, the vectors' size, the records in it."""

    file: str
    dim: int
    records: int

    @property
    def size(self) -> int:
        """Bytes the committed records take."""
        return self.records * _record(self.dim).itemsize


def _name(model: str) -> str:
    return f"spool:{model}"


def spool_state(conn: sqlite3.Connection, model: str) -> SpoolState | None:
    """``model``'s committed spool in this transaction (None when there is none)."""
    row = conn.execute("SELECT data FROM catalog WHERE name=?", (_name(model),)).fetchone()
    try:
        return SpoolState(**json.loads(row[0])) if row else None
    except (TypeError, ValueError):
        return None  # not a state this version wrote: its vectors get embedded again


def drop_state(conn: sqlite3.Connection, model: str) -> None:
    """Forget ``model``'s spool (in the caller's transaction; the file goes after it commits)."""
    conn.execute("DELETE FROM catalog WHERE name=?", (_name(model),))


class Spool:
    """The committed records of a spool, mapped read-only.

    Attributes:
        state: What was committed when it was opened.
        matrix: int8 rows (a strided view of the records).
        scale: Their scales.
        keys: Their keys, in the order appended (a key appended again: the later record wins).
    """

    def __init__(self, state: SpoolState, records: np.ndarray) -> None:
        self.state = state
        self.matrix = records["row"]
        self.scale = records["scale"]
        self.keys = records["key"]

    @classmethod
    def open(cls, folder: Path, state: SpoolState) -> Spool | None:
        """Map ``state``'s records; None when the file is missing or shorter than committed."""
        dtype = _record(state.dim)
        if not _intact(folder, state):
            return None
        try:
            records = (
                np.memmap(folder / state.file, dtype=dtype, mode="r", shape=(state.records,))
                if state.records
                else np.zeros(0, dtype=dtype)
            )
        except (OSError, ValueError):
            return None
        return cls(state, records)

    @cached_property
    def _sorted(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct keys, sorted, and the record of each (the last appended)."""
        order = np.argsort(self.keys, kind="stable")
        keys = np.asarray(self.keys[order])
        last = np.r_[keys[1:] != keys[:-1], True] if keys.size else np.zeros(0, dtype=bool)
        return keys[last], order[last]

    @property
    def distinct_keys(self) -> np.ndarray:
        """The keys it holds a vector of, sorted, each once."""
        return self._sorted[0]

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The record of each key, -1 when absent."""
        return find_sorted(*self._sorted, keys)


def append(
    conn: sqlite3.Connection,
    folder: Path,
    model: str,
    keys: np.ndarray,
    q: np.ndarray,
    scale: np.ndarray,
) -> SpoolState:
    """Write records after ``model``'s committed ones, flushed, and set the state to commit.

    The caller holds a write transaction (``BEGIN IMMEDIATE``) and commits it;
    without a committed spool (a fold took
    it, or it is lost), a new file is started.

    Raises:
        ValueError: The vectors are not of the size the spool holds.
    """
    dim = int(q.shape[1])
    state = spool_state(conn, model)
    if state is not None and state.dim != dim:
        raise ValueError(f"{dim}-d vectors for a spool of {state.dim}-d ones")
    if state is None or not _intact(folder, state):
        state = _start(folder, model, dim)
    path = folder / state.file
    records = np.empty(len(keys), dtype=_record(dim))
    records["key"], records["scale"], records["row"] = keys, scale, q
    with open(path, "r+b") as fh:
        fh.truncate(state.size)  # what a kill left past the committed records
        fh.seek(state.size)
        fh.write(records.tobytes())
        fh.flush()
        os.fsync(fh.fileno())
    state = SpoolState(state.file, dim, state.records + len(keys))
    conn.execute(
        "INSERT OR REPLACE INTO catalog VALUES (?, 0, ?)", (_name(model), json.dumps(asdict(state)))
    )
    return state


def _intact(folder: Path, state: SpoolState) -> bool:
    try:
        return (folder / state.file).stat().st_size >= state.size
    except OSError:
        return False


def _start(folder: Path, model: str, dim: int) -> SpoolState:
    """A new empty spool file for ``model``; files of its model no row names go."""
    make_private(folder)
    stem = sha(model)[:12]
    for old in folder.glob(f"{stem}-*{SUFFIX}"):
        old.unlink(missing_ok=True)
    state = SpoolState(f"{stem}-{os.urandom(4).hex()}{SUFFIX}", dim, 0)
    os.close(open_private(folder / state.file, os.O_WRONLY))
    fsync_dir(folder)
    return state
