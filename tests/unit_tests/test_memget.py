from __future__ import annotations

import os
from pathlib import Path

import pytest

from langchain_enhanced_memory.openclaw.response import get_json
from langchain_enhanced_memory.store.notes import MAX_GET_LINES, NoteError, get_lines


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "notes.txt").write_text("not markdown\n")
    (workspace / "memory/data.json").write_text("{}\n")
    (workspace / "README.md").write_text("# not a memory file\n")
    (workspace / ".enhanced-memory").mkdir(exist_ok=True)
    (workspace / ".enhanced-memory/secret.md").write_text("# hidden\n")
    return workspace


def test_reads_a_range(ws):
    got = get_lines(ws, "memory/2026-02-08.md", from_line=3, lines=3)
    assert (got.from_line, got.to_line, got.total_lines) == (3, 5, 9)
    assert got.text.splitlines()[0] == "## Decisions"
    shape = get_json(got)
    assert (shape["from"], shape["lines"], shape["totalLines"]) == (3, 3, 9)
    assert shape["truncated"] is False
    assert "nextFrom" not in shape
    whole = get_lines(ws, "./memory//2026-02-08.md")
    assert whole.path == "memory/2026-02-08.md" and whole.to_line == 9 and not whole.truncated
    assert get_lines(ws, "MEMORY.md").text.startswith("# Preferences")


def test_line_numbers_match_search_with_crlf(ws):
    (ws / "memory/crlf.md").write_bytes(b"# A\r\n\r\nfirst\r\nsecond\r\n")
    assert get_lines(ws, "memory/crlf.md", 3, 2).text == "first\nsecond"


def test_long_files_are_capped(ws):
    (ws / "memory/long.md").write_text("".join(f"line {n}\n" for n in range(1, 1001)))
    got = get_lines(ws, "memory/long.md")
    assert got.to_line == MAX_GET_LINES and got.truncated
    tail = get_lines(ws, "memory/long.md", from_line=990, lines=50)
    assert tail.to_line == 1000 and not tail.truncated


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../etc/passwd.md", "'..' is not allowed"),
        ("memory/../../x.md", "'..' is not allowed"),
        ("memory\\..\\..\\x.md", "'..' is not allowed"),
        ("/etc/passwd", "is absolute"),
        ("C:\\Windows\\x.md", "is absolute"),
        ("~/x.md", "is absolute"),
        ("memory/2026-02-08.md\x00.md", "NUL byte"),
        ("memory/a\nb.md", "control characters"),
        ("notes.txt", "not a markdown memory file"),
        ("memory/data.json", "not a markdown memory file"),
        ("README.md", "not one of the workspace's memory files"),
        (".enhanced-memory/secret.md", "not one of the workspace's memory files"),
        ("memory/missing.md", "no such memory file"),
        ("", "give the path"),
    ],
)
def test_refusals_are_one_clear_line(ws, path, message):
    with pytest.raises(NoteError, match=message) as err:
        get_lines(ws, path)
    assert "\n" not in str(err.value)


def test_symlink_out_of_the_workspace_is_refused(ws, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# secret\n")
    os.symlink(outside, ws / "memory/link.md")
    with pytest.raises(NoteError, match="symlink leading outside"):
        get_lines(ws, "memory/link.md")
    # A link to a file elsewhere inside the workspace is a memory file like any other.
    (ws / "archive").mkdir()
    (ws / "archive/old.md").write_text("# Old\n\nPostgres 9 notes.\n")
    os.symlink(ws / "archive/old.md", ws / "memory/inside.md")
    assert "Postgres" in get_lines(ws, "memory/inside.md").text


def test_symlinked_folder_is_not_followed(ws, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_text("# x\n")
    os.symlink(other, ws / "memory/linked")
    with pytest.raises(NoteError):
        get_lines(ws, "memory/linked/x.md")


@pytest.mark.parametrize(
    ("start", "count", "message"),
    [(0, None, "from must"), (1, 0, "lines must"), (99, None, "past the end")],
)
def test_bad_ranges(ws, start, count, message):
    with pytest.raises(NoteError, match=message):
        get_lines(ws, "memory/2026-02-08.md", start, count)


def test_binary_file_is_refused(ws):
    (ws / "memory/bin.md").write_bytes(b"# x\x00\x01\x02")
    with pytest.raises(NoteError, match="looks binary"):
        get_lines(ws, "memory/bin.md")
