"""Real ``search --json`` output validated against the packaged memory_search JSON Schema."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli_run import run_cli
from tests.fake_ollama import FakeOllama, unused_port
from tests.workspaces import write_workspace

SCHEMA = json.loads(
    resources.files("langchain_enhanced_memory")
    .joinpath("openclaw/schema/memory_search.schema.json")
    .read_text(encoding="utf-8")
)
jsonschema.Draft202012Validator.check_schema(SCHEMA)


def validate(doc: Any, shape: str | None = None) -> None:
    """Validate against the whole schema, and against one named shape when given."""
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    if shape:
        sub = {"$defs": SCHEMA["$defs"], "$ref": f"#/$defs/{shape}"}
        jsonschema.validate(doc, sub, cls=jsonschema.Draft202012Validator)


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, **(env or {}))


def check_rows(ws: Path, doc: dict) -> None:
    for row in doc["results"]:
        assert row["startLine"] <= row["endLine"]
        lines = (ws / row["path"]).read_text(encoding="utf-8").split("\n")
        span = "\n".join(lines[row["startLine"] - 1 : row["endLine"]])
        assert span.startswith(row["snippet"])


def test_keyword_only_output_is_valid(workspace: Path) -> None:
    r = cli("search", "--json", "--embedder", "none", "--workspace", str(workspace), "Postgres")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "success")
    assert doc["results"] and doc["provider"] == "none"
    check_rows(workspace, doc)


def test_ollama_output_is_valid(workspace: Path, fake_ollama: FakeOllama) -> None:
    r = cli(
        "search", "--json", "--embedder", "ollama", "--ollama-url", fake_ollama.url,
        "--workspace", str(workspace), "ramen lunch",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "success")
    assert (doc["provider"], doc["model"], doc["fallback"]) == ("ollama", "nomic-embed-text", None)
    check_rows(workspace, doc)


def test_unreachable_ollama_falls_back_with_valid_output(workspace: Path) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    r = cli(
        "search", "--json", "--embedder", "ollama", "--ollama-url", url,
        "--workspace", str(workspace), "Postgres",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "success")
    assert doc["fallback"] == "keyword-only" and doc["results"]


def test_failure_output_is_valid_and_exit_is_nonzero(tmp_path: Path) -> None:
    r = cli("search", "--json", "--workspace", str(tmp_path / "missing"), "anything")
    assert r.returncode != 0
    doc = json.loads(r.stdout)
    validate(doc, "failure")
    assert "workspace not found" in doc["error"]
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_batch_lines_are_valid(workspace: Path, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        "\n".join(
            json.dumps(q)
            for q in (
                {"id": "a", "query": "ramen place"},
                {"id": 2, "query": "what did we review yesterday?", "now": "2026-02-08T09:00"},
                {"id": "c", "query": "zzz nothing matches qqq"},
            )
        ),
        encoding="utf-8",
    )
    r = cli("search", "--json", "--embedder", "none", "--workspace", str(workspace),
            "--batch", str(batch))  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [d["id"] for d in lines] == ["a", 2, "c"]
    for doc in lines:
        validate(doc, "batchLine")
        check_rows(workspace, doc)
    assert lines[1]["results"][0]["path"] == "memory/2026-02-07.md"


def test_cjk_snippet_is_cut_at_700_characters(tmp_path: Path) -> None:
    # 3-byte CJK plus 4-byte astral characters straddling the cut.
    body = ("星河项目的迁移计划" * 70) + "𠀀𠀁𠀂" * 200
    ws = write_workspace(tmp_path / "ws", {"memory/topics/星河.md": f"# 星河项目\n\n{body}\n"})
    r = cli("search", "--json", "--embedder", "none", "--workspace", str(ws), "星河项目 迁移")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "success")
    snippet = doc["results"][0]["snippet"]
    assert len(snippet) == 700
    snippet.encode("utf-8")  # no half character (a lone surrogate would raise)
    assert ("# 星河项目\n\n" + body).startswith(snippet)


def test_min_score_reports_how_many_it_removed(workspace: Path) -> None:
    args = ("search", "--json", "--embedder", "none", "--workspace", str(workspace), "--k", "10")
    full = json.loads(cli(*args, "Postgres migration").stdout)
    scores = sorted(r["score"] for r in full["results"])
    assert len(scores) >= 2
    cut = (scores[0] + scores[-1]) / 2
    r = cli(*args, "--min-score", str(cut), "Postgres migration")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "success")
    assert all(row["score"] >= cut for row in doc["results"])
    assert doc["filtered"] == len(full["results"]) - len(doc["results"]) > 0
    assert "filtered" not in full


@pytest.mark.parametrize(
    "doc",
    [
        {"results": [], "provider": "none", "model": None},  # no fallback key
        {"results": [], "provider": "none", "model": None, "fallback": None, "extra": 1},
        {"results": [], "disabled": True, "unavailable": True, "error": "a\nb", "action": ""},
        {"results": [{}], "disabled": True, "unavailable": True, "error": "x", "action": ""},
    ],
)
def test_schema_rejects_wrong_shapes(doc: dict) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)


@pytest.mark.parametrize(
    "change",
    [
        {"snippet": "x" * 701},
        {"path": "/etc/passwd"},
        {"path": "memory\\a.md"},
        {"path": "memory/../secret.md"},
        {"startLine": 0},
        {"source": "chats"},
        {"corpus": "chats"},
        {"unexpected": True},
    ],
)
def test_schema_rejects_wrong_rows(change: dict) -> None:
    row = {
        "path": "memory/a.md",
        "startLine": 1,
        "endLine": 2,
        "score": 0.5,
        "snippet": "x",
        "header": "h",
        "source": "memory",
        "corpus": "memory",
        "citation": "Source: memory/a.md#L1-L2",
        "textScore": 0.5,
    }
    top = {"provider": "none", "model": None, "fallback": None, "citations": "on"}
    top |= {"mode": "keyword", "debug": {"backend": "enhanced-memory",
            "effectiveMode": "keyword", "fallback": None}}  # fmt: skip
    validate({"results": [row], **top})
    with pytest.raises(jsonschema.ValidationError):
        validate({"results": [{**row, **change}], **top})


GET_SCHEMA = json.loads(
    resources.files("langchain_enhanced_memory")
    .joinpath("openclaw/schema/memory_get.schema.json")
    .read_text(encoding="utf-8")
)
jsonschema.Draft202012Validator.check_schema(GET_SCHEMA)


def validate_get(doc: Any, shape: str) -> None:
    jsonschema.validate(doc, GET_SCHEMA, cls=jsonschema.Draft202012Validator)
    sub = {"$defs": GET_SCHEMA["$defs"], "$ref": f"#/$defs/{shape}"}
    jsonschema.validate(doc, sub, cls=jsonschema.Draft202012Validator)


def test_current_openclaw_fields(workspace: Path, fake_ollama: FakeOllama) -> None:
    r = cli(
        "search", "--json", "--embedder", "ollama", "--ollama-url", fake_ollama.url,
        "--workspace", str(workspace), "--maxResults", "2", "billing Postgres",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "success")
    assert (doc["mode"], doc["citations"], doc["debug"]["effectiveMode"]) == (
        "hybrid", "on", "hybrid",
    )  # fmt: skip
    assert doc["debug"]["hits"] == len(doc["results"]) <= 2 and doc["debug"]["searchMs"] > 0
    row = doc["results"][0]
    assert row["citation"] == f"Source: {row['path']}#L{row['startLine']}-L{row['endLine']}"
    assert row["corpus"] == "memory" and -1 <= row["vectorScore"] <= 1 and row["textScore"] >= 0
    keyword = json.loads(
        cli(
            "search",
            "--json",
            "--embedder",
            "none",
            "--workspace",
            str(workspace),
            "billing Postgres",
        ).stdout  # fmt: skip
    )
    validate(keyword, "success")
    assert keyword["mode"] == "keyword" and "vectorScore" not in keyword["results"][0]


def test_get_json_is_memory_get(workspace: Path) -> None:
    base = ("get", "--json", "--workspace", str(workspace))
    r = cli(*base, "memory/2026-02-08.md", "--from", "3", "--lines", "2")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate_get(doc, "lines")
    assert (doc["from"], doc["lines"], doc["truncated"]) == (3, 2, False)
    assert doc["text"].startswith("## Decisions") and "nextFrom" not in doc
    missing = cli(*base, "memory/2020-01-01.md")
    assert missing.returncode == 0
    validate_get(json.loads(missing.stdout), "missing")
    refused = cli(*base, "../outside.md")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    validate_get(json.loads(refused.stdout), "failure")


def test_get_json_of_a_long_file_is_truncated_with_next_from(tmp_path: Path) -> None:
    body = "\n".join(f"line {i}" for i in range(1, 501))
    ws = write_workspace(tmp_path / "ws", {"memory/topics/long.md": f"# Long\n{body}\n"})
    r = cli("get", "--json", "--workspace", str(ws), "memory/topics/long.md")
    doc = json.loads(r.stdout)
    validate_get(doc, "lines")
    assert doc["truncated"] is True and doc["lines"] == 400 and doc["nextFrom"] == 401
    rest = json.loads(
        cli(
            "get",
            "--json",
            "--workspace",
            str(ws),
            "memory/topics/long.md",
            "--from",
            str(doc["nextFrom"]),
        ).stdout  # fmt: skip
    )
    validate_get(rest, "lines")
    assert rest["truncated"] is False and rest["text"].endswith("line 500")


def test_filter_flags(workspace: Path) -> None:
    args = ("search", "--json", "--embedder", "none", "--workspace", str(workspace))
    doc = json.loads(cli(*args, "--since", "2026-02-08", "Postgres").stdout)
    validate(doc, "success")
    assert {r["path"] for r in doc["results"]} == {"memory/2026-02-08.md"}
    doc = json.loads(cli(*args, "--kind", "core", "--kind", "topic", "Alice latency").stdout)
    assert doc["results"] and {r["path"] for r in doc["results"]} <= {
        "MEMORY.md", "memory/topics/project-alpha.md",
    }  # fmt: skip
    doc = json.loads(cli(*args, "--path", "memory/topics", "latency").stdout)
    assert [r["path"] for r in doc["results"]] == ["memory/topics/project-alpha.md"]
    # date words in the filter and in the query, against --now
    doc = json.loads(
        cli(
            *args,
            "--now",
            "2026-02-09T09:00",
            "--since",
            "last week",
            "--until",
            "yesterday",
            "what did we decide last weekend?",
        ).stdout  # fmt: skip
    )
    validate(doc, "success")
    assert {r["path"] for r in doc["results"]} <= {"memory/2026-02-07.md", "memory/2026-02-08.md"}
    assert doc["results"][0]["path"] in ("memory/2026-02-07.md", "memory/2026-02-08.md")
    empty = cli(*args[:-2], "--workspace", str(workspace), "--until", "2001-01-01", "Postgres")
    assert empty.returncode == 0
    assert "no memory chunk matches the filter" in json.loads(empty.stdout)["warning"]
    text = cli("search", "--embedder", "none", "--workspace", str(workspace),
               "--until", "2001-01-01", "Postgres")  # fmt: skip
    assert text.returncode == 0 and "no memory chunk matches the filter" in text.stdout


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (("--since", "whenever"), "--since"),
        (("--kind", "journal"), "--kind"),
        (("--path", "../up"), "--path"),
        (("--since", "2026-03-01", "--until", "2026-01-01"), "is after until"),
    ],
)
def test_malformed_filter_flags_exit_2(workspace: Path, flags: tuple, fragment: str) -> None:
    r = cli("search", "--json", "--embedder", "none", "--workspace", str(workspace), *flags, "x")
    assert r.returncode == 2
    assert fragment in r.stderr and len(r.stderr.strip().splitlines()) == 1
    validate(json.loads(r.stdout), "failure")
