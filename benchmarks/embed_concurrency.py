"""Does sending embedding batches concurrently help? Measured against the fake Ollama server.

The fake server (``tests/fake_ollama.py``, a real HTTP server on 127.0.0.1) waits
``--delay`` seconds per request (its ``slow`` fault), standing in for a model's
per-request latency; batches of ``--batch`` texts go through the package's real
Ollama client and ``MemorySearch.embed_missing`` with ``embed_concurrency`` set to
each value. Prints texts per second for each concurrency and delay.

Run ``python benchmarks/embed_concurrency.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402
from fake_ollama import FakeOllama  # noqa: E402

from langchain_enhanced_memory.core.settings import MemorySettings  # noqa: E402
from langchain_enhanced_memory.engine import MemorySearch  # noqa: E402


def one_run(ws: Path, url: str, concurrency: int, batch: int) -> tuple[float, int]:
    """Embed the whole workspace from scratch; return seconds and texts embedded."""
    for p in (ws / ".enhanced-memory").glob("index.sqlite*"):
        p.unlink()
    settings = MemorySettings(embed_concurrency=concurrency, embed_batch_size=batch)
    eng = MemorySearch(ws, settings=settings, embedder="ollama", ollama_url=url)
    eng.index.sync()
    t0 = time.perf_counter()
    n = eng.embed_missing()
    return time.perf_counter() - t0, n


def main() -> None:
    """Print a texts-per-second table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chunks", type=int, default=400)
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--delays", default="0,0.05,0.2", help="seconds per request")
    p.add_argument("--concurrency", default="1,2,4,8")
    a = p.parse_args()
    levels = [int(c) for c in a.concurrency.split(",")]
    with tempfile.TemporaryDirectory() as tmp, FakeOllama() as server:
        ws = synthetic.generate(Path(tmp) / "ws", a.chunks, seed=0)
        print(f"{a.chunks} sections, batches of {a.batch}, texts/s by concurrency")
        print("| delay per request | " + " | ".join(f"c={c}" for c in levels) + " |")
        print("|---|" + "---|" * len(levels))
        for delay in (float(d) for d in a.delays.split(",")):
            server.set_fault("slow", seconds=delay) if delay else server.clear_fault()
            cells = []
            for c in levels:
                seconds, n = one_run(ws, server.url, c, a.batch)
                cells.append(f"{n / seconds:.0f}")
            print(f"| {delay * 1000:.0f} ms | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
