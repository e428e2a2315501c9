"""``enhanced-memory index``: bring the index up to date (incremental); publish it to a scope.

With ``--database URL --scope NAME`` the workspace's index, once up to date,
is published as the folder-backed scope ``NAME``: every host can then search
it and ``get`` its notes without the folder. A scope published from another
host or folder is refused unless ``--take-over``.
"""

from __future__ import annotations

import argparse
import os
import socket

from ..core.errors import EmbeddingError
from ..core.text import escape_controls
from .common import (
    CliError,
    add_common_arguments,
    add_scope_arguments,
    database_scope,
    dump,
    engine_from_args,
    open_database,
    progress_bar,
    report_embedder,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory index``."""
    add_common_arguments(p)
    p.add_argument(
        "--compact",
        action="store_true",
        help="then merge the postings and vector segments into one each and reclaim the"
        " space of deleted rows and old side files (VACUUM)",
    )
    add_scope_arguments(p, many=False)
    p.add_argument(
        "--take-over",
        action="store_true",
        help="publish --scope from here although another host or folder published it",
    )


def run(args: argparse.Namespace) -> int:
    """Sync the text state, embed what is missing, publish to ``--scope``, print the counts."""
    scope = database_scope(args)
    if args.take_over and scope is None:
        raise CliError("--take-over needs --database URL --scope NAME")
    engine = engine_from_args(args)
    try:
        report, embedded = engine.update_index(progress=progress_bar)
    except EmbeddingError as exc:
        raise CliError(
            f"embedding stopped: {exc} (text index updated; embedded chunks kept, rerun to resume)",
            exc.action,
        ) from None
    compacted = engine.index.compact() if args.compact else None
    stats = engine.index.stats()
    choice = engine.choice
    out = {
        "workspace": str(engine.index.workspace),
        "index": str(engine.index.path),
        "files": stats["files"],
        "chunks": stats["chunks"],
        "changed": len(report.changed),
        "deleted": len(report.deleted),
        "skipped": report.skipped,
        "embedded": embedded,
        "provider": choice.provider,
        "model": choice.model,
        "fallback": choice.fallback,
    }
    if compacted:
        out["compacted"] = {"before_bytes": compacted[0], "after_bytes": compacted[1]}
    if scope is not None:
        ws = engine.index.workspace
        with open_database(args, engine.settings) as db:
            owner = f"{socket.gethostname()}:{os.path.realpath(ws)}"
            done = db.publish(
                scope, engine.index, engine.model_id, owner=owner, take_over=args.take_over
            )
        published = {
            "scope": scope,
            "database": db.shown,
            "generation": done.generation,
            "changed": len(done.changed),
            "deleted": len(done.deleted),
        }
        out["published"] = published
    if args.json:
        dump(out)
        return 0
    report_embedder(engine)
    print(
        f"indexed {out['files']} files, {out['chunks']} chunks"
        f" ({out['changed']} changed, {out['deleted']} deleted, {embedded} embedded)"
        f" -> {escape_controls(str(engine.index.path))}"
    )
    if compacted:
        mb = 1 << 20
        print(f"compacted {compacted[0] / mb:.1f} MB -> {compacted[1] / mb:.1f} MB")
    if scope is not None:
        print(
            f"published to scope {scope} of {published['database']}:"
            f" generation {published['generation']}"
            f" ({published['changed']} changed, {published['deleted']} deleted)"
        )
    return 0
