"""``enhanced-memory status``: what is indexed, with which embedder, and what serves it.

Only reads: a folder with no index is said to have none (exit 0), one with no
memory is refused as a search refuses it (without --database), nothing is
indexed or written, and no resident engine is started.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..analysis.status import format_text, status
from .common import (
    CliError,
    add_common_arguments,
    add_scope_arguments,
    dump,
    engine_from_args,
    open_database,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory status``."""
    add_common_arguments(p)
    add_scope_arguments(p, many=False)


def run(args: argparse.Namespace) -> int:
    """Print the workspace's status (and the database's scopes with ``--database``)."""
    with engine_from_args(args) as engine:
        database = None
        if args.database or args.scope:
            database = open_database(args)  # says to give --database when neither gives a URL
        try:
            got = status(engine, database)
        finally:
            if database is not None:
                database.close()
    if args.scope:
        kept = tuple(s for s in got.scopes if s.name == args.scope)
        if not kept:
            raise CliError(f"no scope {args.scope} in the database")
        got = replace(got, scopes=kept)
    if args.json:
        dump(got.as_dict())
    else:
        print(format_text(got))
    return 0
