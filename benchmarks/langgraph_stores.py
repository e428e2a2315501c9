"""Our LangGraph store beside LangGraph's own: ranking on locomo-dev as items, and latency.

One run prints one table, a row per store, every store on the same items and
the same embedder (so the comparison is the ranking and the storage only):

- quality (``--root``, ``--queries``): each section of each note of each
  workspace (the package's own chunks, their parent headers as a first line)
  is an item ``{"text", "path", "startLine", "endLine"}`` in namespace
  ``("locomo", <workspace>)``; every graded query runs as
  ``search(namespace, query=..., limit=10)`` and each hit maps back to its
  ``{path, startLine, endLine}`` for the bench's metrics (mrr@10, hit@k,
  ``analysis.evaluation.summarize``, the numbers ``score.py`` prints). The
  embedder is the bundled e5 model (``--embedder local``), each text embedded
  once for all stores (``PostgresStore`` and ``SqliteStore`` embed a query with
  ``embed_documents``, e5's ``passage:`` prefix; ``InMemoryStore`` and ours with
  ``embed_query``: each store as it ships). LangGraph's ``search`` takes no
  ``now``, so no store resolves a query's "yesterday" against the query's moment.
- latency (``--sizes``, ``--layouts``): ``--sizes`` items of synthetic text
  (``synthetic.texts``; vectors from its model-free projection embedder, as the
  1M runs use) bulk-loaded through ``batch`` in puts of 1,000, in one namespace
  (``single``) or in namespaces of 20 (``many``); then ``put`` (a new key in an
  existing namespace), ``get`` and ``search(limit=10)`` (in one namespace, a
  random one for ``many``) timed one call at a time: p50 / p95 in ms.

Each store gets its own temporary folder and, for PostgreSQL, its own fresh
database on one server: ``--database URL`` (a role that may create
databases), else an embedded PostgreSQL started in a temporary folder.

    python benchmarks/langgraph_stores.py --root ../shared/bench/locomo-dev \
        --queries ../shared/bench/locomo-dev/queries.jsonl --sizes 10000,200000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from collections.abc import Iterator
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
    CachedEmbeddings,
    opened,
    percentiles,
    temp_postgres,
    timed,
)

from langchain_enhanced_memory.analysis.evaluation import load_queries, summarize  # noqa: E402
from langchain_enhanced_memory.core.chunking import chunk_lines  # noqa: E402

PER_NAMESPACE = 20
LOAD_BATCH = 1000


# --------------------------------------------------------------------------- quality
def note_items(workspace: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each section of each note under ``workspace`` as ``(key, value)``."""
    for path in sorted(workspace.rglob("*.md")):
        rel = path.relative_to(workspace).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, chunk in enumerate(chunk_lines(lines, default_header=rel)):
            first = chunk.text.split("\n", 1)[0].lstrip("#").strip()
            # A section's parent headers (the day, the chat) belong to it as a reader sees it.
            chain = "" if first == chunk.headers[0] else " > ".join(chunk.headers[:-1])
            text = f"{chain}\n{chunk.text}" if chain else chunk.text
            key = f"{path.stem}-{n:03d}"
            value = {"text": text, "path": rel, "startLine": chunk.start_line}
            yield key, {**value, "endLine": chunk.end_line}


def quality(store: BaseStore, root: Path, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """Load every workspace's sections, run the graded queries: the bench's metrics."""
    for ws in sorted({q["workspace"] for q in queries}):
        ops = [PutOp(("locomo", ws), key, value) for key, value in note_items(root / ws)]
        for i in range(0, len(ops), LOAD_BATCH):
            store.batch(ops[i : i + LOAD_BATCH])
    rows: dict[str, list[dict[str, Any]]] = {}
    ms: list[float] = []
    for q in queries:
        t0 = time.perf_counter()
        hits = store.search(("locomo", q["workspace"]), query=q["query"], limit=10)
        ms.append((time.perf_counter() - t0) * 1000)
        rows[q["id"]] = [
            {k: hit.value[k] for k in ("path", "startLine", "endLine")} for hit in hits
        ]
    return summarize(queries, rows, ms)


# --------------------------------------------------------------------------- latency
def namespaces(n: int, layout: str) -> list[tuple[str, ...]]:
    """The namespace of each of ``n`` items in ``layout``."""
    if layout == "single":
        return [("bench",)] * n
    return [("users", f"u{i // PER_NAMESPACE:06d}") for i in range(n)]


def latency(
    store: BaseStore, texts: list[str], layout: str, ops: int, budget_s: float
) -> dict[str, Any]:
    """Bulk-load ``texts`` in ``layout``, then time put, get and search: p50/p95 ms each."""
    spaces = namespaces(len(texts), layout)
    t0 = time.perf_counter()
    for i in range(0, len(texts), LOAD_BATCH):
        store.batch(
            [
                PutOp(spaces[j], f"k{j}", {"text": texts[j]})
                for j in range(i, min(i + LOAD_BATCH, len(texts)))
            ]
        )
    load_s = time.perf_counter() - t0
    rng = random.Random(7)
    picks = [rng.randrange(len(texts)) for _ in range(ops)]
    extra = synthetic.texts(ops, seed=99)
    queries = synthetic.queries(ops)
    out: dict[str, Any] = {"items": len(texts), "layout": layout, "load_s": round(load_s, 1)}
    calls = {
        "put": [
            _call(store.put, spaces[j], f"new{n}", {"text": extra[n]}) for n, j in enumerate(picks)
        ],
        "get": [_call(store.get, spaces[j], f"k{j}") for j in picks],
        "search": [
            _call(store.search, spaces[j], query=queries[n], limit=10) for n, j in enumerate(picks)
        ],
    }
    for op, fns in calls.items():
        ms = timed(fns, budget_s)
        p50, p95 = percentiles(ms)
        out[op] = {"p50": round(p50, 2), "p95": round(p95, 2), "n": len(ms)}
    return out


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return lambda: fn(*args, **kwargs)


# --------------------------------------------------------------------------- the run
def run(a: argparse.Namespace, server: str | None) -> list[dict[str, Any]]:
    """Every picked store through quality and latency: one summary per store."""
    names = a.stores.split(",")
    queries = load_queries(a.queries) if a.queries else []
    sizes = [int(s) for s in a.sizes.split(",") if s]
    rows: list[dict[str, Any]] = [{"store": n, "label": STORES[n].label} for n in names]
    if queries:
        embed = _quality_embedder(a.embedder, queries)
        for row in rows:
            with opened(row["store"], embed, 384, server, f"q_{row['store']}") as store:
                row["quality"] = quality(store, Path(a.root), queries)
            _progress(row["store"], "quality", row["quality"]["categories"]["ALL"])
    proj = synthetic.ProjectionEmbeddings()
    for size in sizes:
        texts = synthetic.texts(size)
        for layout in a.layouts.split(","):
            for row in rows:
                run_id = f"l_{row['store']}_{size}_{layout}"
                with opened(row["store"], proj, synthetic.DIM, server, run_id) as store:
                    got = latency(store, texts, layout, a.ops, a.budget)
                row.setdefault("latency", []).append(got)
                _progress(row["store"], f"{size} {layout}", got)
    return rows


def _quality_embedder(name: str, queries: list[dict[str, Any]]) -> CachedEmbeddings:
    texts = list(dict.fromkeys(q["query"] for q in queries))
    if name != "local":
        embed = CachedEmbeddings(synthetic.ProjectionEmbeddings())
        embed.warm_queries(texts)
        return embed
    from langchain_enhanced_memory.embeddings import e5
    from langchain_enhanced_memory.embeddings.local import LocalEmbeddings

    embed = CachedEmbeddings(LocalEmbeddings())
    model = e5.load_model()
    with e5.model_lock:  # one call for every query, not one a query
        vectors = model.query(texts).astype(float).tolist()
    embed.queries.update(zip(texts, vectors, strict=True))
    # PostgresStore and SqliteStore embed a query with embed_documents (e5's "passage: "):
    # computed here too, so no store's searches pay for the model.
    embed.embed_documents(texts)
    return embed


def _progress(store: str, what: str, figures: Any) -> None:
    print(f"  {store} {what}: {json.dumps(figures)}", file=sys.stderr, flush=True)


def table(rows: list[dict[str, Any]]) -> str:
    """One markdown table: a row per store, quality then each size and layout's latency."""
    head = ["store"]
    if any("quality" in r for r in rows):
        head += ["mrr@10", "hit@1", "hit@10"]
    runs = [(r["items"], r["layout"]) for r in rows[0].get("latency", [])]
    head += [f"{_size(n)} {layout}: put / get / search p50 (p95) ms" for n, layout in runs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["label"]]
        if "quality" in r:
            every = r["quality"]["categories"]["ALL"]
            cells += [f"{every[m]:.3f}" for m in ("mrr@10", "hit@1", "hit@10")]
        for got in r.get("latency", []):
            p50 = " / ".join(f"{got[op]['p50']:.1f}" for op in ("put", "get", "search"))
            p95 = " / ".join(f"{got[op]['p95']:.1f}" for op in ("put", "get", "search"))
            cells.append(f"{p50} ({p95})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _size(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def _shown(argv: list[str]) -> list[str]:
    """The command line with the database URL (its password) left out."""
    out = []
    for i, arg in enumerate(argv):
        if arg.startswith("--database="):
            arg = "--database=URL"
        elif i and argv[i - 1] == "--database":
            arg = "URL"
        out.append(arg)
    return out


def main(argv: list[str] | None = None) -> None:
    """Parse the flags, start PostgreSQL unless given one, run, print the table."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--stores", default=",".join(STORES), help="comma-separated: " + ",".join(STORES)
    )
    ap.add_argument("--database", help="a PostgreSQL URL (default: start one in a temp folder)")
    ap.add_argument("--root", help="the locomo-dev folder (quality; skipped without it)")
    ap.add_argument("--queries", help="its queries.jsonl")
    ap.add_argument("--embedder", default="local", choices=["local", "projection"])
    ap.add_argument("--sizes", default="10000,200000", help="items per latency run ('' skips)")
    ap.add_argument("--layouts", default="single,many")
    ap.add_argument("--ops", type=int, default=200, help="calls timed per operation")
    ap.add_argument(
        "--budget", type=float, default=20.0, help="seconds per operation (>= 20 calls)"
    )
    ap.add_argument("--json", help="write every figure here")
    a = ap.parse_args(argv)
    if bool(a.root) != bool(a.queries):
        ap.error("--root and --queries go together")
    unknown = set(a.stores.split(",")) - set(STORES)
    if unknown:
        ap.error(f"unknown stores: {', '.join(sorted(unknown))}")
    # A SIGTERM unwinds like Ctrl-C, so the PostgreSQL started here is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = datetime.now(timezone.utc)
    with ExitStack() as stack:
        server = a.database
        if server is None and any(STORES[n].postgres for n in a.stores.split(",")):
            server = stack.enter_context(temp_postgres())
        rows = run(a, server)
    minutes = (datetime.now(timezone.utc) - started).total_seconds() / 60
    print(f"{started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, {minutes:.1f} min:")
    print(
        "python benchmarks/langgraph_stores.py "
        + " ".join(_shown(sys.argv[1:] if argv is None else argv))
    )
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
