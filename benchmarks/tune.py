"""Choose the default profile's fusion weights and line-vector share by leave-one-workspace-out
cross-validation.

For every query the four signals of every chunk are computed once; then each
weight setting on a grid is scored in numpy. For each workspace, the setting
that is best on the other workspaces is applied to it (the held-out figure);
the setting best on all workspaces is reported too.

Usage:
    python benchmarks/tune.py --root ../shared/bench/locomo-dev \
        --queries ../shared/bench/locomo-dev/queries.jsonl --embedder local
"""

from __future__ import annotations

import argparse
import itertools
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import numpy as np

from langchain_enhanced_memory.analysis.evaluation import first_hit, load_queries
from langchain_enhanced_memory.core.ranking import rank
from langchain_enhanced_memory.core.scoring import top_k
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch

VECTOR_NORMS = ("raw", "minmax")


def collect(root: Path, queries: list[dict], embedder: str) -> list[dict]:
    """Signals of every chunk for every query (PRF off, so signals are the first pass).

    The vector signal is kept twice, raw: the chunk's cosine and its best line's
    (``line_vector_share`` 0 and 1); a share in between is their linear mix.
    """
    settings = MemorySettings(prf_enabled=False, vector_norm="raw", line_vector_share=1.0)
    chunk_only = settings.replace(line_vector_share=0.0)
    by_ws: dict[str, list[dict]] = defaultdict(list)
    for q in queries:
        by_ws[q["workspace"]].append(q)
    rows = []
    for ws, qs in sorted(by_ws.items()):
        engine = MemorySearch(root / ws, settings=settings, embedder=embedder)
        engine.index.sync()
        if engine.model_id:
            engine.embed_missing()
        snap = engine.index.snapshot(engine.model_id)
        for q in qs:
            qvec = engine.embed_query(q["query"]) if engine.model_id else None
            now = datetime.fromisoformat(q["now"])
            r = rank(snap, q["query"], now, settings, qvec)
            sig = r.signals
            chunk = rank(snap, q["query"], now, chunk_only, qvec).signals["vector"]
            rows.append(
                {
                    "q": q,
                    "ws": ws,
                    "snap": snap,
                    "vector": chunk,
                    "line": sig["vector"],
                    "keyword": sig["keyword"],
                    "header": sig["header"],
                    "filepath": sig["filepath"],
                    "mult": sig["date_boost"],
                }
            )
    return rows


def mrr(rows: list[dict], params: dict) -> float:
    total = 0.0
    for r in rows:
        v = params["share"] * r["line"] + (1.0 - params["share"]) * r["vector"]
        if params["vnorm"] == "minmax" and v.size and v.max() > v.min():
            v = (v - v.min()) / (v.max() - v.min())
        fused = (
            params["wv"] * v
            + params["wk"] * r["keyword"]
            + params["wh"] * r["header"]
            + params["wf"] * r["filepath"]
        )
        mult = np.where(
            r["mult"] > 1.0, np.where(r["mult"] >= 2.9, params["boost"], r["mult"]), 1.0
        )
        s = fused * mult + (mult - 1.0) * 0.05
        top = top_k(s, 10)
        snap = r["snap"]
        res = [
            {"path": snap.paths[i], "startLine": snap.start[i], "endLine": snap.end[i]} for i in top
        ]
        rank_ = first_hit(r["q"]["gold"], res)
        total += 1 / rank_ if rank_ else 0
    return total / max(len(rows), 1)


def grid() -> list[dict]:
    out = []
    for share, wv, wk, wh, wf, boost, vnorm in itertools.product(
        (0.0, 0.5, 1.0),
        (0.0, 0.2, 0.25, 0.3, 0.4, 0.6),
        (0.25, 0.4, 0.6),
        (0.0, 0.1),
        (0.0, 0.1, 0.25),
        (2.0, 3.0, 5.0),
        VECTOR_NORMS,
    ):
        out.append(
            {"share": share, "wv": wv, "wk": wk, "wh": wh, "wf": wf, "boost": boost, "vnorm": vnorm}
        )
    return out


def bench_args(doc: str) -> argparse.Namespace:
    """``--root``, ``--queries`` and ``--embedder`` of a leave-one-workspace-out script."""
    ap = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--root", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--embedder", default="local")
    return ap.parse_args()


def held_out_picks(table: np.ndarray, sizes: np.ndarray) -> list[int]:
    """For each workspace (a column of ``table``, settings x workspaces), the setting
    best on the others (query-weighted by ``sizes``)."""
    picks = []
    for j in range(table.shape[1]):
        others = [i for i in range(table.shape[1]) if i != j]
        picks.append(int(np.argmax(table[:, others] @ sizes[others])))
    return picks


def main() -> None:
    args = bench_args(__doc__)
    queries = load_queries(args.queries)
    rows = collect(Path(args.root), queries, args.embedder)
    workspaces = sorted({r["ws"] for r in rows})
    settings = grid()
    by_ws = {ws: [r for r in rows if r["ws"] == ws] for ws in workspaces}
    table = np.array([[mrr(by_ws[ws], p) for ws in workspaces] for p in settings])
    sizes = np.array([len(by_ws[ws]) for ws in workspaces], dtype=float)
    overall = table @ sizes / sizes.sum()
    best = int(np.argmax(overall))
    print(f"grid of {len(settings)} settings over {len(rows)} queries, embedder {args.embedder}")
    print(f"best on all workspaces: {settings[best]}  mrr@10 {overall[best]:.4f}")
    held = []
    for j, (ws, pick) in enumerate(zip(workspaces, held_out_picks(table, sizes), strict=True)):
        others = [i for i in range(len(workspaces)) if i != j]
        train = table[pick, others] @ sizes[others] / sizes[others].sum()
        held.append(table[pick, j])
        print(
            f"  hold out {ws}: tuned on the rest -> {settings[pick]}  "
            f"train {train:.4f}  held-out {table[pick, j]:.4f}"
        )
    cv = np.dot(held, sizes) / sizes.sum()
    print(f"cross-validated mrr@10 (held-out, query-weighted): {cv:.4f}")


if __name__ == "__main__":
    main()
