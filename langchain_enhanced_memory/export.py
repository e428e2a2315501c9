"""``enhanced-memory export``: write the original skill's files for tools that still read them.

``--vectors-json [PATH]`` writes ``memory/vectors.json`` (a list of ``{file,
header, line, text, embedding}``, one entry per indexed chunk, ``file``
relative to the workspace, ``line`` the 1-based first line) from the index and
its cached vectors, embedding what is missing first. ``--crossrefs-json
[PATH]`` writes ``memory/crossrefs.json`` from the cross-reference graph
(``enhanced-memory crossref build`` makes it). ``-`` writes to stdout. Files are
replaced atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .cli import CliError, add_common_arguments, dump, make_engine

VECTORS_JSON = "memory/vectors.json"
CROSSREFS_JSON = "memory/crossrefs.json"


def vectors_json(engine: Any) -> list[dict[str, Any]]:
    """The index as the original's ``vectors.json`` list (brings the index up to date first)."""
    from .embeddings import EmbeddingError

    if engine.model_id is None:
        reason = f": {engine.choice.reason}" if getattr(engine.choice, "reason", None) else ""
        raise CliError(
            f"--vectors-json needs an embedder, none is available{reason}",
            "start Ollama or pass --embedder local",
        )
    try:
        engine.update_index()
    except EmbeddingError as exc:
        raise CliError(
            f"embedding stopped: {exc}", "start Ollama or use --embedder local"
        ) from None
    snap = engine.index.snapshot(engine.model_id)
    if snap.vectors is None or snap.has_vector is None or not snap.has_vector.all():
        raise CliError("some chunks have no vector yet", "run `enhanced-memory index` again")
    rounded = np.round(snap.vectors.astype(np.float64), 7)
    return [
        {
            "file": snap.paths[i],
            "header": snap.header[i],
            "line": int(snap.start[i]),
            "text": snap.texts[i],
            "embedding": rounded[i].tolist(),
        }
        for i in range(len(snap))
    ]


def crossrefs_json(engine: Any) -> dict[str, Any]:
    """The cross-reference graph as the original's ``crossrefs.json``."""
    from .crossref import CrossrefError, export_crossrefs_json

    engine.index.sync()
    try:
        return export_crossrefs_json(engine.index)
    except CrossrefError as exc:
        raise CliError(str(exc), "run `enhanced-memory crossref build`") from None


def write_json(obj: Any, dest: str, workspace: Path, default: str) -> str:
    """Write ``obj`` to ``dest`` (``-``: stdout; relative paths: from the workspace).

    Returns:
        Where it went.
    """
    if dest == "-":
        json.dump(obj, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return "-"
    path = Path(dest or default)
    if not path.is_absolute():
        path = workspace / path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(obj, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    return str(path)


def add_cli_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory export``."""
    add_common_arguments(p)
    p.add_argument(
        "--vectors-json",
        nargs="?",
        const=VECTORS_JSON,
        metavar="PATH",
        help=f"write the original's vectors.json (default path {VECTORS_JSON}; - for stdout)",
    )
    p.add_argument(
        "--crossrefs-json",
        nargs="?",
        const=CROSSREFS_JSON,
        metavar="PATH",
        help=f"write the original's crossrefs.json (default path {CROSSREFS_JSON})",
    )


def run_cli(args: argparse.Namespace) -> int:
    """Run ``enhanced-memory export``."""
    if args.vectors_json is None and args.crossrefs_json is None:
        raise CliError("give --vectors-json and/or --crossrefs-json")
    if args.vectors_json == "-" and args.crossrefs_json == "-":
        raise CliError("only one export can go to stdout")
    engine = make_engine(args)
    ws = engine.index.workspace
    written: dict[str, Any] = {}
    if args.vectors_json is not None:
        rows = vectors_json(engine)
        written["vectors_json"] = write_json(rows, args.vectors_json, ws, VECTORS_JSON)
        written["chunks"] = len(rows)
    if args.crossrefs_json is not None:
        refs = crossrefs_json(engine)
        written["crossrefs_json"] = write_json(refs, args.crossrefs_json, ws, CROSSREFS_JSON)
        written["crossrefs"] = refs["total_crossrefs"]
    to_stdout = "-" in (args.vectors_json, args.crossrefs_json)
    if args.json and not to_stdout:
        dump(written)
    elif not to_stdout:
        for key in ("vectors_json", "crossrefs_json"):
            if key in written:
                print(f"wrote {written[key]}", file=sys.stderr)
    return 0
