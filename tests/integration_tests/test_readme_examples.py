"""The README's examples run: a renamed argument or flag breaks a test, not a user.

Every fenced ```python block runs as a script and every ```bash block runs line
by line as ``enhanced-memory`` processes (``tests.cli_run``), both in a fresh
copy of ``examples/workspace`` (the README's paths are relative to the
repository root), offline. A ```json block must parse. A block that cannot
run here (an install, a benchmark on data not in the repository) carries a
``<!-- skip-example: why -->`` line right above it; ```console and other
languages are never run.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_run import cli_env, run_cli
from tests.workspaces import copy_workspace

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SKIP = re.compile(r"<!--\s*skip-example:\s*(\S.*?)\s*-->")
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of the README."""

    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    skip: str | None  # the reason given by a skip-example marker

    @property
    def id(self) -> str:
        return f"README.md:{self.line}:{self.lang}"


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a markdown text, with the skip marker above each."""
    lines = text.splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = SKIP.search(above)
        out.append(
            Block(i + 1, opening[1], "\n".join(lines[i + 1 : end]), marker[1] if marker else None)
        )
        i = end + 1
    return out


def commands(script: str) -> list[list[str]]:
    """A bash block's command lines (continuations joined, comments dropped)."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [argv for line in joined.splitlines() if (argv := shlex.split(line, comments=True))]


README_BLOCKS = blocks(README.read_text(encoding="utf-8"))
RUN = [b for b in README_BLOCKS if b.skip is None and b.lang in ("python", "bash", "json")]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder laid out like the repository root, holding a fresh copy of the demo workspace."""
    copy_workspace(ROOT / "examples" / "workspace", tmp_path / "examples" / "workspace")
    return tmp_path


def test_the_readme_has_examples_that_run() -> None:
    langs = [b.lang for b in RUN]
    assert langs.count("python") >= 3 and langs.count("bash") >= 2 and "json" in langs
    for b in README_BLOCKS:  # a block the suite does not run says why, or is not code to run
        assert b.skip is not None or b.lang in ("python", "bash", "json", "console", "text"), b.id


def test_blocks_and_markers_are_read() -> None:
    text = "a\n\n<!-- skip-example: needs a model -->\n```bash\nx \\\n  --y 1  # note\n```\n"
    text += "```python\nprint(1)\n```\n"
    found = blocks(text)
    assert [(b.line, b.lang, b.skip) for b in found] == [
        (4, "bash", "needs a model"),
        (8, "python", None),
    ]
    assert commands(found[0].text) == [["x", "--y", "1"]]


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_readme_example_runs(block: Block, repo: Path, request: pytest.FixtureRequest) -> None:
    env = {"XDG_CACHE_HOME": str(repo / "cache"), "ENHANCED_MEMORY_LOG": "0"}
    if "scope" in block.text:  # shared memory: a fresh database, as `make postgres` gives
        env["ENHANCED_MEMORY_DATABASE_URL"] = request.getfixturevalue("database_url")
    if block.lang == "json":
        json.loads(block.text)
    elif block.lang == "python":
        # `auto` finds no Ollama here (its URL points at a closed port) and uses what is installed.
        r = subprocess.run(
            [sys.executable, "-c", block.text],
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=repo,
            env=cli_env(OLLAMA_URL="http://127.0.0.1:9", **env),
            timeout=240,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.strip(), "a README example should show its result"
    else:
        for argv in commands(block.text):
            assert argv[0] == "enhanced-memory", f"{block.id}: mark {argv[0]!r} skip-example"
            r = run_cli(*argv[1:], cwd=repo, ENHANCED_MEMORY_EMBEDDER="none", **env)
            assert r.returncode == 0, f"{shlex.join(argv)}: {r.stderr[-2000:]}"
