"""Every locomo-dev quality figure of docs/benchmarks.md in one run: baselines, default, ablation.

Each row is ``enhanced-memory eval`` with a profile and settings overrides
(the same as ``enhanced-memory eval --profile P --set KEY=VALUE ...``); query
vectors are computed once per embedder and shared between rows.

Usage:
    python benchmarks/quality.py --root ../shared/bench/locomo-dev \
        --queries ../shared/bench/locomo-dev/queries.jsonl [--embedder local] [--json OUT]
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any

from langchain_enhanced_memory.analysis.evaluation import evaluate, load_queries
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch

# (label, profile, overrides, embedder or None for the run's embedder)
ROWS: list[tuple[str, str, dict[str, Any], str | None]] = [
    ("original skill (replayed)", "original", {}, None),
    ("original without PRF", "original", {"prf_enabled": False}, None),
    ("BM25 with stemming", "bm25", {}, "none"),
    ("vectors only", "vector", {}, None),
    (
        "reciprocal rank fusion of BM25 and vectors (k=60)",
        "bm25",
        {"fusion": "rrf", "weights": {"vector": 1, "keyword": 1, "header": 0, "filepath": 0}},
        None,
    ),
    ("default", "default", {}, None),
    ("default, keyword-only (no embedder)", "default", {}, "none"),
    ("default - phrase pairs", "default", {"phrase_weight": 0.0}, None),
    ("default - BM25 (original substring overlap)", "default", {"lexical": "substring"}, None),
    ("default - min-max cosines (raw cosine)", "default", {"vector_norm": "raw"}, None),
    ("default - correct date parser (original's)", "default", {"date_parser": "original"}, None),
    ("default - date routing", "default", {"date_routing": False}, None),
    ("default - line vectors (chunk vectors only)", "default", {"line_vector_share": 0.0}, None),
    (
        "default - chunk vectors from their lines (chunk texts embedded too)",
        "default",
        {"chunk_vectors": "embedded"},
        None,
    ),
    ("default - header chain in embedded text", "default", {"embed_headers": False}, None),
    (
        "default - section chunking (original chunks)",
        "default",
        {"chunking": "original", "embed_headers": False},
        None,
    ),
    ("default + PRF", "default", {"prf_enabled": True}, None),
]
CATEGORIES = (
    "single-hop",
    "multi-hop",
    "temporal",
    "open-domain",
    "date-absolute",
    "date-relative",
)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--root", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--embedder", default="local")
    ap.add_argument("--only", help="comma-separated row numbers to run")
    ap.add_argument("--json", help="write all summaries here")
    args = ap.parse_args()
    root = Path(args.root)
    queries = load_queries(args.queries)
    picked = [int(i) for i in args.only.split(",")] if args.only else range(len(ROWS))
    query_cache: dict[str, Any] = {}

    def make(settings: MemorySettings, embedder: str):
        def engine_for(ws: Path) -> MemorySearch:
            engine = MemorySearch(ws, settings=settings, embedder=embedder)
            if engine.model_id is not None:
                cache = query_cache.setdefault(engine.model_id, {})
                raw = engine.embed_query
                engine.embed_query = functools.partial(_cached, cache, raw)  # type: ignore[method-assign]
            return engine

        return engine_for

    out = []
    header = "| method | mrr@10 | hit@1 | hit@10 | " + " | ".join(CATEGORIES) + " | lines/result |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for i in picked:
        label, profile, overrides, embedder = ROWS[i]
        settings = MemorySettings(profile=profile, log_queries=False, **overrides)
        summary, _ = evaluate(root, queries, make(settings, embedder or args.embedder))
        cats = summary["categories"]
        allc = cats["ALL"]
        cells = " | ".join(f"{cats[c]['mrr@10']:.3f}" if c in cats else "-" for c in CATEGORIES)
        print(
            f"| {label} ({summary['provider']}) | {allc['mrr@10']:.3f} | {allc['hit@1']:.3f} | "
            f"{allc['hit@10']:.3f} | {cells} | {summary['lines_per_result']} |",
            flush=True,
        )
        out.append({"label": label, "profile": profile, "overrides": overrides, **summary})
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


def _cached(cache: dict[str, Any], embed: Any, text: str) -> Any:
    if text not in cache:
        cache[text] = embed(text)
    return cache[text]


if __name__ == "__main__":
    main()
