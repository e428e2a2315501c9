"""``enhanced-memory eval``: retrieval quality and latency on graded queries."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from ..analysis.evaluation import evaluate, format_table, load_queries, parse_overrides
from ..config import engine_config
from ..core.errors import SettingsError
from ..core.settings import MemorySettings
from ..core.text import escape_controls
from ..engine import MemorySearch
from .common import (
    CliError,
    add_common_arguments,
    add_no_daemon_argument,
    dump,
    embed_first,
    progress_bar,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory eval``."""
    add_common_arguments(p)
    add_no_daemon_argument(p)
    p.add_argument(
        "--root", required=True, help="folder holding one workspace per query 'workspace'"
    )
    p.add_argument("--queries", required=True, help="graded queries (JSON lines)")
    p.add_argument("--k", type=int, default=10, help="results per query (default 10)")
    p.add_argument("--out", help="write ranked results here, in the scorer's format")
    p.add_argument("--only", help="comma-separated workspaces to run (default: all)")
    p.add_argument(
        "--no-embed-first",
        action="store_true",
        help="do not embed what lacks a vector first (answers are keyword-only meanwhile)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a MemorySettings field, e.g. --set prf_enabled=true (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    """Run every query against its workspace and print the metrics."""
    root = Path(args.root)
    if not root.is_dir():
        raise CliError(f"--root not found: {root}")
    queries = load_queries(args.queries)
    if args.only:
        keep = set(args.only.split(","))
        queries = [q for q in queries if q.get("workspace") in keep]
    profile = args.profile or "default"
    overrides = parse_overrides(args.overrides)
    if "profile" in overrides:
        raise CliError("bad --set: profile is chosen with --profile")
    try:
        # Evaluation is not a user's search: it leaves no query or access logs.
        settings = MemorySettings(**{"log_queries": False, **overrides, "profile": profile})
    except SettingsError as exc:
        raise CliError(f"bad --set: {exc}") from None
    base = engine_config(
        env=args.env,
        workspace_arg=root,
        profile=profile,
        embedder=args.embedder,
        model=args.model,
        ollama_url=args.ollama_url,
        # A figure must not silently change meaning: keyword-only only when asked for.
        on_embedder_error=args.on_embedder_error or "fail",
        settings=settings,
    )

    def engine_for(ws: Path) -> MemorySearch:
        # Each workspace keeps its own index (never $ENHANCED_MEMORY_INDEX).
        engine = MemorySearch.from_config(replace(base, workspace=ws, index_path=None))
        if not args.no_embed_first:  # else a fresh workspace measures the keyword-only ranking
            embed_first(engine)
        return engine

    summary, results = evaluate(root, queries, engine_for, args.k, progress=progress_bar)
    summary.update(profile=profile, overrides=overrides)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for q in queries:
                row = {"id": q["id"], "results": results.get(q["id"], [])}
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    if args.json:
        dump(summary)
    else:
        print(
            escape_controls(
                f"profile {profile} {summary['overrides'] or ''}, embedder {summary['provider']}"
                f" ({summary['model']}), fallback {summary['fallback']}"
            ),
            file=sys.stderr,
        )
        print(escape_controls(format_table(summary), keep="\n"))  # categories: the queries'

    return 0
