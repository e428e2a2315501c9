"""A note or transcript read and chunked a block at a time, and chunked again from its tail.

The chunks must be exactly those of the whole text at once, wherever the
blocks are cut, and a grown note's resumed chunks exactly those of chunking it
from scratch.
"""

from __future__ import annotations

import errno
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from langchain_enhanced_memory.core import chunking
from langchain_enhanced_memory.core.chunking import Chunk, Resume, SectionStream, chunk_lines
from langchain_enhanced_memory.core.errors import DiskFullError
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.core.settings_groups import ChunkerSettings
from langchain_enhanced_memory.core.transcripts import TranscriptChunker
from langchain_enhanced_memory.store import postings, reading, segment
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.reading import read_blocks, read_lines
from langchain_enhanced_memory.store.rowspill import RowSpill
from tests.unit_tests.test_fuzz import LINE, SETTINGS
from tests.workspaces import write_workspace

LINES = st.lists(LINE, max_size=150)
CUTS = st.lists(st.integers(0, 150), max_size=6)
# The lines a stream keeps and the length at which it cuts a long section early
# only change when work is done; small values exercise both on small inputs.
SMALL = st.sampled_from([(1 << 20, 4096), (0, 0), (300, 2)])
HYPOTHESIS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def streamed(
    lines: list[str], cfg: ChunkerSettings, cuts: list[int], resume: Resume | None = None
) -> tuple[list[Chunk], SectionStream]:
    """Feed ``lines`` in blocks cut at ``cuts`` (from ``resume.line`` less a few when resuming)."""
    stream = SectionStream("f.md", cfg, resume)
    pos = max(resume.line - 3, 0) if resume else 0
    out: list[Chunk] = []
    for cut in [*sorted(cuts), len(lines)]:
        if cut > pos:
            out += stream.feed(lines[pos:cut], pos)
            pos = cut
    return out + stream.close(), stream


@HYPOTHESIS
@given(lines=LINES, cfg=SETTINGS, cuts=CUTS, small=SMALL)
def test_streamed_chunks_equal_whole_text_chunks(
    lines: list[str], cfg: ChunkerSettings, cuts: list[int], small: tuple[int, int], monkeypatch
) -> None:
    monkeypatch.setattr(chunking, "_SPLIT_AHEAD", small[0])
    monkeypatch.setattr(chunking, "_TRIM_LINES", small[1])
    whole = chunk_lines(lines, default_header="f.md", settings=cfg)
    assert streamed(lines, cfg, cuts)[0] == whole


@HYPOTHESIS
@given(lines=LINES, cfg=SETTINGS, cuts=CUTS, small=SMALL, old=st.integers(0, 150))
# A first line '---' left open, then closed as the note grew: front matter, not a header.
@example(lines=["---", "# H", "---"], cfg=ChunkerSettings(), cuts=[], small=(1 << 20, 4096), old=2)
def test_resumed_chunks_equal_chunks_from_scratch(
    lines: list[str],
    cfg: ChunkerSettings,
    cuts: list[int],
    small: tuple[int, int],
    old: int,
    monkeypatch,
) -> None:
    monkeypatch.setattr(chunking, "_SPLIT_AHEAD", small[0])
    monkeypatch.setattr(chunking, "_TRIM_LINES", small[1])
    before, stream = streamed(lines[:old], cfg, cuts)
    point = stream.resume
    if point is None:  # no piece was cut (no text, or headers only): read again whole
        return
    point = Resume.loads(point.dumps())  # as stored
    assert point is not None
    kept = [c for c in before if c.start_line <= point.line]
    resumed, _ = streamed(lines, cfg, cuts, point)
    assert kept + resumed == chunk_lines(lines, default_header="f.md", settings=cfg)


def test_a_long_section_is_cut_as_it_streams() -> None:
    # No header at all: the stream still emits chunks long before the end.
    stream = SectionStream("f.md")
    block = [f"- line {i} of a transcript with no headers at all" for i in range(30_000)]
    early = stream.feed(block, 0) + stream.feed(block, len(block))
    assert len(early) > 100
    assert len(stream.buf) < 2 * len(block)
    rest = stream.close()
    assert early + rest == chunk_lines(block + block, default_header="f.md")


BYTES = st.lists(
    st.sampled_from([b"a", b"\n", b"\r\n", b"\r", b"\xc3\xa9", b"\xc3", b"\xef\xbb\xbf", b"# h"]),
    max_size=60,
).map(b"".join)


@HYPOTHESIS
@given(data=BYTES, block=st.integers(1, 16))
def test_blocks_hold_the_lines_read_lines_returns(
    data: bytes, block: int, tmp_path_factory: pytest.TempPathFactory, monkeypatch
) -> None:
    path = tmp_path_factory.mktemp("blocks") / "n.md"
    path.write_bytes(data)
    whole = read_lines(path)
    monkeypatch.setattr(reading, "BLOCK_BYTES", block)
    blocks = list(read_blocks(path))
    assert [line for _, _, b in blocks for line in b] == whole
    for first, offset, lines in blocks:  # a block read from its offset starts the same
        again = next(read_blocks(path, offset, first), (first, offset, []))
        assert again[0] == first and again[2][: len(lines)] == lines[: len(again[2])]


def test_utf16_note_is_one_block(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    path.write_bytes("\ufeffone\ntwo\n".encode("utf-16-le"))
    assert list(read_blocks(path)) == [(0, -1, ["one", "two"])]


@pytest.mark.parametrize("part_terms", [1, 7, 50])
def test_postings_built_in_parts_equal_one_build(part_terms: int, monkeypatch) -> None:
    rng = random.Random(part_terms)
    words = [f"w{i}" for i in range(40)]
    rows = [
        (" ".join(rng.choices(words, k=rng.randint(0, 12))), f"H{i % 3}", f"memory/{i % 5}.md")
        for i in range(120)
    ]
    whole = segment.postings_of(rows)
    monkeypatch.setattr(segment, "BUILD_TERMS", part_terms)
    parts = segment.postings_of(rows)
    for field, post in whole.items():
        for name in ("keys", "indptr", "docs", "tf", "doc_len"):
            want, got = getattr(post, name), getattr(parts[field], name)
            assert got.dtype == want.dtype and np.array_equal(got, want), (field, name)


def _turn(role: str, text: str, when: str | int, name: str) -> str:
    msg = {"role": role, "content": [{"type": "text", "text": text}], "name": name}
    return json.dumps({"type": "message", "timestamp": when, "message": msg})


TURN = st.builds(
    _turn,
    st.sampled_from(["user", "assistant", "toolResult"]),
    st.text(alphabet="ab é\n", max_size=120),
    st.sampled_from(
        ["2026-03-01T09:00:00Z", "2026-03-01T23:59:00Z", "2026-03-02T08:00:00Z", 1772400000000, ""]
    ),
    st.sampled_from(["", "Ann", "Bo"]),
)
TRANSCRIPT = st.lists(
    st.one_of(
        TURN,
        st.sampled_from(["", "{oops", "[1]", '{"type": "session", "id": "s"}', '{"role": 3}']),
    ),
    max_size=80,
)
WINDOWS = st.builds(
    lambda w, extras, most: MemorySettings(
        session_window=w, session_extras=extras, max_chunk_chars=most
    ),
    st.integers(1, 4),
    st.booleans(),
    st.sampled_from([200, 4000]),
)


@HYPOTHESIS
@given(lines=TRANSCRIPT, cfg=WINDOWS, cuts=st.lists(st.integers(0, 80), max_size=6))
def test_a_transcript_streamed_in_blocks_is_chunked_as_read_whole(
    lines: list[str], cfg: MemorySettings, cuts: list[int]
) -> None:
    chunker = TranscriptChunker(cfg)
    stream, pos, out = chunker.stream("s.jsonl"), 0, []
    for cut in [*sorted(cuts), len(lines)]:
        if cut > pos:
            out += stream.feed(lines[pos:cut], pos)
            pos = cut
    assert out + stream.close() == chunker(lines, "s.jsonl")


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=TRANSCRIPT, block=st.integers(1, 400))
def test_a_synced_transcript_holds_the_chunks_of_it_read_whole(
    lines: list[str], block: int, tmp_path_factory: pytest.TempPathFactory, monkeypatch
) -> None:
    """Read in blocks, its rows kept on disk until the commit: the chunks of the whole file."""
    ws = tmp_path_factory.mktemp("ws")
    path = ws / "sessions" / "s.jsonl"
    path.parent.mkdir()
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    cfg = MemorySettings()
    whole = TranscriptChunker(cfg)(read_lines(path), "s.jsonl")
    monkeypatch.setattr(reading, "BLOCK_BYTES", block)
    idx = MemoryIndex(ws, cfg)
    idx.sync()
    with idx.reader() as conn:
        rows = conn.execute(
            "SELECT start_line, end_line, header, headers, text FROM chunks"
            " WHERE path = 'sessions/s.jsonl' ORDER BY id"
        ).fetchall()
    assert rows == [
        (c.start_line, c.end_line, c.header, " > ".join(c.headers), c.text) for c in whole
    ]


def test_a_spill_reads_back_its_rows_less_those_rewound(tmp_path: Path) -> None:
    with RowSpill(tmp_path / "side") as spill:
        assert spill.write([("a", 1, b"\x00"), ("b", 2, b"")]) == 2
        mark = spill.mark()
        spill.write([("dropped", 3, b"")])
        spill.rewind(mark)
        spill.write([("c", 4, b"\xff")])
        spill.start_reading()
        assert list(spill.take(3)) == [("a", 1, b"\x00"), ("b", 2, b""), ("c", 4, b"\xff")]
    assert not list((tmp_path / "side").iterdir())  # no name left behind


def test_a_spill_with_no_room_stops_the_sync_instead_of_skipping_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under the spill is a full disk (the last index kept), not a file gone."""
    ws = write_workspace(tmp_path / "ws", {"MEMORY.md": "# M\n\n- harbour\n"})
    idx = MemoryIndex(ws, MemorySettings())
    idx.sync()
    (ws / "memory").mkdir()
    (ws / "memory" / "2026-12-01.md").write_text("# 2026-12-01\n\n- zeppelin\n")

    def no_room(self: RowSpill, rows: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(RowSpill, "write", no_room)
    with pytest.raises(DiskFullError):
        idx.sync()
    monkeypatch.undo()
    assert idx.sync().changed == ["memory/2026-12-01.md"]


def test_a_segment_built_from_rows_read_in_parts_is_the_one_built_at_once(
    tmp_path: Path, monkeypatch
) -> None:
    files = {f"memory/2026-06-{d:02d}.md": f"# Day {d}\n\n- Fact {d}.\n" for d in range(1, 11)}
    files["MEMORY.md"] = "# People\n\n## Ann\n\nLikes tea.\n\n## Bo\n\nLikes jam.\n"
    built = {}
    for name, part in (("whole", 1 << 20), ("parts", 3)):
        monkeypatch.setattr(postings, "ENCODE_ROWS", part)
        monkeypatch.setattr(segment, "BUILD_TERMS", 1 << 21 if part > 3 else 5)
        idx = MemoryIndex(write_workspace(tmp_path / name, files))
        idx.sync()
        (seg,) = (tmp_path / name / ".enhanced-memory" / "index.vectors").glob("post-*.seg")
        built[name] = seg.read_bytes()
    assert built["parts"] == built["whole"]
