"""Many small namespaces in PostgreSQL: LangGraph's ``PostgresStore`` and ours at fleet scale.

For each store, a fresh database on one server holds ``--namespaces`` namespaces
(``("users", "u000042")``) of 20 items, bulk-loaded through the store's
``batch`` in puts of 1,000 (vectors from ``synthetic.py``'s model-free projection
embedder, as the 1M runs use; the load rate is printed as it goes, with the time
100,000 namespaces would take). Then worker processes, each opening the store
as an application would (``setup()`` included for ``PostgresStore``):

- a fresh process's first search: ``--fresh`` processes, each timed from after
  its imports and its embedding model's load to the answer of one search in a
  random namespace (opening the store included);
- a running worker serves ``--serve`` namespaces in random order, one search
  each (``limit=10``): the first search in a namespace it has not read (p50,
  p95), the same namespace searched again at once (warm), and its RSS after
  serving 1k, 10k, 100k ... namespaces; then ``put`` of a new key into a random
  namespace (p50, p95).

PostgreSQL is ``--database URL`` (a role that may create databases), else an
embedded one started in a temporary folder (default settings, fsync on).

    python benchmarks/langgraph_fleet.py --namespaces 100000 --serve 10000
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402
from langgraph.store.base import BaseStore, PutOp  # noqa: E402
from langgraph_harness import (  # noqa: E402
    STORES,
    Setup,
    fresh_database,
    percentiles,
    temp_postgres,
)

PER_NAMESPACE = 20
LOAD_BATCH = 1000
TARGET = 100_000  # the fleet: 100,000 namespaces, 2M items


def namespace(i: int) -> tuple[str, ...]:
    """The ``i``-th namespace of the fleet."""
    return ("users", f"u{i:06d}")


def load(store: BaseStore, n_namespaces: int, label: str) -> float:
    """Put 20 items into each of ``n_namespaces`` namespaces; the seconds it took."""
    pool = synthetic.texts(10_000)
    per_batch = LOAD_BATCH // PER_NAMESPACE
    t0 = time.perf_counter()
    last = t0
    for first in range(0, n_namespaces, per_batch):
        ops = [
            PutOp(namespace(i), f"k{j}", {"text": pool[(i * PER_NAMESPACE + j) % len(pool)]})
            for i in range(first, min(first + per_batch, n_namespaces))
            for j in range(PER_NAMESPACE)
        ]
        store.batch(ops)
        now = time.perf_counter()
        if now - last > 30 or first + per_batch >= n_namespaces:
            done = min(first + per_batch, n_namespaces)
            rate = done / (now - t0)
            print(
                f"  {label}: {done} namespaces in {now - t0:.0f} s ({rate * PER_NAMESPACE:.0f} "
                f"items/s; {TARGET} would take {TARGET / rate / 60:.0f} min)",
                file=sys.stderr,
                flush=True,
            )
            last = now
    return time.perf_counter() - t0


# --------------------------------------------------------------------------- worker side
def _rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def worker(a: argparse.Namespace) -> None:
    """Open the store, serve namespaces, print one JSON object (the child process's part)."""
    for module in STORES[a.store].modules:  # imports are not the first search's time
        importlib.import_module(module)
    # Nor is loading the embedding model (here the projection's random matrix, about
    # 12 MB): a worker loads its model once, as it imports, for either store alike.
    setup = Setup(synthetic.ProjectionEmbeddings(), synthetic.DIM, Path(a.tmp), a.url)
    setup.embed.embed_query("load")  # the matrix is made at the first call
    rng = random.Random(a.seed)
    queries = synthetic.queries(500, seed=a.seed)
    out: dict[str, Any] = {}
    t_imported = time.perf_counter()
    with STORES[a.store].open(setup) as store:
        store.search(namespace(rng.randrange(a.namespaces)), query=queries[0], limit=10)
        out["fresh_ms"] = (time.perf_counter() - t_imported) * 1000
        if a.serve:
            out.update(_serve(store, a, rng, queries))
    print(json.dumps(out))


def _serve(store: BaseStore, a: argparse.Namespace, rng: random.Random, queries: list[str]) -> Any:
    order = rng.sample(range(a.namespaces), min(a.serve, a.namespaces))
    first: list[float] = []
    warm: list[float] = []
    rss: dict[int, float] = {}
    marks = {10**k for k in range(3, 8)} | {len(order)}
    for n, i in enumerate(order, 1):
        query = queries[n % len(queries)]
        for times in (first, warm) if n <= a.warm else (first,):
            t0 = time.perf_counter()
            store.search(namespace(i), query=query, limit=10)
            times.append((time.perf_counter() - t0) * 1000)
        if n in marks:
            rss[n] = round(_rss_mb(), 1)
    put: list[float] = []
    for n in range(200):
        t0 = time.perf_counter()
        store.put(namespace(rng.randrange(a.namespaces)), f"new{n}", {"text": queries[n]})
        put.append((time.perf_counter() - t0) * 1000)
    return {
        "served": len(order),
        "first": [round(x, 2) for x in percentiles(first)],
        "warm": [round(x, 2) for x in percentiles(warm)],
        "put": [round(x, 2) for x in percentiles(put)],
        "rss_mb": rss,
    }


def _child(name: str, url: str, a: argparse.Namespace, seed: int, serve: int) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="lgbench-worker-") as tmp:
        args = ["worker", name, url, tmp, str(a.namespaces), str(seed), str(serve), str(a.warm)]
        done = subprocess.run(
            [sys.executable, __file__, *args], capture_output=True, text=True, timeout=a.timeout
        )
    if done.returncode != 0:
        raise SystemExit(f"{name} worker failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --------------------------------------------------------------------------- the run
def measure(name: str, server: str, a: argparse.Namespace) -> dict[str, Any]:
    """Load one store's fleet in a fresh database and measure its workers."""
    label = STORES[name].label
    with fresh_database(server, f"lgbench_fleet_{name}".replace("-", "_")) as url:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="lgbench-load-") as tmp:
            setup = Setup(synthetic.ProjectionEmbeddings(), synthetic.DIM, Path(tmp), url)
            with STORES[name].open(setup) as store:
                load_s = load(store, a.namespaces, label)
        fresh = [_child(name, url, a, seed, 0)["fresh_ms"] for seed in range(a.fresh)]
        served = _child(name, url, a, 1000, a.serve)
        del served["fresh_ms"]  # a worker's too, but the fresh figures are the --fresh ones
    row = {"store": name, "label": label, "namespaces": a.namespaces, "load_s": round(load_s)}
    row["fresh"] = [round(x, 1) for x in percentiles(fresh)]
    row.update(served)
    print(f"  {name}: {json.dumps(row)}", file=sys.stderr, flush=True)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """A markdown table, a row per store."""
    marks = sorted({int(k) for r in rows for k in r["rss_mb"]})
    head = ["store", "namespaces (items)", "load", "fresh process first search p50 (p95)"]
    head += ["first search p50 (p95)", "warm search p50 (p95)", "put p50 (p95)"]
    head += [f"RSS after {m:,} namespaces" for m in marks]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["label"], f"{r['namespaces']:,} ({r['namespaces'] * PER_NAMESPACE:,})"]
        cells.append(f"{r['load_s'] / 60:.1f} min")
        cells += [f"{r[k][0]:.1f} ms ({r[k][1]:.1f})" for k in ("fresh", "first", "warm", "put")]
        rss = {int(k): v for k, v in r["rss_mb"].items()}
        cells += [f"{rss[m]:.0f} MB" if m in rss else "-" for m in marks]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse the flags, start PostgreSQL unless given one, measure each store, print the table."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "worker":
        names = ["store", "url", "tmp", "namespaces", "seed", "serve", "warm"]
        a = argparse.Namespace(**dict(zip(names, argv[1:], strict=True)))
        for key in ("namespaces", "seed", "serve", "warm"):
            setattr(a, key, int(getattr(a, key)))
        worker(a)
        return
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--stores", default="postgres,ours-pg")
    ap.add_argument("--database", help="a PostgreSQL URL (default: start one in a temp folder)")
    ap.add_argument("--namespaces", type=int, default=TARGET)
    ap.add_argument("--serve", type=int, default=10_000, help="namespaces one worker searches")
    ap.add_argument("--warm", type=int, default=1000, help="of them, searched twice")
    ap.add_argument("--fresh", type=int, default=5, help="fresh processes' first searches")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per worker")
    ap.add_argument("--json", help="write every figure here")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = datetime.now(timezone.utc)
    with ExitStack() as stack:
        server = a.database or stack.enter_context(temp_postgres())
        rows = [measure(name, server, a) for name in a.stores.split(",")]
    minutes = (datetime.now(timezone.utc) - started).total_seconds() / 60
    print(f"{started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, {minutes:.1f} min:")
    shown = ["URL" if i and argv[i - 1] == "--database" else x for i, x in enumerate(argv)]
    print("python benchmarks/langgraph_fleet.py " + " ".join(shown))
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
