"""``enhanced-memory salience``: which memory files need attention."""

from __future__ import annotations

import argparse

from ..analysis.salience import compute, format_text
from ..config import with_sessions, workspace_folder
from ..core.settings import MemorySettings
from ..store.workspace import require_memory
from .common import CliError, add_common_arguments, dump, parse_now


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory salience``."""
    add_common_arguments(p)
    p.add_argument("--top", type=int, default=3, help="items to list (default 3)")
    p.add_argument("--now", help="measure ages at this ISO datetime (default: now)")


def run(args: argparse.Namespace) -> int:
    """Print the prompts (or the original's JSON with ``--json``)."""
    if args.top < 1:
        raise CliError(f"--top must be at least 1, got {args.top}")
    workspace = workspace_folder(args.workspace, args.env)
    settings = with_sessions(MemorySettings(), args.env.session_dirs)
    require_memory(workspace, settings)
    result = compute(workspace, settings, now=parse_now(args.now), top=args.top)
    if args.json:
        dump(result)
    else:
        print(format_text(result))
    return 0
