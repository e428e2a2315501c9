"""``enhanced-memory index``: bring the index up to date (incremental)."""

from __future__ import annotations

import argparse

from ..core.errors import EmbeddingError
from ..core.text import escape_controls
from .common import (
    CliError,
    add_common_arguments,
    dump,
    engine_from_args,
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


def run(args: argparse.Namespace) -> int:
    """Sync the text state, embed what is missing, print the counts."""
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
    return 0
