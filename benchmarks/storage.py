"""The storage choice, measured: today's store against two SQLite ones, same tokens and ranking.

Three stores index the same seeded synthetic workspace (``synthetic.py``, written
as ``speed.py`` writes it) and answer the same queries through the package's own
ranking (``core.ranking.rank`` over a ``core.snapshot.Snapshot``):

- **A, today's store**: ``MemorySearch`` / ``MemoryIndex`` as ``speed.py`` uses
  them (posting-list segments, chunk rows and vector segments in side files,
  the spool, folds and merges), through the package's public paths.
- **C, SQLite holding posting lists as BLOB rows** and **B', FTS5 for
  candidates re-scored by the package's BM25** (``storage_variants.py``,
  prototypes, not package code), both with chunk rows in SQLite and vectors
  per segment (one int8 segment per change set, ``storage_proto.py``).

Every store's BM25 is the package's over the same rows and term frequencies,
so the top-10s should agree with A's; the agreement of each is printed.

Each phase runs in a fresh process (peak RSS is the child's ``ru_maxrss``):
``cold`` (index from nothing, vectors from the model-free fake embedder),
``load`` (a fresh process: load, then one hybrid query), ``search`` (keyword,
vector and hybrid queries: p50 of ``rank`` + top-5 + reading the top rows'
path and text; the top-10s for the agreement check; ``retriever.invoke``;
for B', FTS5's own top-:data:`TOP_N` candidates alone, the floor of a B' that
re-scores only those), ``turns`` (every store's keyword-only ``retriever.invoke``
in one process, taking turns, so the machine's load falls on all alike) and
``onechange`` (append a section to the latest daily note, bring the index up
to date; the note is restored afterwards).

Run ``python benchmarks/storage.py --sizes 10000,100000 --runs 2`` (about 20
minutes on 2 busy cores; workspaces and indexes go under ``--root``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import speed  # noqa: E402
import synthetic  # noqa: E402
from storage_variants import BlobStore, FtsStore  # noqa: E402

EDIT = "\n## Added later\n\nBenchmark edit: moved the retro to Thursday with Grace.\n"
PROTOTYPES = {"B'": FtsStore, "C": BlobStore}
STORES = ("A", *PROTOTYPES)
TURNS = 3  # rounds of phase_turns
TOP_N = 200  # the candidates a top-N B' would re-score (the exact top-10's share printed)
# A's modules a prototype's term rows replace: postings.py whole, snapshots.py in part
# (its segment loading); the vector segments, spool and folds stay in every variant.
A_INDEX = [f"store/{m}.py" for m in ("postings", "snapshots")]


# --------------------------------------------------------------------- phases
def _store(a: argparse.Namespace) -> tuple[Any, Any]:
    """The store's snapshot and settings (A: the package's index; B', C: a prototype)."""
    if a.store == "A":
        eng = speed._engine(a.workspace, True)
        return eng.index.snapshot(eng.model_id), eng.settings
    b = PROTOTYPES[a.store](a.workspace)
    return b.snapshot(), b.settings


def _bytes(folder: Path, pattern: str = "**/*") -> int:
    return sum(p.stat().st_size for p in folder.glob(pattern) if p.is_file())


def phase_cold(a: argparse.Namespace) -> dict[str, Any]:
    if a.store == "A":
        out = speed.phase_cold(a)
        return {
            "chunks": out["chunks"],
            "text_s": out["sync_s"],
            "vectors_s": out["embed_s"] + out["first_load_s"],
            "index_bytes": out["index_bytes"],
            "vector_bytes": _bytes(
                Path(a.workspace) / ".enhanced-memory" / "index.vectors", "*.vec"
            ),
        }
    cls = PROTOTYPES[a.store]
    folder = Path(a.workspace) / ".storage-bench" / cls.NAME
    shutil.rmtree(folder, ignore_errors=True)
    out = cls(a.workspace).build()
    return {**out, "index_bytes": _bytes(folder), "vector_bytes": _bytes(folder, "vec-*/*")}


def phase_onechange(a: argparse.Namespace) -> dict[str, Any]:
    synthetic.project(["load the stand-in model"])  # its first call makes it: not the store's
    if a.store == "A":
        eng = speed._engine(a.workspace, True)
        t0 = time.perf_counter()
        report, embedded = eng.update_index()
        return {"s": time.perf_counter() - t0, "changed": len(report.changed)}
    return PROTOTYPES[a.store](a.workspace).update()


def _query(snap: Any, settings: Any, q: str, qvec: np.ndarray | None, k: int) -> list[int]:
    """One search as a store serves it: rank, top-k, and the top rows' path and text read."""
    from langchain_enhanced_memory.core import scoring
    from langchain_enhanced_memory.core.ranking import rank
    from langchain_enhanced_memory.engine.answer import scan_thread

    r = rank(snap, q, synthetic.NOW, settings, qvec, beside=scan_thread())
    top = scoring.top_k(r.scores, k).tolist()
    for i in top:
        _ = (snap.paths[i], snap.texts[i])
    return top


def phase_load(a: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    snap, settings = _store(a)
    t1 = time.perf_counter()
    q = synthetic.queries(1)[0]
    _query(snap, settings, q, synthetic.project([q])[0], 5)
    return {"load_s": t1 - t0, "first_s": time.perf_counter() - t1}


def phase_search(a: argparse.Namespace) -> dict[str, Any]:
    from langchain_enhanced_memory.core import scoring

    snap, settings = _store(a)
    qs = synthetic.queries(a.queries)
    qvecs = synthetic.project(qs)
    idx = list(range(len(qs)))

    def key(i: int) -> str:
        return f"{snap.paths[i]}:{int(snap.start[i])}"

    def vector(i: int) -> list[int]:
        assert snap.vectors is not None
        return scoring.top_k(snap.vectors.cosines(qvecs[i]), 10).tolist()

    out: dict[str, Any] = {
        "keyword_s": speed._timed(lambda i: _query(snap, settings, qs[i], None, 5), idx),
        "vector_s": speed._timed(vector, idx),
        "hybrid_s": speed._timed(lambda i: _query(snap, settings, qs[i], qvecs[i], 5), idx),
    }
    for name, top in (
        ("keyword", lambda i: _query(snap, settings, qs[i], None, 10)),
        ("vector", vector),
        ("hybrid", lambda i: _query(snap, settings, qs[i], qvecs[i], 10)),
    ):
        out[f"top_{name}"] = [[key(j) for j in top(i)] for i in idx]
    # The store and its queries alone: before the retrievers below add their own engines.
    out["store_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if a.store == "B'":
        out.update(_top_n(a.workspace, snap, settings, qs, out["top_keyword"]))
    out.update(_invokes(a, snap, qs))
    return out


def _top_n(
    workspace: str, snap: Any, settings: Any, qs: list[str], tops: list[list[str]]
) -> dict[str, Any]:
    """The floor of a top-N B': FTS5's top :data:`TOP_N` candidates alone, and what they hold.

    ``held``: the share of the exact keyword top-10 (``tops``) among the candidates,
    so the most a re-scoring of only them could agree with A.
    """
    from langchain_enhanced_memory.core.recipe import recipe

    store = FtsStore(workspace)
    strategies = recipe(settings)

    def terms(q: str) -> list[str]:
        text = strategies.dates.keyword_text(q, strategies.dates.parse(q, synthetic.NOW))
        return sorted(set(strategies.lexical.terms(text)[0]))

    qterms = [terms(q) for q in qs]
    idx = list(range(len(qs)))
    key = {int(i): f"{snap.paths[r]}:{int(snap.start[r])}" for r, i in enumerate(snap.ids)}
    held = []
    for i in idx:
        got = {key[c] for c, _ in store.candidates(qterms[i], TOP_N)}
        held.append(len(got & set(tops[i])) / max(len(tops[i]), 1))
    timed = speed._timed(lambda i: store.candidates(qterms[i], TOP_N), idx)
    return {"top_n_s": timed, "top_n_held": float(np.mean(held))}


def _retriever(workspace: str, snap: Any, prototype: bool, **kw: Any) -> Any:
    """A retriever over the workspace; a prototype's ``snap`` in its engine.

    A prototype's engine keeps A's freshness check (a watcher or a stat per file: the
    same for any store); everything from the snapshot on reads the prototype.
    """
    from langchain_enhanced_memory import EnhancedMemoryRetriever

    retriever = EnhancedMemoryRetriever(workspace=workspace, k=5, **kw)
    if prototype:
        retriever.engine.index.snapshot = lambda model_id=None: snap
    return retriever


def _invokes(a: argparse.Namespace, snap: Any, qs: list[str]) -> dict[str, list[float]]:
    """``retriever.invoke`` timings, keyword-only and hybrid, in the store's own process."""
    out = {}
    for name, kw in (
        ("invoke_keyword_s", {"embedder": "none"}),
        ("invoke_hybrid_s", {"embeddings": synthetic.ProjectionEmbeddings()}),
    ):
        retriever = _retriever(a.workspace, snap, a.store != "A", **kw)
        out[name] = speed._timed(lambda q, r=retriever: r.invoke(q, now=synthetic.NOW), qs)
    return out


def phase_turns(a: argparse.Namespace) -> dict[str, list[float]]:
    """Every store's keyword-only ``retriever.invoke`` in one process, taking turns.

    The per-store phases run minutes apart on a shared machine; here each of
    :data:`TURNS` rounds runs every store's queries one store after the other, so
    a swing in the machine's load falls on all of them alike.
    """
    qs = synthetic.queries(a.queries)
    retrievers = {
        store: _retriever(
            a.workspace,
            PROTOTYPES[store](a.workspace).snapshot() if store in PROTOTYPES else None,
            store in PROTOTYPES,
            embedder="none",
        )
        for store in STORES
    }
    out: dict[str, list[float]] = {store: [] for store in STORES}
    for _ in range(TURNS):
        for store, r in retrievers.items():
            out[store] += speed._timed(lambda q, r=r: r.invoke(q, now=synthetic.NOW), qs)
    return out


PHASES = {"cold": phase_cold, "onechange": phase_onechange, "load": phase_load}
PHASES.update(search=phase_search, turns=phase_turns)


# --------------------------------------------------------------------- driver
def run_phase(name: str, a: argparse.Namespace, store: str) -> dict[str, Any]:
    """Run one phase of one store in a fresh process; add its peak RSS (MB)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--phase", name, "--store", store]
    argv += ["--workspace", a.workspace, "--queries", str(a.queries)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"phase {name} of store {store} failed")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["rss_mb"] = usage.ru_maxrss / 1024  # Linux reports KiB
    return result


def bench_size(a: argparse.Namespace, size: int) -> dict[str, Any]:
    """Every store, phase by phase, on one workspace (the edited note restored after)."""
    ws = speed.prepare(Path(a.root), size, a.seed)
    a.workspace = str(ws)
    changed = max((ws / "memory").glob("????-??-??.md"))
    original = changed.read_bytes()
    res: dict[str, Any] = {"size": size, **{store: {} for store in STORES}}
    start = os.getloadavg()[0]
    try:
        for name in ("cold", "load", "search"):
            for store in STORES:
                print(f"  {size}: {store} {name} ...", file=sys.stderr, flush=True)
                res[store][name] = run_phase(name, a, store)
        print(f"  {size}: every store's invoke, taking turns ...", file=sys.stderr, flush=True)
        for store, times in run_phase("turns", a, "A").items():
            if store in STORES:  # not the phase's own peak RSS
                res[store]["search"]["turns_s"] = times
        with changed.open("a", encoding="utf-8") as fh:
            fh.write(EDIT)
        for store in STORES:
            print(f"  {size}: {store} onechange ...", file=sys.stderr, flush=True)
            res[store]["onechange"] = run_phase("onechange", a, store)
    finally:
        changed.write_bytes(original)
    res["load"] = (start, os.getloadavg()[0])
    return res


def agreement(r: dict[str, Any], store: str, name: str) -> str:
    """Queries whose top-10 lists are ``store``'s and A's, and the mean share in common."""
    a, b = r["A"]["search"][f"top_{name}"], r[store]["search"][f"top_{name}"]
    same = sum(x == y for x, y in zip(a, b, strict=True))
    shared = np.mean([len(set(x) & set(y)) / max(len(x), 1) for x, y in zip(a, b, strict=True)])
    return f"{same}/{len(a)} identical, {shared:.3f} shared"


def line_counts() -> dict[str, int]:
    """Lines (physical, as ``scripts/sizes.py`` counts them) of A's store and of the prototypes.

    ``store`` is every module under ``store/`` (A's whole store, the PostgreSQL
    scopes included); ``index`` the modules of :data:`A_INDEX`; ``proto`` the
    prototypes' shared part and ``B'`` / ``C`` each one's own section.
    """
    pkg = HERE.parent / "langchain_enhanced_memory"
    variants = (HERE / "storage_variants.py").read_text().splitlines()
    c_at = next(i for i, s in enumerate(variants) if s.startswith("# ---") and "C: BLOB" in s)
    b_at = next(i for i, s in enumerate(variants) if s.startswith("# ---") and "B': FTS5" in s)
    return {
        "store": sum(len(p.read_text().splitlines()) for p in (pkg / "store").rglob("*.py")),
        "index": sum(len((pkg / m).read_text().splitlines()) for m in A_INDEX),
        "proto": len((HERE / "storage_proto.py").read_text().splitlines()) + c_at,
        "C": b_at - c_at,
        "B'": len(variants) - b_at,
    }


def table(results: list[dict[str, Any]]) -> str:
    """Every store per size and run, as one markdown table."""
    cols = [(f"{r['size']:,} {s} (run {r['run']})", r, s) for r in results for s in STORES]

    def p50(phase: str, key: str) -> Any:
        return lambda x: (
            f"{speed._pct(x[phase][key], 50):.2f} / {speed._pct(x[phase][key], 95):.1f}"
        )

    def split(x: dict[str, Any]) -> str:
        one = x["onechange"]
        return f"{one['text_s']:.3f} / {one['vectors_s']:.3f}" if "text_s" in one else "-"

    def reindex(x: dict[str, Any]) -> str:
        return f"{x['onechange']['s']:.3f} ({x['onechange']['changed']})"

    def top_n(x: dict[str, Any]) -> str:
        if "top_n_s" not in x["search"]:
            return "-"
        return p50("search", "top_n_s")(x) + f" ({x['search']['top_n_held']:.3f})"

    def rss(x: dict[str, Any]) -> str:
        return f"{x['search']['store_rss_mb']:.0f} / {x['search']['rss_mb']:.0f}"

    rows = [
        ("chunks", lambda x: f"{x['cold']['chunks']:,}"),
        ("cold build: text, s", lambda x: f"{x['cold']['text_s']:.1f}"),
        (
            "cold build: vectors (fake embedder included), s",
            lambda x: f"{x['cold']['vectors_s']:.1f}",
        ),
        ("query p50 / p95, keyword-only, ms", p50("search", "keyword_s")),
        ("query p50 / p95, vector scan + top-10, ms", p50("search", "vector_s")),
        ("query p50 / p95, hybrid, ms", p50("search", "hybrid_s")),
        ("retriever.invoke p50 / p95, keyword-only, ms", p50("search", "invoke_keyword_s")),
        ("retriever.invoke p50 / p95, hybrid, ms", p50("search", "invoke_hybrid_s")),
        (f"the same, keyword-only, stores in turns ({TURNS} rounds), ms", p50("search", "turns_s")),
        ("one-file re-index, s (files it re-read)", reindex),
        ("  of which text / vector rewrite, s", split),
        ("fresh process: load, s", lambda x: f"{x['load']['load_s']:.3f}"),
        ("fresh process: first hybrid query, s", lambda x: f"{x['load']['first_s']:.3f}"),
        (f"B' top-{TOP_N} candidates alone p50 / p95, ms (exact top-10 held)", top_n),
        ("search RSS: store + ranking / + two retrievers, MB", rss),
        ("index size on disk, MB", lambda x: f"{x['cold']['index_bytes'] / 2**20:.1f}"),
        ("  of which vector files, MB", lambda x: f"{x['cold']['vector_bytes'] / 2**20:.1f}"),
    ]
    load = (
        "load average (1 min), size's start / end",
        lambda r: f"{r['load'][0]:.1f} / {r['load'][1]:.1f}",
    )
    head = "| | " + " | ".join(c[0] for c in cols) + " |"
    body = [
        "| " + label + " | " + " | ".join(fn(r[s]) for _, r, s in cols) + " |" for label, fn in rows
    ]
    body.append("| " + load[0] + " | " + " | ".join(load[1](r) for _, r, _ in cols) + " |")
    return "\n".join([head, "|---|" + "---|" * len(cols), *body])


def main() -> int:
    """Parse arguments; run the comparison or, in a child, one phase of one store."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts")
    p.add_argument("--runs", type=int, default=1, help="times each size is run")
    p.add_argument("--root", default="/tmp/storage-bench", help="where workspaces go")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--queries", type=int, default=60, help="queries timed per store and size")
    p.add_argument("--json", help="also write the raw results here")
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    p.add_argument("--store", choices=STORES, help=argparse.SUPPRESS)
    p.add_argument("--workspace", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.phase:
        a.embed_cost_ms = 0.0
        print(json.dumps(PHASES[a.phase](a)))
        return 0
    try:
        sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        print(f"error: --sizes must be comma-separated integers, got {a.sizes!r}", file=sys.stderr)
        return 2
    Path(a.root).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = []
    for run in range(1, a.runs + 1):
        for size in sizes:
            results.append({**bench_size(a, size), "run": run})
            print(f"  {size}: done after {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    cpu = next(
        (s.split(":", 1)[1].strip() for s in Path("/proc/cpuinfo").read_text().splitlines()
         if s.startswith("model name")),
        platform.processor(),
    )  # fmt: skip
    now = dt.datetime.now(dt.timezone.utc)
    print(f"date: {now:%Y-%m-%d %H:%M} UTC; machine: {os.cpu_count()} cores,")
    print(f"{cpu}, load average {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]},")
    print(f"SQLite {sqlite3.sqlite_version}; total {time.perf_counter() - t0:.0f}s")
    print("command: python benchmarks/storage.py " + " ".join(sys.argv[1:]) + "\n")
    print(table(results) + "\n")
    for r in results:
        for store in PROTOTYPES:
            check = "; ".join(
                f"{n}: {agreement(r, store, n)}" for n in ("keyword", "vector", "hybrid")
            )
            print(f"- {r['size']:,} run {r['run']}: top-10 A vs {store}, {check}")
        trip = r["B'"]["cold"]["terms_round_trip"]
        print(f"  B' frequencies read back as the package's: {trip}")
    lc = line_counts()
    index, b2 = ", ".join(A_INDEX), lc["B'"]
    print(f"\nlines: A, all of store/ {lc['store']:,} (of which {index}: {lc['index']:,});")
    print(f"prototypes: shared {lc['proto']}, C {lc['C']}, B' {b2}")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
