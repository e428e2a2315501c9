"""Migration from the original skill's ``memory/vectors.json``: reuse its vectors.

The original wrote ``memory/vectors.json``, a list of ``{file, header, line,
text, embedding}``: one entry per header chunk, the vector of ``text[:2000]``
with no task prefix, and no model name. When the model we are configured with is
the model that file was made with, its vectors seed our embedding cache, so the
first ``index`` run re-embeds nothing the original already embedded.

Which model made the file: it records none, so we take the original's own rule,
``$EMBED_MODEL`` or ``nomic-embed-text``. It matches when our embedder is Ollama
with that model name (an implicit ``:latest`` tag is ignored), every vector has
the same dimension, and that dimension equals the model's known one (or, for a
model we do not know, the dimension of vectors already cached for it).

How a vector is assigned to one of our chunks: the chunk's lines are re-cut the
original's way (a piece per ``#``..``####`` header). A piece whose text is an
entry's text takes that entry's vector; a first or last piece that is only part
of an original chunk (our chunker split a long section) takes the vector of the
entry in the same file that contains it. A chunk whose pieces all found a vector
gets their length-weighted mean (one piece: the entry's vector, unchanged);
any other chunk is embedded as usual. In the ``original`` profile our chunks are
the original's, so every vector is reused exactly. In the default profile the
embedder would have seen the header chain too and header-only sections folded
in, so a reused vector stands in for the one we would compute; it is replaced
when the chunk's text changes (or rebuild the index to replace them all). Our
Ollama embedder also adds nomic's ``search_document:`` prefix, which the original
never sent: migrated vectors are unprefixed either way.

Each ``vectors.json`` (by size and modification time) is read once per model and
chunker; later runs skip it with one ``stat``.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.original import OriginalChunker
from . import process
from .sync import mean_line_hashes

if TYPE_CHECKING:
    from .index import MemoryIndex

log = logging.getLogger("langchain_enhanced_memory")

VECTORS_JSON = "memory/vectors.json"
DEFAULT_SOURCE_MODEL = "nomic-embed-text"
# Vector sizes of the Ollama embedding models people used with the original.
KNOWN_DIMS: dict[str, int] = {
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "bge-m3": 1024,
    "snowflake-arctic-embed": 1024,
}
_MARKER = "vectors_json:"


class MigrationError(ValueError):
    """``vectors.json`` cannot be used (one-line message)."""


@dataclass(frozen=True)
class Entry:
    """One chunk of the original's ``vectors.json``."""

    file: str
    header: str
    line: int
    text: str


@dataclass
class MigrationReport:
    """What a seeding pass did."""

    path: str
    source_model: str
    seeded: int = 0
    exact: int = 0
    entries: int = 0
    skipped_reason: str | None = None


def source_model() -> str:
    """The model the original skill embedded with: ``$EMBED_MODEL`` or ``nomic-embed-text``."""
    return process.current().original_model or DEFAULT_SOURCE_MODEL


def _bare(name: str) -> str:
    name = name.strip().lower()
    return name.removesuffix(":latest")


def load_vectors_json(path: str | Path) -> tuple[list[Entry], np.ndarray]:
    """Read the original's ``vectors.json``.

    Entries without a text or a numeric vector are skipped; zero vectors too.

    Returns:
        The entries and their L2-normalised vectors as a float32 matrix.

    Raises:
        MigrationError: Unreadable, not a JSON list, or vectors of unequal size.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise MigrationError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MigrationError(f"{path} is not JSON ({exc})".splitlines()[0]) from None
    if not isinstance(data, list):
        raise MigrationError(f"{path}: expected a list of {{file, header, line, text, embedding}}")
    entries: list[Entry] = []
    rows: list[Any] = []
    for item in data:
        if not isinstance(item, dict):
            continue
        text, emb = item.get("text"), item.get("embedding")
        if not isinstance(text, str) or not isinstance(emb, list) or not emb:
            continue
        line = item.get("line")
        entries.append(
            Entry(
                file=str(item.get("file") or ""),
                header=str(item.get("header") or ""),
                line=line if isinstance(line, int) else 0,
                text=text,
            )
        )
        rows.append(emb)
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    if len({len(r) for r in rows}) > 1:
        raise MigrationError(f"{path}: vectors have unequal dimensions")
    try:
        matrix = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        raise MigrationError(f"{path}: vectors hold non-numeric values") from None
    norms = np.linalg.norm(matrix, axis=1)
    ok = np.isfinite(norms) & (norms > 0)
    entries = [e for e, good in zip(entries, ok, strict=True) if good]
    matrix = (matrix[ok] / norms[ok, None]).astype(np.float32)
    return entries, matrix


def model_mismatch(model_id: str, source: str, dim: int, cached_dim: int | None) -> str | None:
    """Why vectors of ``source`` (``dim``-d) cannot serve ``model_id``, or None when they can."""
    provider, _, model = model_id.partition("/")
    if provider != "ollama":
        return f"the embedder is {provider}, vectors.json holds Ollama {source} vectors"
    if _bare(model) != _bare(source):
        return f"the model is {model}, vectors.json holds {source} vectors (set EMBED_MODEL)"
    expected = KNOWN_DIMS.get(_bare(model).split(":")[0], cached_dim)
    if expected is not None and expected != dim:
        return f"vectors.json holds {dim}-d vectors, {model} makes {expected}-d ones"
    return None


def _file_key(file: str, workspace: Path) -> str:
    p = file.replace("\\", "/")
    if os.path.isabs(p):
        try:
            p = Path(p).resolve().relative_to(workspace.resolve()).as_posix()
        except ValueError:
            return p
    return p.removeprefix("./")


class _Matcher:
    """Finds the original's vector(s) for one of our chunks."""

    def __init__(self, entries: list[Entry], vectors: np.ndarray, workspace: Path) -> None:
        self.vectors = vectors
        self.by_text: dict[str, int] = {}
        self.by_file: dict[str, list[int]] = {}
        for i, e in enumerate(entries):
            self.by_text.setdefault(e.text.strip(), i)
            self.by_file.setdefault(_file_key(e.file, workspace), []).append(i)
        self.texts = [e.text for e in entries]

    def _containing(self, path: str, piece: str) -> int | None:
        for key in (path, path.removeprefix("memory/")):
            for i in self.by_file.get(key, ()):
                if piece in self.texts[i]:
                    return i
        return None

    def vector(self, path: str, text: str, cut: OriginalChunker) -> tuple[np.ndarray | None, bool]:
        """The vector for chunk ``text`` of ``path`` and whether it is an entry's own."""
        pieces = cut(text.split("\n"), path.rsplit("/", 1)[-1])
        if not pieces:
            return None, False
        found: list[tuple[int, int]] = []
        for n, piece in enumerate(pieces):
            body = piece.text.strip()
            i = self.by_text.get(body)
            if i is None and n in (0, len(pieces) - 1):
                i = self._containing(path, body)  # a part of a longer original chunk
            if i is None:
                return None, False
            found.append((i, min(len(body), 2000)))
        if len(found) == 1:
            i = found[0][0]
            return self.vectors[i], self.texts[i].strip() == text.strip()
        weights = np.asarray([w for _, w in found], dtype=np.float64)
        mean = (weights[:, None] * self.vectors[[i for i, _ in found]]).sum(axis=0)
        norm = float(np.linalg.norm(mean))
        return ((mean / norm).astype(np.float32) if norm > 0 else None), False


def seed_from_vectors_json(
    index: MemoryIndex,
    model_id: str,
    *,
    path: str | Path | None = None,
    source: str | None = None,
    force: bool = False,
) -> MigrationReport | None:
    """Seed ``index``'s embedding cache for ``model_id`` from the original's ``vectors.json``.

    Args:
        index: A synced index (its chunks are what gets matched).
        model_id: The cache key of our embedder, e.g. ``"ollama/nomic-embed-text"``.
        path: The file; default ``WORKSPACE/memory/vectors.json``.
        source: The model that made it; default :func:`source_model`.
        force: Read the file even when this version of it was already used.

    Returns:
        The report, or None when there is no such file or it was already used.
    """
    vj = Path(path) if path else index.workspace / VECTORS_JSON
    try:
        st = vj.stat()
    except OSError:
        return None
    source = source or source_model()
    stamp = f"{st.st_size}:{st.st_mtime_ns}:{index.chunker_signature}"
    key = _MARKER + model_id
    if index.meta(key) == stamp and not force:
        return None
    report = MigrationReport(path=str(vj), source_model=source)
    try:
        entries, vectors = load_vectors_json(vj)
    except MigrationError as exc:
        report.skipped_reason = str(exc)
    else:
        report.entries = len(entries)
        if entries:
            report.skipped_reason = model_mismatch(
                model_id, source, vectors.shape[1], index.vector_dim(model_id)
            )
            if report.skipped_reason is None:
                _seed(index, model_id, _Matcher(entries, vectors, index.workspace), report)
    if report.skipped_reason:
        log.warning("not reusing %s: %s", vj, report.skipped_reason)
    index.set_meta(key, stamp)
    return report


def _seed(index: MemoryIndex, model_id: str, matcher: _Matcher, report: MigrationReport) -> None:
    with index.connect() as conn:
        rows = conn.execute(
            "SELECT embed_hash, path, text, line_hashes FROM chunks ORDER BY id"
        ).fetchall()
    has = index.with_vector(model_id, [r[0] for r in rows])
    rows = [row for row, held in zip(rows, has, strict=True) if not held]
    hashes: list[str] = []
    vecs: list[np.ndarray] = []
    seen: set[str] = set()
    cut = OriginalChunker(index.settings.chunker)
    for embed_hash, path, text, digests in rows:
        if embed_hash in seen or mean_line_hashes(digests, index.settings):
            continue  # a chunk whose vector is its lines' mean: the lines get embedded
        vec, exact = matcher.vector(path, text, cut)
        if vec is None:
            continue
        seen.add(embed_hash)
        hashes.append(embed_hash)
        vecs.append(vec)
        report.exact += exact
    if hashes:
        index.store_embeddings(model_id, hashes, np.vstack(vecs))
    report.seeded = len(hashes)
    log.info(
        "reused %d vectors from %s (%d exactly the original's)",
        report.seeded,
        report.path,
        report.exact,
    )
