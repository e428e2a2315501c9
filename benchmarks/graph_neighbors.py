"""Does adding cross-reference neighbours of the top hits help retrieval?

For each workspace of a graded query set (LoCoMo dev: ``--root`` holds one
workspace per query's ``workspace``), builds the cross-reference graph from the
vectors already in the index cache (nothing is embedded; workspaces without
cached vectors are skipped), then runs every query keyword-only
(``--embedder none``: the setting the graph can help most) with graph
neighbours off and on at several weights, and prints mrr@10 / hit@k per run
and how many queries' top 10 changed.

Usage::

    XDG_CACHE_HOME=/tmp/emcache python benchmarks/graph_neighbors.py \\
        --root ../shared/bench/locomo-dev --queries ../shared/bench/locomo-dev/queries.jsonl
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from langchain_enhanced_memory.analysis.evaluation import load_queries, summarize
from langchain_enhanced_memory.commands.common import parse_now
from langchain_enhanced_memory.config import load
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.graph import storage as crossref
from langchain_enhanced_memory.openclaw.response import result_row


def run(root: Path, by_ws: dict, settings: MemorySettings, k: int) -> dict[str, list]:
    out = {}
    for ws, qs in by_ws.items():
        engine = MemorySearch(root / ws, settings=settings, embedder="none", auto_index=False)
        for q in qs:
            hits = engine.search(q["query"], k=k, now=parse_now(q.get("now"))).hits
            out[q["id"]] = [result_row(h, 200) for h in hits]
    return out


def main() -> None:
    load()  # an entry point: $XDG_CACHE_HOME places the read-only workspaces' indexes
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--weights", default="0.5,0.8,1.0")
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args()
    root = Path(args.root)
    base = MemorySettings(log_queries=False)
    by_ws: dict[str, list] = defaultdict(list)
    for q in load_queries(args.queries):
        by_ws[q["workspace"]].append(q)
    for ws in list(by_ws):
        engine = MemorySearch(root / ws, settings=base, embedder="none")
        engine.index.sync()
        try:
            report = crossref.build(engine.index, None, base)
        except crossref.CrossrefError as exc:
            print(f"skip {ws}: {exc}")
            del by_ws[ws]
            continue
        print(
            f"{ws}: {report.files} files, {report.refs} refs, threshold {report.threshold}"
            f" ({report.model})"
        )
    queries = [q for qs in by_ws.values() for q in qs]
    baseline = run(root, by_ws, base, args.k)
    rows = [("off", summarize(queries, baseline), 0)]
    for w in (float(x) for x in args.weights.split(",")):
        on = base.replace(graph_neighbors=True, graph_neighbor_weight=w)
        got = run(root, by_ws, on, args.k)
        changed = sum(
            1
            for q in queries
            if [(r["path"], r["startLine"]) for r in got[q["id"]]]
            != [(r["path"], r["startLine"]) for r in baseline[q["id"]]]
        )
        rows.append((f"on, weight {w}", summarize(queries, got), changed))
    print(f"\n{len(queries)} queries, keyword-only search, k={args.k}")
    print(
        f"{'graph neighbours':<22}{'mrr@10':>8}{'hit@1':>8}{'hit@5':>8}{'hit@10':>8}{'changed':>9}"
    )
    for name, s, changed in rows:
        a = s["categories"]["ALL"]
        print(
            f"{name:<22}{a['mrr@10']:>8.3f}{a['hit@1']:>8.3f}{a['hit@5']:>8.3f}"
            f"{a['hit@10']:>8.3f}{changed:>9}"
        )


if __name__ == "__main__":
    main()
