"""An agent that answers from (and, if allowed, writes to) an OpenClaw memory workspace.

The agent is LangChain 1.x's ``langchain.agents.create_agent`` (a LangGraph
graph; it replaces LangGraph's deprecated ``create_react_agent``) with
``memory_search`` (hybrid, date-aware search with citations), ``memory_get``
(read lines of a memory file), ``memory_salience`` (what needs review),
``memory_crossref`` (related files), ``memory_status`` (what is indexed) and,
with ``--allow-write``, ``memory_append`` (remember something in today's daily
note). Run it with a local Ollama chat model::

    ENHANCED_MEMORY_CHAT_MODEL=llama3.1 python examples/langgraph_agent.py \
        "What did we decide about the billing database, and what is still open?"
    ENHANCED_MEMORY_CHAT_MODEL=llama3.1 python examples/langgraph_agent.py --allow-write \
        "Remember that the kayak trip moved to the 21st."

Environment: ``ENHANCED_MEMORY_CHAT_MODEL`` (an Ollama chat model that supports
tool calling; required), ``OLLAMA_URL`` (default ``http://localhost:11434``),
``ENHANCED_MEMORY_EMBEDDER`` (``auto``, ``ollama``, ``local`` or ``none``).
``tests/integration_tests/test_agent_example.py`` runs the same graph offline
with a scripted chat model.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage

from langchain_enhanced_memory.tools import create_memory_tools

DEFAULT_WORKSPACE = Path(__file__).resolve().parent / "workspace"

SYSTEM_PROMPT = (
    "You answer questions about the user's past from their memory files. "
    "Always call memory_search first; if a snippet is cut short, read the lines "
    "with memory_get. Cite every fact as path:startLine-endLine. Use memory_crossref "
    "to find related notes and memory_salience when asked what needs review. "
    "When the user asks you to remember something and memory_append is available, "
    "write it with memory_append (one fact per call). "
    "If the memory does not say, answer that you do not know."
)


def build_agent(
    model: BaseChatModel,
    workspace: str | Path = DEFAULT_WORKSPACE,
    *,
    embedder: str = "auto",
    embeddings: Any = None,
    now: datetime | None = None,
    allow_write: bool = False,
) -> Any:
    """The compiled agent (a LangGraph graph) over ``workspace``.

    Args:
        model: A chat model that supports ``bind_tools``.
        workspace: The memory workspace.
        embedder: ``auto``, ``ollama``, ``local`` or ``none``.
        embeddings: Any LangChain embeddings (overrides ``embedder``).
        now: A fixed clock for relative dates, ages and "today" (default: the real one).
        allow_write: Give the agent ``memory_append`` (off: read-only memory).
    """
    tools = create_memory_tools(
        workspace, embedder=embedder, embeddings=embeddings, now=now, allow_write=allow_write
    )
    return create_agent(model, tools, system_prompt=SYSTEM_PROMPT)


def chat_model_from_env() -> BaseChatModel | None:
    """``ChatOllama`` when ``ENHANCED_MEMORY_CHAT_MODEL`` names a model, else None."""
    name = os.environ.get("ENHANCED_MEMORY_CHAT_MODEL")
    if not name:
        return None
    from langchain_ollama import ChatOllama

    url = os.environ.get("OLLAMA_URL") or "http://localhost:11434"
    return ChatOllama(model=name, base_url=url, temperature=0)


def transcript(messages: list[Any]) -> str:
    """The conversation as text: tool calls, tool results (shortened) and the answer."""
    out = []
    for m in messages:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                out.append(f"-> {call['name']}({call['args']})")
            if m.content:
                out.append(f"answer: {m.content}")
        elif isinstance(m, ToolMessage):
            text = str(m.content)
            out.append(f"<- {m.name}: {text[:300]}{'...' if len(text) > 300 else ''}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Ask the agent one question and print the transcript."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("question")
    p.add_argument("--workspace", default=str(DEFAULT_WORKSPACE))
    p.add_argument("--embedder", default=os.environ.get("ENHANCED_MEMORY_EMBEDDER", "auto"))
    p.add_argument("--allow-write", action="store_true", help="give the agent memory_append")
    args = p.parse_args(argv)
    if not Path(args.workspace).is_dir():
        print(f"error: workspace not found: {args.workspace}", file=sys.stderr)
        return 2
    model = chat_model_from_env()
    if model is None:
        print(
            "error: set ENHANCED_MEMORY_CHAT_MODEL to an Ollama chat model with tool calling"
            " (e.g. llama3.1)",
            file=sys.stderr,
        )
        return 2
    agent = build_agent(model, args.workspace, embedder=args.embedder, allow_write=args.allow_write)
    try:
        state = agent.invoke({"messages": [("user", args.question)]})
    except Exception as exc:  # an unreachable Ollama is the usual cause: say so in one line
        print(
            f"error: the agent failed: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr
        )
        return 1
    print(transcript(state["messages"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
