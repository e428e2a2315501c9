"""``enhanced-memory eval``: retrieval quality and latency on graded queries.

The metrics are those of the benchmark's ``score.py``: a result answers a query
when its path equals a gold path and its line span covers the gold line;
mrr@10 and hit@1/5/10 per category and overall, plus the mean lines per
result (long spans inflate hits, so read both) and search latency.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import EnhancedMemoryError, RequestError
from ..core.request import parse_when
from ..openclaw.response import result_row


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
    results: Mapping[str, Sequence[dict[str, Any]]],
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
            f"search latency ms: p50 {summary['latency_ms']['p50']}"
            f"  p95 {summary['latency_ms']['p95']}"
        )
    return "\n".join(lines)


def load_queries(path: str | Path) -> list[dict[str, Any]]:
    """Graded queries, one JSON object a line."""
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except OSError as exc:
        raise EnhancedMemoryError(f"cannot read queries {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise EnhancedMemoryError(f"queries {path} is not JSON lines ({exc.msg})") from None


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` settings overrides; values are JSON when they parse, else strings."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise RequestError(f"expects KEY=VALUE, got {pair!r}", "--set")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def evaluate(
    root: Path,
    queries: Sequence[dict[str, Any]],
    make_engine: Callable[[Path], Any],
    k: int = 10,
    progress: Callable[[int], Callable[[int], None] | None] | None = None,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Run each query against ``root/<workspace>`` and score the results.

    Args:
        root: Folder holding one workspace per query ``workspace``.
        queries: Graded queries.
        make_engine: Builds the :class:`~..engine.MemorySearch` of a workspace folder.
        k: Results per query.
        progress: Given the number of texts to embed, returns a callback for
            each batch done (a progress bar), or None.

    Returns:
        The summary (metrics, latency, embedder) and the ranked rows per query id.
    """
    by_ws: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in queries:
        by_ws[q.get("workspace", ".")].append(q)
    results: dict[str, list[dict[str, Any]]] = {}
    latencies: list[float] = []
    provider = model = fallback = None
    for ws, qs in sorted(by_ws.items()):
        engine = make_engine(root / ws)
        engine.update_index(progress=progress)
        engine.auto_index = False
        for q in qs:
            t0 = time.perf_counter()
            response = engine.search(q["query"], k=k, now=parse_when(q.get("now")))
            latencies.append((time.perf_counter() - t0) * 1000)
            results[q["id"]] = [
                result_row(h, engine.settings.output.snippet_chars) for h in response.hits
            ]
            provider, model = response.provider, response.model
            fallback = fallback or response.fallback
    summary = summarize(queries, results, latencies)
    summary.update(provider=provider, model=model, fallback=fallback)
    return summary, results
