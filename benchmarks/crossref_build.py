"""Cross-reference build time on a synthetic 5,000-file workspace.

Writes ``--files`` markdown files (daily notes and topic files, 1-12 ``##``
sections each, words drawn from one or two of 300 themes plus common words, so
real links exist), indexes them, fills the embedding cache with random-
projection vectors (``synthetic.project``: 384-d, no model), then prints

- the full build time (representatives, threshold calibration, the blocked
  matrix products, top-k and the SQLite write),
- the incremental update time after editing ``--edit`` files,
- and what the graph holds (representatives, refs, threshold).

Usage::

    python benchmarks/crossref_build.py [--files 5000] [--edit 20] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import project  # noqa: E402

from langchain_enhanced_memory.core.settings import MemorySettings  # noqa: E402
from langchain_enhanced_memory.graph import queries  # noqa: E402
from langchain_enhanced_memory.graph import storage as crossref  # noqa: E402
from langchain_enhanced_memory.store.index import MemoryIndex  # noqa: E402
from langchain_enhanced_memory.store.upkeep import embed_missing  # noqa: E402

MODEL = "synthetic/projection-384"
COMMON = (
    "team meeting decided plan project release deploy review design budget note call email "
    "today week follow up idea question decision risk blocker deadline update status"
).split()


def _theme_words(rng: random.Random, n_themes: int) -> list[list[str]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [
        ["".join(rng.choices(letters, k=rng.randint(4, 9))) for _ in range(25)]
        for _ in range(n_themes)
    ]


def write_workspace(root: Path, n_files: int, seed: int = 0) -> None:
    """``n_files`` notes about one or two themes each."""
    rng = random.Random(seed)
    themes = _theme_words(rng, 300)
    for i in range(n_files):
        picked = rng.sample(themes, rng.choice((1, 1, 2)))
        sections = []
        for s in range(rng.randint(1, 12)):
            vocab = rng.choice(picked)
            words = [rng.choice(vocab if rng.random() < 0.6 else COMMON) for _ in range(40)]
            sections.append(f"## Section {s}\n\n{' '.join(words)}.\n")
        if i % 3:
            day = 1 + i % 28
            rel = (
                f"memory/{2020 + i // 336}/{2020 + i // 336}-{1 + (i // 28) % 12:02d}-{day:02d}.md"
            )
        else:
            rel = f"memory/topics/topic-{i}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\n" + "\n".join(sections), encoding="utf-8")


def seed_vectors(index: MemoryIndex) -> int:
    """Store random-projection vectors for every chunk and line lacking one."""
    return embed_missing(index, MODEL, project)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=5000)
    p.add_argument("--edit", type=int, default=20)
    p.add_argument("--keep", help="write the workspace here and keep it")
    args = p.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="crossref-bench-"))
    settings = MemorySettings(log_queries=False)
    try:
        t0 = time.perf_counter()
        write_workspace(root, args.files)
        index = MemoryIndex(root, settings)
        index.sync()
        seeded = seed_vectors(index)
        index.snapshot(MODEL)  # load the vector matrix once, as a search would have
        print(
            f"setup: {args.files} files, {seeded} chunks embedded, {time.perf_counter() - t0:.1f} s"
        )

        full = crossref.build(index, MODEL, settings, full=True)
        print(
            f"full build: {full.seconds:.2f} s  ({full.representatives} representatives,"
            f" {full.refs} refs from {full.chunks_with_refs} chunks, threshold {full.threshold})"
        )
        rng = random.Random(1)
        files = sorted(root.glob("memory/**/*.md"))
        for path in rng.sample(files, min(args.edit, len(files))):
            path.write_text(path.read_text() + "\n## Added\n\nfollow up deadline budget.\n")
        index.sync()
        seed_vectors(index)
        t1 = time.perf_counter()
        index.snapshot(MODEL)  # the first search after the edit pays this too
        print(f"reload the index snapshot after the edit: {time.perf_counter() - t1:.2f} s")
        inc = crossref.build(index, MODEL, settings)
        print(
            f"incremental after editing {args.edit} files: {inc.seconds:.2f} s"
            f"  ({inc.mode}, {inc.recomputed} of {inc.representatives} rows recomputed)"
        )
        t1 = time.perf_counter()
        queries.graph_summary(index)
        print(f"graph summary: {(time.perf_counter() - t1) * 1000:.0f} ms")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
