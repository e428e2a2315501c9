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

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import EmbeddingError, ExportError

if TYPE_CHECKING:
    from ..engine import MemorySearch

VECTORS_JSON = "memory/vectors.json"
CROSSREFS_JSON = "memory/crossrefs.json"


def vectors_json(engine: MemorySearch) -> list[dict[str, Any]]:
    """The index as the original's ``vectors.json`` list (brings the index up to date first).

    Raises:
        ExportError: No embedder, or some chunk still lacks a vector.
        EmbeddingError: The embedder failed while catching up.
    """
    if engine.model_id is None:
        reason = f": {engine.choice.reason}" if engine.choice.reason else ""
        raise ExportError(
            f"--vectors-json needs an embedder, none is available{reason}",
            "start Ollama or pass --embedder local",
        )
    try:
        engine.update_index()
    except EmbeddingError as exc:
        raise ExportError(
            f"embedding stopped: {exc}", "start Ollama or use --embedder local"
        ) from None
    snap = engine.snapshot(engine.model_id)
    dense = snap.dense_vectors()
    if dense is None or snap.has_vector is None or not snap.has_vector.all():
        raise ExportError("some chunks have no vector yet", "run `enhanced-memory index` again")
    rounded = np.round(dense.astype(np.float64), 7)
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


def crossrefs_json(engine: MemorySearch) -> dict[str, Any]:
    """The cross-reference graph as the original's ``crossrefs.json``.

    Raises:
        CrossrefError: No graph has been built.
    """
    return engine.export_crossrefs()


def write_json(obj: Any, dest: str, workspace: Path, default: str) -> Path:
    """Write ``obj`` as JSON to ``dest`` atomically (relative paths: from the workspace).

    Returns:
        Where it went.

    Raises:
        ExportError: The file cannot be written.
    """
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
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
