"""Property tests: chunk spans, the date parser and the CLI's JSON output."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from datetime import datetime
from pathlib import Path

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import langchain_enhanced_memory
from langchain_enhanced_memory.cli import main
from langchain_enhanced_memory.core.chunking import chunk_lines
from langchain_enhanced_memory.core.dates import parse_dates
from langchain_enhanced_memory.core.original import parse_dates_original
from langchain_enhanced_memory.core.settings_groups import ChunkerSettings

SCHEMA = json.loads(
    (
        Path(langchain_enhanced_memory.__file__).parent
        / "openclaw"
        / "schema"
        / "memory_search.schema.json"
    ).read_text()
)

# Lines that exercise headers, fences, front matter, blanks and odd whitespace.
LINE = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "\t",
            "---",
            "```",
            "~~~",
            "```py",
            "# H",
            "## Sub",
            "#### Deep",
            "##### Five",
            "# ",
            "#nospace",
            "   # indented",
            "text",
            "- item",
            "- an item of a list with a few more words",
            "  its continuation line",
            "1. numbered",
            "> quote",
            "## Closed ##",
            "\u3000",
            "\x0b",
            "中文 行",
        ]
    ),
    st.text(max_size=60).map(lambda s: s.replace("\n", " ").replace("\r", " ")),
    # Lines never hold a line break (read_lines splits on them), headers included.
    st.builds(
        lambda n, t: "#" * n + " " + t.replace("\n", " ").replace("\r", " "),
        st.integers(1, 6),
        st.text(max_size=20),
    ),
)
SETTINGS = st.builds(
    ChunkerSettings,
    min_chunk_chars=st.integers(0, 60),
    max_chunk_chars=st.integers(200, 400),
    max_header_level=st.integers(1, 6),
    max_list_chars=st.sampled_from([0, 30, 120, 1000]),
)


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(LINE, max_size=80), cfg=SETTINGS)
def test_chunks_cover_every_nonblank_line_once_in_order(lines: list[str], cfg) -> None:
    chunks = chunk_lines(lines, default_header="file.md", settings=cfg)
    covered: list[int] = []
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert lines[c.start_line - 1].strip() and lines[c.end_line - 1].strip()
        covered += [n for n in range(c.start_line, c.end_line + 1) if lines[n - 1].strip()]
    nonblank = [n for n, line in enumerate(lines, 1) if line.strip()]
    assert covered == nonblank  # each exactly once, in order
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts) and all(
        a.end_line < b.start_line for a, b in zip(chunks, chunks[1:], strict=False)
    )


@settings(max_examples=600, deadline=None)
@given(
    query=st.one_of(
        st.text(max_size=80),
        st.lists(
            st.sampled_from(
                [
                    "last",
                    "next",
                    "Monday",
                    "week",
                    "ago",
                    "3",
                    "days",
                    "Feb",
                    "29",
                    "2/30",
                    "上周",
                    "一",
                    "去年",
                    "10月",
                    "2日",
                    "yesterday",
                    "in",
                    "May",
                    "of",
                    "2023",
                    "9999",
                    "0",
                    "-",
                    "/",
                    "十二月",
                    "前天",
                    "weekend",
                    "the",
                    "before",
                ]
            ),
            max_size=8,
        ).map(" ".join),
    ),
    now=st.datetimes(min_value=datetime(1, 1, 8), max_value=datetime(9999, 12, 24)),
    original=st.booleans(),
)
def test_date_parser_never_raises(query: str, now: datetime, original: bool) -> None:
    dq = (parse_dates_original if original else parse_dates)(query, now)
    for lo, hi in dq.spans:
        assert 0 <= lo < hi <= len(query)
    for a, b in dq.ranges:
        assert a <= b


def _run_json(argv: list[str]) -> tuple[int, dict]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(argv)
    return rc, json.loads(buf.getvalue().splitlines()[0])


def _asks_for_help(arg: str) -> bool:
    """Whether argparse reads ``arg`` as ``-h``/``--help``: help is printed, not a search run."""
    return " " not in arg and (arg.startswith("-h") or arg.startswith("--h"))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.text(min_size=1, max_size=40).filter(
        lambda q: "\x00" not in q and not _asks_for_help(q)
    ),
    k=st.integers(-3, 50),
    now=st.one_of(st.none(), st.text(max_size=12), st.dates().map(str)),
)
def test_cli_json_output_always_validates(workspace: Path, query: str, k: int, now) -> None:
    argv = ["search", query, "--workspace", str(workspace), "--json", "--embedder", "none"]
    argv += ["--k", str(k)] + (["--now", now] if now is not None else [])
    rc, out = _run_json(argv)
    jsonschema.validate(out, SCHEMA)
    assert rc in (0, 2) and (rc == 0) == ("error" not in out)
