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
from collections.abc import Callable, Iterable, Mapping, Sequence
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
        raise CliError(f"cannot read queries {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise CliError(f"queries {path} is not JSON lines ({exc.msg})") from None


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` settings overrides; values are JSON when they parse, else strings."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--set expects KEY=VALUE, got {pair!r}")
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
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Run each query against ``root/<workspace>`` and score the results.

    Args:
        root: Folder holding one workspace per query ``workspace``.
        queries: Graded queries.
        make_engine: Builds the :class:`~.search.MemorySearch` of a workspace folder.
        k: Results per query.

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
        engine.index.sync()
        if engine.model_id is not None:
            todo = len(engine.index.missing_embeddings(engine.model_id))
            engine.index.embed_missing(
                engine.model_id, engine.embed_documents, progress=progress_bar(todo)
            )
        engine.auto_index = False
        for q in qs:
            t0 = time.perf_counter()
            response = engine.search(q["query"], k=k, now=parse_now(q.get("now")))
            latencies.append((time.perf_counter() - t0) * 1000)
            results[q["id"]] = [result_row(h, engine.settings.snippet_chars) for h in response.hits]
            provider, model = response.provider, response.model
            fallback = fallback or response.fallback
    summary = summarize(queries, results, latencies)
    summary.update(provider=provider, model=model, fallback=fallback)
    return summary, results


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
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a MemorySettings field, e.g. --set prf_enabled=true (repeatable)",
    )


def run_cli(args: argparse.Namespace) -> int:
    """Run every query against its workspace and print the metrics."""
    from .search import MemorySearch
    from .settings import MemorySettings

    root = Path(args.root)
    if not root.is_dir():
        raise CliError(f"--root not found: {root}")
    queries = load_queries(args.queries)
    if args.only:
        keep = set(args.only.split(","))
        queries = [q for q in queries if q.get("workspace") in keep]
    profile = args.profile or "default"
    try:
        # Evaluation is not a user's search: it leaves no query or access logs.
        settings = MemorySettings(
            profile=profile, log_queries=False, **parse_overrides(args.overrides)
        )
    except ValueError as exc:
        raise CliError(f"bad --set: {str(exc).splitlines()[0]}") from None
    base = make_engine(argparse.Namespace(**{**vars(args), "workspace": str(root)}))

    def engine_for(ws: Path) -> MemorySearch:
        return MemorySearch(
            ws,
            settings=settings,
            embedder=base.embedder_kind,
            model=base.model_name,
            ollama_url=base.ollama_url,
        )

    summary, results = evaluate(root, queries, engine_for, args.k)
    summary.update(profile=profile, overrides=parse_overrides(args.overrides))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for q in queries:
                row = {"id": q["id"], "results": results.get(q["id"], [])}
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    if args.json:
        dump(summary)
    else:
        print(
            f"profile {profile} {summary['overrides'] or ''}, embedder {summary['provider']}"
            f" ({summary['model']}), fallback {summary['fallback']}",
            file=sys.stderr,
        )
        print(format_table(summary))
    return 0
