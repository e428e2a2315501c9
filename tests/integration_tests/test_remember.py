"""``enhanced-memory remember`` as a process: new and existing days, two writers at once,
a read-only workspace, a path outside the memory, and the next search finding the line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli_run import CLI, cli_env, run_cli

NOW = "2026-02-09T09:00"


def remember(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("remember", "--workspace", str(ws), "--now", NOW, *args)


def test_new_day_then_search_finds_it(workspace: Path) -> None:
    r = remember(workspace, "--json", "The boiler was serviced by Hannah.", "--section", "House")
    assert r.returncode == 0, r.stderr
    done = json.loads(r.stdout)
    assert (done["path"], done["created"], done["line"]) == ("memory/2026-02-09.md", True, 5)
    found = run_cli("search", "--json", "--embedder", "none", "--workspace", str(workspace),
                    "who serviced the boiler")  # fmt: skip
    top = json.loads(found.stdout)["results"][0]
    assert top["path"] == "memory/2026-02-09.md" and top["startLine"] <= 5 <= top["endLine"]


def test_existing_day_is_only_appended_to(workspace: Path) -> None:
    note = workspace / "memory/2026-02-08.md"
    before = note.read_text(encoding="utf-8")
    r = run_cli("remember", "--workspace", str(workspace), "--now", "2026-02-08T18:00",
                "Ramen place: cash only.")  # fmt: skip
    assert r.returncode == 0 and r.stdout.startswith("remembered in memory/2026-02-08.md:")
    after = note.read_text(encoding="utf-8")
    assert after.startswith(before) and after.endswith("- Ramen place: cash only.\n")


def test_two_writers_at_once_both_land(workspace: Path) -> None:
    procs = [
        subprocess.Popen(
            [
                *CLI,
                "remember",
                "--workspace",
                str(workspace),
                "--now",
                NOW,
                "--section",
                "Log",
                f"writer {n} was here",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )  # fmt: skip
        for n in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    text = (workspace / "memory/2026-02-09.md").read_text(encoding="utf-8")
    assert text.count("## Log") == 1
    assert sorted(line for line in text.splitlines() if line.startswith("- ")) == [
        f"- writer {n} was here" for n in range(4)
    ]


def test_read_only_workspace_is_one_line_exit_2(workspace: Path) -> None:
    mem = workspace / "memory"
    mem.chmod(0o555)
    try:
        r = remember(workspace, "x")
    finally:
        mem.chmod(0o755)
    assert r.returncode == 2 and "read-only" in r.stderr and r.stderr.count("\n") == 1
    assert not (mem / "2026-02-09.md").exists()


def test_outside_the_memory_is_refused(workspace: Path) -> None:
    for target in ("../escape.md", "notes.md", "memory/../../escape.md"):
        r = remember(workspace, "x", "--file", target, "--json")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "refused" in r.stderr
        assert json.loads(r.stdout)["disabled"] is True
    assert not (workspace.parent / "escape.md").exists() and not (workspace / "notes.md").exists()
