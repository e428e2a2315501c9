"""A database segment reads back as the index it was cut from, transcript dates included.

No server: a segment is bytes (:mod:`langchain_enhanced_memory.store.database.segments`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from langchain_enhanced_memory.store.database.segments import (
    assemble,
    decode,
    encode,
    from_snapshot,
)
from langchain_enhanced_memory.store.index import MemoryIndex
from tests.workspaces import write_workspace


def _turn(text: str, when: str) -> str:
    return json.dumps({"role": "user", "content": text, "timestamp": when}) + "\n"


def test_a_segment_dates_each_transcript_chunk_as_the_index_does(tmp_path: Path) -> None:
    ws = write_workspace(
        tmp_path / "w",
        {
            "memory/2026-12-02.md": "# 2026-12-02\n\n- Booked flights to Lisbon.\n",
            "sessions/trip.jsonl": _turn("The Lisbon venue?", "2026-12-01T10:00:00Z")
            + _turn("The Lisbon dates?", "2026-12-03T15:00:00Z"),
        },
    )
    index = MemoryIndex(ws)
    index.sync()
    local = index.snapshot(None)
    with index.connect() as lite:
        seg = decode(encode(from_snapshot(lite, local, np.arange(len(local)))))
    # The segment keeps the file's own date (none for a transcript), not its first chunk's.
    assert dict(zip(seg.names(), seg.dates, strict=True)) == {
        "memory/2026-12-02.md": "2026-12-02",
        "sessions/trip.jsonl": "",
    }
    scope = assemble(1, [seg], [np.ones(seg.chunks, dtype=bool)], None)
    assert scope.paths == local.paths and scope.dates == local.dates
    assert scope.day.tolist() == local.day.tolist()
    assert sorted(d for p, d in zip(local.paths, local.dates, strict=True) if "sessions" in p) == [
        "2026-12-01",
        "2026-12-03",
    ]
