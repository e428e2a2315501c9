"""A segment reads back as the index it was cut from, transcript dates included.

No server: a segment is bytes (:mod:`langchain_enhanced_memory.store.segment`), one
format for the embedded store's files and a scope's rows, which reads both stores'
earlier formats.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from langchain_enhanced_memory.store.database.publish import from_snapshot
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.segment import (
    FIELDS,
    SEGMENT_CHUNKS,
    Segment,
    assemble,
    decode,
    merge_pick,
    to_bytes,
)
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
        seg = decode(to_bytes(from_snapshot(lite, local, np.arange(len(local)))))
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


def _earlier(seg: Segment, magic: bytes) -> bytes:
    """``seg`` as the stores wrote it before one format: a scope's ``EMB1`` blob (no
    fences, no ids) or the embedded store's ``EMS1`` file (1-d counts, lists unprefixed)."""
    arrays = {"ids": np.arange(1, seg.chunks + 1, dtype=np.int64)} if magic == b"EMS1" else {}
    for f in FIELDS:
        post = seg.posts[f]
        prefix = f if magic == b"EMS1" else f"post.{f}"
        arrays |= {f"{prefix}.{p}": getattr(post, p) for p in ("keys", "indptr", "docs", "tf")}
        arrays[f"{prefix}.doc_len"] = post.doc_len
        if magic == b"EMS1":
            arrays[f"{prefix}.fence"] = post.keys[::512]
    arrays |= seg.rows.arrays()
    layout, parts, offset = [], [], 0
    for key, a in arrays.items():
        a = np.ascontiguousarray(a)
        layout.append([key, a.dtype.str, a.size if magic == b"EMS1" else list(a.shape), offset])
        parts += [a.tobytes(), b"\0" * (-a.nbytes % 8)]
        offset += a.nbytes + len(parts[-1])
    head = json.dumps(layout).encode()
    head += b" " * (-(len(head) + 8) % 8)
    return b"".join([magic, len(head).to_bytes(4, "little"), head, *parts])


def test_both_stores_earlier_segments_read_as_the_one_format(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "w", {"MEMORY.md": "# Trip\n\n- Lisbon in May.\n- Kestrel.\n"})
    index = MemoryIndex(ws)
    index.sync()
    local = index.snapshot(None)
    with index.connect() as lite:
        seg = from_snapshot(lite, local, np.arange(len(local)))
    for magic in (b"EMB1", b"EMS1"):
        got = decode(_earlier(seg, magic))
        assert got.rows.text.tolist() == seg.rows.text.tolist()
        for f in FIELDS:
            assert (
                got.posts[f].column("lisbon")[0].tolist()
                == seg.posts[f].column("lisbon")[0].tolist()
            )
    assert decode(_earlier(seg, b"EMS1")).ids is not None
    assert decode(to_bytes(seg)).posts["text"].fence is not None


def test_the_one_merge_policy_leaves_large_live_segments_out() -> None:
    base = 2 * SEGMENT_CHUNKS
    assert merge_pick([base, 5, 5], [base, 5, 5]) == []  # few segments, nothing replaced
    # Too many segments: the small ones merge, the large live base stays as it is.
    assert merge_pick([base] + [5] * 8, [base] + [5] * 8) == list(range(1, 9))
    # Most of the base replaced: it is rewritten with the small ones.
    assert merge_pick([base, 5], [base // 2, 5]) == [0, 1]
    assert merge_pick([base, base], [base, base // 2]) == [1]  # dead rows in one: it alone
