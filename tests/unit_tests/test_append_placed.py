"""``placed`` (the database's notes) puts a bullet exactly where ``append_memory`` writes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_enhanced_memory.core.outline import Outline
from langchain_enhanced_memory.store.append import _at_end, append_memory, placed, plan
from tests.unit_tests.test_fuzz import LINE

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


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    lines=st.lists(LINE, max_size=40),
    eol=st.sampled_from(["\n", "\r\n"]),
    steps=st.lists(st.sampled_from([None, "H", "sub", "Facts", "中文"]), min_size=1, max_size=6),
)
def test_an_outline_carried_past_appends_is_the_outline_of_the_note(
    lines: list[str], eol: str, steps: list[str | None]
) -> None:
    # What the writer keeps between appends (store/outlines.py) must be what reading the
    # grown note again gives, or a later bullet would land in the wrong place.
    old = "".join(line + eol for line in lines)
    carried: Outline | None = None
    for heading in [*steps, None]:
        fresh = Outline.of(old.replace("\r\n", "\n").removesuffix("\n").split("\n") if old else [])
        if carried is not None and carried.front:
            assert carried == fresh
        todo = plan("a fact", section=heading, file="memory/t.md")
        end = _at_end(carried if carried is not None and carried.front else fresh,
                      todo.bullet, todo.heading)  # fmt: skip
        old, _, _ = placed(old, todo)
        # At the end, the writer carries its outline past the block; inside, it reads again.
        carried = None if end is None else (carried or fresh).extended(end[0])
