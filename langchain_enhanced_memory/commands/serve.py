"""``enhanced-memory serve``: answer POST /search over HTTP (loopback)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from ..config import with_sessions, workspace_folder
from ..core.settings import MemorySettings
from ..engine import MemorySearch
from ..servers import client
from ..servers.http import SearchServer, allowed_hosts, is_loopback
from ..store import heap
from ..store.workspace import require_memory
from .common import (
    CliError,
    add_allow_host_argument,
    add_common_arguments,
    add_scope_arguments,
    dump,
    searcher_from_args,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory serve``."""
    add_common_arguments(p)
    add_scope_arguments(p, many=True)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks one)")
    add_allow_host_argument(p)
    p.add_argument(
        "--daemon",
        action="store_true",
        help="start the resident engine in the background instead (one-shot searches"
        " and the skill scripts then answer from it; see `enhanced-memory daemon`)",
    )


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Run the server until interrupted (Ctrl-C or SIGTERM)."""
    if args.daemon:
        if args.scope or args.database:
            raise CliError("--daemon serves one workspace: --scope and --database run in serve")
        workspace = workspace_folder(args.workspace, args.env)
        # Before the resident engine writes there.
        require_memory(workspace, with_sessions(MemorySettings(), args.env.session_dirs))
        status = client.start_and_wait(workspace)
        if args.json:
            dump(status)
        else:
            print(f"resident engine pid {status['pid']} serves {status['workspace']}")
        return 0
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port must be 0..65535, got {args.port}")
    try:
        allowed = allowed_hosts(args.host, args.allow_host)
    except ValueError as exc:
        raise CliError(f"--host/--allow-host: {exc}") from None
    if not is_loopback(args.host):
        print(
            f"enhanced-memory: warning: {args.host} is not a loopback address: anyone who can"
            " reach it can read these notes (serve has no authentication); it answers the"
            f" Host names {', '.join(sorted(allowed))} (add one with --allow-host)",
            file=sys.stderr,
        )
    heap.opt_in()  # this process is the server's own: it may tune its allocator
    # Long-lived: edits arrive as file-system events, vectors are embedded on a thread.
    engine = searcher_from_args(args, watch=True, background_embedding=True)
    if isinstance(engine, MemorySearch):
        engine.require_memory()  # serve writes no note: a folder without any is the wrong one
        engine.index.sync()
        serves = str(engine.index.workspace)
    else:
        serves = "scopes " + ", ".join(engine.scopes)
    try:
        server = SearchServer((args.host, args.port), engine, allowed)
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    host, port = str(server.server_address[0]), int(server.server_address[1])
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    if args.json:
        where = (
            {"workspace": serves} if isinstance(engine, MemorySearch) else {"scopes": engine.scopes}
        )
        dump({"url": url, "port": port, **where})
    print(f"enhanced-memory: serving {serves} on {url}", file=sys.stderr)
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        engine.close()
    return 0
