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
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..core.errors import EnhancedMemoryError, RequestError
from ..core.request import parse_when
from ..core.text import clean_text, escape_controls

if TYPE_CHECKING:
    from datetime import datetime

    from ..core.settings import MemorySettings
    from ..engine import EngineConfig, MemorySearch, SearchPool
    from ..engine.scoped import ScopedSearch
    from ..store.database import Database

__all__ = [
    "CliError",
    "add_common_arguments",
    "add_database_arguments",
    "add_filter_arguments",
    "add_no_daemon_argument",
    "add_scope_arguments",
    "config_from_args",
    "database_scope",
    "database_url",
    "dump",
    "embed_first",
    "engine_from_args",
    "filter_of",
    "flag_error",
    "open_database",
    "parse_now",
    "progress_bar",
    "report_embedder",
    "say_keyword_only",
    "searcher_from_args",
    "session_dirs",
]

#: Set by the resident engine: commands then reuse its warm engines.
POOL: SearchPool | None = None

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
        "--on-embedder-error",
        choices=("keyword", "fail"),
        help="when the embedder is unavailable or fails: answer keyword-only, or fail"
        " (default: $ENHANCED_MEMORY_ON_EMBEDDER_ERROR or keyword; eval: fail)",
    )
    p.add_argument(
        "--index", dest="index_path", help="index file (default: WORKSPACE/.enhanced-memory/)"
    )
    p.add_argument(
        "--profile",
        choices=("default", "original", "bm25", "vector"),
        help="scoring recipe (default: $ENHANCED_MEMORY_PROFILE or default)",
    )
    p.add_argument(
        "--sessions",
        action="append",
        metavar="DIR",
        help="another folder of session transcripts (repeatable; WORKSPACE/sessions and"
        " $ENHANCED_MEMORY_SESSION_DIRS are searched too)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def session_dirs(args: argparse.Namespace) -> tuple[str, ...]:
    """``--sessions`` folders, absolute (a relative one is read from where the command runs)."""
    return tuple(str(Path(d).expanduser().absolute()) for d in args.sessions or ())


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
    from ..engine import MemorySearch

    config = config_from_args(args, **fields)
    if POOL is not None:
        return POOL.get(config)
    return MemorySearch.from_config(config)


def add_allow_host_argument(p: argparse.ArgumentParser) -> None:
    """``--allow-host`` of the HTTP servers (``serve``, ``mcp --http``)."""
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name clients may reach it by (the Host header; repeatable), and"
        " http://NAME:PORT an Origin it answers. Always answered: 127.0.0.1, localhost, [::1]"
        " and --host",
    )


def add_scope_arguments(p: argparse.ArgumentParser, *, many: bool) -> None:
    """``--scope`` (repeatable when ``many``: a search's) and ``--database``."""
    if many:
        p.add_argument(
            "--scope",
            action="append",
            metavar="NAME[:WEIGHT][=FOLDER]",
            help="search this scope (repeat for one ranking over several): a workspace here"
            " (team=~/team-notes) or a scope of --database (team); WEIGHT scales its scores"
            " (team:0.5, default 1); each result then says its scope",
        )
    else:
        p.add_argument(
            "--scope", metavar="NAME", help="the scope of --database this command is about"
        )
    add_database_arguments(p)


def add_database_arguments(p: argparse.ArgumentParser) -> None:
    """``--database``, ``--read-url`` and ``--pool-size``: the database of the scopes."""
    p.add_argument(
        "--database",
        metavar="URL",
        help="PostgreSQL holding the scopes (default: $ENHANCED_MEMORY_DATABASE_URL), e.g."
        " postgresql://user@host/db; keep the password out of it (every user sees a"
        " command's arguments): $ENHANCED_MEMORY_DATABASE_URL, PGPASSWORD or ~/.pgpass",
    )
    p.add_argument(
        "--read-url",
        metavar="URL",
        help="a streaming replica of --database that searches read from"
        " (default: $ENHANCED_MEMORY_READ_URL); writes go to --database",
    )
    p.add_argument(
        "--pool-size",
        type=int,
        metavar="N",
        help="the most connections this process opens to each server"
        " (default: $ENHANCED_MEMORY_POOL_SIZE, else 8)",
    )


def database_scope(args: argparse.Namespace) -> str | None:
    """The one database scope ``--scope`` names (None: the command works on the workspace).

    Raises:
        CliError: ``--scope`` without a database, or ``--database`` without ``--scope``.
        ScopeError: An invalid name.
    """
    from ..core.scopes import validate_scope

    if args.scope is None:
        if args.database:
            raise CliError("--database needs --scope NAME (the scope to work on)")
        return None
    if not (args.database or args.env.database_url):
        raise CliError(
            f"--scope {validate_scope(args.scope)} needs --database URL"
            " (or $ENHANCED_MEMORY_DATABASE_URL)"
        )
    return validate_scope(args.scope)


def open_database(
    args: argparse.Namespace, settings: MemorySettings | None = None, *, replica: bool = True
) -> Database:
    """The database of ``--database`` (else ``$ENHANCED_MEMORY_DATABASE_URL``), connected.

    ``replica=False`` (a command that writes, or manages scopes): the primary only, so a
    replica that is down (``--read-url``, ``$ENHANCED_MEMORY_READ_URL``) does not stop it.

    Raises:
        CliError: Neither gives a URL.
        DatabaseError: Unreachable or refused (one line, the password never in it).
    """
    from ..engine.scoped import connect_database

    url = database_url(args) or args.env.database_url
    if not url:
        raise CliError("give --database URL (or $ENHANCED_MEMORY_DATABASE_URL)")
    return connect_database(
        url,
        settings,
        read_url=database_url(args, "read_url") or args.env.read_url,
        pool_size=args.env.pool_size if args.pool_size is None else args.pool_size,
        cache=args.env.database_cache,
        replica=replica,
    )


_WARNED: set[str] = set()  # the flags whose password was warned of


def database_url(args: argparse.Namespace, flag: str = "database") -> str | None:
    """``--database`` (or ``--read-url``) as given; a password in it is warned of on stderr."""
    from ..store.database.connect import carries_password

    url: str | None = getattr(args, flag)
    if url and carries_password(url) and flag not in _WARNED:
        _WARNED.add(flag)  # once a process: index --watch opens the database twice
        print(
            f"enhanced-memory: warning: the password in --{flag.replace('_', '-')} can be read"
            " by every user of this host in the process list; pass the URL in the"
            " environment ($ENHANCED_MEMORY_DATABASE_URL, $ENHANCED_MEMORY_READ_URL),"
            " or the password in PGPASSWORD or ~/.pgpass",
            file=sys.stderr,
        )
    return url


def searcher_from_args(args: argparse.Namespace, **fields: Any) -> MemorySearch | ScopedSearch:
    """The search over the ``--scope``s, or without any the workspace's (:func:`engine_from_args`).

    Raises:
        CliError: ``--database`` without ``--scope``, or ``--scope`` with ``--workspace``
            or ``--index`` (each scope names its folder, which keeps its own index).
        ScopeError: A bad scope (:func:`~..engine.scoped.scoped_search`).
    """
    if not args.scope:
        if args.database:
            raise CliError("--database needs --scope NAME (the scopes to search)")
        return engine_from_args(args, **fields)
    for flag, value in (("--workspace", args.workspace), ("--index", args.index_path)):
        if value:
            raise CliError(f"{flag} and --scope: name each folder as a scope (--scope NAME=FOLDER)")
    from ..engine import MemorySearch
    from ..engine.scoped import parse_scope_arg, scoped_search

    config = config_from_args(args, workspace=".", **fields)
    specs = [parse_scope_arg(spec) for spec in args.scope]
    engines = POOL.get if POOL is not None else MemorySearch.from_config
    return scoped_search(
        config,
        specs,
        database_url(args) or args.env.database_url,
        read_url=database_url(args, "read_url") or args.env.read_url,
        pool_size=args.env.pool_size if args.pool_size is None else args.pool_size,
        cache=args.env.database_cache,
        engines=engines,
    )


def config_from_args(args: argparse.Namespace, **fields: Any) -> EngineConfig:
    """The engine config the common flags describe (flag, then environment, then default)."""
    from ..config import engine_config

    return engine_config(
        env=args.env,
        workspace_arg=fields.pop("workspace", args.workspace),
        session_dirs=session_dirs(args),
        profile=args.profile,
        embedder=args.embedder,
        model=args.model,
        ollama_url=args.ollama_url,
        index_path=args.index_path,
        on_embedder_error=args.on_embedder_error,
        **fields,
    )


def parse_now(value: str | None) -> datetime | None:
    """``--now`` as an ISO date or datetime."""
    try:
        return parse_when(value)
    except ValueError as exc:
        raise CliError(f"--now {exc}") from None


def report_embedder(engine: MemorySearch | ScopedSearch, response: Any = None) -> None:
    """One stderr line naming the active embedder (text mode).

    A search over scopes says what its ``response`` was made with (each scope
    resolves its own embedder). The cause of a fallback is not repeated: the
    engine said it when it resolved the embedder.
    """
    c = getattr(engine, "choice", None) or response
    if c is None:
        return
    line = f"embedder: {c.provider}" + (f" ({c.model})" if c.model else "")
    if c.fallback:
        line += f", fallback {c.fallback}"
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


def embed_first(engine: MemorySearch | ScopedSearch) -> None:
    """Sync and embed what lacks a vector before answering (``--embed-first``).

    Over scopes, each folder's; a database scope is embedded by whoever writes it.

    Raises:
        CliError: The embedder failed (the text index is updated; rerun to resume).
    """
    from ..core.errors import EmbeddingError
    from ..engine import MemorySearch
    from ..engine.scoped import ScopedSearch

    local = [m for _, m in engine.members] if isinstance(engine, ScopedSearch) else [engine]
    try:
        for member in local:
            if isinstance(member, MemorySearch):
                member.update_index(progress=progress_bar)
    except EmbeddingError as exc:
        raise CliError(f"embedding stopped: {exc} (rerun to resume)", exc.action) from None


def progress_bar(total: int) -> Callable[[int], None] | None:
    """A tqdm bar on stderr for long embedding runs, only on a terminal."""
    if total <= 20 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar = tqdm(total=total, desc="embedding", unit="text", file=sys.stderr, leave=False)
    return bar.update
