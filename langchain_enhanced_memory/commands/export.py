"""``enhanced-memory export``: the original's vectors.json and crossrefs.json, or a scope's notes.

``export --vectors-json``/``--crossrefs-json`` write the original's files of
the workspace's index; ``export --database URL --scope NAME DIR`` writes the
notes of scope ``NAME`` under ``DIR`` as a workspace (``MEMORY.md``,
``memory/...``), e.g. to keep a copy or to move a scope to a folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..openclaw.export import (
    CROSSREFS_JSON,
    VECTORS_JSON,
    crossrefs_json,
    vectors_json,
    write_json,
)
from .common import (
    CliError,
    add_common_arguments,
    add_scope_arguments,
    database_scope,
    dump,
    engine_from_args,
    open_database,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory export``."""
    add_common_arguments(p)
    p.add_argument(
        "--vectors-json",
        nargs="?",
        const=VECTORS_JSON,
        metavar="PATH",
        help=f"write the original's vectors.json (default path {VECTORS_JSON}; - for stdout)",
    )
    p.add_argument(
        "--crossrefs-json",
        nargs="?",
        const=CROSSREFS_JSON,
        metavar="PATH",
        help=f"write the original's crossrefs.json (default path {CROSSREFS_JSON})",
    )
    add_scope_arguments(p, many=False)
    p.add_argument(
        "folder", nargs="?", metavar="DIR", help="with --scope: where to write its notes"
    )


def run(args: argparse.Namespace) -> int:
    """Write the requested files (``-``: stdout), or the notes of ``--scope`` under DIR."""
    scope = database_scope(args)
    if scope is not None:
        return _export_scope(args, scope)
    if args.folder is not None:
        raise CliError("DIR is where a scope's notes go: give --database URL --scope NAME too")
    if args.vectors_json is None and args.crossrefs_json is None:
        raise CliError("give --vectors-json and/or --crossrefs-json")
    if args.vectors_json == "-" and args.crossrefs_json == "-":
        raise CliError("only one export can go to stdout")
    engine = engine_from_args(args)
    ws = engine.workspace
    written: dict[str, Any] = {}

    def put(key: str, obj: Any, dest: str, default: str) -> None:
        if dest == "-":
            json.dump(obj, sys.stdout, ensure_ascii=False)
            sys.stdout.write("\n")
            written[key] = "-"
        else:
            written[key] = str(write_json(obj, dest, ws, default))

    if args.vectors_json is not None:
        rows = vectors_json(engine)
        put("vectors_json", rows, args.vectors_json, VECTORS_JSON)
        written["chunks"] = len(rows)
    if args.crossrefs_json is not None:
        refs = crossrefs_json(engine)
        put("crossrefs_json", refs, args.crossrefs_json, CROSSREFS_JSON)
        written["crossrefs"] = refs["total_crossrefs"]
    to_stdout = "-" in (args.vectors_json, args.crossrefs_json)
    if args.json and not to_stdout:
        dump(written)
    elif not to_stdout:
        for key in ("vectors_json", "crossrefs_json"):
            if key in written:
                print(f"wrote {written[key]}", file=sys.stderr)
    return 0


def _export_scope(args: argparse.Namespace, scope: str) -> int:
    """Write the notes of ``scope`` under ``args.folder``; print what was written."""
    if args.folder is None:
        raise CliError("give the DIR to write the notes of scope " + scope + " to")
    if args.vectors_json is not None or args.crossrefs_json is not None or args.workspace:
        raise CliError(
            "--scope exports the scope's notes: no --workspace, --vectors-json"
            " or --crossrefs-json with it"
        )
    with open_database(args) as db:
        written = db.export(scope, args.folder)
    if args.json:
        dump({"scope": scope, "folder": args.folder, "files": written})
    else:
        print(f"wrote {len(written)} notes of scope {scope} to {args.folder}", file=sys.stderr)
    return 0
