"""Run every fault-injection and bad-input test (slow ones too); print docs/reliability.md's table.

    python benchmarks/reliability.py            # or: make reliability

Runs pytest on tests/reliability (SIGKILL campaign, concurrency, two writers,
``remember`` beside a plain appender and killed, publishes and appends to PostgreSQL
killed, or the server under them, a fuzzed transcript; the server stopped under the
tools, the retriever and ``serve``), the embedder-fault, hostile-file, hostile-query,
lone-surrogate and fuzz tests, with the slow marker on, then prints a markdown table of
what was tried and what held. Exits non-zero when anything failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = [
    "tests/reliability",
    "tests/integration_tests/test_embedder_faults.py",
    "tests/integration_tests/test_hostile_files.py",
    "tests/integration_tests/test_hostile_queries.py",
    "tests/integration_tests/test_lone_surrogates.py",
    "tests/unit_tests/test_fuzz.py",
    "tests/integration_tests/test_database_faults.py",
    "tests/integration_tests/test_database_serve_faults.py",
    "tests/integration_tests/test_database_outage.py",
]


def run_tests(stats: Path, junit: Path) -> int:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slow or not slow"]
    cmd += [f"--junitxml={junit}", *TARGETS]
    env = {**os.environ, "RELIABILITY_STATS": str(stats)}
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


def outcomes(junit: Path) -> dict[str, list[bool]]:
    """Test function name -> pass/fail of each of its cases."""
    out: dict[str, list[bool]] = defaultdict(list)
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "").split("[", 1)[0]
        bad = any(child.tag in ("failure", "error", "skipped") for child in case)
        out[name].append(not bad)
    return out


def tally(res: dict[str, list[bool]], *names: str) -> tuple[int, int]:
    cases = [ok for n in names for ok in res.get(n, [])]
    return len(cases), sum(cases)


def table(res: dict[str, list[bool]], stats: Path) -> str:
    def load(name: str) -> dict:
        p = stats / f"{name}.json"
        return json.loads(p.read_text()) if p.exists() else {}

    kills, conc, ser = load("kills"), load("concurrency"), load("serialize")
    vkills, writers, rkills = load("vector_kills"), load("writers"), load("remember_kills")
    rows = []
    if kills:
        ph = kills["phases"]
        rows.append(
            (
                f"SIGKILL during `index` ({kills['chunks']} chunks, slow embedder;"
                f" {ph['before the sync commit']} before the sync commit,"
                f" {ph['while embedding']} while embedding): search answers from the old or"
                " new state, no set-aside index, integrity ok",
                kills["kills"],
                kills["survived"] if not kills["problems"] else 0,
            )
        )
        rows.append(("`index` after the kills completes, every chunk has a vector", 1,
                     int(kills["final_ok"])))  # fmt: skip
    if vkills:
        ph = vkills["phases"]
        rows.append(
            (
                f"SIGKILL around the vector side files ({ph['new vectors spooled']} with new"
                f" vectors committed to the spool, {ph['writing the vector file']} while a file"
                " was written): named files and the spool whole,"
                " postings and vector segments named whole, a search answers (hybrid after"
                " the next run); only named segment files left after it",
                vkills["kills"],
                vkills["survived"] if not vkills["problems"] else 0,
            )
        )
    if writers:
        lines = writers["remembered"] + writers["appended"]
        rows.append(
            (
                f"`remember` from {writers['remembered'] // writers['rounds']} processes at once"
                " while another process appends lines with plain `write`s and no lock"
                f" ({writers['rounds']} rounds, {writers['remembered']} remembered and"
                f" {writers['appended']} appended lines): every line of both in the note exactly"
                " once, no temporary file left",
                lines,
                lines - writers["lost"] - writers["doubled"] if not writers["problems"] else 0,
            )
        )
    if rkills:
        rows.append(
            (
                "SIGKILL during `remember` (half appending, half rewriting an earlier section;"
                f" half as soon as it holds the notes lock; {rkills['landed']} had written):"
                " the note holds its old lines and the whole bullet or none of it, no"
                " temporary file after the next `remember`",
                rkills["kills"],
                rkills["survived"] if not rkills["problems"] else 0,
            )
        )
    full = load("full_disk")
    if full:
        rows.append(
            (
                "A full disk (a 2 MB file system filled) under `remember` of a 3,856-byte bullet"
                " into a note whose last page has 0 to 3,800 bytes free, and into a new daily"
                " note: one-line error, the note byte for byte as it was, no file left; with room"
                " again the whole bullet",
                full["remembers"] + full["remembers"] // 2,
                full["remembers_held"] + full["remembers_after"] if not full["problems"] else 0,
            )
        )
        rows.append(
            (
                "A full disk (0, 16 KB or 64 KB free) under `index` and `search` after an edit:"
                " `index` fails with one line, the search answers from the last index with one"
                " line saying it could not update it; with room again both catch up, the index"
                " passes SQLite's integrity check and was never set aside",
                full["indexes"],
                full["indexes_held"] if not full["problems"] else 0,
            )
        )
    for name, what, whole in (
        ("db_publish_kills", "a publish to PostgreSQL (`index --database`)",
         "the scope is the previous generation or the new one, every chunk and stored note of"
         " one version, no unnamed segment; the next publish goes through"),
        ("db_append_kills", "`remember --database` (two-line bullets)",
         "the note holds the whole bullet or none of it and its index matches it; the next"
         " append goes through"),
    ):  # fmt: skip
        db = load(name)
        if db:
            ph = db["phases"]
            rows.append(
                (
                    f"SIGKILL of {what} or of the PostgreSQL server ({ph['inside the transaction']}"
                    f" inside the write's transaction, {ph['at a random moment']} at a random"
                    f" moment, {ph['server killed']} the server, then crash recovery;"
                    f" {db['landed']} had committed): {whole}",
                    db["kills"],
                    db["survived"] if not db["problems"] and db["final_ok"] else 0,
                )
            )
    t, h = tally(res, "test_serve_answers_a_restart_a_crash_and_a_stopped_database",
                 "test_a_restart_or_a_crash_between_two_calls_is_reconnected",
                 "test_a_lost_connection_never_leaves_a_half_written_note")  # fmt: skip
    rows.append(("PostgreSQL restarted, crashed or stopped under a `serve` and a long-lived"
                 " process, a connection cut inside an append: one-line error without the"
                 " password while it is down (a scope not read yet), the next call"
                 " reconnects, no half-written note",
                 t, h))  # fmt: skip
    t, h = tally(res, "test_the_tools_answer_stale_or_an_error_while_the_database_is_down",
                 "test_an_agent_whose_role_may_only_read_is_told_not_crashed")  # fmt: skip
    rows.append(("PostgreSQL stopped under the LangChain tools, and a read-only role under an"
                 " agent's `memory_append`: a scope read before answers from that generation"
                 " with `stale: true`; otherwise `Error: <what failed>; <what to do>` and the"
                 " error JSON, never an exception; no pool warning; fresh once it is back",
                 t, h))  # fmt: skip
    t, h = tally(res, "test_the_retriever_answers_stale_or_raises_one_database_error")
    rows.append(("PostgreSQL stopped under the retriever: Documents of a scope read before with"
                 ' `metadata["stale"]`, else one `DatabaseError` (one line, no password);'
                 " fresh once it is back", t, h))  # fmt: skip
    t, h = tally(res, "test_serve_says_the_database_is_down_in_health_and_answers_stale",
                 "test_after_a_long_outage_serve_is_back_at_the_first_request")  # fmt: skip
    rows.append(("PostgreSQL stopped under `serve` (for a few seconds, and for 40 s):"
                 " `/health` 503 with `database: unreachable`, ok at the first check once it is"
                 " back; searches answer 200 with `stale`; one stderr line per request, none of"
                 " psycopg_pool's", t, h))  # fmt: skip
    t, h = tally(res, "test_index_stops_cleanly_keeps_batches_and_resumes")
    rows.append(("Embedder faults during `index` (refused, 500, malformed JSON, wrong dimension,"
                 " fewer vectors, NaN, dropped, not pulled): retried, one-line exit 2, embedded"
                 " batches kept, next run embeds only the rest", t, h))  # fmt: skip
    t, h = tally(res, "test_search_falls_back_to_keyword_only_in_the_same_call",
                 "test_timeout_is_retried_then_reported_and_search_degrades")  # fmt: skip
    rows.append(("Embedder faults during `search` (same list + timeout): keyword-only answer"
                 " with `fallback` set", t, h))  # fmt: skip
    if conc:
        rows.append(
            (
                f"{conc['searchers']} searcher processes for {conc['seconds']:.0f} s while"
                f" `index` re-runs in a loop ({conc['reindexes']} re-indexes): searches without"
                " error or empty result",
                conc["searches"],
                conc["searches"] - conc["errors"] - conc["empty"],
            )
        )
    if ser:
        rows.append(("Two `index` runs at once: serialized by the locks (each text"
                     f" embedded once: {ser['embedded']})", ser["runs"],
                     ser["ok"] if not ser["problems"] else 0))  # fmt: skip
    t, h = tally(res, "test_index_run_succeeds_and_names_skips", "test_hostile_file",
                 "test_symlinks_loop_and_outside_are_not_followed",
                 "test_file_changing_while_read_stays_exact", "test_fifty_megabyte_file",
                 "test_ten_thousand_files_in_one_folder",
                 "test_undecodable_and_odd_file_names")  # fmt: skip
    rows.append(("Hostile workspace files (invalid UTF-8, binary, 50 MB, 20,000-line section,"
                 " 10,000 files, empty, headers only, CRLF, BOM, long lines, symlinks,"
                 " changing files, undecodable names)", t, h))  # fmt: skip
    t, h = tally(res, "test_a_fuzzed_transcript_costs_only_itself",
                 "test_random_fuzzed_transcripts_cost_only_themselves")  # fmt: skip
    rows.append(("A fuzzed transcript (random bytes, lone surrogates, NULs, lines up to 4 MB,"
                 " truncated and deeply nested JSON, wrong types; one of each fault, then"
                 " seeded random mixes) beside notes and good transcripts: every other file"
                 " chunked and found exactly as without it, `index`, `search` and `get` exit 0",
                 t, h))  # fmt: skip
    t, h = tally(res, "test_index_search_and_get_keep_the_line_with_one_warning",
                 "test_serve_starts_and_answers", "test_retriever_and_tools_answer_and_write",
                 "test_save_thread_keeps_each_message_once",
                 "test_remember_takes_an_argument_that_is_not_utf8")  # fmt: skip
    rows.append(("A lone surrogate (half an emoji) in a transcript, a tool's or `serve`'s"
                 " input, a thread or a non-UTF-8 `remember` argument: U+FFFD, every face"
                 " answers", t, h))  # fmt: skip
    t, h = tally(res, "test_damaged_index_is_rebuilt_from_the_markdown")
    rows.append(("Damaged index file (truncated, garbage, empty): set aside"
                 " and rebuilt from the markdown with a one-line warning", t, h))  # fmt: skip
    t, h = tally(res, "test_hostile_query_gives_valid_json", "test_blank_query_is_one_clear_line",
                 "test_nul_byte_query_via_batch",
                 "test_bad_argument_is_one_clear_line", "test_huge_k_is_capped_and_valid",
                 "test_workspace_with_nul_is_refused",
                 "test_get_refuses_paths_outside_the_memory_files",
                 "test_crossref_show_refuses_paths_outside",
                 "test_get_reads_a_real_file_and_bad_ranges_are_clear")  # fmt: skip
    rows.append(("Hostile queries and arguments (search, `get`, `crossref show`)", t, h))
    t, h = tally(res, "test_chunks_cover_every_nonblank_line_once_in_order",
                 "test_date_parser_never_raises",
                 "test_cli_json_output_always_validates")  # fmt: skip
    rows.append(("Hypothesis properties (chunk spans, date parser, CLI JSON vs schema;"
                 " 1,060 generated inputs a run)", t, h))  # fmt: skip
    lines = ["| What was tried | Tried | Held |", "|---|---:|---:|"]
    lines += [f"| {what} | {tried} | {held} |" for what, tried, held in rows]
    return "\n".join(lines)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        stats, junit = Path(tmp), Path(tmp) / "junit.xml"
        t0 = time.monotonic()
        rc = run_tests(stats, junit)
        took = time.monotonic() - t0
        if not junit.exists():
            print("pytest did not run", file=sys.stderr)
            return 2
        print()
        print(table(outcomes(junit), stats))
        print(f"\n(`python benchmarks/reliability.py`, {took / 60:.1f} min, pytest exit {rc})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
