"""``enhanced-memory skill install``: write the OpenClaw skill folder into a workspace."""

from __future__ import annotations

import argparse

from ..config import workspace_folder
from ..openclaw.skill import SKILL_NAME, install
from .common import add_common_arguments, dump


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory skill``."""
    add_common_arguments(p)
    p.add_argument("action", choices=("install",), help="install: write WORKSPACE/skills/...")
    p.add_argument("--force", action="store_true", help="overwrite files that differ")


def run(args: argparse.Namespace) -> int:
    """Run ``enhanced-memory skill install``."""
    target, written = install(workspace_folder(args.workspace, args.env), force=args.force)
    if args.json:
        dump({"skill": str(target), "files": written})
    else:
        print(f"installed the {SKILL_NAME} skill in {target} ({len(written)} files)")
    return 0
