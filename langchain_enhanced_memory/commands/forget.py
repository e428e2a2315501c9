"""``enhanced-memory forget``: remove remembered lines, and every copy of their text.

``forget PATH --line N`` removes that line's bullet (with its indented
continuation lines); ``forget --match TEXT`` every line holding TEXT (letter
case ignored) in the memory files, or in ``--file``. ``--dry-run`` lists what
would go and changes nothing. More than one block needs ``--yes``: a short
match can hold lines nobody meant, and a forget cannot be undone.

In a workspace the index then drops the text (synced, its embedding-cache rows
and query-log entries removed, compacted). With ``--database URL --scope
NAME`` the lines go from the database-backed scope's notes in one transaction,
and every segment that held them is deleted.
"""

from __future__ import annotations

import argparse
import sys

from ..config import workspace_folder
from ..core.errors import EnhancedMemoryError
from ..core.text import escape_controls
from ..engine.database import DatabaseSearch
from ..store.forget import Forgotten, forget
from . import PROG
from .common import (
    CliError,
    add_common_arguments,
    add_scope_arguments,
    config_from_args,
    database_scope,
    dump,
    open_database,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory forget``."""
    add_common_arguments(p)
    p.add_argument("path", nargs="?", help="the note (MEMORY.md or memory/...md)")
    p.add_argument(
        "--line", type=int, metavar="N", help="the line (1-based) whose bullet to remove"
    )
    p.add_argument(
        "--match", metavar="TEXT", help="remove every line holding this text (letter case ignored)"
    )
    p.add_argument("--file", metavar="PATH", help="with --match: only this note (the same as PATH)")
    p.add_argument("--dry-run", action="store_true", help="list what would go; change nothing")
    p.add_argument("--yes", action="store_true", help="remove them all when several lines match")
    add_scope_arguments(p, many=False)


def run(args: argparse.Namespace) -> int:
    """Forget; print what went (``{forgotten: [{path, line, text}], ...}`` with ``--json``).

    With ``--json`` a failure prints ``{error, action}`` on stdout and one line
    on stderr, exit 2.
    """
    try:
        if args.path and args.file and args.path != args.file:
            raise CliError("give the note once: PATH or --file")
        path = args.path or args.file
        scope = database_scope(args)
        if scope is None:
            config = config_from_args(args)
            gone = forget(
                workspace_folder(args.workspace, args.env),
                path=path,
                line=args.line,
                match=args.match,
                dry_run=args.dry_run,
                allow_many=args.yes,
                settings=config.settings,
                index_path=config.index_path,
            )
        else:
            gone = _forget_in_scope(args, scope, path)
    except EnhancedMemoryError as exc:
        if not args.json:
            raise
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        dump({"error": str(exc), "action": exc.action or f"see {PROG} forget --help"})
        return 2
    if args.json:
        dump(
            {"forgotten": [g.as_dict() for g in gone], "dry_run": args.dry_run}
            | ({"scope": args.scope} if args.scope else {})
        )
        return 0
    where = f"scope {args.scope}: " if args.scope else ""
    if not gone:
        print(f"nothing to forget in {where or 'the notes'}".rstrip(": "))
    verb = "would forget" if args.dry_run else "forgot"
    for g in gone:
        _show(f"{verb} {where}{g.path}:{g.line}", g)
    return 0


def _show(head: str, gone: Forgotten) -> None:
    """One removed block: ``head`` then its lines, indented."""
    print(escape_controls(head))
    for line in gone.text.split("\n"):
        print("    " + escape_controls(line))


def _forget_in_scope(args: argparse.Namespace, scope: str, path: str | None) -> list[Forgotten]:
    """Forget in database-backed ``scope``, its notes indexed again with the flags' embedder."""
    if args.workspace:
        raise CliError("--workspace and --scope: a database scope's notes live in the database")
    config = config_from_args(args, workspace=".")
    with open_database(args, config.settings, replica=False) as db:  # writes: the primary
        engine = DatabaseSearch.from_config(db, scope, config)
        return engine.forget(
            path=path,
            line=args.line,
            match=args.match,
            dry_run=args.dry_run,
            allow_many=args.yes,
        )
