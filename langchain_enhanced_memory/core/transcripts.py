"""Agents' session transcripts (JSONL) as turns and chunks of turns, with exact line spans.

Two formats, told apart line by line:

- OpenClaw's session transcript: a ``{"type": "session", ...}`` header, then
  ``{"type": "message", "timestamp", "message": {"role", "name"?, "content"}}``
  lines, ``content`` a string or a list of parts (``text``, ``thinking``,
  ``toolCall``, ...); other event types (``model_change``, ``compaction``, ...)
  are not turns.
- A plain chat log: ``{"role", "content", "timestamp"?}`` a line.

A turn is the line's speaker (``name`` when given, else ``role``) and its text
on one line; a lone surrogate in it (half an emoji a program cut, written as a
JSON escape) is kept as U+FFFD, and the turn says so (:attr:`Turn.mended`).
Only what the user and the assistant said is kept by default: thinking, tool
calls and tool results come in with ``session_extras``. A chunk is a question
with its answer, or a small window of turns (``session_window`` turns; an
answer is never cut from its question unless the window doubles; a new day
starts a new chunk), its lines the JSONL line numbers of its first and last
message, and its header the time of its first message (``2023-05-08 13:57``)
and who spoke, so that date routing and the ``since``/``until`` filters work
on when it was said.
:class:`TranscriptStream` is fed a file's lines in blocks, like the notes'
chunker, and names where a transcript that grew can be chunked again from.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .chunking import Chunk, Resume
from .settings import MemorySettings
from .text import clean_text

__all__ = [
    "TRANSCRIPT_SUFFIX",
    "MalformedLine",
    "TranscriptChunker",
    "TranscriptStream",
    "Turn",
    "parse_turn",
    "session_id",
    "transcript_day",
    "transcript_time",
]

#: The file name ending of a transcript.
TRANSCRIPT_SUFFIX = ".jsonl"

#: Roles whose text is a turn by default; the rest (tool results, system) only with extras.
_SPOKEN = frozenset({"user", "assistant"})
_TOOL_ROLES = frozenset({"toolResult", "tool", "tool_result"})
_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})")
_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})")


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a transcript.

    Attributes:
        line: Its JSONL line, 1-based.
        role: ``user``, ``assistant``, ``toolResult``, ...
        speaker: Who said it: the message's ``name``, else its role.
        text: What was said, on one line.
        time: When, as ``YYYY-MM-DD HH:MM`` (the wall time the transcript wrote), or "".
        mended: Its speaker or text held a lone surrogate, now U+FFFD.
    """

    line: int
    role: str
    speaker: str
    text: str
    time: str
    mended: bool = False

    def render(self) -> str:
        """``speaker: text``, the turn as indexed and as ``get`` shows it."""
        return f"{self.speaker}: {self.text}"


class MalformedLine(ValueError):
    """A line that is not a JSON object."""


def parse_turn(raw: str, line: int, extras: bool = False) -> Turn | None:
    """The turn a transcript line holds, None for a line that is no turn (a header, an event).

    Args:
        raw: The line.
        line: Its number, 1-based.
        extras: Keep thinking, tool calls and tool results too.

    Raises:
        MalformedLine: The line is not a JSON object.
    """
    try:
        return _parse(raw, line, extras)
    except RecursionError:  # nested thousands deep: past the JSON decoder's (or encoder's) stack
        raise MalformedLine("not JSON (nested too deeply)") from None


def _parse(raw: str, line: int, extras: bool) -> Turn | None:
    if not raw.strip():
        return None
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise MalformedLine(f"not JSON ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(obj, dict):
        raise MalformedLine("not a JSON object")
    kind = obj.get("type")
    if kind == "message" and isinstance(obj.get("message"), dict):
        msg = obj["message"]
        when = obj.get("timestamp", msg.get("timestamp"))
    elif kind is None and "role" in obj:
        msg, when = obj, obj.get("timestamp")
    else:
        return None  # the session header, model changes, compactions, custom events
    role = msg.get("role")
    if not isinstance(role, str) or not (extras or role in _SPOKEN):
        return None
    text = _content(msg.get("content"), extras or role in _TOOL_ROLES)
    if not text:
        return None
    name = msg.get("name")
    speaker = name.strip() if isinstance(name, str) and name.strip() else role
    spoken = " ".join(speaker.split())
    speaker, said = clean_text(spoken), clean_text(text)
    return Turn(line, role, speaker, said, _time(when), speaker != spoken or said != text)


def _content(content: Any, extras: bool) -> str:
    """The text of a message's content (a string or a list of parts), on one line."""
    if isinstance(content, str):
        return " ".join(content.split())
    if not isinstance(content, list):
        return ""
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif not isinstance(part, dict):
            continue
        elif part.get("type") == "text" and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif not extras:
            continue
        elif part.get("type") == "thinking" and isinstance(part.get("thinking"), str):
            out.append(part["thinking"])
        elif part.get("type") in ("toolCall", "tool_use", "toolUse"):
            args = part.get("arguments", part.get("input"))
            out.append(f"{part.get('name', 'tool')}({json.dumps(args, ensure_ascii=False)})")
    return " ".join(" ".join(out).split())


def _time(value: Any) -> str:
    """``YYYY-MM-DD HH:MM`` of an ISO timestamp (as written) or epoch seconds/milliseconds."""
    try:
        if isinstance(value, bool):
            return ""
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e11 else value
            when = datetime.fromtimestamp(seconds, timezone.utc)
        elif isinstance(value, str):
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        else:
            return ""
    except (ValueError, OverflowError, OSError):
        return ""
    return when.strftime("%Y-%m-%d %H:%M")


def session_id(path: str) -> str:
    """The session a transcript's path names: its file name without ``.jsonl``."""
    return path.rsplit("/", 1)[-1].removesuffix(TRANSCRIPT_SUFFIX)


def transcript_day(header: str) -> str | None:
    """The ISO day a transcript chunk's header starts with (None when it has no time)."""
    m = _DAY.match(header)
    return m[1] if m else None


def transcript_time(header: str) -> str | None:
    """``YYYY-MM-DDTHH:MM`` of a transcript chunk's first message (None when it has no time)."""
    m = _TIME.match(header)
    return f"{m[1]}T{m[2]}" if m else None


@dataclass
class _Faults:
    """Lines of one fault: the first one's number and reason, and how many there were."""

    outcome: str
    first: int = 0
    count: int = 0
    reason: str = ""

    def add(self, line: int, reason: str) -> None:
        """Count line ``line`` (1-based); the first one's reason is the one said."""
        if not self.count:
            self.first, self.reason = line, reason
        self.count += 1

    def words(self) -> str | None:
        """``line N: reason; outcome (M more such lines)``, None for none."""
        if not self.count:
            return None
        more = f" ({self.count - 1} more such lines)" if self.count > 1 else ""
        return f"line {self.first}: {self.reason}; {self.outcome}{more}"


@dataclass
class TranscriptStream:
    """A transcript's chunks, fed its lines a block at a time (the notes' chunker's face).

    The last line fed is held until another comes or the file ends: at the end
    a last line that does not parse is a line still being written, left for
    the next run (no warning; the resume point is at or before it).

    Args:
        default_header: The file's name (the head of every chunk's header chain).
        settings: Uses ``session_window``, ``session_extras`` and ``max_chunk_chars``.
        resume: Continue a transcript that grew from this point (its :attr:`Resume.line`).
    """

    default_header: str
    settings: MemorySettings = field(default_factory=MemorySettings)
    resume_from: Resume | None = None
    malformed: _Faults = field(default_factory=lambda: _Faults("skipped"))
    mended: _Faults = field(default_factory=lambda: _Faults("kept as U+FFFD"))

    def __post_init__(self) -> None:
        self.n = self.resume_from.line if self.resume_from else 0  # next line index
        self.open: list[Turn] = []
        self.chars = 0
        self.held: tuple[int, str] | None = None
        self.partial: int | None = None  # a last line still being written
        self.last_start: int | None = None  # the last chunk's first line
        self.out: list[Chunk] = []

    def feed(self, lines: list[str], first: int) -> list[Chunk]:
        """Add the lines from line ``first`` (0-based) on; returns the chunks now final."""
        skip = max(self.n - first, 0)  # a resumed run starts mid-block
        for i, raw in enumerate(lines[skip:], first + skip):
            if self.held is not None:
                self._take(*self.held)
            self.held = (i, raw)
        self.n = max(self.n, first + len(lines))
        out, self.out = self.out, []
        return out

    def close(self) -> list[Chunk]:
        """End of file: the remaining chunks (a last line that does not parse is left)."""
        if self.held is not None:
            self._take(*self.held, last=True)
            self.held = None
        if self.open:
            self._emit()
        out, self.out = self.out, []
        return out

    @property
    def faults(self) -> str | None:
        """After :meth:`close`: the lines skipped or mended, in words (None: none)."""
        said = [w for w in (self.malformed.words(), self.mended.words()) if w]
        return "; ".join(said) or None

    @property
    def resume(self) -> Resume | None:
        """After :meth:`close`: the last chunk's first line (or a partial line), else the end."""
        line = self.n if self.partial is None else self.partial
        if self.last_start is not None:
            line = min(line, self.last_start)
        return Resume(line, line, None, "", (), (), line, -1)

    def _take(self, i: int, raw: str, last: bool = False) -> None:
        try:
            turn = parse_turn(raw, i + 1, self.settings.transcripts.session_extras)
        except MalformedLine as exc:
            if last:
                self.partial = i
                return
            self.malformed.add(i + 1, str(exc))
            return
        if turn is None:
            return
        if turn.mended:
            self.mended.add(i + 1, "a lone surrogate (half an emoji)")
        s = self.settings
        size = len(turn.text) + len(turn.speaker) + 2
        if self.open and (
            (len(self.open) >= s.transcripts.session_window and turn.role == "user")
            or len(self.open) >= 2 * s.transcripts.session_window
            or self.chars + size > s.chunker.max_chunk_chars
            or turn.time[:10] != self.open[0].time[:10]  # a chunk is of one day
        ):
            self._emit()
        self.open.append(turn)
        self.chars += size + 1

    def _emit(self) -> None:
        turns, self.open, self.chars = self.open, [], 0
        when = next((t.time for t in turns if t.time), "")
        speakers = " and ".join(dict.fromkeys(t.speaker for t in turns))
        header = f"{when} {speakers}".strip()
        text = "\n".join(t.render() for t in turns)
        self.out.append(
            Chunk(turns[0].line, turns[-1].line, header, (self.default_header, header), text)
        )
        self.last_start = turns[0].line - 1


class TranscriptChunker:
    """Transcripts' chunker, with the notes' chunker's face (:class:`.recipe.Chunker`)."""

    def __init__(self, settings: MemorySettings) -> None:
        self.settings = settings

    def __call__(self, lines: list[str], default_header: str) -> list[Chunk]:
        """The chunks of a transcript's lines."""
        stream = self.stream(default_header)
        return [*stream.feed(lines, 0), *stream.close()]

    def stream(self, default_header: str, resume: Resume | None = None) -> TranscriptStream:
        """Chunk a transcript as it is read (from ``resume`` when it grew)."""
        return TranscriptStream(default_header, self.settings, resume)
