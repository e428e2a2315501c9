"""``enhanced-memory remember``: append a bullet to today's daily note or a memory file."""

from __future__ import annotations

import argparse

from ..engine import resolve_workspace
from ..store.append import append_memory
from .common import add_common_arguments, dump, parse_now


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory remember``."""
    add_common_arguments(p)
    p.add_argument("text", help="what to remember")
    p.add_argument("--section", help="header to put it under (created once), e.g. Decisions")
    p.add_argument(
        "--file", help="MEMORY.md or memory/...md instead of today's memory/YYYY-MM-DD.md"
    )
    p.add_argument("--now", help="what 'today' is, ISO date or datetime (default: now)")


def run(args: argparse.Namespace) -> int:
    """Append the bullet; print where it landed (``{path, line, ...}`` with ``--json``)."""
    workspace = resolve_workspace(args.workspace)
    done = append_memory(
        workspace, args.text, section=args.section, file=args.file, now=parse_now(args.now)
    )
    if args.json:
        dump(done.as_dict())
    else:
        print(f"remembered in {done.path}:{done.line}")
    return 0
