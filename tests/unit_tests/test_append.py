"""memory_append: the writer (store.append) and the LangChain tool, off unless enabled."""

from __future__ import annotations

import os
import tempfile
import threading
from datetime import datetime
from pathlib import Path

import pytest

from langchain_enhanced_memory.core.errors import WriteError
from langchain_enhanced_memory.store.append import append_memory
from langchain_enhanced_memory.tools import MemoryAppendTool, create_memory_tools

NOW = datetime(2026, 2, 9, 9)


def test_new_day_creates_the_note_with_its_date_header(workspace: Path) -> None:
    done = append_memory(workspace, "Booked the dentist for March 3.", now=NOW)
    assert (done.path, done.line, done.created) == ("memory/2026-02-09.md", 3, True)
    text = (workspace / "memory/2026-02-09.md").read_text(encoding="utf-8")
    assert text == "# 2026-02-09\n\n- Booked the dentist for March 3.\n"


def test_existing_day_keeps_every_line_and_adds_a_section_once(workspace: Path) -> None:
    note = workspace / "memory/2026-02-08.md"
    before = note.read_text(encoding="utf-8")
    feb8 = NOW.replace(day=8)
    first = append_memory(workspace, "Rollback script is done.", section="Follow-ups", now=feb8)
    second = append_memory(workspace, "Bob reviews it Tuesday.", section="Follow-ups", now=feb8)
    after = note.read_text(encoding="utf-8")
    assert after.startswith(before)  # nothing truncated or reordered
    assert after[len(before) :] == (
        "\n## Follow-ups\n\n- Rollback script is done.\n- Bob reviews it Tuesday.\n"
    )
    assert after.count("## Follow-ups") == 1 and not first.created
    lines = after.split("\n")
    assert lines[first.line - 1] == "- Rollback script is done."
    assert lines[second.line - 1] == "- Bob reviews it Tuesday."


def test_a_bullet_goes_at_the_end_of_its_existing_section(workspace: Path) -> None:
    done = append_memory(
        workspace, "Also: dark mode everywhere.", section="Preferences", file="MEMORY.md"
    )
    lines = (workspace / "MEMORY.md").read_text(encoding="utf-8").split("\n")
    assert lines[done.line - 1] == "- Also: dark mode everywhere."
    assert lines.index("# People") > done.line - 1  # inside Preferences, before People
    assert lines[: done.line - 1] == [
        "# Preferences",
        "",
        "The user prefers dark roast coffee and vim keybindings.",
    ]


def test_multi_line_text_is_one_bullet(workspace: Path) -> None:
    done = append_memory(workspace, "Trip plan:\n  fly Friday\n\n  back Sunday", now=NOW)
    text = (workspace / done.path).read_text(encoding="utf-8")
    assert text.endswith("- Trip plan:\n  fly Friday\n  back Sunday\n")


def test_concurrent_writers_both_land(workspace: Path) -> None:
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(20):
                append_memory(workspace, f"writer {n} line {i}", section="Log", now=NOW)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    lines = (workspace / "memory/2026-02-09.md").read_text(encoding="utf-8").split("\n")
    for n in range(2):
        mine = [line for line in lines if line.startswith(f"- writer {n} ")]
        assert mine == [f"- writer {n} line {i}" for i in range(20)]  # all there, in order
    assert lines.count("## Log") == 1
    assert not [p for p in (workspace / "memory").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("file", "fragment"),
    [
        ("../outside.md", "leaves the workspace"),
        ("/etc/passwd.md", "is absolute"),
        ("notes/todo.md", "not MEMORY.md or a file under memory/"),
        ("memory/.enhanced-memory/x.md", "hidden folder"),
        ("memory/notes.txt", "not a markdown memory file"),
        ("memory", "not a markdown memory file"),
    ],
)
def test_paths_outside_the_memory_are_refused(workspace: Path, file: str, fragment: str) -> None:
    with pytest.raises(WriteError, match=fragment):
        append_memory(workspace, "x", file=file)


def test_symlink_out_of_the_workspace_is_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (workspace / "memory/linked").symlink_to(outside)
    with pytest.raises(WriteError, match="outside the workspace"):
        append_memory(workspace, "x", file="memory/linked/a.md")
    assert not (outside / "a.md").exists()


def test_read_only_workspace_is_refused_and_left_alone(workspace: Path) -> None:
    mem = workspace / "memory"
    before = sorted(p.name for p in mem.iterdir())
    mem.chmod(0o555)  # no write bit: refused even for root
    try:
        with pytest.raises(WriteError, match="read-only"):
            append_memory(workspace, "x", now=NOW)
    finally:
        mem.chmod(0o755)
    assert sorted(p.name for p in mem.iterdir()) == before
    note = mem / "2026-02-08.md"
    note.chmod(0o444)
    try:
        with pytest.raises(WriteError, match="read-only"):
            append_memory(workspace, "x", now=NOW.replace(day=8))
    finally:
        note.chmod(0o644)


@pytest.mark.parametrize("text", ["", "   ", "bell\x07", "x" * 5000])
def test_bad_text_is_refused(workspace: Path, text: str) -> None:
    with pytest.raises(WriteError):
        append_memory(workspace, text, now=NOW)


def test_a_file_that_is_not_utf8_is_not_rewritten(workspace: Path) -> None:
    bad = workspace / "memory/topics/latin1.md"
    bad.write_bytes(b"# Caf\xe9\n")
    with pytest.raises(WriteError, match="not UTF-8"):
        append_memory(workspace, "x", file="memory/topics/latin1.md")
    assert bad.read_bytes() == b"# Caf\xe9\n"


def test_failed_rename_leaves_the_old_file(workspace: Path, monkeypatch) -> None:
    note = workspace / "memory/2026-02-08.md"
    before = note.read_bytes()

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(WriteError, match="No space left"):  # inside Decisions: a rewrite
        append_memory(workspace, "x", section="Decisions", now=NOW.replace(day=8))
    assert note.read_bytes() == before
    assert not [p for p in note.parent.iterdir() if p.name.endswith(".tmp")]


# ----------------------------------------------------------------- the tool
def test_write_tool_is_off_unless_enabled(workspace: Path) -> None:
    names = [t.name for t in create_memory_tools(workspace, embedder="none")]
    assert "memory_append" not in names and "memory_forget" not in names
    names = [t.name for t in create_memory_tools(workspace, embedder="none", allow_write=True)]
    assert names[-2:] == ["memory_append", "memory_forget"]


def test_write_tool_writes_and_the_next_search_finds_it(workspace: Path) -> None:
    tools = {
        t.name: t
        for t in create_memory_tools(workspace, embedder="none", now=NOW, allow_write=True)
    }
    assert tools["memory_search"].invoke({"query": "kayak"}).startswith("No memory matches")
    msg = tools["memory_append"].invoke(
        {"type": "tool_call", "id": "1", "name": "memory_append",
         "args": {"text": "The kayak trip moved to the 21st.", "section": "Plans"}}
    )  # fmt: skip
    assert msg.content == "Remembered in memory/2026-02-09.md:5 under 'Plans'."
    assert msg.artifact["citation"] == "Source: memory/2026-02-09.md#L5"
    found = tools["memory_search"].invoke(
        {"type": "tool_call", "id": "2", "name": "memory_search", "args": {"query": "kayak trip"}}
    )
    top = found.artifact["results"][0]
    assert top["path"] == "memory/2026-02-09.md" and top["startLine"] <= 5 <= top["endLine"]


def test_write_tool_refusal_is_a_message(workspace: Path) -> None:
    tool = MemoryAppendTool(workspace=workspace, embedder="none")
    out = tool.invoke({"text": "x", "file": "../../escape.md"})
    assert out.startswith("Error: refused:") and "\n" not in out
    assert not (workspace.parent.parent / "escape.md").exists()


def test_write_tool_existing_day_concurrent_and_read_only(workspace: Path) -> None:
    tool = MemoryAppendTool(workspace=workspace, embedder="none", now=NOW.replace(day=8))
    note = workspace / "memory/2026-02-08.md"
    before = note.read_text(encoding="utf-8")
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda n=n: results.append(tool.invoke({"text": f"fact {n}"})))
        for n in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 4 and all(
        r.startswith("Remembered in memory/2026-02-08.md:") for r in results
    )
    after = note.read_text(encoding="utf-8")
    assert after.startswith(before)
    assert sorted(line for line in after.splitlines() if line.startswith("- fact")) == [
        f"- fact {n}" for n in range(4)
    ]
    note.chmod(0o444)
    try:
        out = tool.invoke({"text": "refused"})
    finally:
        note.chmod(0o644)
    assert out.startswith("Error: memory/2026-02-08.md is read-only")
    assert "refused" not in note.read_text(encoding="utf-8")


def test_write_tool_refuses_deep_folders_and_long_names_in_one_line(workspace: Path) -> None:
    tool = MemoryAppendTool(workspace=workspace, embedder="none")
    out = tool.invoke({"text": "x", "file": "memory/" + "d/" * 200 + "x.md"})
    assert out.startswith("Error: refused:") and "\n" not in out and "folders" in out
    assert not (workspace / "memory/d").exists()
    long_name = "memory/topics/" + "n" * 300 + ".md"
    out = tool.invoke({"text": "x", "file": long_name})
    assert out.startswith("Error: refused:") and "\n" not in out
    assert "memory/topics/nnn" in out and str(workspace) not in out and "Errno" not in out


def test_a_rewrite_starts_over_when_the_note_changed_under_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A writer without the lock appends while the bullet is put inside an earlier section.
    note = workspace / "MEMORY.md"
    real_mkstemp = tempfile.mkstemp
    calls = []

    def mkstemp_then_append(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            with open(note, "a", encoding="utf-8") as fh:
                fh.write("- written by an editor meanwhile\n")
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_append)
    done = append_memory(workspace, "Also: tea.", section="preferences", file="MEMORY.md")
    lines = note.read_text(encoding="utf-8").splitlines()
    assert lines[-1] == "- written by an editor meanwhile" and len(calls) == 2
    assert lines[done.line - 1] == "- Also: tea." and done.section == "Preferences"


def test_a_line_appended_during_the_rename_is_kept(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the last check, a writer without the lock appends to the old file: copied over.
    note = workspace / "MEMORY.md"
    real_replace = os.replace

    def append_then_replace(src, dst):
        with open(dst, "a", encoding="utf-8") as fh:
            fh.write("- written during the rename\n")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", append_then_replace)
    append_memory(workspace, "Also: tea.", section="Preferences", file="MEMORY.md")
    text = note.read_text(encoding="utf-8")
    assert text.count("- written during the rename\n") == 1 and "- Also: tea.\n" in text


def test_a_note_without_a_final_line_end_gets_one_before_the_bullet(workspace: Path) -> None:
    note = workspace / "memory/topics/cut.md"
    note.write_text("# Cut\n\n- last line without an end", encoding="utf-8")
    done = append_memory(workspace, "next", file="memory/topics/cut.md")
    assert note.read_text(encoding="utf-8") == "# Cut\n\n- last line without an end\n- next\n"
    assert done.line == 4


def test_a_long_note_this_writer_appended_to_last_is_not_read_again(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_enhanced_memory.store import append

    note = workspace / "memory/2026-02-09.md"
    note.write_text("# 2026-02-09\n\n## Facts\n\n" + "- a fact\n" * 10_000, encoding="utf-8")
    first = append_memory(workspace, "read once", section="Facts", now=NOW)

    def no_read(fd: int) -> bytes:
        raise AssertionError("the whole note was read again")

    monkeypatch.setattr(append, "read_all", no_read)
    second = append_memory(workspace, "not read", section="facts", now=NOW)
    third = append_memory(workspace, "nor this", section="Later", now=NOW)
    assert (first.line, second.line, third.line) == (10_005, 10_006, 10_010)
    assert note.read_text(encoding="utf-8").endswith(
        "- read once\n- not read\n\n## Later\n\n- nor this\n"
    )


@pytest.mark.parametrize("by_hand", ["deleted", "replaced"])
def test_the_outline_sidecar_drops_a_note_gone_or_changed(workspace: Path, by_hand: str) -> None:
    sidecar = workspace / "memory/.enhanced-memory-outlines.json"
    header = "Heron-sightings-7731"
    append_memory(workspace, "a grey heron", section=header, now=NOW)
    assert header in sidecar.read_text(encoding="utf-8")
    note = workspace / "memory/2026-02-09.md"
    if by_hand == "deleted":
        note.unlink()
    else:
        note.write_text("# 2026-02-09\n\nRewritten by hand.\n", encoding="utf-8")
    append_memory(workspace, "another note", now=NOW.replace(day=10))
    assert header not in sidecar.read_text(encoding="utf-8")


def test_a_deleted_item_leaves_no_outline_behind(workspace: Path) -> None:
    from langchain_enhanced_memory import EnhancedMemoryStore
    from langchain_enhanced_memory.store.items import item_path

    sidecar = workspace / "memory/.enhanced-memory-outlines.json"
    header = "Heron-sightings-7731"
    with EnhancedMemoryStore(workspace) as store:
        store.put(("users",), "k", {"content": "an item"})
        append_memory(workspace, "noted", section=header, file=item_path((("users",), "k")))
        assert header in sidecar.read_text(encoding="utf-8")
        store.delete(("users",), "k")
    assert header not in sidecar.read_text(encoding="utf-8")
