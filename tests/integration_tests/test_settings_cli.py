"""``eval --set`` takes settings by their flat names, whichever group holds them (a process)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_run import run_cli

QUERY = {
    "id": 1,
    "query": "Postgres on 2026-02-07",
    "gold": [{"path": "memory/2026-02-07.md", "line": 5}],
}


def _eval(workspace: Path, tmp_path: Path, *sets: str) -> tuple[int, str, list[dict]]:
    """Exit code, stderr and the ranked rows of ``eval --set SETS`` (keyword-only)."""
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text(json.dumps({**QUERY, "workspace": workspace.name}) + "\n")
    out.unlink(missing_ok=True)
    args = ["--root", str(workspace.parent), "--queries", str(queries), "--out", str(out)]
    sets_args = [a for s in sets for a in ("--set", s)]
    r = run_cli("eval", *args, "--embedder", "none", *sets_args)
    rows = json.loads(out.read_text())["results"] if out.exists() else []
    return r.returncode, r.stderr, rows


def test_set_reaches_the_group_that_holds_the_field(workspace: Path, tmp_path: Path) -> None:
    code, err, default = _eval(workspace, tmp_path)
    assert code == 0, err
    sets = ("snippet_chars=12", "temporal_boost=1.0", "date_prior=0")
    code, err, changed = _eval(workspace, tmp_path, *sets)
    assert code == 0, err
    assert max(len(r["snippet"]) for r in default) > 12  # output.snippet_chars
    assert all(len(r["snippet"]) <= 12 for r in changed)
    # ranking.temporal_boost and date_prior: unboosted, the named day no longer comes first
    assert default[0]["path"] == "memory/2026-02-07.md"
    assert changed[0]["path"] == "memory/2026-02-08.md"


def test_a_bad_set_is_one_line_naming_the_flat_field(workspace: Path, tmp_path: Path) -> None:
    for value, said in [
        ("max_chunk_chars=10", "bad --set: max_chunk_chars: must be at least 200, got 10"),
        ("chunker={}", "bad --set: chunker: is a group: set its fields by name"),
        ("profile=original", "bad --set: profile is chosen with --profile"),
    ]:
        code, err, _ = _eval(workspace, tmp_path, value)
        assert code != 0 and said in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_set_may_name_a_field_eval_sets_itself(workspace: Path, tmp_path: Path) -> None:
    code, err, rows = _eval(workspace, tmp_path, "log_queries=false")  # eval's own default
    assert code == 0 and rows, err
