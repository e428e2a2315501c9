"""A long note through ``enhanced-memory index`` as a process: appended to, edited, cut short.

An append is chunked again only from the note's tail (the chunks before it
keep their ids), and whatever happened to the note, the index holds exactly
the chunks an index built from scratch holds.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from tests.cli_run import run_cli

ENV = {"ENHANCED_MEMORY_EMBEDDER": "none"}
WORDS = (
    "alpha beta gamma project meeting decided deploy server database migration budget review"
    " customer design sprint release latency index search roadmap incident kafka backup"
).split()


def daily_sections(days: int, seed: int = 7) -> str:
    """A long daily-notes file: a date header, three sections of bullets, now and then a fence."""
    rng = random.Random(seed)
    parts = []
    for day in range(days):
        parts.append(f"# Day {day}\n\n")
        for section in ("Log", "Decisions", "Tasks"):
            parts.append(f"## {section}\n\n")
            for _ in range(rng.randint(1, 8)):
                parts.append("- " + " ".join(rng.choices(WORDS, k=rng.randint(4, 16))) + "\n")
            if rng.random() < 0.1:
                parts.append("\n```\n# not a header\n```\n")
            parts.append("\n")
    return "".join(parts)


def index(workspace: Path, *extra: str) -> Path:
    r = run_cli("index", "--workspace", str(workspace), "--json", *extra, **ENV)
    assert r.returncode == 0, r.stderr
    return Path(json.loads(r.stdout)["index"])


def chunks(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT id, path, start_line, end_line, header, headers, text, terms, embed_hash"
            " FROM chunks ORDER BY path, start_line"
        ).fetchall()


def from_scratch(workspace: Path, tmp_path: Path) -> list[tuple]:
    fresh = tmp_path / f"fresh-{random.random()}" / "index.sqlite"
    return [row[1:] for row in chunks(index(workspace, "--index", str(fresh)))]


def long_note(tmp_path: Path, days: int) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    note = ws / "memory" / "journal.md"
    note.write_text(daily_sections(days))
    return ws, note


def test_an_append_to_a_long_note_is_chunked_from_its_tail(tmp_path: Path) -> None:
    ws, note = long_note(tmp_path, 12_000)  # about 3 MB
    db = index(ws)
    before = chunks(db)
    assert len(before) > 20_000
    with open(note, "a") as fh:  # what a daily note or a transcript gets all day
        fh.write("- the okapi migration is scheduled for Friday\n")
    index(ws)
    after = chunks(db)
    assert [row[1:] for row in after] == from_scratch(ws, tmp_path)
    # Every chunk but the last one or two kept its row (id, postings, vectors).
    assert after[:-3] == before[:-3]
    r = run_cli("search", "okapi migration", "--workspace", str(ws), "--json", **ENV)
    assert r.returncode == 0, r.stderr
    assert "okapi" in json.loads(r.stdout)["results"][0]["snippet"]


@pytest.mark.parametrize(
    "change",
    [
        "insert in the middle",
        "edit in the middle and append",
        "truncate",
        "append to an unfinished last line",
        "append a header",
    ],
)
def test_a_long_note_changed_otherwise_is_read_again_whole(tmp_path: Path, change: str) -> None:
    ws, note = long_note(tmp_path, 1_000)
    db = index(ws)
    before = chunks(db)
    text = note.read_text()
    middle = text.index("# Day 500\n")
    if change == "insert in the middle":
        text = text[:middle] + "- an inserted line\n" + text[middle:]
    elif change == "edit in the middle and append":
        text = text[:middle] + "# Day 5OO\n" + text[middle + 10 :] + "- one more\n"
    elif change == "truncate":
        text = text[:middle]
    elif change == "append to an unfinished last line":
        text = text.rstrip("\n")
        note.write_text(text)  # no final newline: the next append continues the line
        index(ws)
        before = chunks(db)
        text += " and the okapi\n"
    else:
        text += "\n## Okapi\n\nthe okapi section\n"
    note.write_text(text)
    index(ws)
    after = chunks(db)
    assert [row[1:] for row in after] == from_scratch(ws, tmp_path)
    if change != "append a header":  # a plain append keeps the rows before the tail
        assert not {row[0] for row in after} & {row[0] for row in before}


def test_a_note_opened_by_a_rule_that_closes_as_front_matter_is_chunked_as_rebuilt(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    note = ws / "memory" / "2026-12-07.md"
    note.write_text("---\n# Plans\n- the okapi migration\n")  # a rule, as far as it goes
    db = index(ws)
    with open(note, "a") as fh:  # and now front matter: '# Plans' is no header
        fh.write("---\n")
    index(ws)
    assert [row[1:] for row in chunks(db)] == from_scratch(ws, tmp_path)
