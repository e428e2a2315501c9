"""``enhanced-memory daemon start|stop|status|run``: the workspace's resident engine.

``start`` runs it in the background and waits until it answers; ``run`` runs
it in the foreground (what ``start`` and the automatic start launch); ``stop``
asks it to exit; ``status`` describes it (exit 1 when none runs). While it
runs, ``search`` and ``eval`` (and the skill scripts) are answered by it.
One serves a workspace at a time; it leaves on its own once its index
folder is deleted or replaced (``make clean`` stops it first).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Any

from ..config import caller_environ, load, with_sessions, workspace_folder
from ..core.settings import MemorySettings
from ..servers import client
from ..servers.resident import ResidentServer
from ..store import heap
from ..store.workspace import require_memory
from . import common
from .common import CliError, dump


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory daemon``."""
    p.add_argument("action", choices=("start", "stop", "status", "run"))
    p.add_argument("--workspace", help="workspace folder (default: as for search)")
    p.add_argument(
        "--idle-timeout",
        type=float,
        help="exit after this many seconds without a request (default: never)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    """Start, stop, describe or run the resident engine."""
    workspace = workspace_folder(args.workspace, args.env)
    if args.idle_timeout is not None and args.idle_timeout <= 0:
        raise CliError(f"--idle-timeout must be above 0, got {args.idle_timeout}")
    if args.action in ("run", "start"):  # before a resident engine writes anything there
        require_memory(workspace, with_sessions(MemorySettings(), args.env.session_dirs))
    if args.action == "run":
        return serve_here(workspace, args.idle_timeout)
    if args.action == "start":
        return _show(client.start_and_wait(workspace, args.idle_timeout), args.json)
    status = client.ask(workspace, "status")
    if args.action == "status":
        if status is None:
            print(f"no resident engine serves {workspace.resolve()}", file=sys.stderr)
            return 1
        return _show(status, args.json)
    if status is None:
        print(f"no resident engine serves {workspace.resolve()}", file=sys.stderr)
        return 0
    client.ask(workspace, "stop")
    client.wait_until(lambda: client.ask(workspace, "status") is None, "it did not stop")
    print(f"stopped the resident engine of {workspace.resolve()} (pid {status['pid']})")
    return 0


def _show(status: dict[str, Any], as_json: bool) -> int:
    if as_json:
        dump(status)
        return 0
    print(
        f"resident engine pid {status['pid']} serves {status['workspace']}"
        f" on {status['socket']} (version {status['version']},"
        f" {status.get('requests', 0)} requests)"
    )
    for e in status.get("engines", []):
        emb = e.get("embedding")
        line = f"  {e['index']}: {e['profile']}, {e['provider']}, {e['freshness']}"
        if emb:
            line += f", embedded {emb['done']}/{emb['total']}" + (
                " (running)" if emb["running"] else ""
            )
        print(line)
    return 0


def serve_here(workspace: Path, idle_timeout_s: float | None) -> int:
    """Serve ``workspace`` from this process until stopped or idle."""
    from ..engine import SearchPool

    heap.opt_in()  # the resident engine's own process: it may tune its allocator
    pool = SearchPool(watch=True, background_embedding=True)
    common.POOL = pool
    server = ResidentServer(
        workspace,
        _run_captured,
        idle_timeout_s=idle_timeout_s,
        busy=pool.busy,
        status=lambda: {"engines": pool.status()},
        gone=pool.moved,
    )
    try:
        server.serve(
            ready=lambda info: print(
                f"enhanced-memory: resident engine {info['pid']} on {info['socket']}",
                file=sys.stderr,
                flush=True,
            )
        )
    finally:
        common.POOL = None
        pool.close()
    return 0


def _run_captured(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[int, str, str]:
    """Run one command line here as the caller would have: its folder, its environment."""
    from . import execute

    saved_cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = execute(argv, caller_environ(env))
            except SystemExit as exc:  # argparse's --help
                rc = exc.code if isinstance(exc.code, int) else 0
    except OSError as exc:  # the caller's folder is gone
        return 2, "", f"enhanced-memory: error: {exc}\n"
    finally:
        load()  # this process's own settings again, for its threads between requests
        os.chdir(saved_cwd)
    return rc, out.getvalue(), err.getvalue()
