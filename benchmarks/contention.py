"""Several processes searching one workspace at once: queries per second in all.

Each process opens its own ``MemorySearch`` (keyword-only) on one seeded
synthetic workspace (``synthetic.py``), answers one query, waits for the
others, then searches in a loop for ``--seconds``. Printed per setting: one
watching process, ``--processes`` watching (file-system events and a barrier
each), and as many checking with a scan before every search.

Usage:
    python benchmarks/contention.py --chunks 100000 --processes 8
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402


def searcher(ws: str, watch: bool, seconds: float, go: Any, out: Any) -> None:
    from langchain_enhanced_memory.core.request import SearchRequest
    from langchain_enhanced_memory.engine import MemorySearch

    queries = synthetic.queries(50)
    with MemorySearch(ws, embedder="none", watch=watch) as engine:
        engine.run(SearchRequest(queries[0]))
        out.put("ready")
        go.wait()
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            engine.run(SearchRequest(queries[n % len(queries)]))
            n += 1
    out.put(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--root", default="/tmp/enhanced-memory-bench")
    args = ap.parse_args()
    ws = Path(args.root) / f"contention-{args.chunks}"
    if not (ws / "MEMORY.md").exists():
        synthetic.generate(ws, args.chunks, 0)
    from langchain_enhanced_memory.engine import MemorySearch

    with MemorySearch(ws, embedder="none", watch=False) as engine:
        engine.index.sync()
    for n, watch in ((1, True), (args.processes, True), (args.processes, False)):
        go, out = mp.Event(), mp.Queue()
        procs = [
            mp.Process(target=searcher, args=(str(ws), watch, args.seconds, go, out))
            for _ in range(n)
        ]
        for p in procs:
            p.start()
        for _ in procs:
            out.get()
        go.set()
        total = sum(out.get() for _ in procs)
        for p in procs:
            p.join()
        how = "watching" if watch else "scanning"
        print(f"{n} {how}: {total / args.seconds:.0f} queries/s in all")


if __name__ == "__main__":
    main()
