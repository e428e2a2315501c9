"""The local model's throughput settings, side by side: threads, then a whole workspace's vectors.

For each thread count (each in a fresh process, since the engine reads its
thread count once, when it loads) it embeds the workspace's chunk texts and
their lines in batches of ``--batch`` and times queries one by one, then
embeds every missing vector of a fresh copy of the workspace the way ``index``
does (committed in batches) and reports the time until all are in, twice side
by side: with every chunk text embedded too (``chunk_vectors="embedded"``, the
recipe before) and with a multi-line chunk's vector taken as the mean of its
lines' (``"lines"``, the default).

Run ``python benchmarks/local_model.py --workspace examples/workspace`` (a few
minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUERIES = [
    "what did we decide about the database migration?",
    "上周一 星河项目 讨论了什么",
    "who owns the data pipeline",
    "standup notes Feb 8",
]


def child(workspace: str, threads: int, batch: int) -> dict[str, Any]:
    from langchain_enhanced_memory.core.settings import MemorySettings
    from langchain_enhanced_memory.embeddings.local import LocalEmbeddings
    from langchain_enhanced_memory.engine import MemorySearch

    emb = LocalEmbeddings(threads)
    probe = MemorySearch(workspace, embedder="none")
    probe.index.sync()
    texts = probe.index.snapshot(None).texts
    lines = [ln for t in texts for ln in t.splitlines() if len(ln.strip()) > 20]
    emb.embed_query("warm up")
    out: dict[str, Any] = {"threads": threads}
    for label, items in (("chunks", texts), ("lines", lines)):
        t0 = time.perf_counter()
        for i in range(0, len(items), batch):
            emb.embed_documents(items[i : i + batch])
        out[f"{label}_per_s"] = len(items) / (time.perf_counter() - t0)
    times = []
    for q in QUERIES * 5:
        t0 = time.perf_counter()
        emb.embed_query(q)
        times.append(time.perf_counter() - t0)
    times.sort()
    out["query_p50_ms"] = times[len(times) // 2] * 1000
    # Chunk vectors embedded (as before) or taken as the mean of their lines' (the default);
    # each twice, alternating, best kept: a busy machine slows either one at random.
    for mode in ("embedded", "lines") * 2:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp) / "ws"
            shutil.copytree(workspace, ws, ignore=shutil.ignore_patterns(".enhanced-memory"))
            settings = MemorySettings(local_threads=threads, chunk_vectors=mode)
            eng = MemorySearch(ws, embedder="local", settings=settings)
            t0 = time.perf_counter()
            _, n = eng.update_index()
            took = time.perf_counter() - t0
            out[f"all_vectors_{mode}_s"] = min(took, out.get(f"all_vectors_{mode}_s", took))
            out[f"texts_{mode}"] = n
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workspace", default="examples/workspace")
    p.add_argument("--threads", default="1,0", help="thread counts to compare (0: one per core)")
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child is not None:
        print(json.dumps(child(a.workspace, a.child, a.batch)))
        return 0
    rows = []
    for n in (int(x) for x in a.threads.split(",")):
        cmd = [sys.executable, __file__, "--workspace", a.workspace, "--batch", str(a.batch)]
        out = subprocess.run([*cmd, "--child", str(n)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores, batches of {a.batch}")
    print(
        "| threads | chunks/s | lines/s | query p50 ms | all vectors of a fresh copy, s (texts):"
        " chunk texts embedded | chunk vectors from their lines | ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        label = r["threads"] or f"0 (one per core: {os.cpu_count()})"
        emb, mean = r["all_vectors_embedded_s"], r["all_vectors_lines_s"]
        print(
            f"| {label} | {r['chunks_per_s']:.1f} | {r['lines_per_s']:.1f} |"
            f" {r['query_p50_ms']:.1f} | {emb:.1f} ({r['texts_embedded']}) |"
            f" {mean:.1f} ({r['texts_lines']}) | {emb / mean:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
