"""The PostgreSQL store beside the embedded one: the same ranking, publish time, latency.

Two commands, each against ``--database URL`` (``make postgres`` starts one):

- ``parity --root R --queries Q [--embedder none|local]``: each workspace of R
  is indexed here, published as a scope, and every query runs on both engines
  (``MemorySearch`` on the folder, ``DatabaseSearch`` on the scope); prints
  mrr@10 of each (``score.py``'s metric) and how many queries' top 10 differ.
- ``speed [--sizes 1000,10000]``: a seeded synthetic workspace per size
  (``synthetic.py``), indexed keyword-only (``--vectors``: with its projection
  embedder); the first publish, a one-file
  republish, then search latency in fresh processes: the first search of a
  process (connect and load included) and the p50 of warm searches, each beside
  the embedded store's; then the database's again in a process that maps the
  copies an earlier one kept (``Database.connect(..., cache=DIR)``).

    python benchmarks/database.py --database URL parity \
        --root ../shared/bench/locomo-dev --queries ../shared/bench/locomo-dev/queries.jsonl
    python benchmarks/database.py --database URL speed --sizes 1000,10000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402

from langchain_enhanced_memory.analysis.evaluation import evaluate, load_queries  # noqa: E402
from langchain_enhanced_memory.engine import MemorySearch  # noqa: E402
from langchain_enhanced_memory.engine.database import DatabaseSearch  # noqa: E402
from langchain_enhanced_memory.store.database import Database, local_owner  # noqa: E402


class _Published:
    """A database scope behind the face ``evaluate`` drives (``update_index``, ``search``)."""

    def __init__(self, db: Database, ws: Path, embedder: str) -> None:
        local = MemorySearch(ws, embedder=embedder)  # type: ignore[arg-type]
        local.update_index()
        t0 = time.perf_counter()
        db.publish(ws.name, local.index, local.model_id, owner=local_owner(ws), take_over=True)
        print(f"  published {ws.name} in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
        self.engine = DatabaseSearch(db, ws.name, embedder=embedder)  # type: ignore[arg-type]
        self.settings = self.engine.settings
        self.auto_index = False

    def update_index(self, **_: Any) -> None:
        """Published already."""

    def search(self, query: str, k: int, now: Any) -> Any:
        """The scope's answer."""
        return self.engine.search(query, k=k, now=now)


def parity(a: argparse.Namespace) -> None:
    root, queries = Path(a.root), load_queries(a.queries)
    local, local_rows = evaluate(root, queries, lambda ws: MemorySearch(ws, embedder=a.embedder))
    with Database.connect(a.database) as db:
        remote, remote_rows = evaluate(root, queries, lambda ws: _Published(db, ws, a.embedder))
    differ = sum(
        [(r["path"], r["startLine"]) for r in local_rows[q]]
        != [(r["path"], r["startLine"]) for r in remote_rows.get(q, [])]
        for q in local_rows
    )
    out = {
        "embedder": a.embedder,
        "mrr10_local": local["categories"]["ALL"]["mrr@10"],
        "mrr10_database": remote["categories"]["ALL"]["mrr@10"],
        "queries": len(queries),
        "top10_differ": differ,
        "p50_ms_local": local["latency_ms"]["p50"],
        "p50_ms_database": remote["latency_ms"]["p50"],
    }
    print(json.dumps(out))


_CHILD = """
import json, sys, time
t0 = time.perf_counter()
kind, target, scope, queries = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
kw = {"embedder": "none"}
if sys.argv[5] == "vectors":
    sys.path.insert(0, sys.argv[6])
    import synthetic
    kw = {"embeddings": synthetic.ProjectionEmbeddings()}
if kind == "local":
    from langchain_enhanced_memory.engine import MemorySearch
    eng = MemorySearch(target, auto_index=False, **kw)
else:
    from langchain_enhanced_memory.engine.database import DatabaseSearch
    from langchain_enhanced_memory.store.database import Database
    eng = DatabaseSearch(Database.connect(target, cache=sys.argv[7] or None), scope, **kw)
eng.search(queries[0], k=10)
first = time.perf_counter() - t0
warm = []
for q in queries[1:]:
    t = time.perf_counter(); eng.search(q, k=10); warm.append(time.perf_counter() - t)
warm.sort()
print(json.dumps({"first_ms": first * 1000, "warm_p50_ms": warm[len(warm) // 2] * 1000}))
"""


def _latency(
    kind: str, target: str, scope: str, queries: list[str], vectors: bool, cache: str = ""
) -> dict[str, float]:
    mode = "vectors" if vectors else "none"
    args = [kind, target, scope, json.dumps(queries), mode, str(HERE), cache]
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def speed(a: argparse.Namespace) -> None:
    qs = synthetic.queries(a.queries)
    with Database.connect(a.database) as db, tempfile.TemporaryDirectory() as tmp:
        for size in [int(s) for s in a.sizes.split(",")]:
            ws = synthetic.generate(Path(tmp) / f"w{size}", size)
            kw: dict[str, Any] = {"embedder": "none"}
            if a.vectors:
                kw = {"embeddings": synthetic.ProjectionEmbeddings()}
            eng = MemorySearch(ws, **kw)
            eng.update_index()
            scope = f"speed-{size}-{int(time.time())}"  # a new scope: a first publish
            t0 = time.perf_counter()
            first = db.publish(scope, eng.index, eng.model_id, owner=local_owner(ws))
            publish_s = time.perf_counter() - t0
            note = sorted((ws / "memory").glob("*.md"))[0]
            note.write_text(note.read_text() + "\n## Later\n\none more line\n")
            eng.update_index()
            t0 = time.perf_counter()
            db.publish(scope, eng.index, eng.model_id, owner=local_owner(ws))
            republish_s = time.perf_counter() - t0
            row: dict[str, Any] = {
                "chunks": first.chunks,
                "publish_s": round(publish_s, 3),
                "one_file_republish_s": round(republish_s, 3),
                "vectors": a.vectors,
                "local": _latency("local", str(ws), scope, qs, a.vectors),
                "database": _latency("database", a.database, scope, qs, a.vectors),
            }
            cache = str(Path(tmp) / "cache")
            _latency(
                "database", a.database, scope, qs, a.vectors, cache
            )  # fills this host's copies
            row["database_host_copies"] = _latency(
                "database", a.database, scope, qs, a.vectors, cache
            )
            print(json.dumps(row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--database", required=True, help="postgresql:// URL")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parity")
    p.add_argument("--root", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--embedder", default="none", choices=["none", "local"])
    s = sub.add_parser("speed")
    s.add_argument("--sizes", default="1000,10000")
    s.add_argument("--queries", type=int, default=60)
    s.add_argument("--vectors", action="store_true", help="synthetic.py's projection embedder")
    a = ap.parse_args()
    parity(a) if a.command == "parity" else speed(a)


if __name__ == "__main__":
    main()
