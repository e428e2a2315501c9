"""A lone surrogate (half an emoji a program cut) costs that character, on every face.

Node-based agents write ``"cut \\ud83d"`` in a transcript when they cut text
mid-emoji, and a command-line byte that is not UTF-8 reaches Python as one too.
Neither may stop the index, a search, ``serve``, the retriever, the tools, a
note's write or a thread's save: the character becomes U+FFFD, the transcript
line is kept, with one warning naming the file and the line.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from langchain_enhanced_memory.retriever import EnhancedMemoryRetriever
from langchain_enhanced_memory.threads import save_thread
from langchain_enhanced_memory.tools import create_memory_tools
from tests.cli_run import CLI, cli_env, run_cli
from tests.integration_tests.test_serve import serving
from tests.workspaces import write_workspace

# The line: a plain chat line whose text ends in half an emoji.
CUT = '{"role":"user","content":"cut \\ud83d kestrel","timestamp":"2026-12-01T10:00:00Z"}\n'
DAY = datetime(2026, 12, 2, 9, 0)
WARNING = "sessions/s.jsonl: line 1: a lone surrogate (half an emoji); kept as U+FFFD"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(
        tmp_path / "ws",
        {
            "MEMORY.md": "# Preferences\n\nThe user likes dark roast coffee.\n",
            "sessions/s.jsonl": CUT
            + '{"role":"assistant","content":"noted","timestamp":"2026-12-01T10:01:00Z"}\n',
        },
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, ENHANCED_MEMORY_EMBEDDER="none")


def test_index_search_and_get_keep_the_line_with_one_warning(ws: Path) -> None:
    index = _cli("index", "--workspace", str(ws))
    assert index.returncode == 0, index.stderr
    assert WARNING in index.stderr.splitlines() and "Traceback" not in index.stderr
    notes = _cli("search", "coffee", "--corpus", "memory", "--workspace", str(ws), "--json")
    assert notes.returncode == 0, notes.stderr
    assert [r["path"] for r in json.loads(notes.stdout)["results"]] == ["MEMORY.md"]
    said = _cli("search", "kestrel", "--workspace", str(ws), "--json")
    assert said.returncode == 0, said.stderr
    (hit,) = json.loads(said.stdout)["results"]
    assert (hit["path"], hit["startLine"]) == ("sessions/s.jsonl", 1)
    assert hit["snippet"].startswith("user: cut \ufffd kestrel")
    got = _cli("get", "sessions/s.jsonl", "--workspace", str(ws), "--json")
    assert json.loads(got.stdout)["text"] == "user: cut \ufffd kestrel\nassistant: noted"


def test_serve_starts_and_answers(ws: Path) -> None:
    with serving(ws) as server:
        status, doc = server.search(query="kestrel")
        assert status == 200 and doc["results"][0]["snippet"].startswith("user: cut \ufffd")
        # A body's own lone surrogates, a key's included, are U+FFFD too.
        raw = b'{"query": "kestrel \\udcff", "\\ud83d": 1}'
        status, doc = server.request("POST", "/search", raw, {"Content-Type": "application/json"})
        assert status == 400 and doc["error"] == '"\ufffd" is not a known field', doc


def test_retriever_and_tools_answer_and_write(ws: Path) -> None:
    docs = EnhancedMemoryRetriever(workspace=ws, embedder="none").invoke("kestrel \ud83d")
    assert docs[0].page_content.startswith("user: cut \ufffd kestrel")
    tools = {t.name: t for t in create_memory_tools(ws, embedder="none", now=DAY, allow_write=True)}
    found = tools["memory_search"].invoke({"query": "coffee", "corpus": "memory"})
    assert "dark roast coffee" in found
    wrote = tools["memory_append"].invoke({"text": "x \ud83d osprey", "section": "Birds \udcff"})
    assert wrote.startswith("Remembered in memory/2026-12-02.md"), wrote
    note = (ws / "memory" / "2026-12-02.md").read_text(encoding="utf-8")
    assert "## Birds \ufffd" in note and "- x \ufffd osprey" in note
    missing = tools["memory_get"].invoke({"path": "memory/\ud83d.md"})
    missing.encode("utf-8")  # a host can send the answer on


def test_save_thread_keeps_each_message_once(ws: Path) -> None:
    thread = [("user", "hi \ud83d heron"), {"role": "assistant", "content": "ok", "id": "\udcff"}]
    assert save_thread(ws, "t1", thread) == 2
    assert save_thread(ws, "t1", thread) == 0
    lines = (ws / "sessions" / "t1.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["#0", "\ufffd"]
    hits = EnhancedMemoryRetriever(workspace=ws, embedder="none").invoke("heron")
    assert hits[0].page_content == "user: hi \ufffd heron\nassistant: ok"


def test_remember_takes_an_argument_that_is_not_utf8(ws: Path) -> None:
    def remember(*args: bytes) -> subprocess.CompletedProcess[bytes]:
        argv = [os.fsencode(a) for a in CLI] + [b"remember", *args]
        env = cli_env(ENHANCED_MEMORY_EMBEDDER="none", LC_ALL="C.UTF-8")
        return subprocess.run(argv, capture_output=True, env=env, timeout=120)

    ws_arg = b"--workspace=" + os.fsencode(ws)
    done = remember(
        b"half \xff plover", b"--section", b"Birds \xfe", b"--file", b"MEMORY.md", ws_arg
    )
    assert done.returncode == 0, done.stderr
    text = (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert "## Birds \ufffd\n\n- half \ufffd plover\n" in text
    refused = remember(b"x", b"--file", b"memory/a\xff.md", ws_arg)
    assert refused.returncode == 2 and refused.stderr.count(b"\n") == 1, refused.stderr
    assert b"is not a UTF-8 name" in refused.stderr and not list((ws / "memory").glob("a*"))
