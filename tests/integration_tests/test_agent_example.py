"""Runs ``examples/langgraph_agent.py``'s graph offline with a scripted chat model.

The fake model is not a replay of fixed messages: it reads the tool results it
gets back (the citation in memory_search's output) and calls the next tool
with them, as a real model would, so the test proves the tools' output is
usable by an agent loop.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from tests.fakes import WordEmbeddings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_agent.py"
CITE = re.compile(r"(memory/[\w./-]+\.md|MEMORY\.md):(\d+)-(\d+)")


def _load_example():
    spec = importlib.util.spec_from_file_location("langgraph_agent_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _ScriptedModel(GenericFakeChatModel):
    """A fake chat model that records the tools bound to it; subclasses script the turns."""

    messages: Any = iter(())
    bound: list[str] = []

    def bind_tools(self, tools, **kwargs):
        self.bound = [t.name for t in tools]
        return self


class ScriptedToolModel(_ScriptedModel):
    """Search, then read the cited lines, then look at links and salience, then answer."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        tool_msgs = [m for m in messages if isinstance(m, ToolMessage)]
        question = next(m.content for m in messages if isinstance(m, HumanMessage))
        step = len(tool_msgs)
        if step == 0:
            msg = AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "memory_search",
                        "args": {"query": question, "maxResults": 3},
                        "id": "s1",
                    }
                ],
            )
        elif step == 1:
            path, start, end = CITE.search(tool_msgs[0].content).groups()
            lines = int(end) - int(start) + 1
            msg = AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "memory_get",
                        "args": {"path": path, "from": int(start), "lines": lines},
                        "id": "g1",
                    },
                    {"name": "memory_crossref", "args": {"path": path}, "id": "x1"},
                    {"name": "memory_salience", "args": {"top": 2}, "id": "v1"},
                ],
            )
        else:
            cite = CITE.search(tool_msgs[0].content).group(0)
            msg = AIMessage(f"We decided to migrate billing to Postgres 16 ({cite}).")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def test_agent_calls_all_four_tools_offline(workspace):
    # Read-only by default: exactly the five read tools are bound, no memory_append.
    example = _load_example()
    model = ScriptedToolModel()
    agent = example.build_agent(
        model, workspace, embeddings=WordEmbeddings(), now=datetime(2026, 2, 9, 9)
    )
    state = agent.invoke({"messages": [("user", "What did we decide yesterday?")]})
    assert sorted(model.bound) == [
        "memory_crossref",
        "memory_get",
        "memory_salience",
        "memory_search",
        "memory_status",
    ]
    tool_msgs = {m.name: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert set(tool_msgs) == {"memory_search", "memory_get", "memory_crossref", "memory_salience"}
    assert all(m.status == "success" for m in tool_msgs.values())
    search = tool_msgs["memory_search"]
    assert search.content.startswith("[1] memory/2026-02-08.md:")
    assert search.artifact["results"][0]["path"] == "memory/2026-02-08.md"
    got = tool_msgs["memory_get"]
    assert "We decided to migrate the billing database to Postgres 16" in got.content
    assert got.artifact["path"] == "memory/2026-02-08.md"
    assert tool_msgs["memory_crossref"].artifact["path"] == "memory/2026-02-08.md"
    assert "haven't been reviewed" in tool_msgs["memory_salience"].content
    answer = state["messages"][-1]
    assert isinstance(answer, AIMessage) and "memory/2026-02-08.md:" in answer.content
    print(example.transcript(state["messages"]))


def test_example_without_a_chat_model_says_what_to_set(workspace):
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "hello",
            "--workspace",
            str(workspace),
            "--embedder",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(workspace)},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "ENHANCED_MEMORY_CHAT_MODEL" in proc.stderr


@pytest.mark.parametrize("missing", ["/nonexistent/ws"])
def test_example_missing_workspace(missing):
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "hi", "--workspace", missing],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "workspace not found" in proc.stderr


class RememberThenRecallModel(_ScriptedModel):
    """Write the user's fact with memory_append, then search for it, then answer from it."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        tool_msgs = [m for m in messages if isinstance(m, ToolMessage)]
        fact = next(m.content for m in messages if isinstance(m, HumanMessage))
        fact = fact.removeprefix("Remember: ")
        if not tool_msgs:
            call = {"name": "memory_append", "args": {"text": fact, "section": "Plans"}, "id": "a1"}
            msg = AIMessage("", tool_calls=[call])
        elif len(tool_msgs) == 1:
            query = "when is the kayak trip"
            msg = AIMessage(
                "", tool_calls=[{"name": "memory_search", "args": {"query": query}, "id": "s1"}]
            )
        else:
            msg = AIMessage(f"Noted and found again: {CITE.search(tool_msgs[1].content).group(0)}")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def test_agent_writes_a_memory_and_finds_it_again(workspace):
    example = _load_example()
    model = RememberThenRecallModel()
    agent = example.build_agent(
        model, workspace, embeddings=WordEmbeddings(), now=datetime(2026, 2, 9, 9), allow_write=True
    )
    state = agent.invoke(
        {"messages": [("user", "Remember: The kayak trip moved to Saturday the 21st.")]}
    )
    assert "memory_append" in model.bound
    tool_msgs = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_msgs] == ["memory_append", "memory_search"]
    assert all(m.status == "success" for m in tool_msgs)
    written = tool_msgs[0].artifact
    assert written["path"] == "memory/2026-02-09.md" and written["created"] is True
    note = (workspace / "memory/2026-02-09.md").read_text(encoding="utf-8")
    assert note == "# 2026-02-09\n\n## Plans\n\n- The kayak trip moved to Saturday the 21st.\n"
    top = tool_msgs[1].artifact["results"][0]
    assert top["path"] == "memory/2026-02-09.md"
    assert top["startLine"] <= written["line"] <= top["endLine"]
    assert "memory/2026-02-09.md:" in state["messages"][-1].content
