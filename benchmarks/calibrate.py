"""Fit the calibrated ``score`` on graded queries and show how well ``minScore`` separates.

For every query the default recipe returns its top 10; each result is labelled
by whether it answers (its span covers a gold line, as in ``eval``). A logistic
regression over the features of ``core/calibration.py`` (``FEATURES``: the
hit's support, the evidence its words hold; with the embedder also ranking's
fused score and a matched date) is fitted per mode (with the embedder:
``hybrid``; without: ``keyword``) and its coefficients printed, ready for
``COEFFICIENTS``. The log loss and the threshold table are computed out of
sample: each conversation is scored with coefficients fitted on the others,
then the product's rule is applied (scores non-increasing down the list).

Usage:
    python benchmarks/calibrate.py --root ../shared/bench/locomo-dev \
        --queries ../shared/bench/locomo-dev/queries.jsonl [--embedder local]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from langchain_enhanced_memory.analysis.evaluation import first_hit, load_queries
from langchain_enhanced_memory.core import calibration
from langchain_enhanced_memory.core.request import SearchRequest
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch

THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def collect(root: Path, queries: list[dict[str, Any]], embedder: str) -> list[dict[str, Any]]:
    """One row per result: workspace, query id, rank, mode, fused score, features, label."""
    settings = MemorySettings(log_queries=False)
    engines: dict[str, MemorySearch] = {}
    rows = []
    for q in queries:
        ws = q.get("workspace", ".")
        if ws not in engines:
            engines[ws] = MemorySearch(root / ws, settings=settings, embedder=embedder)
        request = SearchRequest.parse(query=q["query"], k=10, now=q.get("now"))
        response = engines[ws].run(request)
        for rank, h in enumerate(response.hits, 1):
            row = {"path": h.path, "startLine": h.start_line, "endLine": h.end_line}
            rows.append(
                {
                    "ws": ws,
                    "id": q["id"],
                    "rank": rank,
                    "mode": response.mode,
                    "fused": h.signals["fused"],
                    "x": calibration.features(
                        h.signals["fused"],
                        h.signals,
                        response.mode,
                        response.hits[0].signals["fused"],
                    ),
                    "y": first_hit(q["gold"], [row], depth=1) is not None,
                }
            )
    return rows


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 50) -> np.ndarray:
    """Logistic regression by Newton's method (intercept first), lightly regularised."""
    a = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(a.shape[1])
    reg = l2 * np.eye(a.shape[1])
    reg[0, 0] = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(a @ w, -30, 30)))
        grad = a.T @ (p - y) + reg @ w
        hess = (a * (p * (1 - p))[:, None]).T @ a + reg + 1e-9 * np.eye(a.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def scored(rows: list[dict[str, Any]], coef: np.ndarray) -> list[float]:
    """The product's scores of ``rows`` (grouped by query, in rank order) under ``coef``."""
    mode = rows[0]["mode"] if rows else "keyword"
    saved = calibration.COEFFICIENTS[mode]
    calibration.COEFFICIENTS[mode] = tuple(float(c) for c in coef)
    try:
        by_query: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(rows):
            by_query[r["id"]].append(i)
        out = [0.0] * len(rows)
        for idx in by_query.values():
            idx.sort(key=lambda i: rows[i]["rank"])
            for i, s in zip(
                idx, calibration.calibrate([rows[i]["x"] for i in idx], mode), strict=True
            ):
                out[i] = s
        return out
    finally:
        calibration.COEFFICIENTS[mode] = saved


def log_loss(y: np.ndarray, scores: np.ndarray) -> float:
    """Mean log loss of the product's scores (clipped at their rounding, 1e-4)."""
    p = np.clip(scores, 1e-4, 1 - 1e-4)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def held_out(rows: list[dict[str, Any]], x: np.ndarray, y: np.ndarray) -> list[float]:
    """Each conversation's scores under a fit on the others; prints each fold's log loss."""
    held = [0.0] * len(rows)
    for ws in sorted({r["ws"] for r in rows}):
        train = [i for i, r in enumerate(rows) if r["ws"] != ws]
        test = [i for i, r in enumerate(rows) if r["ws"] == ws]
        c = fit(x[train], y[train])
        for i, s in zip(test, scored([rows[i] for i in test], c), strict=True):
            held[i] = s
        loss = log_loss(y[test], np.array([held[i] for i in test]))
        print(f"fold {ws}: held-out log loss {loss:.4f} ({len(test)} results)")
    print(f"all folds: held-out log loss {log_loss(y, np.array(held)):.4f}")
    return held


def table(rows: list[dict[str, Any]], scores: list[float]) -> list[str]:
    y = np.array([r["y"] for r in rows])
    s = np.array(scores)
    total = int(y.sum())
    top1 = np.array([r["rank"] == 1 for r in rows])
    lines = ["| minScore | kept | precision | recall | queries with a result kept |"]
    lines.append("|---|---|---|---|---|")
    n_queries = len({r["id"] for r in rows})
    for t in THRESHOLDS:
        keep = s >= t
        prec = float(y[keep].mean()) if keep.any() else float("nan")
        rec = float(y[keep].sum() / total) if total else float("nan")
        answered = int((keep & top1).sum())
        lines.append(
            f"| {t:.1f} | {int(keep.sum())} | {prec:.3f} | {rec:.3f} | {answered}/{n_queries} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--embedder", default="local")
    args = ap.parse_args()
    root = Path(args.root)
    queries = load_queries(args.queries)
    for embedder in (args.embedder, "none"):
        rows = collect(root, queries, embedder)
        mode = rows[0]["mode"]
        x = np.array([r["x"] for r in rows], dtype=float)
        y = np.array([r["y"] for r in rows], dtype=float)
        coef = fit(x, y)
        print(f"\n## {mode} ({embedder}): {len(rows)} results, {int(y.sum())} answer")
        print(f'"{mode}": ({", ".join(f"{c:.3f}" for c in coef)}),')
        print("out of sample (each conversation scored by a fit on the others):")
        held = held_out(rows, x, y)
        print("\n".join(table(rows, held)))
        raw_top = [r["fused"] for r in rows if r["rank"] == 1]
        cal_top = [s for s, r in zip(held, rows, strict=True) if r["rank"] == 1]
        print(
            f"top result per query: fused score p10..p90 {np.percentile(raw_top, 10):.3f}.."
            f"{np.percentile(raw_top, 90):.3f}; calibrated {np.percentile(cal_top, 10):.3f}.."
            f"{np.percentile(cal_top, 90):.3f}"
        )


if __name__ == "__main__":
    main()
