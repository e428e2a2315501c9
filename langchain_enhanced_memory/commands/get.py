"""``enhanced-memory get``: read lines of a memory file (``--json``: OpenClaw's ``memory_get``).

With ``--database URL --scope NAME`` the note is read from the scope in the
database (a folder-backed scope's notes are published with its index).
"""

from __future__ import annotations

import argparse

from ..config import with_sessions, workspace_folder
from ..core.errors import MissingNoteError, NoteError
from ..core.settings import MemorySettings
from ..core.text import escape_controls
from ..openclaw.response import get_failure_json, get_json
from ..store.logs import record_access
from ..store.notes import MAX_GET_LINES, get_lines
from . import print_error
from .common import (
    CliError,
    add_common_arguments,
    add_scope_arguments,
    database_scope,
    dump,
    open_database,
    session_dirs,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory get``."""
    add_common_arguments(p)
    p.add_argument("path", help="memory file, relative to the workspace (memory/2026-02-08.md)")
    p.add_argument("--from", dest="from_line", type=int, default=1, help="first line (1-based)")
    p.add_argument(
        "--lines", type=int, help=f"how many lines (default: to the end, max {MAX_GET_LINES})"
    )
    add_scope_arguments(p, many=False)


def run(args: argparse.Namespace) -> int:
    r"""Print the lines (or OpenClaw's ``memory_get`` JSON with ``--json``).

    With ``--json`` a missing file answers ``{"text": "", "path"}`` (exit 0, as
    OpenClaw does) and a refused one ``{"path", "text": "", "disabled", "error"}``
    (exit 2); without it both are a one-line error. Printed for people, the
    text's control characters other than newline and tab are escaped (``\x1b``).
    """
    scope = database_scope(args)
    if scope is not None and args.workspace:
        raise CliError("--workspace and --scope: the scope's notes are read from the database")
    workspace = None
    settings = with_sessions(MemorySettings(), (*session_dirs(args), *args.env.session_dirs))
    try:
        if scope is None:
            workspace = workspace_folder(args.workspace, args.env)
            got = get_lines(workspace, args.path, args.from_line, args.lines, settings)
        else:
            with open_database(args, settings) as db:
                got = db.read(scope, args.path, args.from_line, args.lines)
    except NoteError as exc:
        if not args.json:
            raise
        missing = isinstance(exc, MissingNoteError)
        path = exc.path if isinstance(exc, MissingNoteError) else str(args.path)
        dump(get_failure_json(path, str(exc), missing=missing))
        if missing:
            return 0
        print_error(str(exc))
        return 2
    if workspace is not None:  # the access log lives in the workspace
        record_access(workspace, settings, [got.path])
    if args.json:
        dump(get_json(got))
    else:
        print(escape_controls(got.text, keep="\n\t"))  # the note's own lines and tabs
    return 0
