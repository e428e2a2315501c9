"""Remembered facts stay small units of search, and remember does not read back what it wrote."""

from __future__ import annotations

import json
import stat
from datetime import date
from pathlib import Path

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.store.append import append_memory
from tests.cli_run import run_cli

NOW = "2026-02-09T09:00"
NOTE = "memory/2026-02-09.md"
DAY = date(2026, 2, 9)


def fact(i: int) -> str:
    return f"Fact {i}: the supplier for batch {i} is codeword zq{i:06d}, confirmed by phone."


def test_four_hundred_remembered_facts_are_found_in_chunks_of_a_few_lines(
    workspace: Path,
) -> None:
    for i in range(400):
        if i % 100 == 0:  # some as a user runs them, the rest through the same writer
            r = run_cli("remember", "--workspace", str(workspace), "--now", NOW,
                        "--section", "Facts", fact(i))  # fmt: skip
            assert r.returncode == 0, r.stderr
        else:
            append_memory(workspace, fact(i), section="Facts", now=DAY)
    lines = (workspace / NOTE).read_text(encoding="utf-8").split("\n")
    cap = MemorySettings().chunker.max_list_chars
    for i in (0, 123, 250, 399):
        found = run_cli("search", "--json", "--embedder", "none", "--workspace",
                        str(workspace), f"which supplier has codeword zq{i:06d}")  # fmt: skip
        assert found.returncode == 0, found.stderr
        for hit in json.loads(found.stdout)["results"]:
            if hit["path"] == NOTE:  # no chunk of the note is over the cap
                text = "\n".join(lines[hit["startLine"] - 1 : hit["endLine"]])
                assert len(text) <= cap
        top = json.loads(found.stdout)["results"][0]
        line = next(n for n, text in enumerate(lines, 1) if f"zq{i:06d}" in text)
        assert top["path"] == NOTE and top["startLine"] <= line <= top["endLine"]
        assert top["endLine"] - top["startLine"] + 1 <= 25  # a few facts, not a day of them


def test_a_note_another_program_changed_is_read_again(workspace: Path) -> None:
    note = workspace / NOTE
    for text in ("first fact", "second fact"):
        assert run_cli("remember", "--workspace", str(workspace), "--now", NOW,
                       "--section", "Facts", text).returncode == 0  # fmt: skip
    with open(note, "a", encoding="utf-8") as fh:  # an editor adds a section, no lock
        fh.write("\n## Later\n\n- written by hand\n")
    r = run_cli("remember", "--workspace", str(workspace), "--now", NOW, "--json",
                "--section", "facts", "third fact")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["line"] == 7
    assert note.read_text(encoding="utf-8") == (
        "# 2026-02-09\n\n## Facts\n\n- first fact\n- second fact\n- third fact\n"
        "\n## Later\n\n- written by hand\n"
    )
    outlines = workspace / "memory/.enhanced-memory-outlines.json"
    assert stat.S_IMODE(outlines.stat().st_mode) == 0o600  # it names headers
    assert str(note.resolve()) not in json.loads(outlines.read_text())  # rewritten: dropped
