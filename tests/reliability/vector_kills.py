"""SIGKILL around the vector side files: while new vectors are spooled, and while a file is written.

One model throughout (so every run builds on the previous generation's side
file), a few files rewritten before each run, and ``enhanced-memory index``
killed either once some new vectors are committed to the spool or as soon as a
side file no ``catalog`` row names yet shows up (the write before its commit:
temporary name, flush, rename). After each kill: every side file a row names
(segments and the spool) is there and whole, every cache row finds its vector
in a segment or the spool, the text state is exact, and a search answers
(keyword-only, saying how much is embedded, while the killed run's vectors are
missing; hybrid after the last run).
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from langchain_enhanced_memory.store import postings
from tests.cli_run import CLI, cli_env, run_cli
from tests.reliability.harness import (
    Workspace,
    _wait_for,
    check_index_state,
    fake_ollama_process,
    index_path,
    integrity,
    set_aside_files,
)

MODEL = "embed-fixed"


@dataclass
class VectorKillReport:
    """What the side-file kill campaign did and found."""

    kills: int = 0
    survived: int = 0
    phases: dict[str, int] = field(
        default_factory=lambda: {"new vectors spooled": 0, "writing the vector file": 0}
    )
    files_after: int = 0  # vector files once a last run completes (the named segments only)
    problems: list[str] = field(default_factory=list)


def _named(ws: Path) -> set[str]:
    """The side files (segments) ``catalog`` rows name (read-only)."""
    from langchain_enhanced_memory.store.vector_segments import parse_layouts

    with sqlite3.connect(f"file:{index_path(ws)}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute("SELECT data FROM catalog WHERE name LIKE 'vectors:%'")
        return {lay.file for (data,) in rows for lay in parse_layouts(data) or []}


def _spooled(ws: Path) -> int:
    """Records committed to the model's spool (0 without one)."""
    from langchain_enhanced_memory.store.spool import spool_state

    with sqlite3.connect(f"file:{index_path(ws)}?mode=ro", uri=True, timeout=30) as conn:
        state = spool_state(conn, f"ollama/{MODEL}")
    return state.records if state else 0


def _side_files(ws: Path) -> set[str]:
    return {p.name for p in index_path(ws).with_suffix(".vectors").glob("*.vec")}


def _unnamed_file(ws: Path, known: set[str]) -> bool:
    """A new side file (or its temporary) that no row names: a write before its commit."""
    return bool(_side_files(ws) - known - _named(ws))


def check_vectors(ws: Path) -> list[str]:
    """Every named side file opens whole, and so does every committed spool."""
    from langchain_enhanced_memory.store.spool import Spool, spool_state
    from langchain_enhanced_memory.store.vector_segments import VectorSegment, parse_layouts

    problems = []
    folder = index_path(ws).with_suffix(".vectors")
    with sqlite3.connect(f"file:{index_path(ws)}?mode=ro", uri=True, timeout=30) as conn:
        named = conn.execute("SELECT name, data FROM catalog WHERE name LIKE 'vectors:%'")
        for name, data in named.fetchall():
            layouts = parse_layouts(data) or []
            files = [VectorSegment.open(folder, lay) for lay in layouts]
            if not layouts or any(vf is None for vf in files):
                problems.append(f"{name}: side file missing or not whole")
        spools = conn.execute("SELECT name FROM catalog WHERE name LIKE 'spool:%'")
        for (name,) in spools.fetchall():
            state = spool_state(conn, name.split(":", 1)[1])
            if state is None or Spool.open(folder, state) is None:
                problems.append(f"{name}: spool missing or shorter than committed")
    return problems


def vector_kill_campaign(root: Path, kills: int = 10, delay: float = 0.02) -> VectorKillReport:
    """Kill ``index`` around the side files ``kills`` times, checking what each kill left."""
    rng = random.Random(5)
    wsp = Workspace(root, files=40, sections=48)
    report = VectorKillReport()
    with fake_ollama_process(delay=delay, models=(MODEL,)) as url:
        base = ["--workspace", str(root), "--embedder", "ollama", "--ollama-url", url]
        base += ["--model", MODEL]
        r = run_cli("index", *base, "--json", timeout=600)
        if r.returncode != 0:
            report.problems.append(f"first index failed: {r.stderr.strip()}")
            return report
        for k in range(kills):
            wsp.modify(rng, 8)
            spooling = k % 2 == 0
            known, before = _side_files(root), _spooled(root)
            proc = subprocess.Popen(
                [*CLI, "index", *base, "--json"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=cli_env(),
            )
            if spooling:
                reached = _wait_for(proc, lambda n=before: _spooled(root) > n)
            else:
                reached = _wait_for(proc, lambda seen=known: _unnamed_file(root, seen))
            finished = proc.poll() is not None
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if reached and not finished:
                report.kills += 1
                report.phases["new vectors spooled" if spooling else "writing the vector file"] += 1
            problems = check_index_state(wsp) + check_vectors(root)
            problems += [f"set aside: {p.name}" for p in set_aside_files(root)]
            if integrity(root) != "ok":
                problems.append("integrity_check failed")
            problems += _search_problems(base)
            if problems:
                report.problems += [f"kill {k}: {p}" for p in problems]
            elif reached and not finished:
                report.survived += 1
        r = run_cli("index", *base, "--json", timeout=600)
        if r.returncode != 0:
            report.problems.append(f"final index failed: {r.stderr.strip()}")
            return report
        report.problems += check_vectors(root)
        folder = index_path(root).with_suffix(".vectors")
        report.files_after = len(list(folder.glob("*.vec")))
        if _side_files(root) != _named(root):
            report.problems.append("side files no row names were left after the last run")
        if list(folder.glob("*.spool")) or _spooled(root):
            report.problems.append("a spool was left after the last run folded the generation")
        with sqlite3.connect(f"file:{index_path(root)}?mode=ro", uri=True) as conn:
            named_segments = postings.named_segments(conn)
        if {p.name for p in folder.glob("*.seg")} != set(
            named_segments[0] if named_segments else []
        ):
            report.problems.append("postings segments no row names were left after the last run")
        from langchain_enhanced_memory.store.index import MemoryIndex

        snap = MemoryIndex(root).snapshot(f"ollama/{MODEL}")
        if snap.has_vector is None or not bool(np.all(snap.has_vector)):
            report.problems.append("after the last run some chunks lack a vector")
        report.problems += _search_problems(base, complete=True)
    return report


def _search_problems(base: list[str], complete: bool = False) -> list[str]:
    """A search answers; hybrid once every vector is in, else keyword-only saying how far.

    A kill mid-run leaves more missing vectors than a search embeds before it
    answers (``embed_inline_max``), so it answers keyword-only with ``embedded``
    (the share of chunks with a vector); a fallback without it is a failure.
    """
    r = run_cli("search", "kestrel note", *base, "--json", "--k", "10")
    if r.returncode != 0:
        return [f"search failed: {r.stderr.strip()}"]
    out = json.loads(r.stdout)
    if not out["results"]:
        return ["search found nothing"]
    if out["fallback"] is not None and (complete or "embedded" not in out):
        return [f"vector search degraded: {out['fallback']}"]
    return []
