"""The PostgreSQL store beside the embedded one: the same ranking, and the scale table.

Two commands, each against ``--database URL`` (``make postgres`` starts one):

- ``parity --root R --queries Q [--embedder none|local]``: each workspace of R
  (notes, and transcripts in its ``sessions/``: both searched, corpus ``all``)
  is indexed in a temporary copy, published as a scope, and every query runs on
  both engines (``MemorySearch`` on the folder, ``DatabaseSearch`` on the
  scope); prints mrr@10 of each (``score.py``'s metric) and how many queries'
  top 10 differ (paths and lines, in order). Then each workspace's notes
  (``.md``) go through a database-backed scope's write path
  (``noteindex.index_notes``, the embedder asked for every text) and its
  segment is held to the one a publish cuts from the local index: how many
  workspaces' segments differ in a byte (``note_segments_differ``).
- ``scale``: a seeded synthetic workspace of ``--chunks`` chunks
  (``synthetic.py``, its model-free projection embedder), indexed and published
  as one scope; then one table, each row the embedded store's figure beside the
  database's: warm search p50 (keyword-only and hybrid; the embedded engine
  watching, as the retriever and the servers do), the first search of a fresh
  worker process (process start to answer, with and without this host's copies
  of the segments), the same once the database holds ``--scopes`` scopes of
  about 1M chunks in all (copies of a ``--filler``-chunk workspace), a one-file
  change (re-index, then its publish), ``--writers`` processes remembering into
  one database-backed scope at once (appends per second, every line read back),
  and ``--readers`` processes searching at once (queries per second in all).
  Scopes it makes are named ``bench-*`` and dropped at the end.

    python benchmarks/database.py --database URL parity \
        --root ../shared/bench/locomo-dev --queries ../shared/bench/locomo-dev/queries.jsonl
    python benchmarks/database.py --database URL parity --root ../shared/bench/locomo-dev-sessions \
        --queries ../shared/bench/locomo-dev-sessions/queries.jsonl --embedder none
    python benchmarks/database.py --database URL scale     # about 15 minutes on 2 cores
    python benchmarks/database.py --database URL remember [--sizes 0,200] [--rounds 30]

- ``remember``: one ``remember`` into a database-backed scope whose day's note
  already holds ``--sizes`` bullets (remembered first), ``--rounds`` times
  after a warm-up; ms p50 of each, keyword-only and with the local model.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

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


def _copy(root: Path, into: Path) -> Path:
    """A writable copy of ``root``'s workspaces (their indexes go there, not into the data)."""
    dest = into / root.name
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".enhanced-memory"))
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dest


def _spans(rows: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """A top-k list as what a user sees of it: each hit's path and lines, in order."""
    return [(r["path"], r["startLine"], r["endLine"]) for r in rows]


def parity(a: argparse.Namespace) -> None:
    queries = load_queries(a.queries)
    with tempfile.TemporaryDirectory() as tmp:
        root = _copy(Path(a.root), Path(tmp))
        local, local_rows = evaluate(
            root, queries, lambda ws: MemorySearch(ws, embedder=a.embedder)
        )
        with Database.connect(a.database) as db:
            remote, remote_rows = evaluate(root, queries, lambda ws: _Published(db, ws, a.embedder))
        chunks, segments_differ = _note_path(root, a.embedder)
    differ = sum(_spans(local_rows[q]) != _spans(remote_rows.get(q, [])) for q in local_rows)
    out = {
        "embedder": a.embedder,
        "mrr10_local": local["categories"]["ALL"]["mrr@10"],
        "mrr10_database": remote["categories"]["ALL"]["mrr@10"],
        "queries": len(queries),
        "top10_differ": differ,
        "note_chunks": chunks,
        "note_segments_differ": segments_differ,
        "p50_ms_local": local["latency_ms"]["p50"],
        "p50_ms_database": remote["latency_ms"]["p50"],
    }
    print(json.dumps(out))


def _note_path(root: Path, embedder: str) -> tuple[int, int]:
    """The database write path's segment of each workspace's notes beside a publish's.

    Returns:
        The notes' chunks, and how many workspaces' segments (or hashes) differ.
    """
    from langchain_enhanced_memory.store.database.noteindex import Embedding, index_notes
    from langchain_enhanced_memory.store.database.publish import from_snapshot
    from langchain_enhanced_memory.store.segment import to_bytes

    chunks = differ = 0
    for ws in sorted(p for p in root.iterdir() if p.is_dir()):
        local = MemorySearch(ws, embedder=embedder)  # type: ignore[arg-type]
        model = local.model_id
        snap = local.index.snapshot(model)
        with local.index.connect() as lite:
            files = lite.execute("SELECT path, hash FROM files WHERE kind != 'session'")
            hashes = dict(files.fetchall())
            notes = {p: (ws / p).read_bytes().decode("utf-8") for p in hashes}
            rows = np.flatnonzero([p in hashes for p in snap.paths])
            published = from_snapshot(lite, snap, rows)
        embedding = Embedding(model, local.embed_documents) if model else None
        written, written_hashes = index_notes(notes, local.settings, embedding)
        chunks += written.chunks
        differ += to_bytes(written) != to_bytes(published) or written_hashes != hashes
        local.close()
    return chunks, differ


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


_READER = """
import json, os, sys, time
kind, target, scope, n, seed, ready, go, here = sys.argv[1:9]
sys.path.insert(0, here)
import synthetic
if kind == "local":
    from langchain_enhanced_memory.engine import MemorySearch
    eng = MemorySearch(target, embedder="none", watch=True)
else:
    from langchain_enhanced_memory.engine.database import DatabaseSearch
    from langchain_enhanced_memory.store.database import Database
    eng = DatabaseSearch(Database.connect(target), scope, embedder="none")
queries = synthetic.queries(int(n), seed=int(seed))
eng.search(queries[0], k=10, now=synthetic.NOW)
open(ready + str(os.getpid()), "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
t = time.perf_counter()
for q in queries:
    eng.search(q, k=10, now=synthetic.NOW)
print(json.dumps({"s": time.perf_counter() - t}))
"""

_WRITER = """
import json, sys, time
url, scope, w, n, here = sys.argv[1:6]
sys.path.insert(0, here)
import synthetic
from langchain_enhanced_memory.engine.database import DatabaseSearch
from langchain_enhanced_memory.store.database import Database
eng = DatabaseSearch(Database.connect(url), scope, embeddings=synthetic.ProjectionEmbeddings())
eng.remember(f"warm-up line of writer {w}", now=synthetic.NOW)
t = time.perf_counter()
for i in range(int(n)):
    eng.remember(f"writer {w} line {i} about the shared plan", now=synthetic.NOW)
print(json.dumps({"s": time.perf_counter() - t}))
"""


def _together(code: str, argvs: list[list[str]]) -> list[dict[str, float]]:
    """Run one child per argv at once; each prints one JSON line last."""
    children = [
        subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE, text=True)
        for argv in argvs
    ]
    return [json.loads(c.communicate()[0].strip().splitlines()[-1]) for c in children]


def _readers(kind: str, target: str, scope: str, procs: int, n: int) -> float:
    """Queries per second of ``procs`` processes searching at once, each warmed up first."""
    with tempfile.TemporaryDirectory() as tmp:
        ready, go = str(Path(tmp) / "ready-"), str(Path(tmp) / "go")
        argvs = [
            [kind, target, scope, str(n), str(10 + i), ready, go, str(HERE)] for i in range(procs)
        ]
        children = [
            subprocess.Popen(
                [sys.executable, "-c", _READER, *argv], stdout=subprocess.PIPE, text=True
            )
            for argv in argvs
        ]
        while len(list(Path(tmp).glob("ready-*"))) < procs:
            if any(c.poll() not in (None, 0) for c in children):
                raise SystemExit("a reader failed")
            time.sleep(0.02)
        Path(go).touch()
        took = [json.loads(c.communicate()[0].strip().splitlines()[-1])["s"] for c in children]
    return procs * n / max(took)


def _writers(db: Database, url: str, scope: str, procs: int, n: int) -> tuple[float, int]:
    """Appends per second of ``procs`` processes appending at once, and the lines lost."""
    from langchain_enhanced_memory.store.append import daily_path

    argvs = [[url, scope, str(w), str(n), str(HERE)] for w in range(procs)]
    took = [r["s"] for r in _together(_WRITER, argvs)]
    text = db.read(scope, daily_path(synthetic.NOW.date())).text
    lost = sum(
        f"writer {w} line {i} about the shared plan" not in text
        for w in range(procs)
        for i in range(n)
    )
    return procs * n / max(took), lost


def _warm(engine: Any, queries: list[str]) -> float:
    engine.search(queries[0], k=10, now=synthetic.NOW)
    took = []
    for q in queries:
        t = time.perf_counter()
        engine.search(q, k=10, now=synthetic.NOW)
        took.append(time.perf_counter() - t)
    return float(np.percentile(took, 50) * 1000)


def _drop(db: Database) -> None:
    """Drop the scopes this benchmark made (``bench-*``), as ``enhanced-memory scopes drop``."""
    for info in db.scopes():
        if info.name.startswith("bench-"):
            db.drop_scope(info.name)


def scale(a: argparse.Namespace) -> None:
    qs = synthetic.queries(a.queries)
    rows: list[tuple[str, str, str, str]] = []

    def row(name: str, local: float, db: float, unit: str) -> None:
        rows.append((name, f"{local:,.1f} {unit}", f"{db:,.1f} {unit}", f"{db / local:.2f}"))
        print("  " + " | ".join(rows[-1]), file=sys.stderr, flush=True)

    def cold(target: str, scope: str, cache: str = "") -> float:
        kind = "local" if target == str(ws) else "database"
        got = [
            _latency(kind, target, scope, qs[:2], False, cache)["first_ms"]
            for _ in range(a.cold_runs)
        ]
        return float(np.median(got))

    with Database.connect(a.database) as db, tempfile.TemporaryDirectory() as tmp:
        _drop(db)
        ws = synthetic.generate(Path(tmp) / "big", a.chunks)
        hybrid = MemorySearch(ws, embeddings=synthetic.ProjectionEmbeddings(), watch=True)
        hybrid.update_index()
        t0 = time.perf_counter()
        first = db.publish("bench-big", hybrid.index, hybrid.model_id, owner=local_owner(ws))
        print(
            f"{first.chunks:,} chunks published in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )
        keyword = MemorySearch(ws, embedder="none", watch=True)
        local_p50 = _warm(keyword, qs)
        row(
            "search p50, keyword-only",
            local_p50,
            _warm(DatabaseSearch(db, "bench-big", embedder="none"), qs),
            "ms",
        )
        row(
            "search p50, hybrid",
            _warm(hybrid, qs),
            _warm(DatabaseSearch(db, "bench-big", embeddings=synthetic.ProjectionEmbeddings()), qs),
            "ms",
        )
        local_cold = cold(str(ws), "")
        row(
            "first search of a fresh process (start to answer)",
            local_cold,
            cold(a.database, "bench-big"),
            "ms",
        )
        cache = str(Path(tmp) / "cache")
        cold(a.database, "bench-big", cache)  # this host's copies, made
        row(
            "the same, with this host's copies of the segments",
            local_cold,
            cold(a.database, "bench-big", cache),
            "ms",
        )

        filler = synthetic.generate(Path(tmp) / "filler", a.filler, seed=7)
        other = MemorySearch(filler, embeddings=synthetic.ProjectionEmbeddings())
        other.update_index()
        t0 = time.perf_counter()
        for i in range(a.scopes - 1):
            db.publish(
                f"bench-other-{i:03d}", other.index, other.model_id, owner=local_owner(filler)
            )
        total = sum(s.chunks for s in db.scopes() if s.name.startswith("bench-"))
        print(
            f"{a.scopes - 1} more scopes published in {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
        )
        among = f"among {total:,} chunks in {a.scopes} scopes"
        row(
            f"search p50, keyword-only, {among}",
            local_p50,
            _warm(DatabaseSearch(db, "bench-big", embedder="none"), qs),
            "ms",
        )
        row(
            f"first search of a fresh process, {among}",
            local_cold,
            cold(a.database, "bench-big"),
            "ms",
        )

        note = sorted((ws / "memory").glob("*.md"))[0]
        note.write_text(
            note.read_text(encoding="utf-8") + "\n## Later\n\none more line\n", encoding="utf-8"
        )
        t0 = time.perf_counter()
        hybrid.update_index()
        sync_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        db.publish("bench-big", hybrid.index, hybrid.model_id, owner=local_owner(ws))
        publish_ms = (time.perf_counter() - t0) * 1000
        rows.append(
            (
                "one file changed: its re-index, then its publish",
                f"{sync_ms:,.0f} ms",
                f"+ {publish_ms:,.0f} ms",
                "",
            )
        )
        rate, lost = _writers(db, a.database, "bench-team", a.writers, a.appends)
        rows.append(
            (
                f"{a.writers} processes remembering into one scope, {a.appends} each",
                "",
                f"{rate:.1f} appends/s, {lost} lost",
                "",
            )
        )
        local_qps = _readers("local", str(ws), "", a.readers, a.queries)
        db_qps = _readers("database", a.database, "bench-big", a.readers, a.queries)
        rows.append(
            (
                f"{a.readers} processes searching at once, keyword-only",
                f"{local_qps:,.0f} queries/s",
                f"{db_qps:,.0f} queries/s",
                f"{db_qps / local_qps:.2f}",
            )
        )
        hybrid.close()
        keyword.close()
        _drop(db)
    load = os.getloadavg()[0]
    when = time.strftime("%Y-%m-%d")
    print(f"{when}, {first.chunks:,} chunks, load average {load:.1f}, {os.cpu_count()} cores")
    print("| measure | embedded store | database | database / embedded |")
    print("|---|---|---|---|")
    for cells in rows:
        print("| " + " | ".join(cells) + " |")


def remember(a: argparse.Namespace) -> None:
    """ms p50 of a ``remember`` into a database-backed scope's day's note of each size."""
    print(f"{time.strftime('%Y-%m-%d')}, load average {os.getloadavg()[0]:.1f}")
    print("| bullets in the note | embedder | remember p50 ms |")
    print("|---|---|---|")
    with Database.connect(a.database, cache=None) as db:
        for embedder in a.embedders.split(","):
            for size in (int(n) for n in a.sizes.split(",")):
                scope = f"bench-remember-{embedder}-{size}"
                _drop(db)
                eng = DatabaseSearch(db, scope, embedder=embedder)  # type: ignore[arg-type]
                for i in range(size + 1):  # the note, and a warm-up
                    eng.remember(f"fact {i} about the shared plan", now=synthetic.NOW)
                took = []
                for i in range(a.rounds):
                    t = time.perf_counter()
                    eng.remember(f"new fact {i} about the rollout", now=synthetic.NOW)
                    took.append(time.perf_counter() - t)
                _drop(db)
                ms = statistics.median(took) * 1000
                print(f"| {size} | {embedder} | {ms:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--database", required=True, help="postgresql:// URL")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parity")
    p.add_argument("--root", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--embedder", default="none", choices=["none", "local"])
    s = sub.add_parser("scale")
    s.add_argument("--chunks", type=int, default=100_000, help="chunks of the scope measured")
    s.add_argument("--scopes", type=int, default=100, help="scopes in the database at the end")
    s.add_argument("--filler", type=int, default=10_000, help="chunks of each other scope")
    s.add_argument("--queries", type=int, default=100)
    s.add_argument("--cold-runs", type=int, default=3)
    s.add_argument("--readers", type=int, default=8)
    s.add_argument("--writers", type=int, default=8)
    s.add_argument("--appends", type=int, default=25, help="appends per writer")
    r = sub.add_parser("remember")
    r.add_argument("--sizes", default="0,200", help="bullets the note holds before")
    r.add_argument("--rounds", type=int, default=30)
    r.add_argument("--embedders", default="none,local")
    a = ap.parse_args()
    {"parity": parity, "scale": scale, "remember": remember}[a.command](a)


if __name__ == "__main__":
    main()
