"""The sub-commands: one module each (``add_arguments`` and ``run``), and how one is run.

Only the chosen command's module is imported, so ``search --json`` in a fresh
process pays for numpy and SQLite, not for LangChain. :func:`execute` runs one
command line: every failure a user can act on prints one line on stderr (and,
with ``--json``, the OpenClaw failure object on stdout) and returns status 2;
nothing prints a traceback unless ``ENHANCED_MEMORY_DEBUG=1``. The entry point
(``cli.main``) and the resident engine both run commands through it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

__all__ = ["COMMANDS", "PROG", "build_parser", "execute", "print_error"]

PROG = "enhanced-memory"

# name -> one-line help; the module is langchain_enhanced_memory.commands.<name>.
COMMANDS: dict[str, str] = {
    "index": "bring the index up to date (incremental)",
    "status": "what is indexed, the embedder, the resident engine (reads only)",
    "search": "search the memory (OpenClaw memory_search JSON)",
    "eval": "measure retrieval quality on graded queries",
    "salience": "which memory files need attention",
    "crossref": "cross-references: build, show, graph",
    "get": "read lines of a memory file",
    "serve": "answer POST /search over HTTP (loopback)",
    "mcp": "serve the memory tools over MCP (stdio, or --http on loopback)",
    "remember": "append a note to today's daily note (or --file)",
    "forget": "remove remembered lines (--line N or --match TEXT) and their text from the index",
    "export": "write the original's vectors/crossrefs.json",
    "scopes": "a database's scopes: list, drop, rename",
    "skill": "install the OpenClaw skill into a workspace",
    "daemon": "the resident engine: start, stop, status, run",
}


class _ArgumentError(Exception):
    """A bad flag (from argparse), reported as one line."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, not usage dumps."""

    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(message)


def _command_of(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if a in COMMANDS), None)


def build_parser(
    command: str | None,
) -> tuple[argparse.ArgumentParser, Callable[[argparse.Namespace], int] | None]:
    """The top-level parser, with only ``command``'s arguments configured."""
    parser = _Parser(
        prog=PROG, description="Hybrid, date-aware search over an agent's markdown memory."
    )
    from ..core.version import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    runner = None
    for name, helptext in COMMANDS.items():
        p = sub.add_parser(name, help=helptext, description=helptext)
        if name == command:
            module = importlib.import_module(f"langchain_enhanced_memory.commands.{name}")
            module.add_arguments(p)
            runner = module.run
    return parser, runner


def execute(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    """Run one command line in this process; returns the exit status.

    Args:
        argv: The command line, without the program's name.
        environ: The environment it runs with (default ``os.environ``; the resident
            engine gives its caller's).
    """
    argv = list(argv)
    command = _command_of(argv)
    parser, runner = build_parser(command)
    try:
        args = parser.parse_args(argv)
    except _ArgumentError as exc:  # a bad flag or value: one line, and the failure JSON
        message = f"{command}: {exc}" if command else str(exc)
        action = f"see {PROG} {command} --help" if command else f"see {PROG} --help"
        return _fail(message, action, "--json" in argv)
    if runner is None:
        parser.print_help()
        return 2
    want_json = bool(getattr(args, "json", False))
    from ..config import load
    from ..core.errors import EnhancedMemoryError

    # Read once per command (the resident engine runs each with its caller's environment).
    args.env = env = load(environ)

    try:
        return runner(args)
    except EnhancedMemoryError as exc:
        return _fail(str(exc), exc.action, want_json)
    except KeyboardInterrupt:
        return _fail("interrupted", "", want_json, status=130)
    except BrokenPipeError:
        # The reader left (`| head`): writing the failure JSON to the same pipe would
        # raise again, and so would the flush at exit, so point stdout at /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # the last line of defence: never a traceback for users
        if env.process_settings.debug:
            raise
        return _fail(f"{type(exc).__name__}: {exc}".splitlines()[0], "", want_json, status=1)


def _fail(message: str, action: str, want_json: bool, status: int = 2) -> int:
    from ..openclaw.response import failure_json
    from .common import dump

    print_error(message)
    if want_json:
        dump(failure_json(message, action))
    return status


def print_error(message: str) -> None:
    """The one stderr line of a failure: ``enhanced-memory: error: MESSAGE``."""
    from ..core.text import escape_controls

    print(f"{PROG}: error: {escape_controls(message)}", file=sys.stderr)
