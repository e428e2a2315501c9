"""``enhanced-memory serve``: answer POST /search over HTTP (loopback)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from ..core.errors import EmbeddingError
from ..servers.http import SearchServer
from .common import CliError, add_common_arguments, dump, engine_from_args


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory serve``."""
    add_common_arguments(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks one)")


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Run the server until interrupted (Ctrl-C or SIGTERM)."""
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port must be 0..65535, got {args.port}")
    engine = engine_from_args(args)
    try:
        engine.update_index()
    except EmbeddingError as exc:  # searches answer keyword-only until the embedder is back
        print(f"enhanced-memory: warning: {exc}", file=sys.stderr)
    try:
        server = SearchServer((args.host, args.port), engine)
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    host, port = str(server.server_address[0]), int(server.server_address[1])
    url = f"http://{host}:{port}"
    if args.json:
        dump({"url": url, "port": port, "workspace": str(engine.index.workspace)})
    print(f"enhanced-memory: serving {engine.index.workspace} on {url}", file=sys.stderr)
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
