"""Where exact vector scoring stops: exact int8 scoring vs an HNSW index (usearch), by size.

For each size it makes that many 384-d synthetic chunk vectors (sentences of the
speed benchmark's word model through its fixed random projection,
``synthetic.py``), quantizes them as the index stores them (int8 + a scale per
row) and times, per query, the exact product the search runs
(:func:`langchain_enhanced_memory.core.vectorset.cosines`) and its top 10. Then it
builds a usearch HNSW index over the same vectors (int8, inner product), times
its top-10 search and prints its recall@10 against the exact top 10. The exact
scan is timed twice: numpy's einsum with the float query (the reference top 10)
and SimSIMD's int8 kernel with the query rounded to int8 (what the search runs
below ``approximate_rows``), with that one's recall@10 against the reference;
then the sign-bit scan the search runs above it
(:func:`langchain_enhanced_memory.core.vectorset.approximate_cosines`: Hamming
distances, the nearest and farthest rows exact) and its recall@10, vectors
alone (ranking also rescores its 200 best fused candidates exactly;
``speed.py`` prints the recall of the whole ranking).

The HNSW rows need ``pip install usearch`` (not a dependency of the package:
the search does not use it; ``--no-hnsw`` skips them). Run
``python benchmarks/ann.py --sizes 100000,1000000``.

``--pgvector URL`` adds pgvector's HNSW index (the path a database scope would
take past exact scoring): the same vectors in a ``vector(384)`` column of a
scratch table, ``vector_ip_ops`` with ``m`` = ``--connectivity`` and
``ef_construction`` 64, searched with ``hnsw.ef_search`` = ``--expansion``
over the server's socket: its build time, top-10 p50 (a round trip included)
and recall@10 against the exact top 10. The table is dropped afterwards.

``--workspaces DIR`` measures the sign bits on real vectors instead: every
chunk and line vector of the workspaces under ``DIR`` (indexed with the local
model, e.g. by ``enhanced-memory eval --embedder local``), queried with every
fourth query of ``DIR/queries.jsonl`` (or ``--queries-file``), and the same
number of synthetic vectors beside them. A real index is small, so the rows scored exactly are
set as a share of it (0.1 % is what 1,000 are of a million) and the recall
of the bits about the rows' mean is printed next to that of raw bits.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402

from langchain_enhanced_memory.core.scoring import top_k  # noqa: E402
from langchain_enhanced_memory.core.vectorset import (  # noqa: E402
    approximate_cosines,
    cosines,
    quantize,
    sign_codes,
)


def vectors(n: int, seed: int = 0) -> np.ndarray:
    """``n`` unit vectors of synthetic sections (the speed benchmark's embedder)."""
    rng = np.random.default_rng(seed)
    words = synthetic._Words(rng)
    out = np.empty((n, 384), dtype=np.float32)
    for lo in range(0, n, 20000):
        texts = [synthetic._section(words, rng, "Notes") for _ in range(min(20000, n - lo))]
        out[lo : lo + len(texts)] = synthetic.project(texts)
    return out


def bench(
    n: int,
    queries: list[str],
    k: int,
    expansion: int,
    dtype: str,
    connectivity: int,
    hnsw: bool,
    pg_url: str | None = None,
) -> dict[str, float]:
    """Exact (numpy, SimSIMD) and HNSW top-``k`` at ``n`` vectors."""

    t0 = time.perf_counter()
    q, scale = quantize(vectors(n))
    qvecs = synthetic.project(queries)
    codes, center = sign_codes(q, scale)
    made = time.perf_counter() - t0
    exact, numpy_s, exact_s, simd_hits = [], [], [], 0
    bits_s, bits_hits = [], 0
    for v in qvecs:
        t = time.perf_counter()  # the float query against the int8 rows, numpy's einsum
        want = set(top_k(np.einsum("ij,j->i", q, v) * scale, k).tolist())
        numpy_s.append(time.perf_counter() - t)
        t = time.perf_counter()  # what the search runs: SimSIMD, the query rounded to int8
        got = top_k(cosines(q, scale, v), k)
        exact_s.append(time.perf_counter() - t)
        exact.append(want)
        simd_hits += len(want & set(got.tolist()))
        t = time.perf_counter()  # the sign-bit scan, on one thread as the exact one
        got = top_k(approximate_cosines(q, scale, codes, center, v), k)
        bits_s.append(time.perf_counter() - t)
        bits_hits += len(want & set(got.tolist()))
    out = {
        "n": n,
        "make_s": made,
        "numpy_p50_ms": float(np.percentile(numpy_s, 50) * 1000),
        "exact_p50_ms": float(np.percentile(exact_s, 50) * 1000),
        "simd_recall": simd_hits / (k * len(queries)),
        "bits_p50_ms": float(np.percentile(bits_s, 50) * 1000),
        "bits_recall": bits_hits / (k * len(queries)),
    }
    pgvector = (
        {}
        if pg_url is None
        else pgvector_hnsw(pg_url, q, scale, qvecs, exact, k, expansion, connectivity)
    )
    if not hnsw:
        return {**out, **pgvector}
    from usearch.index import Index

    t = time.perf_counter()
    index = Index(
        ndim=q.shape[1],
        metric="ip",
        dtype=dtype,
        connectivity=connectivity,
        expansion_search=expansion,
    )
    index.add(np.arange(n), q.astype(np.float32) * scale[:, None])
    build_s = time.perf_counter() - t
    ann_s, hits = [], 0
    for v, want in zip(qvecs, exact, strict=True):
        t = time.perf_counter()
        got = index.search(v, k).keys
        ann_s.append(time.perf_counter() - t)
        hits += len(want & set(got.tolist()))
    return {
        **out,
        **pgvector,
        "build_s": build_s,
        "ann_p50_ms": float(np.percentile(ann_s, 50) * 1000),
        "recall": hits / (k * len(queries)),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def pgvector_hnsw(
    url: str,
    q: np.ndarray,
    scale: np.ndarray,
    qvecs: np.ndarray,
    exact: list[set[int]],
    k: int,
    expansion: int,
    connectivity: int,
) -> dict[str, float]:
    """pgvector's HNSW over the same vectors: build seconds, top-``k`` p50 ms, recall@``k``."""
    import psycopg

    rows = q.astype(np.float32) * scale[:, None]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("DROP TABLE IF EXISTS em_bench_ann")
        conn.execute(f"CREATE TABLE em_bench_ann (id int PRIMARY KEY, v vector({q.shape[1]}))")
        with conn.cursor().copy("COPY em_bench_ann (id, v) FROM STDIN") as copy:
            for i, row in enumerate(rows):
                copy.write_row((i, "[" + ",".join(f"{x:.6f}" for x in row) + "]"))
        conn.execute("SET maintenance_work_mem = '1GB'")
        t = time.perf_counter()
        conn.execute(
            "CREATE INDEX ON em_bench_ann USING hnsw (v vector_ip_ops)"
            f" WITH (m = {int(connectivity)}, ef_construction = 64)"
        )
        build_s = time.perf_counter() - t
        conn.execute(f"SET hnsw.ef_search = {int(expansion)}")
        took, hits = [], 0
        for v, want in zip(qvecs, exact, strict=True):
            literal = "[" + ",".join(f"{x:.6f}" for x in v) + "]"
            t = time.perf_counter()
            got = conn.execute(
                "SELECT id FROM em_bench_ann ORDER BY v <#> %s::vector LIMIT %s", (literal, k)
            ).fetchall()
            took.append(time.perf_counter() - t)
            hits += len(want & {r[0] for r in got})
        conn.execute("DROP TABLE em_bench_ann")
    return {
        "pg_build_s": build_s,
        "pg_p50_ms": float(np.percentile(took, 50) * 1000),
        "pg_recall": hits / (k * len(qvecs)),
    }


def _recall(q: np.ndarray, scale: np.ndarray, queries: np.ndarray, centred: bool) -> float:
    """Recall@10 of the sign-bit scan against the exact one (raw bits: a zero mean)."""
    codes, center = sign_codes(q, scale)
    if not centred:
        codes, center = np.packbits(q > 0, axis=1), np.zeros_like(center)
    hits = 0
    for v in queries:
        want = set(top_k(cosines(q, scale, v), 10).tolist())
        hits += len(want & set(top_k(approximate_cosines(q, scale, codes, center, v), 10).tolist()))
    return hits / (10 * len(queries))


def real(root: Path, queries_file: Path, shares: list[float]) -> None:
    """Sign-bit recall on a real index's vectors and on as many synthetic ones."""
    import json

    from langchain_enhanced_memory.core import vectorset
    from langchain_enhanced_memory.engine import MemorySearch

    rows, engine = [], None
    for ws in sorted(p for p in root.iterdir() if p.is_dir()):
        engine = MemorySearch(ws, embedder="local")
        snap = engine.index.snapshot(engine.model_id)
        for part in snap.vectors.parts if snap.vectors else []:
            rows.append(vectorset.dequantize(part.matrix, part.scale))
            if part.lines is not None and part.line_scale is not None and part.lines.shape[0]:
                every = np.arange(part.lines.shape[0])
                rows.append(vectorset.dequantize(part.lines[every], part.line_scale[every]))
    pool = np.concatenate(rows) if rows else np.zeros((0, 0), np.float32)
    if engine is None or not pool.size:
        raise SystemExit(f"no indexed vectors under {root}")
    texts = [json.loads(line)["query"] for line in queries_file.read_text().splitlines()[::4]]
    qvecs = np.asarray([engine.embed_query(t) for t in texts], dtype=np.float32)
    rng = np.random.default_rng(0)
    words = synthetic._Words(rng)
    fake = synthetic.project([synthetic._section(words, rng, "Notes") for _ in range(len(pool))])
    fake_q = synthetic.project(synthetic.queries(len(texts)))
    sets = {"real": (*quantize(pool), qvecs), "synthetic": (*quantize(fake), fake_q)}
    cos = [float((m[:500] @ m[:500].T).mean()) for m in (pool, fake)]
    print(f"{len(pool):,} rows, {len(texts)} queries; mean cosine between rows:"
          f" real {cos[0]:.2f}, synthetic {cos[1]:.2f}\n")  # fmt: skip
    print("| rows scored exactly | real, raw bits | real, about the mean |"
          " synthetic, raw bits | synthetic, about the mean |")  # fmt: skip
    print("|---|---|---|---|---|")
    keep = vectorset.APPROX_NEAREST, vectorset.APPROX_FARTHEST
    try:
        for share in shares:
            vectorset.APPROX_NEAREST = max(10, int(share * len(pool)))
            vectorset.APPROX_FARTHEST = max(1, int(2 * share * len(pool)))
            cells = [
                f"{_recall(q, scale, qv, centred):.3f}"
                for q, scale, qv in sets.values()
                for centred in (False, True)
            ]
            print(f"| {share:.1%} | " + " | ".join(cells) + " |", flush=True)
    finally:
        vectorset.APPROX_NEAREST, vectorset.APPROX_FARTHEST = keep


def main() -> int:
    """Parse arguments, run each size, print a markdown table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100000,1000000")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--expansion", type=int, default=64, help="HNSW search breadth (ef)")
    p.add_argument("--connectivity", type=int, default=16, help="HNSW links per node (M)")
    p.add_argument("--dtype", default="i8", help="usearch's storage type: i8, f16, f32")
    p.add_argument("--no-hnsw", action="store_true", help="exact scans only (no usearch)")
    p.add_argument("--pgvector", metavar="URL", help="also pgvector's HNSW in this database")
    p.add_argument("--workspaces", type=Path, help="sign bits on this root's real vectors")
    p.add_argument("--queries-file", type=Path, help="with --workspaces: its queries.jsonl")
    a = p.parse_args()
    if a.workspaces:
        real(a.workspaces, a.queries_file or a.workspaces / "queries.jsonl", [0.001, 0.005, 0.02])
        return 0
    qs = synthetic.queries(a.queries)
    print("| vectors | exact, numpy einsum, top-10 p50 ms | exact, SimSIMD int8 (the search's),"
          " top-10 p50 ms | its recall@10 | sign bits, exact ends, top-10 p50 ms |"
          " its recall@10 | HNSW build s | HNSW top-10 p50 ms | HNSW recall@10 |"
          " peak RSS MB |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in a.sizes.split(",")):
        r = bench(n, qs, a.k, a.expansion, a.dtype, a.connectivity, not a.no_hnsw, a.pgvector)
        hnsw = (
            f"{r['build_s']:.0f} | {r['ann_p50_ms']:.2f} | {r['recall']:.3f}"
            if "recall" in r
            else "- | - | -"
        )
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"| {n:,} | {r['numpy_p50_ms']:.1f} | {r['exact_p50_ms']:.1f} |"
            f" {r['simd_recall']:.3f} | {r['bits_p50_ms']:.1f} | {r['bits_recall']:.3f} |"
            f" {hnsw} | {rss:.0f} |",
            flush=True,
        )
        if "pg_recall" in r:
            print(
                f"|   pgvector HNSW | build {r['pg_build_s']:.0f} s | top-10 p50"
                f" {r['pg_p50_ms']:.2f} ms | recall@10 {r['pg_recall']:.3f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
