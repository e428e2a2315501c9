"""Compare ways of cutting Chinese text into index terms on the Chinese set.

Each variant replaces how a run of CJK ideographs becomes terms (Latin words
are untouched), builds a fresh index in a temporary folder and runs every query
of ``queries.jsonl``; it prints mrr@10 / hit@1 overall and per category, and
the import + first-cut time of the segmenter (cold start matters: the command
line answers each query in a fresh process).

Usage:
    python benchmarks/zh/tokenizers.py [--embedder none|local] [--variants bigram,jieba]

``jieba`` variants need ``pip install jieba`` (measured only, not a dependency).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from langchain_enhanced_memory.analysis.evaluation import load_queries, summarize
from langchain_enhanced_memory.commands.common import parse_now
from langchain_enhanced_memory.core import text
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.openclaw.response import result_row

HERE = Path(__file__).resolve().parent
_bigrams = text._cjk_grams


def _uni_bigrams(run: str) -> list[str]:
    """Bigrams plus every ideograph on its own (Elasticsearch's output_unigrams)."""
    grams = _bigrams(run)
    return grams + [c for c in run if len(run) > 1 and c not in text.STOPWORDS_ZH]


def _jieba(mode: str) -> Callable[[str], list[str]]:
    import jieba

    jieba.setLogLevel(60)
    cut = jieba.lcut_for_search if mode == "search" else jieba.lcut
    stop = set(text.STOPWORDS_ZH)

    def grams(run: str) -> list[str]:
        return [w for w in cut(run) if w not in stop]

    return grams


def _jieba_plus_bigrams(run: str) -> list[str]:
    return _jieba("search")(run) + _bigrams(run)


VARIANTS: dict[str, Callable[[], Callable[[str], list[str]]]] = {
    "bigram": lambda: _bigrams,
    "uni+bigram": lambda: _uni_bigrams,
    "jieba": lambda: _jieba("default"),
    "jieba-search": lambda: _jieba("search"),
    "jieba+bigram": lambda: _jieba_plus_bigrams,
}


def run(variant: str, embedder: str, queries: list[dict]) -> tuple[dict, float]:
    """Evaluate one variant; returns the summary and the segmenter's cold cost in ms."""
    t0 = time.perf_counter()
    cut = VARIANTS[variant]()
    cut("星河项目今天上线了")
    cold_ms = (time.perf_counter() - t0) * 1000
    text._cjk_grams = cut
    try:
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            engine = MemorySearch(
                HERE / "linxiao", embedder=embedder, index_path=Path(tmp) / "index.sqlite"
            )
            engine.update_index()
            for q in queries:
                hits = engine.search(q["query"], k=10, now=parse_now(q["now"])).hits
                results[q["id"]] = [result_row(h, 200) for h in hits]
        return summarize(queries, results), cold_ms
    finally:
        text._cjk_grams = _bigrams


def main() -> None:
    """Print one line per variant."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--embedder", default="none", choices=("none", "local"))
    p.add_argument("--variants", default=",".join(VARIANTS))
    args = p.parse_args()
    queries = load_queries(HERE / "queries.jsonl")
    for variant in args.variants.split(","):
        summary, cold_ms = run(variant, args.embedder, queries)
        cats = summary["categories"]
        per = "  ".join(f"{c} {s['mrr@10']:.3f}" for c, s in cats.items() if c != "ALL")
        print(
            f"{variant:<13} mrr@10 {cats['ALL']['mrr@10']:.3f} hit@1 {cats['ALL']['hit@1']:.3f}"
            f"  cold {cold_ms:7.1f} ms | {per}"
        )


if __name__ == "__main__":
    main()
