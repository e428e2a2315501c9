"""LangChain message threads kept as searchable transcripts (``save_thread``).

A LangGraph agent's conversation lives in its checkpointer, one thread of
``BaseMessage``s per ``thread_id``, where no search reaches it. ``save_thread``
appends the messages a thread's transcript does not hold yet to
``WORKSPACE/sessions/<thread_id>.jsonl``, which the next search (or index run)
reads like any transcript: found with the notes (``corpus`` ``all``) or alone
(``sessions``), each hit with its ``sessionId`` (the thread id) and time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    MessageLikeRepresentation,
    convert_to_messages,
)

from .core.errors import WriteError
from .store.threads import append_thread

__all__ = ["save_thread"]

# LangChain's message types as the transcript's roles (OpenClaw's names).
_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "toolResult",
    "function": "toolResult",
}


def save_thread(
    workspace: str | Path,
    thread_id: str,
    messages: Sequence[MessageLikeRepresentation],
    *,
    folder: str | Path = "sessions",
    now: datetime | None = None,
) -> int:
    """Append a thread's new messages to its transcript; how many were appended.

    Pass the whole thread each time (as the checkpointer holds it) or only its
    new messages: a message is written once, known by its ``id`` (LangGraph
    gives every message one) or, without one, by its place in ``messages``.
    Nothing already in the transcript is rewritten.

    Args:
        workspace: The memory workspace.
        thread_id: The thread; the transcript is ``<thread_id>.jsonl``.
        messages: ``BaseMessage``s, or what ``convert_to_messages`` takes
            (``("user", "hi")``, ``{"role": "user", "content": "hi"}``).
        folder: The transcript folder, relative to the workspace (or absolute).
        now: The time the new messages are stamped with (default: now, local
            time); dates in questions ("what did we discuss yesterday") use it.

    Raises:
        WriteError: The workspace does not exist, a bad thread id, or the
            transcript cannot be written.
    """
    root = Path(workspace).expanduser()
    if not root.is_dir():
        raise WriteError(f"workspace {root} is not a folder")
    stamp = (now or datetime.now()).astimezone().isoformat(timespec="seconds")
    records = [_record(m, stamp) for m in convert_to_messages(messages)]
    return append_thread(root / folder, thread_id, [r for r in records if r is not None])


def _record(message: BaseMessage, stamp: str) -> dict[str, Any] | None:
    """A message as a transcript line, None for one that holds nothing (a removal)."""
    role = _ROLES.get(message.type) or getattr(message, "role", None)
    if not isinstance(role, str):
        return None
    parts = _parts(message.content)
    if isinstance(message, AIMessage):
        parts += [
            {"type": "toolCall", "name": call["name"], "arguments": call["args"]}
            for call in message.tool_calls
        ]
    if not parts:
        return None
    record: dict[str, Any] = {"id": message.id, "role": role, "content": parts, "timestamp": stamp}
    if message.name:
        record["name"] = message.name
    return record


def _parts(content: str | list[Any]) -> list[dict[str, Any]]:
    """A message's text and thinking as transcript parts (images and the rest left out)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    out = []
    for block in content:
        if isinstance(block, str):
            out.append({"type": "text", "text": block})
        elif isinstance(block, dict) and block.get("type") == "text":
            out.append({"type": "text", "text": str(block.get("text", ""))})
        elif isinstance(block, dict) and block.get("type") in ("thinking", "reasoning"):
            out.append({"type": "thinking", "thinking": str(block.get(block["type"], ""))})
    return [p for p in out if (p.get("text") or p.get("thinking", "")).strip()]
