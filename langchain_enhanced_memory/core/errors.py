"""Every error this package raises on purpose, in one place.

Each is an :class:`EnhancedMemoryError`: ``str(error)`` is one line a user can
read, and ``action`` (possibly empty) says what to do about it. Domain code
raises them; only ``commands/`` turns them into a printed line and an exit
status, and the servers into a 400 or a tool error.
"""

from __future__ import annotations

__all__ = [
    "MAX_MESSAGE_CHARS",
    "SHOWN_CHARS",
    "CrossrefError",
    "DatabaseError",
    "DiskFullError",
    "EmbeddingError",
    "EnhancedMemoryError",
    "ExportError",
    "IndexUnavailableError",
    "ItemError",
    "MissingNoteError",
    "NoMemoryError",
    "NoteError",
    "RequestError",
    "ScopeError",
    "SettingsError",
    "SkillError",
    "WriteError",
    "one_line",
    "shown",
]

#: Longest message (and longest caller's text an answer repeats whole).
MAX_MESSAGE_CHARS = 300

#: How much of a caller's value a message quotes (a query, a path, a name).
SHOWN_CHARS = 40


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters."""
    line = " ".join(str(text).split())
    if len(line) > limit:
        line = line[: limit - 3].rstrip() + "..."
    return line


def shown(value: object) -> str:
    """A caller's value as a message quotes it: its ``repr``, of a short prefix only."""
    if isinstance(value, str):
        return repr(value[:SHOWN_CHARS])
    return one_line(repr(value), SHOWN_CHARS)


class EnhancedMemoryError(Exception):
    """A failure a user can act on: a one-line message and an optional action."""

    def __init__(self, message: str, action: str = "") -> None:
        super().__init__(message)
        self.action = action


class RequestError(EnhancedMemoryError, ValueError):
    """A search request (query, ``k``, ``now``, ``min_score``, filters) that is not valid.

    Attributes:
        field: The request field at fault (``"k"``), or ``""``.
        problem: What is wrong with it (``"must be at least 1, got 0"``).
    """

    def __init__(self, problem: str, field: str = "", action: str = "") -> None:
        super().__init__(f"{field}: {problem}" if field else problem, action)
        self.field = field
        self.problem = problem


class SettingsError(EnhancedMemoryError, ValueError):
    """A settings or engine field that is not valid (``MemorySettings(line_vector_share=2)``).

    Attributes:
        field: The field at fault (``"line_vector_share"``).
        problem: What is wrong with it (``"must be at most 1, got 2.0"``).
    """

    def __init__(self, problem: str, field: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class IndexUnavailableError(EnhancedMemoryError, RuntimeError):
    """The index cannot be opened or written."""

    def __init__(self, message: str, action: str = "check --index and the folder's permissions"):
        super().__init__(message, action)


class NoMemoryError(EnhancedMemoryError):
    """A folder searched as a workspace that holds no memory (most often the wrong folder)."""


class DiskFullError(IndexUnavailableError):
    """The index cannot be written: its disk is full (the last index stays searchable)."""

    def __init__(
        self, message: str, action: str = "free some space on that disk, then run it again"
    ):
        super().__init__(message, action)


class NoteError(EnhancedMemoryError, ValueError):
    """A refused or failed read of a memory file (``memory_get``)."""


class MissingNoteError(NoteError):
    """``memory_get`` of a memory file that does not exist (OpenClaw answers empty text).

    Attributes:
        path: The normalized workspace-relative path asked for.
    """

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message, "search first; give a path memory_search returned")
        self.path = path


class CrossrefError(EnhancedMemoryError, RuntimeError):
    """The cross-reference graph cannot be built or read."""

    def __init__(self, message: str, action: str = "run `enhanced-memory crossref build`"):
        super().__init__(message, action)


class WriteError(EnhancedMemoryError, ValueError):
    """A refused or failed write of memory (``memory_append``, ``remember``)."""


class ItemError(EnhancedMemoryError, ValueError):
    """A LangGraph store item or operation that is not valid (its namespace, key, value, filter)."""


class ScopeError(EnhancedMemoryError, ValueError):
    """A scope that is not valid, not known, or not writable from here (``--scope``)."""


class DatabaseError(EnhancedMemoryError, RuntimeError):
    """The database cannot be reached or used; the message never holds a password.

    Attributes:
        unreachable: No server answered (down, refused, lost): not a refusal it made.
    """

    def __init__(
        self,
        message: str,
        action: str = "check --database and that the server runs",
        *,
        unreachable: bool = False,
    ) -> None:
        super().__init__(one_line(message), action)
        self.unreachable = unreachable


class SkillError(EnhancedMemoryError, RuntimeError):
    """The OpenClaw skill folder cannot be written."""


class ExportError(EnhancedMemoryError, RuntimeError):
    """An export of the original's files cannot be made."""


class EmbeddingError(EnhancedMemoryError, RuntimeError):
    """An embedder failed; ``str(error)`` is one user-readable line.

    Attributes:
        kind: A machine-readable category: ``"unreachable"``, ``"timeout"``,
            ``"not_pulled"``, ``"http"``, ``"malformed"``, ``"disconnected"``,
            ``"invalid_output"``, ``"missing_extra"``, ``"unavailable"`` (no embedder
            could be resolved) or ``"error"``.
        attempts: How many calls were made before giving up (0 when unknown).
    """

    def __init__(self, message: str, *, kind: str = "error", attempts: int = 0) -> None:
        super().__init__(one_line(message), "start Ollama or use --embedder local/none")
        self.kind = kind
        self.attempts = attempts
