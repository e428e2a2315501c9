from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from langchain_enhanced_memory.core.chunking import Chunk, chunk_lines, line_texts
from langchain_enhanced_memory.core.original import OriginalChunker
from langchain_enhanced_memory.core.settings_groups import ChunkerSettings
from tests.growth import assert_grows_linearly

DEFAULT = ChunkerSettings()
SMALL = ChunkerSettings(max_chunk_chars=200)


def spans(chunks: list[Chunk]) -> list[tuple[int, int, str]]:
    return [(c.start_line, c.end_line, c.header) for c in chunks]


def chunk(text: str, *, original: bool = False, **overrides: int) -> list[Chunk]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    settings = ChunkerSettings(**overrides)
    if original:
        return OriginalChunker(settings)(lines, "f.md")
    return chunk_lines(lines, default_header="f.md", settings=settings)


def check_coverage(lines: list[str], chunks: list[Chunk]) -> None:
    """The default mode's invariant: non-blank lines covered once, in order."""
    covered: list[int] = []
    prev_end = 0
    for c in chunks:
        assert prev_end < c.start_line <= c.end_line <= len(lines)
        assert lines[c.start_line - 1].strip(), c
        assert lines[c.end_line - 1].strip(), c
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert c.headers and c.headers[-1] == c.header
        covered.extend(range(c.start_line, c.end_line + 1))
        prev_end = c.end_line
    nonblank = [i + 1 for i, line in enumerate(lines) if line.strip()]
    assert [i for i in covered if lines[i - 1].strip()] == nonblank


# --------------------------------------------------------------------------- default mode


def test_empty_and_blank() -> None:
    assert chunk_lines([], default_header="f.md", settings=DEFAULT) == []
    assert chunk_lines(["", "  ", "\t"], default_header="f.md", settings=DEFAULT) == []
    assert OriginalChunker(DEFAULT)([], "f.md") == []


def test_preamble_and_exact_text() -> None:
    text = "\nIntro text that is long enough.\n\n# A\nbody of section A is here.\n\n"
    chunks = chunk(text)
    assert chunks == [
        Chunk(2, 2, "f.md", ("f.md",), "Intro text that is long enough."),
        Chunk(4, 5, "A", ("A",), "# A\nbody of section A is here."),
    ]


def test_nested_header_chain() -> None:
    text = (
        "# Project Alpha\n"
        "Alpha overview paragraph text.\n"
        "## Decisions\n"
        "We chose postgres over mysql.\n"
        "### Why\n"
        "Because of JSONB support and more.\n"
        "## Risks\n"
        "Vendor lock-in risk is moderate.\n"
        "# Project Beta\n"
        "Beta overview paragraph text.\n"
        "##### Level five is not a header\n"
        "#hashtag is not a header either\n"
    )
    chunks = chunk(text)
    assert [(c.start_line, c.end_line, c.headers) for c in chunks] == [
        (1, 2, ("Project Alpha",)),
        (3, 4, ("Project Alpha", "Decisions")),
        (5, 6, ("Project Alpha", "Decisions", "Why")),
        (7, 8, ("Project Alpha", "Risks")),
        (9, 12, ("Project Beta",)),
    ]
    assert [c.header for c in chunks] == [
        "Project Alpha",
        "Decisions",
        "Why",
        "Risks",
        "Project Beta",
    ]


def test_header_syntax_details() -> None:
    text = (
        "   ## Indented three spaces ##\n"
        "body text long enough for a chunk.\n"
        "    # four spaces is code, not a header\n"
        "#\tTabbed header\n"
        "body text long enough for a chunk.\n"
        "# \n"
        "an empty header is text, no boundary here.\n"
        "## C# tips\n"
        "body text long enough for a chunk.\n"
    )
    assert spans(chunk(text)) == [
        (1, 3, "Indented three spaces"),
        (4, 7, "Tabbed header"),
        (8, 9, "C# tips"),
    ]


def test_max_header_level_setting() -> None:
    text = "# One\nbody text long enough here.\n### Three\nbody text long enough here.\n"
    assert spans(chunk(text, max_header_level=2)) == [(1, 4, "One")]
    assert spans(chunk(text, max_header_level=3)) == [(1, 2, "One"), (3, 4, "Three")]


def test_code_fences_hide_headers() -> None:
    text = (
        "# Setup\n"  # 1
        "Install steps below, run this:\n"  # 2
        "```bash\n"  # 3
        "# not a header\n"  # 4
        "pip install x\n"  # 5
        "```\n"  # 6
        "~~~~\n"  # 7
        "## also not\n"  # 8
        "~~~\n"  # 9  too short to close a ~~~~ fence
        "~~~~~\n"  # 10 closes it
        "## Real\n"  # 11
        "Real section content here.\n"  # 12
    )
    assert spans(chunk(text)) == [(1, 10, "Setup"), (11, 12, "Real")]
    # The original has no fence awareness.
    assert spans(chunk(text, original=True)) == [
        (1, 3, "Setup"),
        (4, 7, "not a header"),
        (8, 10, "also not"),
        (11, 12, "Real"),
    ]


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "# A\nsome text before the fence\n```\n# B\nstill code inside the fence\n"
    assert spans(chunk(text)) == [(1, 5, "A")]


def test_backtick_info_with_backtick_is_not_a_fence() -> None:
    text = "# A\nsome text before the fence\n``` a`b\n# B\nthis is a real section body\n"
    assert spans(chunk(text)) == [(1, 3, "A"), (4, 5, "B")]


def test_front_matter() -> None:
    text = (
        "---\n"
        "title: Notes\n"
        "# comment in yaml\n"
        "---\n"
        "# Real Header\n"
        "Body text for the real header section.\n"
    )
    assert spans(chunk(text)) == [(1, 4, "f.md"), (5, 6, "Real Header")]
    assert spans(chunk(text, original=True)) == [(3, 4, "comment in yaml"), (5, 6, "Real Header")]
    dots = text.replace("---\n# Real", "...\n# Real")
    assert spans(chunk(dots)) == [(1, 4, "f.md"), (5, 6, "Real Header")]


def test_unclosed_front_matter_is_not_front_matter() -> None:
    text = "---\n# Header\nBody text for the header section here.\n"
    assert spans(chunk(text)) == [(1, 3, "Header")]


def test_tiny_front_matter_merges_forward() -> None:
    text = "---\na: 1\n---\n# Header\nBody text for the header section here.\n"
    assert spans(chunk(text)) == [(1, 5, "Header")]


def test_header_only_sections_fold_forward() -> None:
    text = (
        "# 2023-05-08 (Monday)\n"  # 1
        "\n"  # 2
        "## Chat with Alice\n"  # 3
        "\n"  # 4
        "### Notes\n"  # 5
        "Alice prefers morning meetings on Tuesdays.\n"  # 6
        "## Chat with Bob\n"  # 7
        "Bob wants the report by Friday afternoon.\n"  # 8
        "\n"  # 9
        "# Trailing header\n"  # 10
        "\n"  # 11
    )
    chunks = chunk(text)
    assert [(c.start_line, c.end_line, c.header, c.headers) for c in chunks] == [
        (1, 6, "Notes", ("2023-05-08 (Monday)", "Chat with Alice", "Notes")),
        (7, 10, "Chat with Bob", ("2023-05-08 (Monday)", "Chat with Bob")),
    ]
    assert chunks[0].text.startswith("# 2023-05-08 (Monday)\n\n## Chat with Alice")


def test_only_headers_make_one_chunk() -> None:
    chunks = chunk("# A long enough title\n\n## Another header line\n")
    assert [(c.start_line, c.end_line, c.headers) for c in chunks] == [
        (1, 3, ("A long enough title", "Another header line"))
    ]


def test_tiny_sections_merge() -> None:
    text = (
        "# Groceries list\n"
        "Milk, eggs, bread and coffee beans.\n"
        "## Misc\n"
        "ok\n"
        "# Next\n"
        "Another reasonably long section body.\n"
    )
    assert spans(chunk(text)) == [(1, 4, "Groceries list"), (5, 6, "Next")]
    # A tiny first section merges into the next one.
    text = "# A\nhi\n\n# Long section\nThis section has enough text.\n"
    assert spans(chunk(text)) == [(1, 5, "Long section")]
    # A tiny preamble too.
    assert spans(chunk("x\n# Big\nbody of the big section here.\n")) == [(1, 3, "Big")]
    # A file with only tiny text keeps it.
    assert spans(chunk("hi\n")) == [(1, 1, "f.md")]
    assert spans(chunk("# A\nb\n# C\nd\n")) == [(1, 4, "C")]
    # min_chunk_chars=0 keeps every section.
    assert spans(chunk("# A\nb\n# C\nd\n", min_chunk_chars=0)) == [(1, 2, "A"), (3, 4, "C")]


def test_split_prefers_blank_lines() -> None:
    row = "a" * 49
    lines = ["# S", row, row, row, "", row, row, row, row, "", row, row]
    chunks = chunk_lines(
        lines, default_header="f.md", settings=ChunkerSettings(max_chunk_chars=200)
    )
    assert spans(chunks) == [(1, 4, "S"), (6, 9, "S"), (11, 12, "S")]
    assert all(c.headers == ("S",) for c in chunks)
    assert all(len(c.text) <= 200 for c in chunks)
    check_coverage(lines, chunks)


def test_split_at_line_ends_without_blank_lines() -> None:
    lines = ["# S"] + ["b" * 49] * 10
    chunks = chunk_lines(
        lines, default_header="f.md", settings=ChunkerSettings(max_chunk_chars=200)
    )
    assert spans(chunks) == [(1, 4, "S"), (5, 8, "S"), (9, 11, "S")]
    assert all(len(c.text) <= 200 for c in chunks)


def test_split_keeps_long_line_whole() -> None:
    lines = ["# S", "x" * 500, "y" * 30]
    chunks = chunk_lines(
        lines, default_header="f.md", settings=ChunkerSettings(max_chunk_chars=200)
    )
    # The header never stands alone; the long line is not cut.
    assert spans(chunks) == [(1, 2, "S"), (3, 3, "S")]


def test_split_avoids_cutting_fences() -> None:
    lines = ["# S", "i" * 59, "```", *(["c" * 29] * 5), "```", "z" * 59]
    chunks = chunk_lines(
        lines, default_header="f.md", settings=ChunkerSettings(max_chunk_chars=200)
    )
    assert spans(chunks) == [(1, 2, "S"), (3, 9, "S"), (10, 10, "S")]


def test_split_cuts_fence_bigger_than_cap() -> None:
    lines = ["# S", "```", *(["c" * 49] * 10), "```"]
    chunks = chunk_lines(
        lines, default_header="f.md", settings=ChunkerSettings(max_chunk_chars=200)
    )
    assert spans(chunks) == [(1, 5, "S"), (6, 9, "S"), (10, 13, "S")]


def test_split_pieces_follow_header_only_prefix() -> None:
    lines = ["# Day", "", "## Notes", *(["n" * 49] * 6)]
    chunks = chunk_lines(
        lines, default_header="f.md", settings=ChunkerSettings(max_chunk_chars=200)
    )
    assert chunks[0].start_line == 1
    assert all(c.headers == ("Day", "Notes") for c in chunks)
    check_coverage(lines, chunks)


def _log(n: int) -> list[str]:
    return ["# Log"] + [f"- entry {i}: did something useful today" for i in range(n)]


def test_a_run_of_bullets_is_cut_between_bullets_at_the_list_cap() -> None:
    bullets = []
    for i in range(400):
        bullets += [f"- fact {i}: the amber project ships on day {i}", f"  because of reason {i}"]
    lines = ["# 2026-12-07", "", "## Facts", "", *bullets]
    chunks = chunk_lines(lines, default_header="f.md", settings=DEFAULT)
    check_coverage(lines, chunks)
    assert len(chunks) > 10
    for c in chunks:
        assert len(c.text) <= DEFAULT.max_list_chars
        assert c.headers == ("2026-12-07", "Facts")
        body = [line for line in c.text.split("\n") if line.strip() and line[0] != "#"]
        assert body[0].startswith("- fact")  # a whole bullet first, its continuation kept
        assert c.end_line == len(lines) or lines[c.end_line].startswith("- fact")
    # Without the list cap, only max_chunk_chars cuts it: chunks of dozens of facts.
    uncapped = chunk(("\n".join(lines)), max_list_chars=0)
    assert max(len(c.text) for c in uncapped) > 3000


def test_list_cap_keeps_a_long_item_whole_and_leaves_prose_alone() -> None:
    long_item = "- " + "word " * 60  # over a cap of 200 by itself
    prose = ["A paragraph line of ordinary prose that is not a list item."] * 8
    lines = ["## S", long_item, "- a shorter item, one", "- a shorter item, two", "", *prose]
    chunks = chunk("\n".join(lines), max_list_chars=200, max_chunk_chars=4000)
    # The long item alone; then items while they fit; the last item keeps the prose after it.
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (3, 3), (4, 13)]
    assert chunk("\n".join(prose), max_list_chars=200)[0].end_line == 8  # no items: one chunk


def test_twenty_thousand_line_section() -> None:
    lines = _log(20_000)
    chunks = chunk_lines(lines, default_header="f.md", settings=DEFAULT)
    check_coverage(lines, chunks)
    assert len(chunks) > 100
    assert all(len(c.text) <= DEFAULT.max_chunk_chars for c in chunks)
    assert all(c.header == "Log" for c in chunks)


def test_long_section_time_grows_linearly() -> None:
    run = lambda lines: chunk_lines(lines, default_header="f.md", settings=DEFAULT)  # noqa: E731
    assert_grows_linearly(_log, run, 2_500)


def test_big_file() -> None:
    # ~5 MB of mixed markdown, and its time grows in proportion to its size.
    block = [
        "# Day",
        "",
        "## Meeting",
        "Talked about the roadmap and the budget for next quarter.",
        "```python",
        "# comment in code",
        "print('hi')",
        "```",
        "",
        "### Tiny",
        "ok",
    ]
    lines = block * 12_000
    check_coverage(lines, chunk_lines(lines, default_header="f.md", settings=DEFAULT))
    run = lambda lines: chunk_lines(lines, default_header="f.md", settings=DEFAULT)  # noqa: E731
    assert_grows_linearly(lambda n: block * n, run, 1_500)


def test_odd_whitespace_lines_are_blank() -> None:
    lines = ["# Head", "\u2028", "body text long enough to stay", "\x0b", ""]
    chunks = chunk_lines(lines, default_header="f.md", settings=DEFAULT)
    assert spans(chunks) == [(1, 3, "Head")]


# --------------------------------------------------------------------------- original mode


def test_original_mode() -> None:
    text = (
        "\n"  # 1
        "Preamble text that is long enough.\n"  # 2
        "\n"  # 3
        "# Header One\n"  # 4
        "Body of the first section here.\n"  # 5
        "\n"  # 6
        "## Short\n"  # 7
        "\n"  # 8
        "##### Five hashes are not a header\n"  # 9  (level 5: text of "Short")
        "### Header-only but long enough text\n"  # 10 kept: > 20 characters
        "#tag no space\n"  # 11
    )
    chunks = chunk(text, original=True)
    assert [(c.start_line, c.end_line, c.header, c.headers) for c in chunks] == [
        (2, 2, "f.md", ("f.md",)),
        (4, 5, "Header One", ("Header One",)),
        (7, 9, "Short", ("Short",)),
        (10, 11, "Header-only but long enough text", ("Header-only but long enough text",)),
    ]
    for c in chunks:
        lines = text.split("\n")
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])


def test_original_mode_drops_short_chunks_and_has_no_cap() -> None:
    text = "# A\nshort\n# B\n" + "long line of text\n" * 1000
    chunks = chunk(text, original=True, max_chunk_chars=200)
    assert spans(chunks) == [(3, 1003, "B")]
    text = "# A\n" + "x" * 17 + "\n"  # 21 characters: kept
    assert spans(chunk(text, original=True)) == [(1, 2, "A")]
    text = "# A\n" + "x" * 16 + "\n"  # 20 characters: dropped
    assert chunk(text, original=True) == []


def test_original_mode_header_level_setting() -> None:
    text = "# One\nbody text long enough here.\n### Three\nbody text long enough here.\n"
    assert spans(chunk(text, original=True, max_header_level=2)) == [(1, 4, "One")]


# --------------------------------------------------------------------------- properties

LINE_POOL = [
    "",
    "",
    " ",
    "\t",
    "# H1",
    "## H2",
    "### H3",
    "#### H4",
    "##### H5",
    "#",
    "# ",
    "#tag",
    "   # three",
    "    # four",
    "```",
    "```py",
    "````",
    "~~~",
    "~~~~",
    "  ```",
    "---",
    "...",
    "x",
    "short line",
    "a medium line of ordinary text for the body",
    "z" * 150,
    "中文的笔记内容",
    "\u2028",
    "a\rb",
]
line_st = st.one_of(
    st.sampled_from(LINE_POOL),
    st.text(alphabet=st.sampled_from("# `~-. ab\t中"), max_size=12),
)


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(line_st, max_size=80),
    max_chars=st.integers(200, 400),
    min_chars=st.integers(0, 40),
    level=st.integers(1, 6),
)
def test_default_mode_coverage_invariant(
    lines: list[str], max_chars: int, min_chars: int, level: int
) -> None:
    settings = ChunkerSettings(
        max_chunk_chars=max_chars, min_chunk_chars=min_chars, max_header_level=level
    )
    chunks = chunk_lines(lines, default_header="f.md", settings=settings)
    check_coverage(lines, chunks)


@hsettings(max_examples=200, deadline=None)
@given(lines=st.lists(line_st, max_size=60), min_chars=st.integers(0, 40))
def test_original_mode_properties(lines: list[str], min_chars: int) -> None:
    chunks = OriginalChunker(ChunkerSettings(min_chunk_chars=min_chars))(lines, "f.md")
    prev_end = 0
    for c in chunks:
        assert prev_end < c.start_line <= c.end_line
        assert lines[c.start_line - 1].strip() and lines[c.end_line - 1].strip()
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert len(c.text.strip()) > min_chars
        assert c.headers == (c.header,)
        prev_end = c.end_line


@pytest.mark.parametrize("original", [False, True])
def test_chunks_are_frozen(original: bool) -> None:
    c = chunk("# A\nbody text long enough here.\n", original=original)[0]
    with pytest.raises(AttributeError):
        c.start_line = 3  # type: ignore[misc]


def test_line_texts_are_the_word_lines_of_a_chunk() -> None:
    text = "### Notes\n\n- Maria volunteers at a shelter.\n  ---\n- John does kickboxing.  \n"
    assert line_texts(text, 2000) == ["- Maria volunteers at a shelter.", "- John does kickboxing."]


def test_line_texts_skip_a_chunk_of_one_line_and_cut_long_lines() -> None:
    # One line: the chunk's own vector already is that line's.
    assert line_texts("## Lunch\n\nTried the new ramen place.", 2000) == []
    assert line_texts("", 2000) == []
    assert line_texts("a" * 50 + "\nshort line", 10) == ["a" * 10, "short line"]
