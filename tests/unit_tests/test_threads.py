"""LangChain message threads saved as transcripts (``save_thread``) and searched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_enhanced_memory import EnhancedMemoryRetriever, save_thread
from langchain_enhanced_memory.core.errors import WriteError

NOW = datetime(2026, 2, 5, 10, 30, tzinfo=timezone.utc)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "2026-02-01.md").write_text("# 2026-02-01\n\n- Standup notes.\n")
    return tmp_path


def thread() -> list:
    return [
        SystemMessage("You are helpful.", id="m0"),
        HumanMessage("Which bucket holds the nightly backups?", id="m1"),
        AIMessage(
            "",
            id="m2",
            tool_calls=[{"name": "lookup", "args": {"q": "backups"}, "id": "c1"}],
        ),
        ToolMessage("s3://acme-nightly-backups", tool_call_id="c1", id="m3"),
        AIMessage("They go to the acme-nightly-backups bucket in S3.", id="m4"),
    ]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_thread_is_found_by_what_was_said_with_its_thread_and_time(ws: Path) -> None:
    assert save_thread(ws, "t-42", thread(), now=NOW) == 5
    retriever = EnhancedMemoryRetriever(workspace=ws, embedder="none", watch=False, k=3)
    doc = retriever.invoke("where do the nightly backups go")[0]
    assert doc.metadata["path"] == "sessions/t-42.jsonl"
    assert doc.metadata["sessionId"] == "t-42"
    assert doc.metadata["timestamp"] == "2026-02-05T10:30"
    assert doc.metadata["kind"] == "session" and doc.metadata["date"] == "2026-02-05"
    # What was said, not the system prompt, tool calls or tool results (session_extras).
    assert "acme-nightly-backups bucket" in doc.page_content
    assert "lookup(" not in doc.page_content and "You are helpful" not in doc.page_content


def test_saving_the_whole_thread_again_appends_only_its_new_messages(ws: Path) -> None:
    save_thread(ws, "t-42", thread(), now=NOW)
    path = ws / "sessions" / "t-42.jsonl"
    before = path.read_bytes()
    assert save_thread(ws, "t-42", thread(), now=NOW) == 0
    grown = [*thread(), HumanMessage("And the weekly ones?", id="m5"), RemoveMessage(id="m0")]
    assert save_thread(ws, "t-42", grown) == 1
    after = path.read_bytes()
    assert after.startswith(before)  # appended, never rewritten
    assert [r["id"] for r in lines(path)] == ["m0", "m1", "m2", "m3", "m4", "m5"]
    assert lines(path)[2]["content"] == [
        {"type": "toolCall", "name": "lookup", "arguments": {"q": "backups"}}
    ]


def test_messages_without_ids_are_known_by_their_place(ws: Path) -> None:
    first = [("user", "Plan the kite festival."), ("assistant", "Saturday at the beach.")]
    assert save_thread(ws, "kites", first, now=NOW) == 2
    assert save_thread(ws, "kites", [*first, ("user", "Bring string.")], now=NOW) == 1
    rows = lines(ws / "sessions" / "kites.jsonl")
    assert [(r["id"], r["role"]) for r in rows] == [
        ("#0", "user"),
        ("#1", "assistant"),
        ("#2", "user"),
    ]


def test_a_line_another_program_wrote_is_kept(ws: Path) -> None:
    path = ws / "sessions" / "t.jsonl"
    path.parent.mkdir()
    path.write_text('{"role": "user", "content": "written by hand"}')  # no line end
    save_thread(ws, "t", [HumanMessage("hello", id="a")], now=NOW)
    rows = lines(path)
    assert rows[0] == {"role": "user", "content": "written by hand"} and rows[1]["id"] == "a"


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "x" * 201, "a\nb"])
def test_a_thread_id_must_be_a_file_name(ws: Path, bad: str) -> None:
    with pytest.raises(WriteError, match="thread id"):
        save_thread(ws, bad, [("user", "hi")])
    assert not (ws / "sessions").exists() or not any((ws / "sessions").glob("*.jsonl"))


def test_a_symlink_or_a_missing_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    (ws / "sessions").mkdir()
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    os.symlink(target, ws / "sessions" / "t.jsonl")
    with pytest.raises(WriteError, match="not a regular file"):
        save_thread(ws, "t", [("user", "hi")])
    assert target.read_text() == ""
    with pytest.raises(WriteError, match="not a folder"):
        save_thread(ws / "nope", "t", [("user", "hi")])


_SAVER = """
import sys
from langchain_core.messages import HumanMessage
from langchain_enhanced_memory import save_thread
messages = [HumanMessage(f"message {i}", id=f"m{i}") for i in range(40)]
for n in range(1, 41, 3):
    save_thread(sys.argv[1], "shared", messages[:n])
save_thread(sys.argv[1], "shared", messages)
"""


def test_savers_of_one_thread_in_several_processes_write_each_message_once(ws: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", _SAVER, str(ws)]) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    rows = lines(ws / "sessions" / "shared.jsonl")
    assert [r["id"] for r in rows] == [f"m{i}" for i in range(40)]
