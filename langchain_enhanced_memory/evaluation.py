"""``enhanced-memory eval``: retrieval quality and latency on graded queries.

The metrics are those of the benchmark's ``score.py``: a result answers a query
when its path equals a gold path and its line span covers the gold line;
mrr@10 and hit@1/5/10 per category and overall, plus the mean lines per
result (long spans inflate hits, so read both) and search latency.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cli import (
    CliError,
    add_common_arguments,
    dump,
    make_engine,
    parse_now,
    progress_bar,
    result_row,
)


def first_hit(
    gold: Iterable[dict[str, Any]], results: Sequence[dict[str, Any]], depth: int = 10
) -> int | None:
    """Rank (1-based) of the first result covering a gold line, within ``depth``."""
    golds = {(str(g["path"]).replace("\\", "/"), int(g["line"])) for g in gold}
    for rank, r in enumerate(results[:depth], 1):
        path = str(r["path"]).replace("\\", "/")
        lo, hi = int(r["startLine"]), int(r["endLine"])
        if any(p == path and lo <= line <= hi for p, line in golds):
            return rank
    return None


def summarize(
    queries: Sequence[dict[str, Any]],
    results: dict[str, Sequence[dict[str, Any]]],
    latencies_ms: Sequence[float] = (),
) -> dict[str, Any]:
    """Per-category and overall metrics, the same numbers ``score.py`` prints."""
    stats: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    spans: list[int] = []
    for q in queries:
        got = results.get(q["id"], [])
        spans += [int(r["endLine"]) - int(r["startLine"]) + 1 for r in got[:10]]
        rank = first_hit(q["gold"], got)
        for cat in (q.get("category", "all"), "ALL"):
            s = stats[cat]
            s["n"] += 1
            s["mrr@10"] += 1 / rank if rank else 0
            for k in (1, 5, 10):
                s[f"hit@{k}"] += 1 if rank and rank <= k else 0
    table = {
        cat: {
            "n": int(s["n"]),
            **{m: round(s[m] / s["n"], 4) for m in ("mrr@10", "hit@1", "hit@5", "hit@10")},
        }
        for cat, s in sorted(stats.items(), key=lambda kv: (kv[0] == "ALL", kv[0]))
    }
    out: dict[str, Any] = {
        "categories": table,
        "lines_per_result": round(sum(spans) / len(spans), 2) if spans else 0,
    }
    if len(latencies_ms):
        lat = np.asarray(latencies_ms)
        out["latency_ms"] = {
            "p50": round(float(np.percentile(lat, 50)), 2),
            "p95": round(float(np.percentile(lat, 95)), 2),
        }
    return out


def format_table(summary: dict[str, Any]) -> str:
    """The summary as the text table ``score.py`` prints."""
    lines = [f"{'category':<15}{'n':>6}{'mrr@10':>9}{'hit@1':>8}{'hit@5':>8}{'hit@10':>8}"]
    for cat, s in summary["categories"].items():
        lines.append(
            f"{cat:<15}{s['n']:>6}{s['mrr@10']:>9.3f}{s['hit@1']:>8.3f}{s['hit@5']:>8.3f}{s['hit@10']:>8.3f}"
        )
    lines.append(f"lines/result: {summary['lines_per_result']}")
    if "latency_ms" in summary:
        lines.append(
            f"search latency ms: p50 {summary['latency_ms']['p50']}  p95 {summary['latency_ms']['p95']}"
        )
    return "\n".join(lines)


def load_queries(path: str | Path) -> list[dict[str, Any]]:
    """Graded queries, one JSON object a line."""
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except OSError as exc:
        raise CliError(f"cannot read queries {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise CliError(f"queries {path} is not JSON lines ({exc.msg})") from None


def add_cli_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory eval``."""
    add_common_arguments(p)
    p.add_argument(
        "--root", required=True, help="folder holding one workspace per query 'workspace'"
    )
    p.add_argument("--queries", required=True, help="graded queries (JSON lines)")
    p.add_argument("--k", type=int, default=10, help="results per query (default 10)")
    p.add_argument("--out", help="write ranked results here, in the scorer's format")
    p.add_argument("--only", help="comma-separated workspaces to run (default: all)")


def run_cli(args: argparse.Namespace) -> int:
    """Run every query against its workspace and print the metrics."""
    root = Path(args.root)
    if not root.is_dir():
        raise CliError(f"--root not found: {root}")
    queries = load_queries(args.queries)
    if args.only:
        keep = set(args.only.split(","))
        queries = [q for q in queries if q.get("workspace") in keep]
    by_ws: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in queries:
        by_ws[q.get("workspace", ".")].append(q)
    results: dict[str, list[dict[str, Any]]] = {}
    latencies: list[float] = []
    provider = model = fallback = None
    for ws, qs in sorted(by_ws.items()):
        args.workspace = str(root / ws)
        engine = make_engine(args)
        engine.index.sync()
        if engine.model_id is not None:
            todo = len(engine.index.missing_embeddings(engine.model_id))
            engine.index.embed_missing(
                engine.model_id, engine.embed_documents, progress=progress_bar(todo)
            )
        engine.auto_index = False
        for q in qs:
            t0 = time.perf_counter()
            response = engine.search(q["query"], k=args.k, now=parse_now(q.get("now")))
            latencies.append((time.perf_counter() - t0) * 1000)
            results[q["id"]] = [result_row(h, engine.settings.snippet_chars) for h in response.hits]
            provider, model, fallback = (
                response.provider,
                response.model,
                fallback or response.fallback,
            )
    summary = summarize(queries, results, latencies)
    summary.update(
        profile=args.profile or "default", provider=provider, model=model, fallback=fallback
    )
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for q in queries:
                fh.write(
                    json.dumps(
                        {"id": q["id"], "results": results.get(q["id"], [])}, ensure_ascii=False
                    )
                    + "\n"
                )
    if args.json:
        dump(summary)
    else:
        print(
            f"profile {summary['profile']}, embedder {provider} ({model}), fallback {fallback}",
            file=sys.stderr,
        )
        print(format_table(summary))
    return 0
