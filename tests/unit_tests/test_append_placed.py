"""``placed`` (the database's notes) puts a bullet exactly where ``append_memory`` writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_enhanced_memory.store.append import append_memory, placed, plan

NOTES = [
    "",
    "# Topic\n",
    "# Topic\nno final newline",
    "# Topic\n\n## Decisions\n\n- first\n\n## Later\n\ntext\n",
    "# Topic\r\n\r\n## Decisions\r\n- one\r\n",
    "# Topic\n\n```python\nopen fence\n",
    "- a bullet\n  continued\n",
]


@pytest.mark.parametrize("old", NOTES)
@pytest.mark.parametrize("section", [None, "Decisions", "later", "New one"])
def test_placed_matches_the_file_append(tmp_path: Path, old: str, section: str | None) -> None:
    note = tmp_path / "memory" / "topics" / "x.md"
    note.parent.mkdir(parents=True)
    note.write_bytes(old.encode())
    text = "use PostgreSQL\n# not a header"
    got = append_memory(tmp_path, text, section=section, file="memory/topics/x.md")
    todo = plan(text, section=section, file="memory/topics/x.md")
    body, line, name = placed(old, todo)
    assert body.encode() == note.read_bytes()
    assert (line, name) == (got.line, got.section)
    assert todo.result(line, old == "", name).text == got.text


def test_a_new_daily_note_starts_with_its_header() -> None:
    todo = plan("hello", now=None)
    body, line, _ = placed("", todo)
    assert body.startswith(todo.header) and body.endswith("- hello\n") and line == 3
