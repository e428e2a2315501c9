"""Where a cold embedding run's time goes along a vector's way to its segment file.

Writes a seeded synthetic workspace (``synthetic.generate``), syncs its text,
then profiles ``MemorySearch.embed_missing`` with the fake embedder
(``synthetic.ProjectionEmbeddings``) and prints the cumulative seconds of each
step of the way: the plan, the batches' spool appends (the flushes), then the
seal (the gather from the spool and segments, and the segment file written),
with how many calls each took: a flush written as a file of its own would add
a rename made durable per flush (the last row).
These are the figures that say whether the spool and the fold earn their
place (issue 38): under a profiler, so compare the shares, not the totals,
with ``speed.py``. The profiler sees the run's own thread only: the
embedder's batches run on threads of their own, and the time the run waits
for them is in the total, not in a step.

Run ``python benchmarks/vector_path.py --size 10000``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402

from langchain_enhanced_memory.engine import MemorySearch  # noqa: E402

#: (module, function) of each step, in the order a vector passes them.
STEPS = [
    ("folding.py", "missing_plan", "plan: what lacks a vector"),
    ("embed_cache.py", "part", "texts read from SQLite, a part at a time"),
    ("upkeep.py", "feed", "chunk vectors as their lines' means"),
    ("embed_cache.py", "flush", "flushes: spool append + its count, committed"),
    ("spool.py", "append", "  of which the spool append (fsync)"),
    ("snapshots.py", "seal", "seal: the generation's segment file"),
    ("folding.py", "assemble", "  of which the gather from spool and segments"),
    ("vector_segments.py", "write", "  of which the segment file written (fsync)"),
    ("vector_segments.py", "fsync_dir", "a rename made durable (the folder's fsync)"),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=10000, help="chunks in the workspace")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vector-path-"))
    try:
        ws = synthetic.generate(root / "ws", a.size, a.seed)
        eng = MemorySearch(ws, embeddings=synthetic.ProjectionEmbeddings(0.0))
        eng.index.sync()
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        embedded = eng.embed_missing()
        profile.disable()
        total = time.perf_counter() - started
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        # (calls, cumulative seconds) of each function
        cumulative = {(Path(f).name, name): (row[1], row[3]) for (f, _, name), row in stats.items()}
        print(f"{embedded} texts embedded in {total:.2f} s (profiled), {a.size} chunks")
        print("| step | calls | s | share |\n|---|---|---|---|")
        for module, name, what in STEPS:
            calls, s = cumulative.get((module, name), (0, 0.0))
            step = f"{what} (`{module.removesuffix('.py')}.{name}`)"
            print(f"| {step} | {calls} | {s:.3f} | {s / total:.0%} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
