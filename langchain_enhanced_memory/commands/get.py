"""``enhanced-memory get``: read lines of a memory file."""

from __future__ import annotations

import argparse

from ..core.settings import MemorySettings
from ..engine import resolve_workspace
from ..store.logs import record_access
from ..store.notes import MAX_GET_LINES, get_lines
from .common import add_common_arguments, dump


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory get``."""
    add_common_arguments(p)
    p.add_argument("path", help="memory file, relative to the workspace (memory/2026-02-08.md)")
    p.add_argument("--from", dest="from_line", type=int, default=1, help="first line (1-based)")
    p.add_argument(
        "--lines", type=int, help=f"how many lines (default: to the end, max {MAX_GET_LINES})"
    )


def run(args: argparse.Namespace) -> int:
    """Print the lines (or ``{path, from, to, totalLines, truncated, text}`` with ``--json``)."""
    workspace = resolve_workspace(args.workspace)
    settings = MemorySettings()
    got = get_lines(workspace, args.path, args.from_line, args.lines, settings)
    record_access(workspace, settings, [got.path])
    if args.json:
        dump(got.as_dict())
    else:
        print(got.text)
    return 0
