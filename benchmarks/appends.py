"""Appends: what ``remember`` costs as a day's note grows, and what the list cap does to quality.

``speed``: a daily note of 0, 1k and 10k remembered bullets in one section (made
once, indexed); then ``--rounds`` times: ``append_memory`` one more fact into that
section, and the next search for it in one long-lived ``MemorySearch`` (which
re-indexes the grown note first). Prints ms p50 of each, keyword-only and with
the local model, and the largest chunk the note holds::

    python benchmarks/appends.py speed [--sizes 0,1000,10000] [--embedders none,local]
        [--profile 10000]

``--profile N`` prints cProfile's top functions of the appends and searches at N
bullets instead of the table.

``quality``: leave-one-conversation-out over ``max_list_chars`` (0: no list cap, the
chunks before it): each conversation's mrr@10 at each cap, then, per fold, the cap
best on the other conversations and its held-out mrr@10 beside the uncapped one::

    python benchmarks/appends.py quality --root ../shared/bench/locomo-dev \
        --queries ../shared/bench/locomo-dev/queries.jsonl --caps 0,500,700,1000,1200,1600 \
        [--embedder none]

The workspaces are copied to a temporary folder first (the index goes beside them).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_enhanced_memory.analysis.evaluation import evaluate, load_queries, summarize
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.store.append import append_memory

NOW = datetime(2026, 12, 7, 9, 0)
WORDS = "amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lumen".split()


def _fact(i: int) -> str:
    """A distinct fact: its own code word, so a search names exactly one bullet."""
    a, b = WORDS[i % len(WORDS)], WORDS[(i // len(WORDS)) % len(WORDS)]
    return f"Fact {i}: the {a} {b} project uses codeword zq{i:06d} for its nightly build."


def _workspace(root: Path, bullets: int) -> Path:
    ws = root / f"ws-{bullets}"
    (ws / "memory").mkdir(parents=True)
    lines = [f"# {NOW.date().isoformat()}", "", "## Facts", ""]
    lines += [f"- {_fact(i)}" for i in range(bullets)]
    (ws / "memory" / f"{NOW.date().isoformat()}.md").write_text("\n".join(lines) + "\n")
    return ws


def _rounds(ws: Path, engine: MemorySearch, start: int, rounds: int) -> tuple[list, list]:
    appends, searches = [], []
    for i in range(start, start + rounds):
        t0 = time.perf_counter()
        append_memory(ws, _fact(i), section="Facts", now=NOW)
        t1 = time.perf_counter()
        hits = engine.search(f"codeword zq{i:06d}", k=3, now=NOW).hits
        t2 = time.perf_counter()
        assert hits and f"zq{i:06d}" in hits[0].text, "the new fact was not found first"
        appends.append((t1 - t0) * 1000)
        searches.append((t2 - t1) * 1000)
    return appends, searches


def speed(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| bullets | embedder | remember ms p50 | next search ms p50 | largest chunk (chars) |")
    print("|---|---|---|---|---|")
    for embedder in args.embedders.split(","):
        for size in sizes if not args.profile else [args.profile]:
            with tempfile.TemporaryDirectory() as tmp:
                ws = _workspace(Path(tmp), size)
                engine = MemorySearch(
                    ws, settings=MemorySettings(log_queries=False), embedder=embedder
                )
                engine.update_index()
                _rounds(ws, engine, size, 3)  # warm: imports, the model, the first sync
                if args.profile:
                    prof = cProfile.Profile()
                    prof.runcall(_rounds, ws, engine, size + 3, args.rounds)
                    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
                    return
                appends, searches = _rounds(ws, engine, size + 3, args.rounds)
                largest = max(len(c) for c in _chunk_texts(engine))
                print(
                    f"| {size:,} | {embedder} | {statistics.median(appends):.1f} | "
                    f"{statistics.median(searches):.1f} | {largest:,} |",
                    flush=True,
                )
                engine.close()


def _chunk_texts(engine: MemorySearch) -> list[str]:
    with engine.index.connect() as conn:
        return [row[0] for row in conn.execute("SELECT text FROM chunks")]


def quality(args: argparse.Namespace) -> None:
    queries = load_queries(args.queries)
    caps = [int(c) for c in args.caps.split(",")]
    spaces = sorted({q["workspace"] for q in queries})
    by_ws = {w: [q for q in queries if q["workspace"] == w] for w in spaces}
    mrr: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench"
        shutil.copytree(args.root, root, ignore=shutil.ignore_patterns(".enhanced-memory"))
        for cap in caps:
            settings = MemorySettings(log_queries=False, max_list_chars=cap)

            def engine(ws: Path, s: MemorySettings = settings) -> MemorySearch:
                return MemorySearch(ws, settings=s, embedder=args.embedder)

            _, rows = evaluate(root, queries, engine)
            mrr[cap] = {w: _mrr(by_ws[w], rows) for w in spaces}
            cells = " | ".join(f"{mrr[cap][w]:.4f}" for w in spaces)
            total = _mrr(queries, rows)
            print(f"cap {cap}: {cells} | all {total:.4f}", flush=True)
    print(
        f"\n| held-out | cap chosen on the other {len(spaces) - 1} | mrr@10 without cap | "
        "mrr@10 with it |"
    )
    print("|---|---|---|---|")
    for w in spaces:
        rest = [v for v in spaces if v != w]
        weight = {v: len(by_ws[v]) for v in rest}
        best = max(caps, key=lambda c: sum(mrr[c][v] * weight[v] for v in rest))
        print(f"| {w} | {best} | {mrr[caps[0]][w]:.4f} | {mrr[best][w]:.4f} |")


def _mrr(queries: list[dict[str, Any]], rows: dict[str, Any]) -> float:
    return summarize(queries, rows)["categories"]["ALL"]["mrr@10"]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="what", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--sizes", default="0,1000,10000")
    sp.add_argument("--embedders", default="none,local")
    sp.add_argument("--rounds", type=int, default=30)
    sp.add_argument("--profile", type=int, default=0)
    qp = sub.add_parser("quality")
    qp.add_argument("--root", required=True)
    qp.add_argument("--queries", required=True)
    qp.add_argument("--caps", default="0,600,800,1000,1200")
    qp.add_argument("--embedder", default="none")
    args = ap.parse_args()
    speed(args) if args.what == "speed" else quality(args)


if __name__ == "__main__":
    main()
