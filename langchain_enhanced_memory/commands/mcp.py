"""``enhanced-memory mcp``: the memory as an MCP server (stdio, or streamable HTTP on loopback)."""

from __future__ import annotations

import argparse
import sys

from ..core.errors import EmbeddingError, NoMemoryError
from ..servers.http import allowed_hosts
from ..store import heap
from .common import (
    CliError,
    add_allow_host_argument,
    add_common_arguments,
    add_scope_arguments,
    parse_now,
    searcher_from_args,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory mcp``."""
    add_common_arguments(p)
    add_scope_arguments(p, many=True)
    p.add_argument(
        "--http", action="store_true", help="serve streamable HTTP instead of stdio (at /mcp)"
    )
    p.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8766, help="HTTP port (default 8766)")
    add_allow_host_argument(p)
    p.add_argument(
        "--allow-write", action="store_true", help="offer memory_append (off: read-only memory)"
    )
    p.add_argument("--now", help="fixed clock for searches and 'today', ISO (default: now)")


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdio, or until interrupted (HTTP)."""
    if not 1 <= args.port <= 65535:
        raise CliError(f"--port must be 1..65535, got {args.port}")
    now = parse_now(args.now)
    try:
        allowed_hosts(args.host, args.allow_host)  # a bad name fails before the index is read
    except ValueError as exc:
        raise CliError(f"--host/--allow-host: {exc}") from None
    try:
        from ..servers.mcp import build_server
    except ImportError:
        raise CliError(
            "the MCP server needs the official MCP SDK",
            "pip install 'langchain-enhanced-memory[mcp]'",
        ) from None
    heap.opt_in()  # this process is the server's own: it may tune its allocator
    # Long-lived, like serve: follow file events, embed off the answering path.
    engine = searcher_from_args(args, watch=True, background_embedding=True)
    if engine.workspace is not None:
        try:
            engine.update_index()
        except NoMemoryError:
            if not args.allow_write:
                raise
            # A new agent's folder: its first memory_append makes it a workspace, and
            # memory_search answers a tool error until then.
        except EmbeddingError as exc:  # searches answer keyword-only until the embedder is back
            print(f"enhanced-memory: warning: {exc}", file=sys.stderr)
        serves = str(engine.workspace)
    else:
        serves = "scopes " + ", ".join(engine.scopes)
    server = build_server(
        engine,
        allow_write=args.allow_write,
        now=now,
        host=args.host,
        port=args.port,
        allow_hosts=args.allow_host,
    )
    if not args.http:
        server.run("stdio")
        return 0
    print(
        f"enhanced-memory: MCP on http://{args.host}:{args.port}/mcp for {serves}",
        file=sys.stderr,
        flush=True,
    )
    server.run("streamable-http")
    return 0
