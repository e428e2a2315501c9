"""``enhanced-memory scopes list|drop NAME --yes|rename OLD NEW``: a database's scopes.

``list`` shows each scope's backing, owner, generation, files, chunks and last
change; ``drop`` deletes a scope and everything it holds (refused without
``--yes``, saying what would go); ``rename`` moves a scope whole to a new name.
Each takes ``--database`` (default ``$ENHANCED_MEMORY_DATABASE_URL``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.scopes import validate_scope
from ..core.text import escape_controls
from .common import CliError, add_database_arguments, dump, open_database

if TYPE_CHECKING:
    from ..store.database.scopes import ScopeInfo


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory scopes``."""
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="every scope: backing, owner, generation, files, chunks")
    d = sub.add_parser("drop", help="delete a scope and all its notes, files and segments")
    d.add_argument("name", metavar="NAME", help="the scope to drop")
    d.add_argument("--yes", action="store_true", help="drop it (without: say what would go)")
    r = sub.add_parser("rename", help="give a scope a new name, its content kept")
    r.add_argument("old", metavar="OLD", help="the scope's name")
    r.add_argument("new", metavar="NEW", help="its new name (no scope may have it)")
    for each in (ls, d, r):
        add_database_arguments(each)
        each.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """List, drop or rename; print what was done."""
    names = [args.name] if args.action == "drop" else []
    if args.action == "rename":
        names = [args.old, args.new]
    for name in names:
        validate_scope(name)  # before any connection
    with open_database(args, replica=False) as db:  # the primary: it has every change
        if args.action == "list":
            return _list(db.scopes(), args.json)
        if args.action == "drop":
            if not args.yes:
                info = db.scope(args.name)
                raise CliError(
                    f"refused: scopes drop {args.name} would delete its {_what(info)}"
                    f" ({info.backing}-backed); pass --yes to drop it",
                    f"enhanced-memory export --scope {args.name} DIR keeps a copy of its notes",
                )
            info = db.drop_scope(args.name)
            verb = "dropped"
        else:
            info = db.rename_scope(args.old, args.new)
            verb = f"renamed {args.old} to"
    if args.json:
        done = {"action": args.action, "scope": info.as_dict()}
        if args.action == "rename":
            done["old"] = args.old
        dump(done)
    else:
        print(f"{verb} scope {info.name} ({info.backing}-backed: {_what(info)})")
    return 0


def _what(info: ScopeInfo) -> str:
    """What a scope holds, in words: ``2 files and 5 chunks``."""
    return f"{_count(info.files, 'file')} and {_count(info.chunks, 'chunk')}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _list(scopes: list[ScopeInfo], as_json: bool) -> int:
    if as_json:
        dump({"scopes": [s.as_dict() for s in scopes]})
        return 0
    if not scopes:
        print("no scopes")
        return 0
    rows = [("NAME", "BACKING", "GENERATION", "FILES", "CHUNKS", "UPDATED", "OWNER")]
    for s in scopes:
        when = s.updated.isoformat(timespec="seconds") if s.updated else "-"
        owner = escape_controls(s.owner) if s.owner else "-"
        rows.append(
            (s.name, s.backing, str(s.generation), str(s.files), str(s.chunks), when, owner)
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0
