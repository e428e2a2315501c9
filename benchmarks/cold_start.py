"""Cold-start benchmark: one process per query, as OpenClaw agents call memory search.

Builds a synthetic workspace of about 10,000 chunks in a temporary folder,
indexes it once with ``--embedder none``, then prints the median wall time over
``--runs`` runs of

- ``enhanced-memory search --json --embedder local QUERY`` on a fresh copy with
  no index (a new user's first answer: text sync, keyword-only answer),
- ``enhanced-memory search --json --embedder none QUERY`` as a fresh process, and
- ``python -c "import langchain_enhanced_memory"``.

Usage::

    python benchmarks/cold_start.py [--chunks 10000] [--runs 15] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

WORDS = """team meeting decided plan project release deploy server database migration backup
user customer bug fix test review design api latency cache queue worker config budget invoice
contract vendor hire interview onboarding roadmap sprint retro standup metrics dashboard alert
incident outage postmortem rollback schema index query search feature flag experiment launch
feedback survey call email doc spec draft idea question decision risk blocker estimate deadline
lunch dinner coffee trip flight hotel doctor birthday family garden recipe groceries weather
postgres redis kafka grafana python rust typescript kubernetes terraform laptop password""".split()
ZH = "项目 会议 决定 计划 发布 数据库 迁移 客户 预算 周报 咖啡 旅行 医生 生日".split()
SECTIONS_PER_FILE = 20


def _paragraph(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(25, 70))]
    if rng.random() < 0.1:
        words[rng.randrange(len(words))] = "".join(rng.sample(ZH, 3))
    return " ".join(words).capitalize() + "."


def build_workspace(root: Path, n_chunks: int, seed: int = 0) -> int:
    """Write daily notes of 20 ``##`` sections each until ``n_chunks`` sections exist.

    Returns:
        The number of sections written (each becomes one chunk).
    """
    rng = random.Random(seed)
    mem = root / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text(
        "# Preferences\n\nThe user prefers dark roast coffee and short meetings.\n",
        encoding="utf-8",
    )
    written = 1
    day = date(2024, 1, 1)
    while written < n_chunks:
        parts = [f"# {day.isoformat()}\n"]
        for s in range(min(SECTIONS_PER_FILE, n_chunks - written)):
            parts.append(f"## {rng.choice(WORDS).title()} {s}\n\n{_paragraph(rng)}\n")
            written += 1
        (mem / f"{day.isoformat()}.md").write_text("\n".join(parts), encoding="utf-8")
        day += timedelta(days=1)
    return written


def _measure(cmd: list[str], runs: int, env: dict[str, str]) -> str:
    """Median wall and CPU (user + system) seconds of ``runs`` runs, as one line.

    CPU time barely moves when other processes share the cores; wall time does.
    """
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if r.returncode != 0:
            raise SystemExit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return (
        f"median wall {statistics.median(wall) * 1000:.0f} ms"
        f" (min {min(wall) * 1000:.0f}, max {max(wall) * 1000:.0f}),"
        f" median CPU {statistics.median(cpu) * 1000:.0f} ms, {runs} runs"
    )


def _first_answer(cli: list[str], ws: Path, args: argparse.Namespace, env: dict[str, str]) -> str:
    """``search --embedder local`` on a copy with no index, as a new user's first query.

    It syncs the text and answers keyword-only (nothing is embedded yet).
    ``--no-daemon``: a user's first search also starts the resident engine in
    the background (a ``Popen``, after the answer is computed), which would go
    on embedding the copy after this run.
    """
    copy = ws.parent / "fresh"
    walls = []
    for _ in range(args.first_runs):
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(ws, copy, ignore=shutil.ignore_patterns(".enhanced-memory"))
        cmd = [*cli, "search", "--json", "--embedder", "local", "--no-daemon"]
        t0 = time.perf_counter()
        r = subprocess.run([*cmd, "--workspace", str(copy), args.query], capture_output=True,
                           text=True, env=env)  # fmt: skip
        walls.append(time.perf_counter() - t0)
        if r.returncode != 0 or json.loads(r.stdout).get("fallback") != "keyword-only":
            raise SystemExit(f"first search failed or did not answer keyword-only: {r.stderr}")
    shutil.rmtree(copy, ignore_errors=True)
    return (
        f"median wall {statistics.median(walls) * 1000:.0f} ms"
        f" (min {min(walls) * 1000:.0f}, max {max(walls) * 1000:.0f}), {args.first_runs} runs"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--query", default="database migration rollback plan")
    ap.add_argument("--keep", help="build the workspace here and keep it")
    ap.add_argument("--first-runs", type=int, default=5, help="runs of the first-answer timing")
    args = ap.parse_args()

    tmp = None
    if args.keep:
        ws = Path(args.keep)
    else:
        tmp = tempfile.mkdtemp(prefix="cold-start-")
        ws = Path(tmp) / "ws"
    try:
        build_workspace(ws, args.chunks)
        exe = shutil.which("enhanced-memory", path=str(Path(sys.executable).parent))
        cli = [exe] if exe else [sys.executable, "-m", "langchain_enhanced_memory.cli"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENHANCED_MEMORY_")}
        env.pop("OPENCLAW_WORKSPACE_DIR", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a pip install has bytecode

        t0 = time.perf_counter()
        r = subprocess.run(
            [*cli, "index", "--json", "--embedder", "none", "--workspace", str(ws)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if r.returncode != 0:
            raise SystemExit(f"index failed: {r.stderr}")
        info = json.loads(r.stdout)
        print(
            f"workspace: {info['files']} files, {info['chunks']} chunks,"
            f" first index {time.perf_counter() - t0:.2f} s"
        )

        print(f"first answer on a fresh copy, local model: {_first_answer(cli, ws, args, env)}")
        search = [*cli, "search", "--json", "--embedder", "none", "--workspace", str(ws)]
        search.append(args.query)
        subprocess.run(search, capture_output=True, env=env, check=False)  # warm the OS cache
        print(f"search --json --embedder none: {_measure(search, args.runs, env)}")
        imp = [sys.executable, "-c", "import langchain_enhanced_memory"]
        print(f"python -c 'import langchain_enhanced_memory': {_measure(imp, args.runs, env)}")
        bare = [sys.executable, "-c", "pass"]
        print(f"python -c pass (interpreter floor): {_measure(bare, args.runs, env)}")
        print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
