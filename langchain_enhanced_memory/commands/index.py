"""``enhanced-memory index``: bring the index up to date (incremental); publish it to a scope.

With ``--database URL --scope NAME`` the workspace's index, once up to date,
is published as the folder-backed scope ``NAME``: every host can then search
it and ``get`` its notes without the folder. A scope published from another
host or folder is refused unless ``--take-over``. With ``--watch`` it keeps
running: each edit of the notes is indexed (and published) again, so the scope
follows the folder until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import TYPE_CHECKING

from ..core.errors import DatabaseError, EmbeddingError
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

if TYPE_CHECKING:
    from ..engine import MemorySearch

#: Seconds between two looks at the watcher's events (``--watch``), and after a failure.
_TICK_S, _RETRY_S = 0.5, 5.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory index``."""
    add_common_arguments(p)
    p.add_argument(
        "--compact",
        action="store_true",
        help="then merge the postings and vector segments into one each and reclaim the"
        " space of deleted rows and old side files (VACUUM); with --scope, also delete the"
        " scope's segments holding rows no file uses (what forget removed)",
    )
    add_scope_arguments(p, many=False)
    p.add_argument(
        "--take-over",
        action="store_true",
        help="publish --scope from here although another host or folder published it",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="then keep running: index (and publish to --scope) again after every edit of"
        " the notes, until Ctrl-C",
    )


def run(args: argparse.Namespace) -> int:
    """Sync the text state, embed what is missing, publish to ``--scope``, print the counts."""
    scope = database_scope(args)
    if args.take_over and scope is None:
        raise CliError("--take-over needs --database URL --scope NAME")
    if args.watch and args.compact:
        raise CliError("--watch and --compact do not go together")
    engine = engine_from_args(args, watch=args.watch)
    if scope is not None:  # a publish that will be refused is refused before the index run
        with open_database(args, engine.settings, replica=False) as db:
            db.check_publisher(scope, owner=_owner(engine), take_over=args.take_over)
    try:
        report, embedded = engine.update_index(progress=progress_bar)
    except EmbeddingError as exc:
        raise CliError(
            f"embedding stopped: {exc} (text index updated; embedded chunks kept, rerun to resume)",
            exc.action,
        ) from None
    compacted = engine.compact() if args.compact else None
    stats = engine.stats()
    choice = engine.choice
    out = {
        "workspace": str(engine.workspace),
        "index": str(engine.index_path),
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
        with open_database(args, engine.settings, replica=False) as db:
            done = engine.publish(
                db,
                scope,
                owner=_owner(engine),
                take_over=args.take_over,
                compact=args.compact,
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
        sys.stdout.flush()
        return _follow(args, engine, scope) if args.watch else 0
    report_embedder(engine)
    print(
        f"indexed {out['files']} files, {out['chunks']} chunks"
        f" ({out['changed']} changed, {out['deleted']} deleted, {embedded} embedded)"
        f" -> {escape_controls(str(engine.index_path))}"
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
    if args.watch:
        sys.stdout.flush()
        return _follow(args, engine, scope)
    return 0


def _owner(engine: MemorySearch) -> str:
    from ..store.database import local_owner

    return local_owner(engine.workspace)


def _follow(args: argparse.Namespace, engine: MemorySearch, scope: str | None) -> int:
    """Index (and publish) again after each edit until SIGINT or SIGTERM; one line per pass.

    The embedder or the database away is said once a try and tried again a few
    seconds later (the previous generation stays searchable meanwhile); a scope
    another host took over ends the run (exit 2).
    """
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    where = f" and publishing to scope {scope}" if scope else ""
    shown = escape_controls(str(engine.workspace))
    print(f"watching {shown}{where}; Ctrl-C stops", file=sys.stderr, flush=True)
    done = engine.generation()
    publishing = open_database(args, engine.settings, replica=False) if scope else None
    with publishing if publishing is not None else contextlib.nullcontext() as db:
        wait = _TICK_S
        while not stop.wait(wait):
            wait = _TICK_S
            try:
                engine.freshness.refresh()  # syncs what the watcher saw change
                generation = engine.generation()
                if generation == done:
                    continue
                embedded = engine.embed_missing()
                passed: dict = {"generation": generation, "embedded": embedded}
                if db is not None and scope is not None:
                    out = engine.publish(
                        db,
                        scope,
                        owner=_owner(engine),
                        take_over=args.take_over,
                    )
                    passed["published"] = {
                        "scope": scope,
                        "generation": out.generation,
                        "changed": len(out.changed),
                        "deleted": len(out.deleted),
                    }
                done = generation
                _said(passed, args.json)
            except (DatabaseError, EmbeddingError) as exc:
                problem = escape_controls(str(exc))
                print(f"warning: {problem}; trying again", file=sys.stderr, flush=True)
                wait = _RETRY_S
    engine.close()
    print("stopped", file=sys.stderr, flush=True)
    return 0


def _said(passed: dict, as_json: bool) -> None:
    """One line of ``--watch`` per pass."""
    if as_json:
        dump(passed)
        sys.stdout.flush()
        return
    line = f"indexed generation {passed['generation']} ({passed['embedded']} embedded)"
    if "published" in passed:
        p = passed["published"]
        line += (
            f"; published generation {p['generation']} of scope {p['scope']}"
            f" ({p['changed']} changed, {p['deleted']} deleted)"
        )
    print(line, flush=True)
