"""``salience``, ``crossref`` and ``get`` run as real processes (fake Ollama over HTTP)."""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.workspaces import write_workspace

BILLING = (
    "We decided to migrate the billing database to Postgres 16 next sprint with Bob. The"
    " migration window is Saturday night; the rollback plan lives in the ops runbook and"
    " finance signs off on the invoice export checks before cutover."
)

FILES = {
    "MEMORY.md": "# People\n\nAlice Chen leads the payments team; Bob owns the data pipeline.\n",
    "memory/2026-02-07.md": f"# Standup\n\n{BILLING} Rollback script missing.\n",
    "memory/2026-02-08.md": f"# Decisions\n\n{BILLING}\n\n# Lunch\n\nRamen on Fifth street.\n",
    "memory/topics/billing.md": f"# Billing\n\n{BILLING} Owner: Bob.\n",
    "memory/topics/garden.md": "# Garden\n\nTomatoes need water in July; basil is fine.\n",
}


def run(ws: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess:
    extra = ["--embedder", "ollama", "--ollama-url", url] if url else []
    return run_cli(*args, "--workspace", str(ws), *extra, ENHANCED_MEMORY_EMBEDDER="none")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", FILES)


def test_salience_after_real_searches_shows_accesses_and_gap(ws):
    for query in ("billing Postgres", "what did we say about kubernetes yesterday"):
        r = run(ws, "search", query, "--now", "2026-02-09T09:00", "--json")
        assert r.returncode == 0, r.stderr
    log = json.loads((ws / ".enhanced-memory/query_log.json").read_text())
    assert [e["query"] for e in log][-1] == "what did we say about kubernetes yesterday"
    assert log[-1]["top_score"] < 0.4
    r = run(ws, "salience", "--json", "--top", "10", "--now", "2026-02-20T12:00")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"timestamp", "items", "prompts", "total_items"}
    items = {i["path"]: i for i in out["items"]}
    assert items["memory/topics/billing.md"]["accesses"] >= 1
    day = items["memory/2026-02-08.md"]
    assert day["accesses"] >= 1 and day["gap"] is True
    base = 0.4 + min(0.1, day["size"] / 50000) - min(0.2, 0.03 * day["accesses"])
    assert day["importance"] == pytest.approx(base + 0.15, abs=1e-3)
    text = run(ws, "salience", "--now", "2026-02-20T12:00")
    assert "haven't been reviewed for MEMORY.md" in text.stdout


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_crossref_build_show_graph_html_dot(ws, tmp_path, fake_ollama):
    r = run(ws, "crossref", "build", "--json", url=fake_ollama.url)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["mode"] == "full" and report["files"] == 5 and report["refs"] > 0
    r = run(ws, "crossref", "build", "--json", url=fake_ollama.url)
    assert json.loads(r.stdout)["mode"] == "unchanged"

    r = run(ws, "crossref", "show", "memory/topics/billing.md", "--json")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    linked = {f["file"] for f in shown["linked_files"]}
    assert {"memory/2026-02-07.md", "memory/2026-02-08.md"} <= linked
    assert "memory/topics/garden.md" not in linked

    html_file, dot_file = tmp_path / "g.html", tmp_path / "g.dot"
    r = run(ws, "crossref", "graph", "--html", str(html_file), "--dot", str(dot_file))
    assert r.returncode == 0, r.stderr
    assert "most connected:" in r.stdout.lower()
    page = html_file.read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and "<script" not in page
    parser = _Tags()
    parser.feed(page)
    nodes = [a for t, a in parser.tags if t == "g" and a.get("class", "").startswith("node ")]
    assert {a["data-path"] for a in nodes} == set(FILES)
    kinds = {a["class"].split()[1] for a in nodes}
    assert kinds == {"core", "daily", "topic"}
    assert sum(1 for t, _ in parser.tags if t == "line") >= 2
    assert "salience:" in page
    dot = dot_file.read_text()
    assert dot.startswith("graph memory {")
    assert '"memory/2026-02-08.md" -- "memory/topics/billing.md"' in dot

    r = run(ws, "crossref", "graph", "--json")
    summary = json.loads(r.stdout)
    assert summary["files"] == 5 and summary["most_connected"]


def test_crossref_errors_are_one_line(ws):
    r = run(ws, "crossref", "graph")
    assert r.returncode == 2 and "crossref build" in r.stderr
    assert r.stderr.count("\n") == 1
    r = run(ws, "crossref", "build", "--json")
    assert r.returncode == 2 and json.loads(r.stdout)["error"].startswith("the index holds no")


def test_get_cli(ws):
    r = run(ws, "get", "memory/2026-02-08.md", "--from", "5", "--lines", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["# Lunch", "", "Ramen on Fifth street."]
    r = run(ws, "get", "memory/2026-02-08.md", "--json")
    assert json.loads(r.stdout)["totalLines"] == 7
    for bad, needle in [
        ("../x.md", "'..' is not allowed"),
        ("/etc/passwd", "absolute"),
        ("memory/query_log.json", "not a markdown"),
        ("memory/" + "n" * 300 + ".md", "cannot be read (File name too long)"),
    ]:
        r = run(ws, "get", bad)
        assert r.returncode == 2 and needle in r.stderr and r.stderr.count("\n") == 1
        assert "Traceback" not in r.stderr and str(ws) not in r.stderr
