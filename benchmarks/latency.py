"""Latency of the paths users take, side by side in one run, at several workspace sizes.

For each workspace (the demo workspace, then seeded synthetic ones of about
1k, 10k, ... chunks; see ``synthetic.py``) it times, p50 and p95 in ms:

- in-process, warm: ``retriever.invoke`` and the ``memory_search`` tool call,
  keyword-only and with vectors (the model-free ``ProjectionEmbeddings``, so
  model time is not in the figure), plus the scoring alone (``rank`` + top-k);
- ``search --batch``: per query beyond start-up (a batch of 200 minus a batch of 1,
  over 199);
- ``serve``: ``POST /search`` over HTTP on 127.0.0.1;
- one-shot processes: ``search --json`` without and with the resident engine,
  and the skill script ``enhanced_memory_search.py --json`` likewise;
- the original skill's own per-query process (``original_reference.py`` as a
  script, reading a ``vectors.json`` of the same chunks; its query vector is
  handed to it for free, and the import of our replay of its date rules is
  subtracted), and the ratio to our one-shot paths.

The process paths are keyword-only (``--embedder none``). The local model is
timed on its own at the end: its query embedding in-process, and a one-shot
``search --embedder local --json`` through the resident engine on the demo
workspace.

Run ``python benchmarks/latency.py`` (demo, 1k and 10k; about 10 minutes on 2
cores) or ``--sizes demo,1000,10000,100000``.
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
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import synthetic  # noqa: E402

# The console script users run (python -m adds runpy's imports), else the module.
_EXE = shutil.which("enhanced-memory", path=str(Path(sys.executable).parent))
CLI = [_EXE] if _EXE else [sys.executable, "-m", "langchain_enhanced_memory.cli"]
NOW = synthetic.NOW.isoformat(timespec="minutes")


def _pct(values: list[float]) -> dict[str, float]:
    ms = np.asarray(values) * 1000.0
    return {"p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95))}


def _timed(fn: Callable[[Any], Any], items: list[Any]) -> dict[str, float]:
    fn(items[0])  # warm-up
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t0)
    return _pct(out)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENHANCED_", "OPENCLAW_"))}
    # A pip install has bytecode; without it every process compiles each edited module again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({"ENHANCED_MEMORY_DAEMON": "0", "ENHANCED_MEMORY_LOG": "0", **extra})
    return env


def _run(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])}... failed: {r.stderr.strip()[-300:]}")
    return r.stdout


def _process_times(cmds: list[list[str]], env: dict[str, str]) -> dict[str, float]:
    _run(cmds[0], env)  # warm the page cache
    out = []
    for cmd in cmds:
        t0 = time.perf_counter()
        _run(cmd, env)
        out.append(time.perf_counter() - t0)
    return _pct(out)


# ------------------------------------------------------------------ in-process
def in_process(ws: Path, qs: list[str]) -> dict[str, Any]:
    from langchain_enhanced_memory import EnhancedMemoryRetriever
    from langchain_enhanced_memory.core import scoring
    from langchain_enhanced_memory.core.ranking import rank
    from langchain_enhanced_memory.core.settings import MemorySettings
    from langchain_enhanced_memory.engine.answer import scan_thread
    from langchain_enhanced_memory.tools import MemorySearchTool

    quiet = MemorySettings(log_queries=False)
    res: dict[str, Any] = {}
    for label, kw in (
        ("keyword", {"embedder": "none"}),
        ("vectors", {"embeddings": synthetic.ProjectionEmbeddings()}),
    ):
        retriever = EnhancedMemoryRetriever(workspace=ws, k=5, settings=quiet, **kw)
        eng = retriever.engine
        eng.update_index()  # vectors in before timing (the first-query path is timed apart)
        snap = eng.index.snapshot(eng.model_id)
        qvecs = synthetic.project(qs) if label == "vectors" else [None] * len(qs)

        def score(i: int, snap: Any = snap, eng: Any = eng, qvecs: Any = qvecs) -> None:
            r = rank(snap, qs[i], synthetic.NOW, eng.settings, qvecs[i], beside=scan_thread())
            scoring.top_k(r.scores, 5)

        tool = MemorySearchTool(engine=eng, settings=quiet, now=synthetic.NOW)
        res[label] = {
            "scoring": _timed(score, list(range(len(qs)))),
            "invoke": _timed(lambda q, r=retriever: r.invoke(q, now=synthetic.NOW), qs),
            "tool": _timed(lambda q, t=tool: t.invoke({"query": q, "maxResults": 5}), qs),
        }
        eng.close()
    return res


# ---------------------------------------------------------------- processes
def batch(ws: Path, qs: list[str], tmp: Path) -> dict[str, float]:
    env = _env()
    files = {}
    for n in (1, len(qs)):
        path = tmp / f"batch-{n}.jsonl"
        path.write_text(
            "".join(json.dumps({"id": i, "query": q}) + "\n" for i, q in enumerate(qs[:n]))
        )
        files[n] = path
    walls = {}
    for n, path in files.items():
        cmd = [*CLI, "search", "--workspace", str(ws), "--embedder", "none", "--now", NOW,
               "--json", "--batch", str(path)]  # fmt: skip
        _run(cmd, env)
        t0 = time.perf_counter()
        _run(cmd, env)
        walls[n] = time.perf_counter() - t0
    per_query = (walls[len(qs)] - walls[1]) / (len(qs) - 1)
    return {"per_query_ms": per_query * 1000, "startup_ms": walls[1] * 1000}


def serve(ws: Path, qs: list[str]) -> dict[str, float]:
    proc = subprocess.Popen(
        [*CLI, "serve", "--workspace", str(ws), "--embedder", "none", "--port", "0", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env(),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"] + "/search"

        def post(q: str) -> None:
            body = json.dumps({"query": q, "k": 5, "now": NOW}).encode()
            req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                r.read()

        return _timed(post, qs)
    finally:
        proc.terminate()
        proc.wait(30)


def one_shot(ws: Path, qs: list[str], skill: Path) -> dict[str, Any]:
    search = [[*CLI, "search", "--workspace", str(ws), "--embedder", "none", "--now", NOW,
               "--json", q] for q in qs]  # fmt: skip
    script = [[sys.executable, str(skill / "scripts" / "enhanced_memory_search.py"),
               "--embedder", "none", "--now", NOW, "--json", q] for q in qs]  # fmt: skip
    out: dict[str, Any] = {
        "search": _process_times(search, _env()),
        "skill": _process_times(script, _env()),
    }
    on = _env(ENHANCED_MEMORY_DAEMON="1")
    _run([*CLI, "daemon", "start", "--workspace", str(ws)], on)
    try:
        out["search_resident"] = _process_times(search, on)
        out["skill_resident"] = _process_times(script, on)
    finally:
        _run([*CLI, "daemon", "stop", "--workspace", str(ws)], on)
    return out


def original(ws: Path, qs: list[str], tmp: Path) -> dict[str, float]:
    from langchain_enhanced_memory.engine import MemorySearch

    eng = MemorySearch(ws, embeddings=synthetic.ProjectionEmbeddings())
    eng.update_index()
    snap = eng.index.snapshot(eng.model_id)
    dense = snap.dense_vectors()
    assert dense is not None
    rows = [
        {"file": snap.paths[i], "header": snap.header[i], "line": int(snap.start[i]),
         "text": snap.texts[i], "embedding": v}
        for i, v in enumerate(dense.tolist())
    ]  # fmt: skip
    vectors = tmp / "vectors.json"
    vectors.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    qvecs = tmp / "qvecs.json"
    qvecs.write_text(json.dumps(dict(zip(qs, synthetic.project(qs).tolist(), strict=True))))
    cmds = [[sys.executable, str(HERE / "original_reference.py"), str(vectors), str(qvecs), q,
             "--now", NOW] for q in qs]  # fmt: skip
    env = _env(PYTHONPATH=str(REPO))
    _run(cmds[0], env)
    out = []
    for cmd in cmds:
        t0 = time.perf_counter()
        printed = _run(cmd, env)
        # Less the import of our replay of its date rules, which the original never paid.
        out.append(time.perf_counter() - t0 - json.loads(printed)["import_s"])
    return _pct(out)


def local_model(ws: Path, qs: list[str]) -> dict[str, Any]:
    from langchain_enhanced_memory.engine import MemorySearch

    eng = MemorySearch(ws, embedder="local")
    if eng.choice.provider != "local":
        return {"skipped": eng.choice.reason or "no local model"}
    eng.update_index()
    res: dict[str, Any] = {"embed_query": _timed(eng.embed_query, qs)}
    cmds = [[*CLI, "search", "--workspace", str(ws), "--embedder", "local", "--now", NOW,
             "--json", q] for q in qs]  # fmt: skip
    on = _env(ENHANCED_MEMORY_DAEMON="1")
    res["one_shot"] = _process_times(cmds[:3], _env())
    _run([*CLI, "daemon", "start", "--workspace", str(ws)], on)
    try:
        res["one_shot_resident"] = _process_times(cmds, on)
    finally:
        _run([*CLI, "daemon", "stop", "--workspace", str(ws)], on)
    return res


# -------------------------------------------------------------------- driver
def workspace(root: Path, size: str) -> Path:
    ws = root / f"ws-{size}"
    if not ws.exists():
        if size == "demo":
            shutil.copytree(REPO / "examples" / "workspace", ws,
                            ignore=shutil.ignore_patterns(".enhanced-memory"))  # fmt: skip
        else:
            synthetic.generate(ws, int(size))
    return ws


def bench(root: Path, size: str, n: int, original_max: int) -> dict[str, Any]:
    ws = workspace(root, size)
    qs = synthetic.queries(n)
    tmp = Path(tempfile.mkdtemp(dir=root))
    _run([*CLI, "index", "--workspace", str(ws), "--embedder", "none"], _env())
    _run([*CLI, "skill", "install", "--workspace", str(ws), "--force"], _env())
    skill = ws / "skills" / "enhanced-memory"
    res: dict[str, Any] = {"size": size}
    # The original loads all of vectors.json per query: about 30 s at 100k chunks.
    with_original = size == "demo" or int(size) <= original_max
    for name, fn in (
        ("in_process", lambda: in_process(ws, qs)),
        ("batch", lambda: batch(ws, synthetic.queries(max(200, n)), tmp)),
        ("serve", lambda: serve(ws, qs)),
        ("one_shot", lambda: one_shot(ws, qs[: max(5, n // 3)], skill)),
        ("original", lambda: original(ws, qs[: max(5, n // 3)], tmp)),
    ):
        if name == "original" and not with_original:
            continue
        print(f"  {size}: {name} ...", file=sys.stderr, flush=True)
        res[name] = fn()
    from langchain_enhanced_memory.engine import MemorySearch

    res["chunks"] = MemorySearch(ws, embedder="none").index.stats()["chunks"]
    shutil.rmtree(tmp, ignore_errors=True)
    return res


def table(results: list[dict[str, Any]], local: dict[str, Any] | None) -> str:
    cols = [str(r["size"]) + f" ({r['chunks']} chunks)" for r in results]
    lines = ["| path (p50 / p95 ms) | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]

    def row(label: str, get: Callable[[dict[str, Any]], dict[str, float]]) -> None:
        cells = []
        for r in results:
            try:
                cells.append(f"{get(r)['p50']:.1f} / {get(r)['p95']:.1f}")
            except KeyError:
                cells.append("not run")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for mode in ("keyword", "vectors"):
        row(f"scoring only, {mode}", lambda r, m=mode: r["in_process"][m]["scoring"])
        row(f"`retriever.invoke`, {mode}", lambda r, m=mode: r["in_process"][m]["invoke"])
        row(f"`memory_search` tool, {mode}", lambda r, m=mode: r["in_process"][m]["tool"])
    lines.append(
        "| `search --batch` per query (start-up) | "
        + " | ".join(
            f"{r['batch']['per_query_ms']:.1f} ({r['batch']['startup_ms']:.0f})" for r in results
        )
        + " |"
    )
    row("`serve`, POST /search", lambda r: r["serve"])
    row("one-shot `search --json`", lambda r: r["one_shot"]["search"])
    row("one-shot `search --json`, resident engine", lambda r: r["one_shot"]["search_resident"])
    row("skill script `--json`", lambda r: r["one_shot"]["skill"])
    row("skill script `--json`, resident engine", lambda r: r["one_shot"]["skill_resident"])
    row("original skill's per-query process", lambda r: r["original"])
    lines.append(
        "| original / ours (resident, skill script) | "
        + " | ".join(
            f"{r['original']['p50'] / r['one_shot']['skill_resident']['p50']:.1f}x"
            if "original" in r
            else "not run"
            for r in results
        )
        + " |"
    )
    if local:
        lines.append("")
        if "skipped" in local:
            lines.append(f"local model: skipped ({local['skipped']})")
        else:
            e, o, orr = local["embed_query"], local["one_shot"], local["one_shot_resident"]
            lines.append(
                f"local model (demo workspace): query embedding {e['p50']:.1f} / {e['p95']:.1f} ms;"
                f" one-shot `search --embedder local --json` {o['p50']:.0f} ms without the"
                f" resident engine, {orr['p50']:.1f} / {orr['p95']:.1f} ms through it"
            )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="demo,1000,10000", help="demo and/or chunk counts")
    p.add_argument("--root", default="/tmp/enhanced-memory-latency", help="where workspaces go")
    p.add_argument("--queries", type=int, default=30, help="queries per in-process path")
    p.add_argument("--no-local", action="store_true", help="skip the local model's figures")
    p.add_argument(
        "--original-max", type=int, default=10000, help="largest size the original runs at"
    )
    p.add_argument("--json", help="also write the raw results here")
    a = p.parse_args()
    root = Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    results = [bench(root, s.strip(), a.queries, a.original_max) for s in a.sizes.split(",")]
    local = (
        None if a.no_local else local_model(workspace(root, "demo"), synthetic.queries(a.queries))
    )
    if a.json:
        Path(a.json).write_text(json.dumps({"results": results, "local": local}, indent=1))
    print(f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print(table(results, local))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
