"""Which memory files need attention: the original's salience score, with working signals.

Per file::

    importance = min(1, base + min(0.1, bytes / 50000)
                        - min(0.2, 0.03 * accesses)
                        + 0.15 if a recent low-scoring query names the file)
    staleness  = min(1, age_days / 7)   for daily notes, age_days / 5 otherwise
    salience   = importance * staleness

``base`` is 0.8 for ``MEMORY.md``, 0.7 for topic files and 0.4 for daily
notes. Accesses come from the access log and low-scoring queries
(``top_score < 0.4``) from the last 50 entries of the query log, both kept
with the index and written by every search (:mod:`..store.logs`), so the two signals the original
could never fire now work.

Items: ``MEMORY.md``, every daily note under ``memory/`` (``YYYY-MM-DD.md``,
slugged names and dated sub-folders too) and every other ``memory/**`` file as
a topic (the original only saw ``memory/topics/*.md`` and flat daily notes).
Other core files (``AGENTS.md``, ``SOUL.md``...) are instructions, not memory to
review, and are skipped. A topic's age is days since it was last modified; a
daily note's age is days since its date (copying a folder resets modification
times, the date in the name stays). A query "names" a file when it contains the
file's name (``project-alpha`` matches "project alpha") or, for a daily note,
a date expression resolving to its day ("yesterday" asked the day after).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..core.dates import parse_dates
from ..core.settings import MemorySettings
from ..core.text import escape_controls
from ..store.discovery import discover
from ..store.logs import read_access_log, read_query_log
from ..store.workspace import MemoryFile

__all__ = ["BASE", "GAP_BONUS", "SalienceItem", "compute", "format_text"]

BASE = {"core": 0.8, "topic": 0.7, "daily": 0.4}
GAP_BONUS = 0.15
GAP_SCORE = 0.4
RECENT_QUERIES = 50
#: Items below this salience get no prompt (fresh files need no nudge).
PROMPT_MIN = 0.1
_SEP = re.compile(r"[\s\-_./]+")


@dataclass
class SalienceItem:
    """One scored file (the original's JSON item plus ``gap``)."""

    path: str
    type: str
    name: str
    age_days: float
    size: int
    importance: float
    staleness: float
    salience: float
    accesses: int
    gap: bool


def _norm(text: str) -> str:
    return " " + _SEP.sub(" ", text.lower()).strip() + " "


def _items(files: list[MemoryFile]) -> list[tuple[MemoryFile, str, str]]:
    """(file, type, name) of the files salience scores."""
    out = []
    for f in files:
        if f.kind == "core":
            if f.path.lower() == "memory.md":
                out.append((f, "core", f.path))
        elif f.path.startswith("memory/"):
            out.append((f, f.kind, Path(f.path).stem))
    return out


def _gap_names(queries: list[dict[str, Any]], now: datetime) -> tuple[list[str], set[date]]:
    """Normalised low-scoring queries and the days they name."""
    texts: list[str] = []
    days: set[date] = set()
    for q in queries[-RECENT_QUERIES:]:
        text = q.get("query")
        score = q.get("top_score")
        if not isinstance(text, str) or not isinstance(score, int | float) or score >= GAP_SCORE:
            continue
        texts.append(_norm(text))
        asked = now
        if isinstance(q.get("timestamp"), str):
            try:
                asked = datetime.fromisoformat(q["timestamp"]).replace(tzinfo=None)
            except ValueError:
                pass
        days.update(parse_dates(text, asked).days)
    return texts, days


def compute(
    workspace: str | Path,
    settings: MemorySettings | None = None,
    *,
    now: datetime | None = None,
    top: int | None = 3,
) -> dict[str, Any]:
    """Score the workspace's memory files.

    Args:
        workspace: The workspace root.
        settings: Discovery settings.
        now: The moment to measure ages against (default: the clock).
        top: How many items (highest salience first) to return and prompt
            for; None for all.

    Returns:
        ``{timestamp, items, prompts, total_items}`` as the original's ``--json``.
    """
    now = now or datetime.now()
    ws = Path(workspace)
    access = read_access_log(ws)
    gap_texts, gap_days = _gap_names(read_query_log(ws), now)
    items: list[SalienceItem] = []
    for f, kind, name in _items(discover(ws, settings)):
        try:
            st = f.abs_path.stat()
        except OSError:
            continue
        if kind == "daily" and f.date is not None:
            age = (now.date() - f.date).days + 0.0
        else:
            age = (now.timestamp() - st.st_mtime) / 86400
        age = max(0.0, age)
        accesses = int(access.get(f.path, 0))
        key = _norm(name)
        gap = (f.date in gap_days) or any(key in t for t in gap_texts)
        importance = min(
            1.0,
            BASE[kind]
            + min(0.1, st.st_size / 50000)
            - min(0.2, 0.03 * accesses)
            + (GAP_BONUS if gap else 0.0),
        )
        staleness = min(1.0, age / (7 if kind == "daily" else 5))
        items.append(
            SalienceItem(
                path=f.path,
                type=kind,
                name=name,
                age_days=round(age, 1),
                size=st.st_size,
                importance=round(importance, 4),
                staleness=round(staleness, 4),
                salience=round(importance * staleness, 4),
                accesses=accesses,
                gap=gap,
            )
        )
    items.sort(key=lambda i: (-i.salience, i.path))
    shown = items if top is None else items[:top]
    return {
        "timestamp": now.isoformat(timespec="seconds"),
        "items": [asdict(i) for i in shown],
        "prompts": [_prompt(i) for i in shown if i.salience >= PROMPT_MIN],
        "total_items": len(items),
    }


def _prompt(item: SalienceItem) -> str:
    days = int(item.age_days)
    if item.type == "daily":
        text = f"Daily notes from {item.name[:10]} haven't been reviewed for MEMORY.md."
    elif item.type == "core":
        text = f"{item.name} last updated {days} days ago."
    else:
        text = f"Topic '{item.name}' hasn't been updated in {days} days."
    if item.gap:
        text += " A recent search for it found little."
    return text


def format_text(result: dict[str, Any]) -> str:
    """The human-readable report: prompts, then a table of the items (file names escaped)."""
    lines = [escape_controls(p) for p in result["prompts"]] or ["Nothing needs attention."]
    if result["items"]:
        lines.append("")
        lines.append(f"{'salience':>8} {'import.':>7} {'stale':>6} {'acc':>4} {'age':>6}  path")
        for i in result["items"]:
            lines.append(
                f"{i['salience']:>8.3f} {i['importance']:>7.3f} {i['staleness']:>6.2f}"
                f" {i['accesses']:>4} {i['age_days']:>6.1f}  {escape_controls(i['path'])}"
                + ("  (gap)" if i["gap"] else "")
            )
    lines.append(f"({len(result['items'])} of {result['total_items']} items)")
    return "\n".join(lines)
