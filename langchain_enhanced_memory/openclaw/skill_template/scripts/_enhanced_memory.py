"""Shared launcher of the enhanced-memory skill scripts: runs the package's command line.

The scripts sit in ``WORKSPACE/skills/enhanced-memory/scripts/``, so, like the
original skill, they search that workspace unless ``--workspace``,
``$OPENCLAW_WORKSPACE_DIR`` or ``$MEMORY_DIR`` says otherwise. The
interpreter recorded by ``enhanced-memory skill install`` (``scripts/.python``)
runs it when it is another environment than this ``python3``: a venv's
``bin/python3`` is often a link to the very binary OpenClaw calls, so the two
are told apart by their environment (``sys.prefix``), not by the file. Without
a recorded one, this ``python3`` runs it if it has the package, else the
``enhanced-memory`` command on ``PATH``.
"""

from __future__ import annotations

import os
import sys

# os.path, not pathlib: every OpenClaw query starts this script, so its imports count.
HERE = os.path.dirname(os.path.realpath(__file__))
WORKSPACE = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
INSTALL_HINT = "pip install langchain-enhanced-memory"
# -c, not -m: runpy's imports cost each query milliseconds.
_MAIN = "from langchain_enhanced_memory.cli import run; run()"


def _with_workspace(argv: list[str]) -> list[str]:
    if "--workspace" in argv or any(a.startswith("--workspace=") for a in argv):
        return argv
    if os.environ.get("OPENCLAW_WORKSPACE_DIR") or os.environ.get("MEMORY_DIR"):
        return argv
    if os.path.isdir(os.path.join(WORKSPACE, "memory")) or os.path.isfile(
        os.path.join(WORKSPACE, "MEMORY.md")
    ):
        # Last, so that a nested sub-command (crossref build) parses it.
        return [*argv, "--workspace", WORKSPACE]
    return argv  # the command falls back to the current folder


def _recorded_python() -> str | None:
    """The recorded interpreter, when it lives in another environment than this one."""
    try:
        with open(os.path.join(HERE, ".python"), encoding="utf-8") as fh:
            python = fh.read().strip()
    except OSError:
        return None
    if not python or not os.path.isfile(python):
        return None
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        return None
    # bin/python3 of a venv: its environment is the folder holding pyvenv.cfg.
    env = os.path.dirname(os.path.dirname(python))
    prefix = env if os.path.isfile(os.path.join(env, "pyvenv.cfg")) else None
    if prefix is not None and os.path.realpath(prefix) == os.path.realpath(sys.prefix):
        return None  # the same venv, reached by another path
    if prefix is None and os.path.realpath(python) == os.path.realpath(sys.executable):
        return None  # the same plain interpreter
    return python


def run(argv: list[str]) -> None:
    """Run ``enhanced-memory ARGV`` and exit with its status."""
    argv = _with_workspace(argv)
    python = _recorded_python()
    if python:
        os.execv(python, [python, "-c", _MAIN, *argv])
    try:
        from langchain_enhanced_memory.cli import run
    except ImportError:
        import json
        import shutil

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
    run(argv)
