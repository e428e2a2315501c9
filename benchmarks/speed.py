"""Speed and scale benchmark: index, re-index and search latency at 1k, 10k and 100k chunks.

For each size it writes a seeded synthetic workspace (``synthetic.py``), then runs
every phase in its own fresh process, so one phase's caches and peak memory
never pollute another's (peak RSS is the child's ``ru_maxrss`` from ``wait4``):

- ``cold``: delete the index, sync the text, embed every chunk with the
  model-free fake embedder (``synthetic.ProjectionEmbeddings``; no per-text
  sleep unless ``--embed-cost-ms``), then load the snapshot once (which
  assembles and stores the vector matrix). The embed time includes the fake
  embedder's own work, a stand-in for a model's, printed on its own (its CPU
  seconds) so it is not mistaken for the index's.
- ``nochange``: ``MemorySearch.update_index()`` with nothing changed.
- ``onechange``: append a section to one daily note, then ``update_index()``;
  reports how many texts were re-embedded.
- ``search-none`` / ``search-vec``: load the snapshot, then per query time
  ``rank()`` (on the engine's scan thread too, as a search runs it) plus top-k
  ("scoring only") and a whole ``retriever.invoke`` (``embedder="none"``, then
  with the fake embedder's vectors); with vectors,
  the same queries again with an exact scan (``approximate_rows=0``) and the
  recall@10 of the default's ranking against it (the same ranking below
  ``approximate_rows``); last, the first timing's queries once more, in a
  process that has now seen them (its maps paged in, common terms kept).
- ``original-prep`` / ``original``: write the index's chunks and vectors as the
  original's ``vectors.json``, then, in a fresh process, time its ``json.load``
  and its pure-Python scoring (``original_reference.py``) on the first queries.

With ``--turns`` (e.g. ``100000,1000000``) it also times workspaces of session
transcripts only (``synthetic.generate_transcripts``: a session of 250 turns a
day): ``cold``, ``nochange``, ``tail`` (100 turns appended to the newest
transcript, then ``update_index()``) and both searches, in a table of its own.
With ``--transcript-mb`` (e.g. ``200``) it writes one transcript of about that
many MiB and times its cold text sync (``sync``: ``index --embedder none``) and
its cold index with the fake embedder, each with its peak RSS.

Run ``python benchmarks/speed.py`` (all sizes, about 10 minutes on 2 cores) or
``python benchmarks/speed.py --sizes 1000,10000 --turns 100000``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402

GENERATOR_VERSION = "1"


# --------------------------------------------------------------------- phases
def _engine(ws: str, vectors: bool, cost_ms: float = 0.0) -> Any:
    from langchain_enhanced_memory.engine import MemorySearch

    if vectors:
        return MemorySearch(ws, embeddings=synthetic.ProjectionEmbeddings(cost_ms / 1000))
    return MemorySearch(ws, embedder="none")


def _index_bytes(ws: str) -> int:
    """The SQLite file, its WAL and the vector side files."""
    folder = Path(ws) / ".enhanced-memory"
    files = [*folder.glob("index.sqlite*"), *folder.glob("index.vectors/*")]
    return sum(p.stat().st_size for p in files if p.is_file())


def phase_cold(a: argparse.Namespace) -> dict[str, Any]:
    from langchain_enhanced_memory.engine import MemorySearch

    shutil.rmtree(Path(a.workspace) / ".enhanced-memory", ignore_errors=True)
    emb = synthetic.ProjectionEmbeddings(a.embed_cost_ms / 1000)
    eng = MemorySearch(a.workspace, embeddings=emb)
    t0 = time.perf_counter()
    report = eng.index.sync()
    t1 = time.perf_counter()
    embedded = eng.embed_missing()
    t2 = time.perf_counter()
    eng.index.snapshot(eng.model_id)
    t3 = time.perf_counter()
    return {
        "chunks": report.chunks,
        "files": report.files,
        "sync_s": t1 - t0,
        "embed_s": t2 - t1,
        "embedder_cpu_s": emb.cpu_s,  # the stand-in model's own work, not the index's
        "embedded": embedded,
        "first_load_s": t3 - t2,
        "index_bytes": _index_bytes(a.workspace),
    }


def phase_sync(a: argparse.Namespace) -> dict[str, Any]:
    """A cold text sync only (``enhanced-memory index --embedder none``)."""
    from langchain_enhanced_memory.engine import MemorySearch

    shutil.rmtree(Path(a.workspace) / ".enhanced-memory", ignore_errors=True)
    eng = MemorySearch(a.workspace, embedder="none")
    t0 = time.perf_counter()
    report = eng.index.sync()
    return {"chunks": report.chunks, "sync_s": time.perf_counter() - t0}


def phase_nochange(a: argparse.Namespace) -> dict[str, Any]:
    eng = _engine(a.workspace, True, a.embed_cost_ms)
    t0 = time.perf_counter()
    report, embedded = eng.update_index()
    return {"s": time.perf_counter() - t0, "changed": len(report.changed), "embedded": embedded}


def phase_onechange(a: argparse.Namespace) -> dict[str, Any]:
    target = Path(a.workspace) / a.changed_file
    with target.open("a", encoding="utf-8") as fh:
        fh.write("\n## Added later\n\nBenchmark edit: moved the retro to Thursday with Grace.\n")
    eng = _engine(a.workspace, True, a.embed_cost_ms)
    t0 = time.perf_counter()
    report, embedded = eng.update_index()
    t1 = time.perf_counter()
    eng.index.snapshot(eng.model_id)
    return {
        "s": t1 - t0,
        "first_load_s": time.perf_counter() - t1,
        "changed": len(report.changed),
        "embedded": embedded,
    }


def phase_tail(a: argparse.Namespace) -> dict[str, Any]:
    target = Path(a.workspace) / a.changed_file
    with target.open("a", encoding="utf-8") as fh:
        for i in range(100):
            role, who = ("user", "Grace") if i % 2 == 0 else ("assistant", "agent")
            text = f"Benchmark turn {i}: moved the retro to Thursday with Grace."
            fh.write(synthetic.transcript_line(role, text, synthetic.NOW, who) + "\n")
    eng = _engine(a.workspace, True, a.embed_cost_ms)
    t0 = time.perf_counter()
    report, embedded = eng.update_index()
    return {"s": time.perf_counter() - t0, "changed": len(report.changed), "embedded": embedded}


def _timed(fn: Any, items: list[Any]) -> list[float]:
    fn(items[0])  # warm-up: lazy imports, stemmer, caches
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t0)
    return out


def phase_search(a: argparse.Namespace, vectors: bool) -> dict[str, Any]:
    from langchain_enhanced_memory import EnhancedMemoryRetriever
    from langchain_enhanced_memory.core import scoring
    from langchain_enhanced_memory.core.ranking import rank
    from langchain_enhanced_memory.engine.answer import scan_thread

    kw: dict[str, Any] = (
        {"embeddings": synthetic.ProjectionEmbeddings()} if vectors else {"embedder": "none"}
    )
    # One engine for both timings, so peak RSS is one process holding one index.
    retriever = EnhancedMemoryRetriever(workspace=a.workspace, k=5, **kw)
    eng = retriever.engine
    qs = synthetic.queries(a.queries)
    t0 = time.perf_counter()
    snap = eng.index.snapshot(eng.model_id)
    load_s = time.perf_counter() - t0
    qvecs = synthetic.project(qs) if vectors else [None] * len(qs)

    def score(i: int) -> None:
        r = rank(snap, qs[i], synthetic.NOW, eng.settings, qvecs[i], beside=scan_thread())
        scoring.top_k(r.scores, 5)

    scoring_s = _timed(score, list(range(len(qs))))
    invoke_s = _timed(lambda q: retriever.invoke(q, now=synthetic.NOW), qs)
    out = {"load_s": load_s, "scoring_s": scoring_s, "invoke_s": invoke_s}
    if vectors and snap.vectors is not None:
        # The same queries scored with an exact scan, and how many of the
        # default's top 10 it shares (the default reads sign bits past a size).
        exact = eng.settings.replace(approximate_rows=0)

        def top10(settings: Any, i: int) -> set[int]:
            r = rank(snap, qs[i], synthetic.NOW, settings, qvecs[i], beside=scan_thread())
            return set(scoring.top_k(r.scores, 10).tolist())

        out["exact_scoring_s"] = _timed(lambda i: top10(exact, i), list(range(len(qs))))
        out["approximated"] = snap.vectors.approximates(eng.settings.vectors.approximate_rows)
        shared = [top10(eng.settings, i) & top10(exact, i) for i in range(len(qs))]
        out["recall10"] = sum(len(s) for s in shared) / (10 * len(qs))
    # Each query above was new to this process; a long-lived one has its index
    # in memory (pages mapped, common terms kept) by the time most queries come.
    out["again_s"] = _timed(score, list(range(len(qs))))
    return out


def phase_original_prep(a: argparse.Namespace) -> dict[str, Any]:
    eng = _engine(a.workspace, True)
    snap = eng.index.snapshot(eng.model_id)
    rows = [
        {
            "file": snap.paths[i],
            "header": snap.header[i],
            "line": int(snap.start[i]),
            "text": snap.texts[i],
            "embedding": v,
        }
        for i, v in enumerate(snap.dense_vectors().tolist())
    ]
    out = Path(a.vectors_json)
    with out.open("w", encoding="utf-8") as fh:
        json.dump(rows, fh, ensure_ascii=False)
    return {"bytes": out.stat().st_size}


def phase_original(a: argparse.Namespace) -> dict[str, Any]:
    import original_reference as ref

    t0 = time.perf_counter()
    chunks = ref.load(a.vectors_json)
    load_s = time.perf_counter() - t0
    qs = synthetic.queries(a.queries)[: a.original_queries]
    qvecs = synthetic.project(qs).tolist()
    embed_s = [0.0]

    def embed(text: str) -> list[float]:
        # The original re-embeds the expanded query; that time is not scoring.
        t = time.perf_counter()
        v = synthetic.project([text])[0].tolist()
        embed_s[0] += time.perf_counter() - t
        return v

    times = []
    for q, v in zip(qs, qvecs, strict=True):
        embed_s[0] = 0.0
        t = time.perf_counter()
        ref.search(chunks, q, v, synthetic.NOW, 5, embed)
        times.append(time.perf_counter() - t - embed_s[0])
    return {"load_s": load_s, "scoring_s": times}


PHASES = {
    "cold": phase_cold,
    "nochange": phase_nochange,
    "onechange": phase_onechange,
    "search-none": lambda a: phase_search(a, False),
    "search-vec": lambda a: phase_search(a, True),
    "tail": phase_tail,
    "sync": phase_sync,
    "original-prep": phase_original_prep,
    "original": phase_original,
}


# --------------------------------------------------------------------- driver
def run_phase(name: str, a: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """Run one phase in a fresh process; add its wall time and peak RSS (MB)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--phase", name]
    opts = {
        "workspace": a.workspace,
        "queries": a.queries,
        "original_queries": a.original_queries,
        "embed_cost_ms": a.embed_cost_ms,
        "vectors_json": a.vectors_json,
        "changed_file": a.changed_file,
        **extra,
    }
    for k, v in opts.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"phase {name} failed (exit {proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - t0
    result["rss_mb"] = usage.ru_maxrss / 1024  # Linux reports KiB
    return result


def prepare(root: Path, size: int, seed: int) -> Path:
    """The workspace for ``size``, generated once per generator version and seed."""
    ws = root / f"ws-{size}"
    marker = ws / ".generated"
    stamp = f"{GENERATOR_VERSION}:{size}:{seed}"
    if not (marker.exists() and marker.read_text() == stamp):
        shutil.rmtree(ws, ignore_errors=True)
        synthetic.generate(ws, size, seed)
        marker.write_text(stamp)
    return ws


def bench_turns(a: argparse.Namespace, turns: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    ws = Path(a.root) / f"turns-{turns}"
    marker = ws / ".generated"
    stamp = f"{GENERATOR_VERSION}:turns:{turns}:{a.seed}"
    if not (marker.exists() and marker.read_text() == stamp):
        shutil.rmtree(ws, ignore_errors=True)
        synthetic.generate_transcripts(ws, turns, a.seed)
        marker.write_text(stamp)
    a.workspace = str(ws)
    a.changed_file = "sessions/s000000.jsonl"  # the newest session
    original_bytes = (ws / a.changed_file).read_bytes()
    res: dict[str, Any] = {"turns": turns, "generate_s": time.perf_counter() - t0}
    try:
        for name in ("cold", "nochange", "tail", "search-none", "search-vec"):
            print(f"  {turns} turns: {name} ...", file=sys.stderr, flush=True)
            res[name] = run_phase(name, a)
    finally:
        (ws / a.changed_file).write_bytes(original_bytes)
    return res


#: The generator's mean transcript line, bytes (a turn of one or two sentences).
TURN_BYTES = 240


def bench_transcript(a: argparse.Namespace, mb: int) -> dict[str, Any]:
    """One transcript of about ``mb`` MiB: a cold text sync, then a cold index with vectors."""
    ws = Path(a.root) / f"transcript-{mb}mb"
    turns = mb * 2**20 // TURN_BYTES
    marker = ws / ".generated"
    stamp = f"{GENERATOR_VERSION}:transcript:{turns}:{a.seed}"
    if not (marker.exists() and marker.read_text() == stamp):
        shutil.rmtree(ws, ignore_errors=True)
        synthetic.generate_transcripts(ws, turns, a.seed, per_file=turns)
        marker.write_text(stamp)
    a.workspace = str(ws)
    size = (ws / "sessions" / "s000000.jsonl").stat().st_size
    res: dict[str, Any] = {"mb": size / 2**20, "turns": turns}
    for name in ("sync", "cold"):
        print(f"  {mb} MB transcript: {name} ...", file=sys.stderr, flush=True)
        res[name] = run_phase(name, a)
    return res


def transcript_table(results: list[dict[str, Any]]) -> str:
    """One big transcript's cold index: time and peak RSS, text only and with vectors."""
    rows = [
        ("turns (chunks)", lambda r: f"{r['turns']:,} ({r['sync']['chunks']:,})"),
        ("text sync (`--embedder none`), s", lambda r: f"{r['sync']['sync_s']:.1f}"),
        ("text sync: peak RSS, MB", lambda r: f"{r['sync']['rss_mb']:.0f}"),
        (
            "cold index with the fake embedder: sync + embed, s",
            lambda r: f"{r['cold']['sync_s']:.1f} + {r['cold']['embed_s']:.1f}",
        ),
        ("cold index with the fake embedder: peak RSS, MB", lambda r: f"{r['cold']['rss_mb']:.0f}"),
    ]
    head = "| | " + " | ".join(f"one {r['mb']:.0f} MB transcript" for r in results) + " |"
    sep = "|---|" + "---|" * len(results)
    body = ["| " + label + " | " + " | ".join(fn(r) for r in results) + " |" for label, fn in rows]
    return "\n".join([head, sep, *body])


def turns_table(results: list[dict[str, Any]]) -> str:
    """The transcript results as one markdown table, one column per turn count."""

    def p50_95(phase: str, key: str) -> Any:
        return lambda r: f"{_pct(r[phase][key], 50):.2f} / {_pct(r[phase][key], 95):.2f}"

    rows = [
        ("chunks (transcripts)", lambda r: f"{r['cold']['chunks']:,} ({r['cold']['files']:,})"),
        ("cold index: text sync, s", lambda r: f"{r['cold']['sync_s']:.1f}"),
        ("cold index: embed with fake embedder, s", lambda r: f"{r['cold']['embed_s']:.1f}"),
        ("cold index: peak RSS, MB", lambda r: f"{r['cold']['rss_mb']:.0f}"),
        ("no-change re-index, s", lambda r: f"{r['nochange']['s']:.3f}"),
        (
            "100 turns appended to a transcript: re-index, s (texts embedded)",
            lambda r: f"{r['tail']['s']:.3f} ({r['tail']['embedded']})",
        ),
        ("snapshot load in a fresh process, s", lambda r: f"{r['search-vec']['load_s']:.2f}"),
        ("retriever.invoke, embedder=none, p50 / p95 ms", p50_95("search-none", "invoke_s")),
        ("retriever.invoke, with vectors, p50 / p95 ms", p50_95("search-vec", "invoke_s")),
        (
            "peak RSS in search, keyword-only / vectors, MB",
            lambda r: f"{r['search-none']['rss_mb']:.0f} / {r['search-vec']['rss_mb']:.0f}",
        ),
        ("index size on disk, MB", lambda r: f"{r['cold']['index_bytes'] / 2**20:.0f}"),
    ]
    head = "| | " + " | ".join(f"{r['turns']:,} turns" for r in results) + " |"
    sep = "|---|" + "---|" * len(results)
    body = ["| " + label + " | " + " | ".join(fn(r) for r in results) + " |" for label, fn in rows]
    return "\n".join([head, sep, *body])


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def bench_size(a: argparse.Namespace, size: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    ws = prepare(Path(a.root), size, a.seed)
    a.workspace = str(ws)
    a.vectors_json = str(Path(a.root) / f"vectors-{size}.json")
    changed = max((ws / "memory").glob("????-??-??.md"))  # the latest daily note
    a.changed_file = changed.relative_to(ws).as_posix()
    original_bytes = changed.read_bytes()
    res: dict[str, Any] = {"size": size, "generate_s": time.perf_counter() - t0}
    try:
        for name in ("cold", "nochange", "onechange", "search-none", "search-vec"):
            print(f"  {size}: {name} ...", file=sys.stderr, flush=True)
            res[name] = run_phase(name, a)
        if a.original_queries > 0:
            print(f"  {size}: original ...", file=sys.stderr, flush=True)
            res["original-prep"] = run_phase("original-prep", a)
            res["original"] = run_phase("original", a)
            Path(a.vectors_json).unlink(missing_ok=True)
    finally:
        changed.write_bytes(original_bytes)
    return res


def table(results: list[dict[str, Any]]) -> str:
    """The results as one markdown table, one column per size."""
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, fn: Any) -> None:
        cells = []
        for r in results:
            try:
                cells.append(fn(r))
            except KeyError:
                cells.append("-")
        rows.append((label, cells))

    def p50_95(phase: str, key: str) -> Any:
        return lambda r: f"{_pct(r[phase][key], 50):.2f} / {_pct(r[phase][key], 95):.2f}"

    row("chunks (files)", lambda r: f"{r['cold']['chunks']} ({r['cold']['files']})")
    row("cold index: text sync, s", lambda r: f"{r['cold']['sync_s']:.2f}")
    row(
        "cold index: embed with fake embedder, s",
        lambda r: f"{r['cold']['embed_s']:.2f}",
    )
    row(
        "  of which the fake embedder's own CPU (not the index's), s",
        lambda r: f"{r['cold']['embedder_cpu_s']:.2f}",
    )
    row(
        "cold index: text sync + embed, s",
        lambda r: f"{r['cold']['sync_s'] + r['cold']['embed_s']:.1f}",
    )
    row("cold index: first snapshot load, s", lambda r: f"{r['cold']['first_load_s']:.2f}")
    row("no-change re-index, s", lambda r: f"{r['nochange']['s']:.3f}")
    row(
        "one-file-changed re-index, s (texts embedded)",
        lambda r: f"{r['onechange']['s']:.3f} ({r['onechange']['embedded']})",
    )
    row("snapshot load in a fresh process, s", lambda r: f"{r['search-vec']['load_s']:.2f}")
    row("scoring only, keyword-only, p50 / p95 ms", p50_95("search-none", "scoring_s"))
    row("  each query's second time in the process, p50 / p95 ms", p50_95("search-none", "again_s"))
    row("scoring only, hybrid (vectors), p50 / p95 ms", p50_95("search-vec", "scoring_s"))
    row(
        "  the same with an exact vector scan, p50 / p95 ms",
        p50_95("search-vec", "exact_scoring_s"),
    )
    row(
        "  recall@10 of the default against the exact scan",
        lambda r: (
            f"{r['search-vec']['recall10']:.3f}"
            if r["search-vec"]["approximated"]
            else "exact (below approximate_rows)"
        ),
    )
    row(
        "  hybrid, each query's second time in the process, p50 / p95 ms",
        p50_95("search-vec", "again_s"),
    )
    row("retriever.invoke, embedder=none, p50 / p95 ms", p50_95("search-none", "invoke_s"))
    row("retriever.invoke, with vectors, p50 / p95 ms", p50_95("search-vec", "invoke_s"))
    row(
        "peak RSS in search, keyword-only / vectors, MB",
        lambda r: f"{r['search-none']['rss_mb']:.0f} / {r['search-vec']['rss_mb']:.0f}",
    )
    row("index size on disk, MB", lambda r: f"{r['cold']['index_bytes'] / 2**20:.1f}")
    row(
        "original: vectors.json size MB / load s",
        lambda r: f"{r['original-prep']['bytes'] / 2**20:.0f} / {r['original']['load_s']:.2f}",
    )
    row(
        "original: scoring p50 ms (queries)",
        lambda r: f"{_pct(r['original']['scoring_s'], 50):.1f} ({len(r['original']['scoring_s'])})",
    )

    def ratio(r: dict[str, Any]) -> str:
        n = len(r["original"]["scoring_s"])
        ours = _pct(r["search-vec"]["scoring_s"][:n], 50)
        theirs = _pct(r["original"]["scoring_s"], 50)
        return f"{ours:.2f} ms vs {theirs:.0f} ms = {theirs / ours:.0f}x faster"

    row("ours / original, hybrid scoring p50, same queries", ratio)
    head = "| | " + " | ".join(f"{r['size']:,} chunks" for r in results) + " |"
    sep = "|---|" + "---|" * len(results)
    body = ["| " + label + " | " + " | ".join(cells) + " |" for label, cells in rows]
    return "\n".join([head, sep, *body])


def main() -> int:
    """Parse arguments; run the whole benchmark or, in a child, one phase."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000,100000", help="comma-separated chunk counts")
    p.add_argument("--root", default="/tmp/enhanced-memory-bench", help="where workspaces go")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--queries", type=int, default=60, help="queries timed per size")
    p.add_argument(
        "--original-queries",
        type=int,
        default=10,
        help="queries for the slow original (0: skip it)",
    )
    p.add_argument(
        "--turns", default="", help="comma-separated transcript turn counts (default: none)"
    )
    p.add_argument(
        "--transcript-mb",
        default="",
        help="comma-separated sizes of one big transcript, MiB (default: none)",
    )
    p.add_argument("--embed-cost-ms", type=float, default=0.0, help="fake embedder ms per text")
    p.add_argument("--json", help="also write the raw results here")
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    p.add_argument("--workspace", help=argparse.SUPPRESS)
    p.add_argument("--vectors-json", help=argparse.SUPPRESS)
    p.add_argument("--changed-file", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.phase:
        print(json.dumps(PHASES[a.phase](a)))
        return 0
    try:
        sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
        turns = [int(s) for s in a.turns.split(",") if s.strip()]
        big = [int(s) for s in a.transcript_mb.split(",") if s.strip()]
    except ValueError:
        print(
            "error: --sizes, --turns and --transcript-mb must be comma-separated integers",
            file=sys.stderr,
        )
        return 2
    Path(a.root).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = []
    for size in sizes:
        results.append(bench_size(a, size))
        print(f"  {size}: done after {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    turn_results = []
    for n in turns:
        turn_results.append(bench_turns(a, n))
        print(f"  {n} turns: done after {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    big_results = []
    for mb in big:
        big_results.append(bench_transcript(a, mb))
        print(f"  {mb} MB transcript: done after {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"total {time.perf_counter() - t0:.0f}s\n")
    if results:
        print(table(results))
    if turn_results:
        print(("\n" if results else "") + turns_table(turn_results))
    if big_results:
        print(("\n" if results or turn_results else "") + transcript_table(big_results))
    if a.json:
        Path(a.json).write_text(json.dumps(results + turn_results + big_results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
