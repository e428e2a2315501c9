"""What every sub-command shares: the common flags, the engine they describe, printing.

Only ``commands/`` prints or exits. Domain errors
(:class:`~..core.errors.EnhancedMemoryError`) carry a one-line message and an
action; :func:`..cli.main` prints them and exits with status 2. Text printed
for people (not ``--json``) that holds a note's words or a file name goes
through :func:`~..core.text.escape_controls`, so it cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from ..core.errors import EnhancedMemoryError, RequestError
from ..core.request import clean_text, parse_when
from ..core.text import escape_controls

if TYPE_CHECKING:
    from datetime import datetime

    from ..engine import EnginePool, MemorySearch

__all__ = [
    "CliError",
    "add_common_arguments",
    "add_filter_arguments",
    "add_no_daemon_argument",
    "dump",
    "embed_first",
    "engine_from_args",
    "filter_of",
    "flag_error",
    "parse_now",
    "progress_bar",
    "report_embedder",
    "say_keyword_only",
]

#: Set by the resident engine: commands then reuse its warm engines.
POOL: EnginePool | None = None

#: How each request field is spelled on the command line.
FLAGS = {"query": "QUERY", "k": "--k", "now": "--now", "min_score": "--min-score"}


class CliError(EnhancedMemoryError):
    """A bad flag or flag value: one line, exit status 2."""


def flag_error(exc: RequestError) -> CliError:
    """A request error in the command line's words (``--k must be at least 1, got 0``)."""
    flag = FLAGS.get(exc.field, f"--{exc.field.replace('_', '-')}" if exc.field else "")
    return CliError(f"{flag} {exc.problem}".strip(), exc.action)


def dump(obj: Any, out: TextIO | None = None) -> None:
    """Write one JSON line, keeping CJK readable."""
    (out or sys.stdout).write(clean_text(json.dumps(obj, ensure_ascii=False)) + "\n")


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Options every sub-command takes."""
    p.add_argument(
        "--workspace",
        help="workspace folder (default: $OPENCLAW_WORKSPACE_DIR, $MEMORY_DIR's parent, else .)",
    )
    p.add_argument(
        "--embedder",
        choices=("auto", "ollama", "local", "none"),
        help="embedding backend (default: $ENHANCED_MEMORY_EMBEDDER or auto)",
    )
    p.add_argument(
        "--model", help="Ollama embedding model (default: $EMBED_MODEL or nomic-embed-text)"
    )
    p.add_argument(
        "--ollama-url", help="Ollama URL (default: $OLLAMA_URL or http://localhost:11434)"
    )
    p.add_argument(
        "--index", dest="index_path", help="index file (default: WORKSPACE/.enhanced-memory/)"
    )
    p.add_argument(
        "--profile",
        choices=("default", "original", "bm25", "vector"),
        help="scoring recipe (default: $ENHANCED_MEMORY_PROFILE or default)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_filter_arguments(p: argparse.ArgumentParser) -> None:
    """``--since``, ``--until``, ``--path``, ``--kind``, ``--corpus``: which chunks to search."""
    g = p.add_argument_group("filters (applied before ranking)")
    g.add_argument("--since", help="first day: ISO date or date words ('last week', '上个月')")
    g.add_argument("--until", help="last day: ISO date or date words")
    g.add_argument("--path", help="glob or prefix of the files to search (memory/topics/**)")
    g.add_argument(
        "--kind", action="append", choices=("core", "daily", "topic"), help="kind of file (repeat)"
    )
    g.add_argument(
        "--corpus",
        choices=("memory", "sessions", "all"),
        help="memory (notes), sessions (transcripts) or all (default)",
    )


def filter_of(args: argparse.Namespace) -> dict[str, Any]:
    """The filter fields the flags set."""
    return {
        name: getattr(args, name)
        for name in ("since", "until", "path", "kind", "corpus")
        if getattr(args, name, None) is not None
    }


def add_no_daemon_argument(p: argparse.ArgumentParser) -> None:
    """``--no-daemon``: answer in this process, and do not start a resident engine."""
    p.add_argument(
        "--no-daemon",
        action="store_true",
        help="answer in this process; never start the resident engine ($ENHANCED_MEMORY_DAEMON=0)",
    )


def engine_from_args(args: argparse.Namespace, **fields: Any) -> MemorySearch:
    """The engine the common flags describe (flag, then environment, then default)."""
    from ..engine import EngineConfig, MemorySearch

    config = EngineConfig.from_env(
        workspace=args.workspace,
        profile=args.profile,
        embedder=args.embedder,
        model=args.model,
        ollama_url=args.ollama_url,
        index_path=args.index_path,
        **fields,
    )
    if POOL is not None:
        return POOL.get(config)
    return MemorySearch.from_config(config)


def parse_now(value: str | None) -> datetime | None:
    """``--now`` as an ISO date or datetime."""
    try:
        return parse_when(value)
    except ValueError as exc:
        raise CliError(f"--now {exc}") from None


def report_embedder(engine: MemorySearch) -> None:
    """One stderr line naming the active embedder (text mode)."""
    c = engine.choice
    line = f"embedder: {c.provider}" + (f" ({c.model})" if c.model else "")
    if c.fallback:
        line += f", fallback {c.fallback}" + (f": {c.reason}" if c.reason else "")
    print(escape_controls(line), file=sys.stderr)


def say_keyword_only(embedded: float | None) -> bool:
    """Say on stderr that an answer is keyword-only while vectors are embedded; True if so."""
    if embedded is None:
        return False
    print(
        f"enhanced-memory: answering keyword-only: {embedded:.0%} of the chunks have a vector"
        " so far; embed them all first with `enhanced-memory index` (or search --embed-first)",
        file=sys.stderr,
    )
    return True


def embed_first(engine: MemorySearch) -> None:
    """Sync and embed what lacks a vector before answering (``--embed-first``).

    Raises:
        CliError: The embedder failed (the text index is updated; rerun to resume).
    """
    from ..core.errors import EmbeddingError

    try:
        engine.update_index(progress=progress_bar)
    except EmbeddingError as exc:
        raise CliError(f"embedding stopped: {exc} (rerun to resume)", exc.action) from None


def progress_bar(total: int) -> Callable[[int], None] | None:
    """A tqdm bar on stderr for long embedding runs, only on a terminal."""
    if total <= 20 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar = tqdm(total=total, desc="embedding", unit="text", file=sys.stderr, leave=False)
    return bar.update
