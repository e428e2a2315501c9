"""Shared launcher of the enhanced-memory skill scripts: runs the package's command line.

The scripts sit in ``WORKSPACE/skills/enhanced-memory/scripts/``, so, like the
original skill, they search that workspace unless ``--workspace``,
``$OPENCLAW_WORKSPACE_DIR`` or ``$MEMORY_DIR`` says otherwise. When this
``python3`` cannot import the package, the interpreter recorded by
``enhanced-memory skill install`` (``scripts/.python``) or the
``enhanced-memory`` command on ``PATH`` runs it instead.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE.parent.parent.parent
INSTALL_HINT = "pip install langchain-enhanced-memory"


def _with_workspace(argv: list[str]) -> list[str]:
    if "--workspace" in argv or any(a.startswith("--workspace=") for a in argv):
        return argv
    if os.environ.get("OPENCLAW_WORKSPACE_DIR") or os.environ.get("MEMORY_DIR"):
        return argv
    if (WORKSPACE / "memory").is_dir() or (WORKSPACE / "MEMORY.md").is_file():
        # Last, so that a nested sub-command (crossref build) parses it.
        return [*argv, "--workspace", str(WORKSPACE)]
    return argv  # the command falls back to the current folder


def _recorded_python() -> str | None:
    try:
        python = (HERE / ".python").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if (
        python
        and os.path.isfile(python)
        and os.path.realpath(python) != os.path.realpath(sys.executable)
    ):
        return python
    return None


def run(argv: list[str]) -> None:
    """Run ``enhanced-memory ARGV`` and exit with its status."""
    argv = _with_workspace(argv)
    try:
        from langchain_enhanced_memory.cli import main
    except ImportError:
        python = _recorded_python()
        if python:
            os.execv(python, [python, "-m", "langchain_enhanced_memory.cli", *argv])
        exe = shutil.which("enhanced-memory")
        if exe:
            os.execv(exe, [exe, *argv])
        message = "the langchain-enhanced-memory package is not installed"
        print(f"enhanced-memory: error: {message} ({INSTALL_HINT})", file=sys.stderr)
        if "--json" in argv:
            # openclaw.response.failure_json's shape (the package is not importable here).
            failure = {
                "results": [],
                "disabled": True,
                "unavailable": True,
                "error": message,
                "warning": message,
                "action": INSTALL_HINT,
                "debug": {"backend": "enhanced-memory", "effectiveMode": "unavailable",
                          "fallback": None},
            }  # fmt: skip
            print(json.dumps(failure))
        sys.exit(2)
    sys.exit(main(argv))
