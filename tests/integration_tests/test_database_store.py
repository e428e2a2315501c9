"""The PostgreSQL store against a real server: publish, append, freshness, the same ranking.

Every test gets a fresh database (``database_url``). "Another host" is another
:class:`Database` (its own caches) or another process.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import random
import subprocess
import sys
import time
import uuid
import weakref
from datetime import date
from pathlib import Path

import numpy as np
import psycopg
import pytest

from langchain_enhanced_memory.core.errors import (
    DatabaseError,
    MissingNoteError,
    ScopeError,
)
from langchain_enhanced_memory.engine.database import DatabaseSearch
from langchain_enhanced_memory.engine.search import MemorySearch
from langchain_enhanced_memory.store.database import Database, Embedding
from langchain_enhanced_memory.store.database.schema import MIGRATIONS
from tests.postgres import PgServer
from tests.workspaces import SMALL_WORKSPACE, write_workspace

ROOT = Path(__file__).resolve().parents[2]
DAY = date(2026, 12, 9)
WORDS = (
    "postgres replica shard vector index coffee roast deadline budget review alpha beta"
    " gamma launch onboarding invoice contract design sprint retro latency cache merge"
    " segment kernel python rust deploy rollback incident pager metric dashboard"
).split()
QUERIES = [
    "coffee roast",
    "replica latency incident",
    "what did we decide about the budget",
    "deploy rollback",
    "project alpha deadline",
    "design review sprint",
    "yesterday",
    "vector index merge",
]


def _notes(seed: int, days: int = 12) -> dict[str, str]:
    """A workspace of daily notes and topics with overlapping words (ties are rare)."""
    rng = random.Random(seed)

    def para() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))) + "."

    files = dict(SMALL_WORKSPACE)
    for d in range(1, days + 1):
        body = [f"# 2026-12-{d:02d}", ""]
        for s in range(rng.randint(1, 3)):
            body += [f"## Section {s} {rng.choice(WORDS)}", "", para(), "", f"- {para()}", ""]
        files[f"memory/2026-12-{d:02d}.md"] = "\n".join(body)
    for t in ("people", "infra", "plans"):
        files[f"memory/topics/{t}.md"] = f"# {t.title()}\n\n" + "\n\n".join(
            para() for _ in range(4)
        )
    return files


def _engine(ws: Path, embedder: str = "none") -> MemorySearch:
    eng = MemorySearch(ws, embedder=embedder)  # type: ignore[arg-type]
    eng.update_index()
    return eng


def _top(resp: object) -> list[tuple[str, int, int]]:
    return [(h.path, h.start_line, h.end_line) for h in resp.hits]  # type: ignore[attr-defined]


def _publish(db: Database, scope: str, eng: MemorySearch, owner: str = "host-a:/w") -> object:
    eng.update_index()
    return db.publish(scope, eng.index, eng.model_id, owner=owner)


def test_a_published_folder_is_searched_from_a_process_without_it(
    database_url: str, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "w", SMALL_WORKSPACE)
    with Database.connect(database_url) as db:
        report = _publish(db, "alpha", _engine(ws))
    assert report.files == 4 and report.generation == 1  # type: ignore[attr-defined]
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    code = (
        "import json, sys\n"
        "from langchain_enhanced_memory.store.database import Database\n"
        "from langchain_enhanced_memory.engine.database import DatabaseSearch\n"
        "db = Database.connect(sys.argv[1])\n"
        "r = DatabaseSearch(db, 'alpha', embedder='none').search('dark roast coffee', k=3)\n"
        "print(json.dumps([[h.path, h.scope, h.text] for h in r.hits]))\n"
        "print(db.read('alpha', 'MEMORY.md').text.splitlines()[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, database_url],
        cwd=empty,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(empty)},
    )
    assert out.returncode == 0, out.stderr
    hits, first = out.stdout.splitlines()
    found = json.loads(hits)
    assert found[0][0] == "MEMORY.md" and found[0][1] == "alpha" and "coffee" in found[0][2]
    assert first == "# Preferences"


def _same_ranking(db: Database, scope: str, eng: MemorySearch, embedder: str) -> None:
    remote = DatabaseSearch(db, scope, embedder=embedder)  # type: ignore[arg-type]
    for query in QUERIES:
        for k in (10,):
            want = eng.search(query, k=k, now=DAY)
            got = remote.search(query, k=k, now=DAY)
            assert got.mode == want.mode and got.fallback == want.fallback
            assert _top(got) == _top(want), query
            assert [h.score for h in got.hits] == [h.score for h in want.hits], query


@pytest.mark.parametrize("embedder", ["none", "local"])
def test_the_same_ranking_as_the_local_store(
    database_url: str, tmp_path: Path, embedder: str
) -> None:
    ws = write_workspace(tmp_path / "w", _notes(1, days=12 if embedder == "none" else 6))
    eng = _engine(ws, embedder)
    assert eng.model_id is None if embedder == "none" else eng.model_id
    with Database.connect(database_url) as db:
        _publish(db, "alpha", eng)
        _same_ranking(db, "alpha", eng, embedder)
        # Changes published as a second segment: rows of the first one replaced.
        (ws / "memory/2026-12-02.md").write_text("# 2026-12-02\n\nA new budget for the replica.\n")
        (ws / "memory/2026-12-03.md").unlink()
        (ws / "memory/topics/new.md").write_text("# New\n\ncoffee deploy rollback review\n")
        report = _publish(db, "alpha", eng)
        # Two segments (rows of the first replaced), or one merged from them.
        assert report.segments == (2 if embedder == "none" else 1)  # type: ignore[attr-defined]
        _same_ranking(db, "alpha", eng, embedder)


def test_a_republished_change_is_found_and_the_old_text_and_deleted_file_are_not(
    database_url: str, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "w", _notes(2, days=4))
    (ws / "memory/topics/gone.md").write_text("# Gone\n\nzebracorn migration plan\n")
    note = ws / "memory/topics/infra.md"
    note.write_text("# Infra\n\nthe old quokkadb cluster\n")
    eng = _engine(ws)
    with Database.connect(database_url) as a, Database.connect(database_url) as b:
        _publish(a, "alpha", eng)
        reader = DatabaseSearch(b, "alpha", embedder="none")  # another host, its own cache
        assert _top(reader.search("quokkadb"))[0][0] == "memory/topics/infra.md"
        assert reader.search("zebracorn").hits
        note.write_text("# Infra\n\nthe new platypusql cluster\n")
        (ws / "memory/topics/gone.md").unlink()
        report = _publish(a, "alpha", eng)
        assert report.changed == ["memory/topics/infra.md"]  # type: ignore[attr-defined]
        assert report.deleted == ["memory/topics/gone.md"]  # type: ignore[attr-defined]
        # The next search on the other host sees the commit.
        assert _top(reader.search("platypusql"))[0][0] == "memory/topics/infra.md"
        assert reader.search("quokkadb").hits == []
        assert reader.search("zebracorn").hits == []
        assert "platypusql" in b.read("alpha", "memory/topics/infra.md").text
        with pytest.raises(MissingNoteError):
            b.read("alpha", "memory/topics/gone.md")
        # Nothing changed: the generation stays (readers keep their snapshot).
        again = _publish(a, "alpha", eng)
        assert again.generation == report.generation and not again.changed  # type: ignore[attr-defined]


def _append_one(url: str, i: int) -> None:
    with Database.connect(url) as db:
        db.append("team", f"fact number {i} from worker {i}\nsecond line {i}", now=DAY)


def test_eight_concurrent_appends_keep_every_line_whole(database_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_one, args=(database_url, i)) for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8
    with Database.connect(database_url) as db:
        text = db.read("team", "memory/2026-12-09.md").text
        lines = text.splitlines()
        assert lines[0] == "# 2026-12-09"
        for i in range(8):
            at = lines.index(f"- fact number {i} from worker {i}")
            assert lines[at + 1] == f"  second line {i}"  # none interleaved
        assert len([x for x in lines if x.startswith("- ")]) == 8
        search = DatabaseSearch(db, "team", embedder="none")
        for i in range(8):
            hits = search.search(f"fact number {i} from worker {i}", k=20).hits
            assert any(f"worker {i}" in h.text for h in hits)
        assert db.scopes()[0].generation == 8
        with psycopg.connect(database_url) as conn:
            segments = conn.execute("SELECT count(*) FROM em_segments").fetchone()
        assert segments is not None and segments[0] <= 9  # small segments get merged


def test_a_scope_never_returns_another_scopes_rows(database_url: str, tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "w", SMALL_WORKSPACE)
    with Database.connect(database_url) as db:
        _publish(db, "alpha", _engine(ws))
        db.append("team", "coffee with the team about dark roast", now=DAY)
        alpha = DatabaseSearch(db, "alpha", embedder="none").search("coffee dark roast", k=50)
        team = DatabaseSearch(db, "team", embedder="none").search("coffee dark roast", k=50)
    assert alpha.hits and {h.scope for h in alpha.hits} == {"alpha"}
    assert all(h.path != "memory/2026-12-09.md" for h in alpha.hits)
    assert [h.path for h in team.hits] == ["memory/2026-12-09.md"]
    assert team.hits[0].scope == "team"


def test_owners_and_backings_are_kept(database_url: str, tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "w", SMALL_WORKSPACE)
    eng = _engine(ws)
    with Database.connect(database_url) as db:
        _publish(db, "alpha", eng, owner="host-a:/w")
        with pytest.raises(ScopeError) as refused:
            _publish(db, "alpha", eng, owner="host-b:/other")
        assert str(refused.value) == (
            "scope alpha is published from host-a:/w; pass --take-over to publish it from here"
        )
        taken = db.publish("alpha", eng.index, None, owner="host-b:/other", take_over=True)
        assert taken.generation == 2
        assert [s.owner for s in db.scopes()] == ["host-b:/other"]
        with pytest.raises(ScopeError, match="write it on the owning host"):
            db.append("alpha", "not here")
        db.append("team", "a team fact", now=DAY)
        with pytest.raises(ScopeError, match="database-backed"):
            _publish(db, "team", eng)


def test_export_writes_the_notes_and_refuses_to_replace_a_different_file(
    database_url: str, tmp_path: Path
) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "first", now=DAY)
        db.append("team", "a decision", section="Decisions", file="memory/topics/team.md")
        out = tmp_path / "out"
        assert db.export("team", out) == ["memory/2026-12-09.md", "memory/topics/team.md"]
        assert (out / "memory/topics/team.md").read_text() == "## Decisions\n\n- a decision\n"
        assert db.export("team", out) == ["memory/2026-12-09.md", "memory/topics/team.md"]
        (out / "memory/2026-12-09.md").write_text("mine\n")
        with pytest.raises(ScopeError, match="exists and differs"):
            db.export("team", out)
        assert (out / "memory/2026-12-09.md").read_text() == "mine\n"
        # The exported folder, indexed here, ranks as the scope does.
        (out / "memory/2026-12-09.md").write_text(db.read("team", "memory/2026-12-09.md").text)
        want = _engine(out).search("a decision first", k=5, now=DAY)
        got = DatabaseSearch(db, "team", embedder="none").search("a decision first", k=5, now=DAY)
        assert _top(got) == _top(want) and got.hits


def test_bad_names_and_urls_are_one_line_without_the_password(
    database_url: str, pg_server: object
) -> None:
    with Database.connect(database_url) as db:
        for bad in ("Alpha", "", "a/b", "-x", "x" * 64, "a b"):
            with pytest.raises(ScopeError) as err:
                db.snapshot(bad, None)
            assert "\n" not in str(err.value)
    secret = "s3cr3t-Pa55"
    url = f"postgresql://someone:{secret}@127.0.0.1:1/nothing?connect_timeout=2"
    for wrong in (url, url.replace("postgresql://", "postgresql//"), f"host=x password={secret}"):
        with pytest.raises(DatabaseError) as err:
            Database.connect(wrong)
        message = f"{err.value} {err.value.action}"
        assert secret not in message and "\n" not in message, message
        assert "***" in message or "password" not in message
    # A wrong password on the real server: refused in one line, the password not in it.
    real = database_url.replace(database_url.split("@")[0].rsplit(":", 1)[1], secret)
    with pytest.raises(DatabaseError) as err:
        Database.connect(real)
    assert secret not in str(err.value) and "password authentication failed" in str(err.value)


def test_migrations_are_versioned(database_url: str) -> None:
    with Database.connect(database_url):
        pass
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT version FROM em_schema").fetchall() == [(len(MIGRATIONS),)]
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'em_%'")
        before = tables.fetchone()
    with Database.connect(database_url):  # a second connect changes nothing
        pass
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT version FROM em_schema").fetchall() == [(len(MIGRATIONS),)]
        after = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'em_%'")
        assert after.fetchone() == before
        # A database of an older version gets the steps after it, once.
        conn.execute("DROP TABLE em_identity")
        conn.execute("DROP SEQUENCE em_generations")
        conn.execute("UPDATE em_schema SET version = 1")
    with Database.connect(database_url):
        pass
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM em_schema").fetchall() == [(len(MIGRATIONS),)]
        assert conn.execute("SELECT count(*) FROM em_identity").fetchone() == (1,)
        conn.execute("UPDATE em_schema SET version = %s", (len(MIGRATIONS) + 1,))
    with pytest.raises(DatabaseError) as err:
        Database.connect(database_url)
    assert f"has schema version {len(MIGRATIONS) + 1}" in str(err.value)
    assert "upgrade langchain-enhanced-memory" in err.value.action


def _found(db: Database, query: str) -> bool:
    return bool(DatabaseSearch(db, "team", embedder="none").search(query).hits)


def test_searches_read_the_replica_and_a_writer_reads_its_own_write(pg_replica: PgServer) -> None:
    primary = pg_replica.primary
    assert primary is not None
    name = f"rw_{uuid.uuid4().hex[:8]}"
    url = primary.create_database(name)
    try:
        pg_replica.wait_caught_up()  # the new database is on the replica too
        replica_url = pg_replica.url_of(name)
        writer = Database.connect(url, read_url=replica_url)
        other = Database.connect(url, read_url=replica_url)  # another host, reading the replica
        writer.append("team", "the first fact", now=DAY)
        pg_replica.wait_caught_up()
        assert _found(other, "first fact") and _found(writer, "first fact")
        with pg_replica.connect(name) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            while conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone() != ("paused",):
                time.sleep(0.01)
        try:
            writer.append("team", "the zebracorn arrived", now=DAY)
            assert not _found(other, "zebracorn")  # the replica lags: reads do go there
            assert _found(writer, "zebracorn")  # the writer's own write: read on the primary
            assert writer.generations(["team"]) == {"team": 2}
            assert other.generations(["team"]) == {"team": 1}
        finally:
            with pg_replica.connect(name) as conn:
                conn.execute("SELECT pg_wal_replay_resume()")
        pg_replica.wait_caught_up()
        assert _found(other, "zebracorn")
        writer.close()
        other.close()
    finally:
        primary.drop_database(name)


def test_a_restarted_server_is_reconnected_and_a_stopped_one_is_one_line(
    pg_private: PgServer,
) -> None:
    url = pg_private.create_database("restarts")
    with Database.connect(url) as db:
        db.append("team", "before the restart", now=DAY)
        assert _found(db, "restart")
        pg_private.restart()
        try:  # the pool's connection died: this search reconnects, or says so in one line
            _found(db, "restart")
        except DatabaseError as exc:
            assert "\n" not in str(exc) and pg_private.password not in str(exc)
        assert _found(db, "restart")  # the next one answers
        pg_private.stop()
        with pytest.raises(DatabaseError) as err:
            db.append("team", "the server is down", now=DAY)
        assert "\n" not in str(err.value) and pg_private.password not in str(err.value)
        assert "***" in str(err.value)


def test_a_read_only_role_searches_and_cannot_append(database_url: str, read_only_url: str) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "a fact all agents read", now=DAY)
    with Database.connect(read_only_url) as ro:
        assert _found(ro, "fact all agents")
        with pytest.raises(DatabaseError) as err:
            ro.append("team", "not allowed", now=DAY)
        assert "permission denied" in str(err.value) and "ro-secret-1" not in str(err.value)
        assert "\n" not in str(err.value)
    with Database.connect(database_url) as db:
        assert "not allowed" not in db.read("team", "memory/2026-12-09.md").text


def test_a_damaged_segment_is_a_one_line_error(database_url: str) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "a fact", now=DAY)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE em_segments SET data = substring(data from 1 for 40)")
    with Database.connect(database_url) as db, pytest.raises(DatabaseError) as err:
        _found(db, "fact")
    assert "segment" in str(err.value) and "damaged" in str(err.value)
    assert "\n" not in str(err.value) and "publish the scope again" in err.value.action


def _vectors(texts: list[str]) -> np.ndarray:
    """A stand-in embedder: a unit vector per text, the same for the same text."""
    out = np.stack([np.random.default_rng(sum(t.encode())).normal(size=8) for t in texts])
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def test_a_keyword_only_scope_gains_vectors_and_keeps_them(database_url: str) -> None:
    with Database.connect(database_url) as db:
        db.append("team", "a keyword-only fact", now=DAY)
        db.append("team", "a topic fact", file="memory/topics/t.md")
        assert db.snapshot("team", "fake/words").vectors is None
        db.append("team", "a fact with vectors", now=DAY, embed=Embedding("fake/words", _vectors))
        snap = db.snapshot("team", "fake/words")
        # Every note indexed again with the embedder: all rows have vectors of one model.
        assert snap.model == "fake/words" and snap.has_vector is not None
        assert snap.has_vector.all() and len(snap) == 2
        assert snap.vectors is not None and snap.vectors.dim == 8
        assert db.snapshot("team", None).vectors is None  # another model: keyword-only view
        with pytest.raises(ScopeError, match="holds vectors of fake/words"):
            db.append("team", "no embedder", now=DAY)
        with pytest.raises(ScopeError, match="holds vectors of fake/words"):
            db.append("team", "another one", embed=Embedding("other/model", _vectors))
        text = db.read("team", "memory/2026-12-09.md").text
        assert "keyword-only fact" in text and "with vectors" in text and "no embedder" not in text


def test_a_cold_load_reads_segments_a_merge_removed_since_its_transaction_began(
    database_url: str,
) -> None:
    with Database.connect(database_url) as db:
        for i in range(3):  # three segments
            db.append("team", f"fact {i}", file=f"memory/topics/t{i}.md")
    with Database.connect(database_url) as db:
        pool = db._reader
        with pool.connection() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            ids = [r[0] for r in conn.execute("SELECT id FROM em_segments ORDER BY id")]
            with psycopg.connect(database_url, autocommit=True) as other:  # a merge commits
                other.execute("DELETE FROM em_segments WHERE id = %s", (ids[0],))
            got = db._held.fetcher(conn, "team", pool)(ids)  # read at once on other connections ...
        assert sorted(got) == ids  # ... and the one they no longer see, in this transaction


def test_a_hosts_copies_of_segments_serve_a_fresh_process_and_follow_the_scope(
    pg_server: PgServer, database_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with Database.connect(database_url, cache=cache) as db:
        db.append("team", "the okapi fact", file="memory/topics/a.md")
        assert _found(db, "okapi")  # read once: copied
    copies = list(cache.rglob("*.emseg"))
    assert len(copies) == 1 and oct(copies[0].stat().st_mode & 0o777) == "0o600"
    with psycopg.connect(database_url, autocommit=True) as conn:  # the database's copy breaks
        conn.execute("UPDATE em_segments SET data = substring(data from 1 for 40)")
    with Database.connect(database_url, cache=cache) as db:
        assert _found(db, "okapi")  # a fresh process maps this host's copy
    with Database.connect(database_url) as db, pytest.raises(DatabaseError, match="damaged"):
        _found(db, "okapi")
    # Another database (the same segment ids) does not read this one's copies.
    name = f"other_{uuid.uuid4().hex[:8]}"
    other = pg_server.create_database(name)
    try:
        with Database.connect(other, cache=cache) as db:
            db.append("team", "the zebu fact", file="memory/topics/a.md")
            assert _found(db, "zebu") and not _found(db, "okapi")
    finally:
        pg_server.drop_database(name)
    # A new generation's load removes the copies it no longer names.
    with Database.connect(database_url, cache=cache) as db:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("DELETE FROM em_segments")
            conn.execute("DELETE FROM em_files")
        db.append("team", "the tapir fact", file="memory/topics/b.md")
        assert _found(db, "tapir") and not _found(db, "okapi")
    names = {p.parent.parent.name for p in cache.rglob("*.emseg")}
    assert len(names) == 2  # this database's and the other one's folder
    mine = [p for p in cache.rglob("*.emseg") if p not in copies]
    assert copies[0] not in list(cache.rglob("*.emseg")) and mine


def test_let_go_releases_a_scopes_generation_and_only_its_segments(
    database_url: str, tmp_path: Path
) -> None:
    with Database.connect(database_url, cache=tmp_path / "cache") as db:
        for scope in ("a", "b"):
            for i in range(2):
                db.append(scope, f"the okapi fact {i}", file=f"memory/topics/t{i}.md")
            db.snapshot(scope, None)
        held, uses = db._held, {s: set(db._held._uses[s]) for s in ("a", "b")}
        assert set(held._segments) == uses["a"] | uses["b"] and uses["a"]
        gone = [weakref.ref(o) for o in (held._snapshots["a"], *map(held._segments.get, uses["a"]))]
        db.let_go("a")
        gc.collect()
        assert [r() for r in gone] == [None] * len(gone)  # nothing else kept them
        assert set(held._segments) == uses["b"] and list(held._snapshots) == ["b"]
        assert db.held("a", None) is None and db.held("b", None) is not None
        assert db.held("a", None, copies=True) is not None  # this host's copies stay for outages
