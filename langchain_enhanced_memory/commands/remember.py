"""``enhanced-memory remember``: append a bullet to today's daily note or a memory file.

With ``--database URL --scope NAME`` the bullet goes to the database-backed
scope ``NAME`` (created by its first append) in one transaction, indexed with
this command's embedder: every host's next search finds it.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from ..config import workspace_folder
from ..core.errors import EnhancedMemoryError
from ..engine.database import DatabaseSearch
from ..store.append import AppendResult, append_memory, daily_path, today
from . import PROG
from .common import (
    CliError,
    add_common_arguments,
    add_scope_arguments,
    config_from_args,
    database_scope,
    dump,
    open_database,
    parse_now,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory remember``."""
    add_common_arguments(p)
    p.add_argument("text", help="what to remember (more lines: one bullet, indented)")
    p.add_argument("--section", help="header to put it under (created once), e.g. Decisions")
    p.add_argument(
        "--file", help="MEMORY.md or memory/...md instead of today's memory/YYYY-MM-DD.md"
    )
    p.add_argument("--now", help="what 'today' is, ISO date or datetime (default: now)")
    add_scope_arguments(p, many=False)


def run(args: argparse.Namespace) -> int:
    """Append the bullet; print where it landed (``{path, line, ...}`` with ``--json``).

    With ``--json`` a failure prints ``{path, error, action}`` on stdout (``path``:
    the file it was for, null when not known) and one line on stderr, exit 2.
    """
    try:
        now = parse_now(args.now)
        scope = database_scope(args)
        if scope is None:
            done = append_memory(
                workspace_folder(args.workspace, args.env),
                args.text,
                section=args.section,
                file=args.file,
                now=now,
            )
        else:
            done = _append_to_scope(args, scope, now)
    except EnhancedMemoryError as exc:
        if not args.json:
            raise
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        action = exc.action or f"see {PROG} remember --help"
        dump({"path": _aimed_at(args), "error": str(exc), "action": action})
        return 2
    if args.json:
        dump(done.as_dict() | ({"scope": args.scope} if args.scope else {}))
    else:
        where = f"scope {args.scope}: " if args.scope else ""
        print(f"remembered in {where}{done.path}:{done.line}")
    return 0


def _append_to_scope(args: argparse.Namespace, scope: str, now: datetime | None) -> AppendResult:
    """Append to database-backed ``scope``, indexed with the embedder the flags name."""
    if args.workspace:
        raise CliError("--workspace and --scope: a database scope's notes live in the database")
    config = config_from_args(args, workspace=".")
    with open_database(args, config.settings, replica=False) as db:  # writes: the primary
        engine = DatabaseSearch.from_config(db, scope, config)
        return engine.remember(args.text, section=args.section, file=args.file, now=now)


def _aimed_at(args: argparse.Namespace) -> str | None:
    """The file the failed call was for, as given."""
    if args.file is not None:
        return str(args.file)
    try:
        return daily_path(today(parse_now(args.now)))
    except CliError:
        return None
