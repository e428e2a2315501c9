"""Evidence from the rest of a file, cross-validated leave one workspace out (not adopted).

Several chunks of one note or session that match together could lift each
other (LongMemEval's session-level evidence): a chunk's score plus ``beta``
times the best score of another chunk of its file. For each ``beta`` on a grid
every query is ranked once by the default ranking (``rank``), the lift applied
in numpy, and mrr@10 computed per workspace on the chunks' line spans; then
each workspace is scored with the ``beta`` best on the other four (the
held-out figure) and compared with ``beta`` 0 (the default).

Usage:
    python benchmarks/evidence.py --root ../shared/bench/locomo-dev \\
        --queries ../shared/bench/locomo-dev/queries.jsonl --embedder none
"""

from __future__ import annotations

import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import numpy as np

from langchain_enhanced_memory.analysis.evaluation import first_hit, load_queries
from langchain_enhanced_memory.core.ranking import rank
from langchain_enhanced_memory.core.scoring import top_k
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune import bench_args, held_out_picks  # noqa: E402

BETAS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0)


def best_other(scores: np.ndarray, files: np.ndarray) -> np.ndarray:
    """For each row, the best score of another row of its file (0 for a file of one row)."""
    order = np.lexsort((-scores, files))
    grouped = files[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    n_files = int(files.max()) + 1 if len(files) else 0
    first, second = np.zeros(n_files), np.zeros(n_files)
    first[grouped[starts]] = scores[order[starts]]
    nxt = starts + 1
    has_two = (nxt < len(order)) & (grouped[np.minimum(nxt, len(order) - 1)] == grouped[starts])
    second[grouped[starts[has_two]]] = scores[order[nxt[has_two]]]
    is_best = np.zeros(len(scores), bool)
    is_best[order[starts]] = True
    return np.where(is_best, second[files], first[files])


def reciprocal_ranks(root: Path, queries: list[dict], embedder: str) -> dict[str, np.ndarray]:
    """Per workspace, a (betas x queries) array of reciprocal ranks."""
    settings = MemorySettings()
    by_ws: dict[str, list[dict]] = defaultdict(list)
    for q in queries:
        by_ws[q["workspace"]].append(q)
    out = {}
    for ws, qs in sorted(by_ws.items()):
        engine = MemorySearch(root / ws, settings=settings, embedder=embedder)
        engine.index.sync()
        if engine.model_id:
            engine.embed_missing()
        snap = engine.index.snapshot(engine.model_id)
        names: dict[str, int] = {}
        files = np.array([names.setdefault(p, len(names)) for p in snap.paths])
        rr = np.zeros((len(BETAS), len(qs)))
        for j, q in enumerate(qs):
            qvec = engine.embed_query(q["query"]) if engine.model_id else None
            now = datetime.fromisoformat(q["now"])
            scores = rank(snap, q["query"], now, settings, qvec).scores.astype(np.float64)
            lift = best_other(scores, files)
            for i, beta in enumerate(BETAS):
                top = top_k(scores + beta * lift, 10)
                res = [
                    {"path": snap.paths[t], "startLine": snap.start[t], "endLine": snap.end[t]}
                    for t in top
                ]
                hit = first_hit(q["gold"], res)
                rr[i, j] = 1 / hit if hit else 0.0
        out[ws] = rr
    return out


def main() -> None:
    args = bench_args(__doc__)
    rr = reciprocal_ranks(Path(args.root), load_queries(args.queries), args.embedder)
    workspaces = sorted(rr)
    table = np.array([rr[ws].mean(axis=1) for ws in workspaces]).T  # betas x workspaces
    sizes = np.array([rr[ws].shape[1] for ws in workspaces], dtype=float)
    overall = table @ sizes / sizes.sum()
    print(f"embedder {args.embedder}, {int(sizes.sum())} queries")
    print(
        "mrr@10 by beta: " + ", ".join(f"{b}: {m:.4f}" for b, m in zip(BETAS, overall, strict=True))
    )
    held, wins = [], 0
    for j, (ws, pick) in enumerate(zip(workspaces, held_out_picks(table, sizes), strict=True)):
        held.append(table[pick, j])
        wins += int(table[pick, j] > table[0, j])
        print(
            f"  hold out {ws}: beta {BETAS[pick]}, held-out {table[pick, j]:.4f}"
            f" vs {table[0, j]:.4f} at 0"
        )
    cv = float(np.dot(held, sizes) / sizes.sum())
    print(f"held-out mrr@10 {cv:.4f} vs {overall[0]:.4f} at 0; folds won {wins} of {len(held)}")


if __name__ == "__main__":
    main()
