"""Fault-injection harness shared by the slow reliability tests and ``benchmarks/reliability.py``.

Everything here drives the real ``enhanced-memory`` command as a child process
against a real workspace on disk and, for embeddings, a FakeOllama *process*
(``tests/fake_ollama.py``) with a per-request delay, so that indexing takes
seconds and can be killed at chosen points of its progress.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.cli_run import CLI, cli_env, run_cli, stop

TESTS_DIR = Path(__file__).resolve().parents[1]
WORDS = (
    "postgres migration rollback billing latency cache deploy standup payments pipeline "
    "review budget roadmap incident outage vendor contract hiring onboarding design api "
    "search index vector keyword header release sprint retro customer invoice refund"
).split()
# Words every generated file keeps in every version, so searches for them always have results.
STABLE = ("kestrel", "marmalade", "quasar", "juniper")


# ------------------------------------------------------------------ workspace
def section_text(rng: random.Random, n: int, version: int) -> str:
    """One markdown section: a header and a few lines of words."""
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
    stable = STABLE[n % len(STABLE)]
    return f"## Section {n} v{version}\n\n{stable} note {n}: {words}.\nversion {version} line\n"


def file_text(seed: int, sections: int, version: int) -> str:
    """A whole daily note; ``version`` changes every section (so line spans move)."""
    rng = random.Random(seed * 1000 + version)
    # Versions differ in length too, so a stale span can point past the end of the file.
    extra = rng.randint(0, 3)
    parts = [f"# Day {seed}\n\n"] + [section_text(rng, n, version) for n in range(sections + extra)]
    return "\n".join(parts)


class Workspace:
    """A generated workspace that remembers every version of every file it wrote."""

    def __init__(self, root: Path, files: int = 40, sections: int = 48) -> None:
        self.root = root
        self.sections = sections
        self.versions: dict[str, list[list[str]]] = {}
        self.current: dict[str, int] = {}
        for i in range(files):
            self.write(i, 0)

    def rel(self, i: int) -> str:
        """Relative path of file ``i``."""
        return f"memory/2026-{1 + i // 28:02d}-{1 + i % 28:02d}.md"

    def write(self, i: int, version: int) -> None:
        """Write version ``version`` of file ``i`` (and remember its lines)."""
        rel = self.rel(i)
        text = file_text(i, self.sections, version)
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.versions.setdefault(rel, []).append(text.split("\n")[:-1])
        self.current[rel] = version

    def modify(self, rng: random.Random, count: int) -> None:
        """Rewrite ``count`` random files with a new version."""
        for i in rng.sample(range(len(self.current)), count):
            self.write(i, self.current[self.rel(i)] + 1)

    def matching_version(self, rel: str, start: int, end: int, text: str) -> int | None:
        """Index of a version of ``rel`` whose lines ``start..end`` are exactly ``text``."""
        for n, lines in enumerate(self.versions.get(rel, ())):
            if 1 <= start <= end <= len(lines) and "\n".join(lines[start - 1 : end]) == text:
                return n
        return None


# ------------------------------------------------------------------ FakeOllama as a process
@contextmanager
def fake_ollama_process(delay: float = 0.05, models: tuple[str, ...] = ()) -> Iterator[str]:
    """Start ``tests/fake_ollama.py`` as a process; yield its URL; stop it."""
    cmd = [sys.executable, str(TESTS_DIR / "fake_ollama.py"), "--port", "0", "--print-port"]
    cmd += ["--delay", str(delay)]
    for m in models or ("nomic-embed-text",):
        cmd += ["--model", m]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().strip())
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc, timeout=10)


# ------------------------------------------------------------------ index checks
def index_path(ws: Path) -> Path:
    """Where the CLI keeps the workspace's index."""
    return ws / ".enhanced-memory" / "index.sqlite"


def set_aside_files(ws: Path) -> list[Path]:
    """Index files the package set aside as corrupt or old (each one is lost data)."""
    return sorted(p for p in (ws / ".enhanced-memory").glob("index.sqlite.*-*"))


def integrity(ws: Path) -> str:
    """``PRAGMA integrity_check`` of the index, read-only."""
    uri = f"file:{index_path(ws)}?mode=ro"
    with sqlite3.connect(uri, uri=True, timeout=30) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def check_index_state(wsp: Workspace) -> list[str]:
    """Every indexed chunk must be exact lines of one version of its file (one version a file).

    Reads the committed state directly (no sync), so it sees what a kill left behind.

    Returns:
        Problems found, empty when the state is consistent.
    """
    from langchain_enhanced_memory.store.index import MemoryIndex

    problems: list[str] = []
    snap = MemoryIndex(wsp.root).snapshot(None)
    seen: dict[str, set[int]] = {}
    for path, start, end, text in zip(snap.paths, snap.start, snap.end, snap.texts, strict=True):
        versions = {
            n
            for n, lines in enumerate(wsp.versions.get(path, ()))
            if 1 <= start <= end <= len(lines) and "\n".join(lines[start - 1 : end]) == text
        }
        if not versions:
            problems.append(f"{path}:{start}-{end} matches no version of the file")
            continue
        seen[path] = seen[path] & versions if path in seen else versions
        if not seen[path]:
            problems.append(f"{path}: chunks come from different versions")
    return problems + check_postings(wsp.root)


def check_postings(ws: Path) -> list[str]:
    """The named postings segments are there, whole, and equal a fresh build of every chunk.

    A searcher would build missing segments from the stored terms in memory, so
    a kill that lost one would not show in a search: it is checked here.
    """
    from langchain_enhanced_memory.core.segments import compacted, place_rows
    from langchain_enhanced_memory.store import postings, segment
    from langchain_enhanced_memory.store.chunkrows import place
    from langchain_enhanced_memory.store.db import chunk_ids

    folder = index_path(ws).with_suffix(".vectors")
    with sqlite3.connect(f"file:{index_path(ws)}?mode=ro", uri=True, timeout=30) as conn:
        named = postings.named_segments(conn)
        if named is None:
            return ["no postings segments named"]
        segments = postings.open_segments(folder, named[0])
        if segments is None:
            return [f"a named postings segment is missing or not whole: {named[0]}"]
        live = chunk_ids(conn)
        rows = place_rows([s.ids for s in segments], live)
        if rows is None:
            return ["the postings segments do not hold every chunk once"]
        if not np.array_equal(postings.live_ids(conn), live):
            return ["the chunk ids kept with the segments are not the chunks'"]
        want = postings.build_postings(conn, "", ())
        sql_rows = conn.execute(
            "SELECT path, start_line, end_line, header, headers, text FROM chunks ORDER BY id"
        ).fetchall()
    problems = []
    if any(s.rows is None for s in segments):
        problems.append("a named postings segment has no chunk rows")
    else:
        got_rows = place([s.rows for s in segments], rows, live.size)  # type: ignore[misc]
        seen = zip(
            [got_rows.names[i] for i in got_rows.path.tolist()],
            got_rows.start.tolist(),
            got_rows.end.tolist(),
            list(got_rows.header),
            list(got_rows.headers),
            list(got_rows.texts),
            strict=True,
        )
        if list(seen) != sql_rows:
            problems.append("the chunk rows of the segments differ from the chunks'")
    for name in segment.FIELDS:
        got = compacted([s.posts[name] for s in segments], rows)
        for part in ("keys", "indptr", "docs", "tf", "doc_len"):
            if not np.array_equal(getattr(got, part), getattr(want[name], part)):
                problems.append(f"postings {name}.{part} differ from a fresh build")
    return problems


def check_search(wsp: Workspace, out: dict[str, Any], *, settled: bool = True) -> list[str]:
    """Every search result quotes lines of one version of its file.

    ``settled``: no file changed since the search, so its lines must also lie
    within the file as it is now. Otherwise a later, shorter version may end
    before a line the search rightly returned from the version it saw.
    """
    problems = []
    for row in out["results"]:
        path = wsp.root / row["path"]
        if not path.is_file():
            problems.append(f"{row['path']} does not exist")
            continue
        start, end = row["startLine"], row["endLine"]
        if settled:
            n_lines = len(path.read_text(encoding="utf-8").split("\n")) - 1
            if not 1 <= start <= end <= n_lines:
                problems.append(f"{row['path']}:{start}-{end} outside the file ({n_lines} lines)")
        ok = any(
            "\n".join(lines[start - 1 : end]).startswith(row["snippet"])
            and 1 <= start <= end <= len(lines)
            for lines in wsp.versions.get(row["path"], ())
        )
        if not ok:
            problems.append(f"{row['path']}:{start}-{end} snippet matches no version")
    return problems


# ------------------------------------------------------------------ kill campaign
@dataclass
class KillReport:
    """What the kill campaign did and found."""

    kills: int = 0
    survived: int = 0
    chunks: int = 0
    kill_points: list[int | str] = field(default_factory=list)  # texts committed, or "lock"
    full_run_s: float = 0.0
    final_ok: bool = False
    problems: list[str] = field(default_factory=list)
    phases: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("before the sync commit", "while embedding", "after embedding"), 0
        )
    )


def index_counts(ws: Path, model: str) -> tuple[int, int]:
    """(generation, vectors cached for ``ollama/model``), read-only."""
    from langchain_enhanced_memory.store.folding import held_keys

    uri = f"file:{index_path(ws)}?mode=ro"
    with sqlite3.connect(uri, uri=True, timeout=30) as conn:
        gen = conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        n = held_keys(conn, index_path(ws).with_suffix(".vectors"), f"ollama/{model}").size
    return int(gen[0]) if gen else 0, int(n)


def _lock_held(ws: Path) -> bool:
    """Whether another process holds the index's writer lock (taken and freed at once if not)."""
    import fcntl

    with open(index_path(ws).with_suffix(".lock"), "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def _wait_for(proc: subprocess.Popen[bytes], reached: Any, timeout: float = 300) -> bool:
    """Poll until ``reached()`` or the process ends; False when it ended (or timed out) first."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if reached():
                return True
        except sqlite3.Error:  # the index is being created: not there yet
            pass
        time.sleep(0.005)
    return False


def kill_campaign(root: Path, kills: int = 20, delay: float = 0.05, seed: int = 7) -> KillReport:
    """SIGKILL ``enhanced-memory index`` at ``kills`` points of its progress.

    Each run uses a fresh model name (so the whole workspace needs embedding again
    and the run is long) after modifying some files (so old and new text states
    differ). The kill points are chosen by progress, not by the clock, so they
    land at the same stages on a fast or a busy machine: a quarter as soon as the
    run holds the writer lock (discovery and the sync transaction), the rest
    when 5% to 85% of the texts have been embedded and committed. After each
    kill: the committed state is exact lines of one version of each file,
    nothing was set aside as corrupt, the SQLite file passes an integrity check
    and ``search --json`` answers with results that point at real lines.
    Finally a normal ``index`` completes and every chunk has a vector.
    """
    rng = random.Random(seed)
    wsp = Workspace(root)
    report = KillReport()
    models = tuple(f"embed-m{i}" for i in range(kills + 1))
    with fake_ollama_process(delay=delay, models=models) as url:
        base = ["--workspace", str(root), "--embedder", "ollama", "--ollama-url", url]
        t0 = time.monotonic()
        r = run_cli("index", *base, "--model", models[0], "--json", timeout=600)
        report.full_run_s = time.monotonic() - t0
        if r.returncode != 0:
            report.problems.append(f"first index failed: {r.stderr.strip()}")
            return report
        first = json.loads(r.stdout)
        report.chunks, texts = first["chunks"], first["embedded"]
        early = kills // 4
        # None: kill once the run holds the writer lock; n: once n texts are committed.
        points: list[int | None] = [None] * early + [
            int(texts * (0.05 + 0.8 * k / max(1, kills - early - 1))) for k in range(kills - early)
        ]
        for k, point in enumerate(points):
            # Every third run rewrites half the files, so the sync itself takes a while.
            wsp.modify(rng, len(wsp.current) // 2 if k % 3 == 0 else 6)
            model = models[k + 1]
            before = index_counts(root, model)
            proc = subprocess.Popen(
                [*CLI, "index", *base, "--model", model, "--json"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=cli_env(),
            )
            if point is None:
                reached = _wait_for(proc, lambda: _lock_held(root))
            else:
                reached = _wait_for(proc, lambda n=point, m=model: index_counts(root, m)[1] >= n)
            finished = proc.poll() is not None
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            report.kills += reached and not finished
            report.kill_points.append("lock" if point is None else point)
            after = index_counts(root, model)
            if after[0] == before[0]:
                report.phases["before the sync commit"] += 1
            elif after[1] < texts:
                report.phases["while embedding"] += 1
            else:
                report.phases["after embedding"] += 1
            problems = check_index_state(wsp)
            problems += [f"set aside: {p.name}" for p in set_aside_files(root)]
            if integrity(root) != "ok":
                problems.append("integrity_check failed")
            r = run_cli("search", "kestrel note", "--workspace", str(root), "--json",
                        "--embedder", "none", "--k", "20")  # fmt: skip
            if r.returncode != 0:
                problems.append(f"search failed: {r.stderr.strip()}")
            else:
                out = json.loads(r.stdout)
                problems += check_search(wsp, out)
                if not out["results"]:
                    problems.append("search returned nothing")
            if problems:
                report.problems += [f"kill {k} at {point or 'lock'}: {p}" for p in problems]
            elif reached and not finished:
                report.survived += 1
        r = run_cli("index", *base, "--model", models[-1], "--json", timeout=600)
        if r.returncode != 0:
            report.problems.append(f"final index failed: {r.stderr.strip()}")
            return report
        from langchain_enhanced_memory.store.index import MemoryIndex

        snap = MemoryIndex(root).snapshot(f"ollama/{models[-1]}")
        report.final_ok = bool(len(snap)) and bool(snap.has_vector.all())
        report.problems += check_index_state(wsp)
        report.chunks = len(snap)
    return report


# ------------------------------------------------------------------ concurrency
@dataclass
class ConcurrencyReport:
    """What the concurrent searchers saw while a writer re-indexed."""

    seconds: float = 0.0
    searchers: int = 0
    searches: int = 0
    errors: int = 0
    empty: int = 0
    reindexes: int = 0
    reindex_errors: int = 0
    problems: list[str] = field(default_factory=list)


def _searcher(root: Path, stop_at: float, out: list[dict[str, Any]], k: int) -> None:
    """Run ``search --json`` processes back to back until ``stop_at``."""
    n = 0
    while time.monotonic() < stop_at:
        query = f"{STABLE[n % len(STABLE)]} note"
        r = run_cli("search", query, "--workspace", str(root), "--json", "--embedder", "none",
                    "--k", str(k))  # fmt: skip
        row: dict[str, Any] = {"rc": r.returncode, "stderr": r.stderr.strip()}
        if r.returncode == 0:
            try:
                row["out"] = json.loads(r.stdout)
            except json.JSONDecodeError:
                row["rc"] = -1
        out.append(row)
        n += 1


def concurrency_run(root: Path, seconds: float = 30.0, searchers: int = 4) -> ConcurrencyReport:
    """One process re-indexes in a loop (files modified between runs) while others search.

    Every search must exit 0 with a non-empty result list (each query names a word
    every file version holds) whose rows point at real lines of one file version.
    """
    import threading

    rng = random.Random(11)
    wsp = Workspace(root, files=30, sections=20)
    report = ConcurrencyReport(seconds=seconds, searchers=searchers)
    r = run_cli("index", "--workspace", str(root), "--embedder", "none")
    if r.returncode != 0:
        report.problems.append(f"first index failed: {r.stderr.strip()}")
        return report
    stop_at = time.monotonic() + seconds
    rows: list[list[dict[str, Any]]] = [[] for _ in range(searchers)]
    threads = [
        threading.Thread(target=_searcher, args=(root, stop_at, rows[i], 5))
        for i in range(searchers)
    ]
    for t in threads:
        t.start()
    while time.monotonic() < stop_at:
        wsp.modify(rng, 3)
        # Touch without changing content too: the index must notice and not churn.
        (root / wsp.rel(rng.randrange(len(wsp.current)))).touch()
        r = run_cli("index", "--workspace", str(root), "--embedder", "none")
        report.reindexes += 1
        if r.returncode != 0:
            report.reindex_errors += 1
            report.problems.append(f"index failed: {r.stderr.strip()}")
    for t in threads:
        t.join()
    for row in (row for per in rows for row in per):
        report.searches += 1
        if row["rc"] != 0:
            report.errors += 1
            report.problems.append(f"search failed ({row['rc']}): {row['stderr']}")
            continue
        if not row["out"]["results"]:
            report.empty += 1
            report.problems.append("empty result set")
        # Checked after the loop: files changed since most searches.
        report.problems += check_search(wsp, row["out"], settled=False)
    report.problems += [f"set aside: {p.name}" for p in set_aside_files(root)]
    return report


@dataclass
class SerializeReport:
    """Two ``index`` runs started together."""

    runs: int = 0
    ok: int = 0
    embedded: list[int] = field(default_factory=list)
    chunks: int = 0
    texts: int = 0  # distinct texts with a vector: chunks and their lines
    problems: list[str] = field(default_factory=list)


def concurrent_index_runs(root: Path, delay: float = 0.02) -> SerializeReport:
    """Start two ``index`` runs at once against a slow embedder; both must succeed.

    The writer lock serializes them: the text state is written once, each text (a
    chunk or one of its lines) is embedded once in total, and the result passes
    SQLite's integrity check.
    """
    wsp = Workspace(root, files=20, sections=20)
    report = SerializeReport(runs=2)
    with fake_ollama_process(delay=delay) as url:
        args = ["index", "--workspace", str(root), "--embedder", "ollama", "--ollama-url", url]
        procs = [
            subprocess.Popen(
                [*CLI, *args, "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(),
            )  # fmt: skip
            for _ in range(2)
        ]
        for p in procs:
            out, err = p.communicate(timeout=600)
            if p.returncode != 0:
                report.problems.append(f"index failed: {err.strip()}")
                continue
            report.ok += 1
            info = json.loads(out)
            report.embedded.append(info["embedded"])
            report.chunks = info["chunks"]
    if integrity(root) != "ok":
        report.problems.append("integrity_check failed")
    from langchain_enhanced_memory.store.folding import held_keys, vector_models
    from langchain_enhanced_memory.store.vector_segments import hash_keys

    with sqlite3.connect(f"file:{index_path(root)}?mode=ro", uri=True, timeout=30) as conn:
        # Texts the model saw: the vectors held less the chunk vectors taken as their
        # lines' mean (chunks with two or more embedded lines, 32 bytes of line hash each).
        means = conn.execute("SELECT embed_hash FROM chunks WHERE length(line_hashes) >= 64")
        mean_keys = hash_keys([h for (h,) in means])
        folder = index_path(root).with_suffix(".vectors")
        report.texts = sum(
            int((~np.isin(held_keys(conn, folder, m), mean_keys)).sum())
            for m in vector_models(conn)
        )
    report.problems += check_index_state(wsp)
    report.problems += [f"set aside: {p.name}" for p in set_aside_files(root)]
    # Each distinct text embedded once in all: a second run that embedded again overlapped.
    if report.ok == 2 and sum(report.embedded) != report.texts:
        report.problems.append(
            f"{sum(report.embedded)} texts embedded for {report.texts} distinct texts"
            f" ({report.chunks} chunks): runs overlapped"
        )
    return report
