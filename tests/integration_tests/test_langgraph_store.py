"""EnhancedMemoryStore against the behaviours LangGraph tests its own stores for, on both backends.

Each test runs on a workspace (a temp copy of examples/workspace) and on a fresh
database of the run's real PostgreSQL server.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langchain_enhanced_memory import EnhancedMemoryStore, ItemError
from tests.fakes import WordEmbeddings
from tests.workspaces import copy_workspace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
MakeStore = Callable[..., EnhancedMemoryStore]


@pytest.fixture(params=["workspace", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStore]:
    """Opens stores on this test's backend (the same workspace or database each time)."""
    made: list[EnhancedMemoryStore] = []
    if request.param == "workspace":
        workspace = copy_workspace(EXAMPLE, tmp_path / "ws")
    else:
        url = request.getfixturevalue("database_url")

    def make(**kwargs: object) -> EnhancedMemoryStore:
        if request.param == "workspace":
            store = EnhancedMemoryStore(workspace, **kwargs)  # type: ignore[arg-type]
        else:
            store = EnhancedMemoryStore(database_url=url, **kwargs)  # type: ignore[arg-type]
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: MakeStore) -> EnhancedMemoryStore:
    return make_store()


def test_batch_answers_each_op_in_order(store: EnhancedMemoryStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2b"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("test",), "key3"),
            GetOp(("test", "bar"), "key2"),
        ]
    )
    assert len(results) == 6
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[1] is None
    assert [i.key for i in results[2]] == ["key1"]  # type: ignore[union-attr]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None
    assert results[5].value == {"data": "value2b"}  # type: ignore[union-attr]  # a put before


def test_put_get_update_delete(store: EnhancedMemoryStore) -> None:
    ns = ("users", "u1")
    assert store.get(ns, "missing") is None
    store.put(ns, "k", {"text": "first", "n": 1, "nested": {"a": [1, 2.5, None, True]}})
    first = store.get(ns, "k")
    assert first is not None
    assert first.value == {"text": "first", "n": 1, "nested": {"a": [1, 2.5, None, True]}}
    assert first.namespace == ns and first.key == "k"
    assert first.created_at == first.updated_at
    time.sleep(0.01)
    store.put(ns, "k", {"text": "second"})
    second = store.get(ns, "k")
    assert second is not None and second.value == {"text": "second"}
    assert second.created_at == first.created_at  # an update keeps when it was made
    assert second.updated_at > first.updated_at
    store.delete(ns, "k")
    assert store.get(ns, "k") is None
    store.delete(ns, "k")  # deleting what is not there is no error
    assert store.search(ns) == []


def test_namespaces_are_validated_as_langgraph_does(store: EnhancedMemoryStore) -> None:
    for bad in [(), ("a.b",), ("",), ("langgraph", "x")]:
        with pytest.raises((InvalidNamespaceError, ItemError)):
            store.put(bad, "k", {"v": 1})
    with pytest.raises(ItemError):  # ops given to batch directly are checked too
        store.batch([PutOp(("a.b",), "k", {"v": 1})])
    with pytest.raises(ItemError):
        store.batch([PutOp(("ok",), "k", ["not", "a", "dict"])])  # type: ignore[arg-type]


def test_a_prefix_never_matches_a_longer_label(store: EnhancedMemoryStore) -> None:
    store.put(("a",), "k", {"v": "in a"})
    store.put(("ab",), "k", {"v": "in ab"})
    store.put(("a", "b"), "k", {"v": "in a/b"})
    assert {i.value["v"] for i in store.search(("a",))} == {"in a", "in a/b"}
    assert [i.value["v"] for i in store.search(("ab",))] == ["in ab"]
    assert store.list_namespaces(prefix=("a",)) == [("a",), ("a", "b")]
    found = {i.value["v"] for i in store.search(("a",), query="in a heron", limit=10)}
    assert found == set()  # no item holds "heron"
    store.put(("ab",), "heron", {"v": "heron in ab"})
    store.put(("a",), "heron", {"v": "heron in a"})
    assert [i.value["v"] for i in store.search(("a",), query="heron")] == ["heron in a"]


def test_list_namespaces_prefix_suffix_depth_limit_offset(store: EnhancedMemoryStore) -> None:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "c")]
    everything = store.list_namespaces(limit=100)
    assert len(everything) == 9 and everything == sorted(everything)
    assert store.list_namespaces(limit=3, offset=0) == everything[:3]
    assert store.list_namespaces(limit=3, offset=3) == everything[3:6]
    assert store.list_namespaces(prefix=("users",)) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert store.list_namespaces(prefix=("nope",)) == []
    wildcard = ListNamespacesOp((MatchCondition("suffix", ("b", "*")),), None, 10, 0)
    assert store.batch([wildcard]) == [[("a", "b", "c"), ("a", "b", "f")]]


def test_filters_with_each_operator(store: EnhancedMemoryStore) -> None:
    ns = ("filters",)
    store.put(
        ns, "a", {"score": 4.5, "color": "red", "meta": {"team": "x", "n": 1}, "tags": [1, 2]}
    )
    store.put(ns, "b", {"score": 3, "color": "blue", "meta": {"team": "y", "n": 2}})
    store.put(ns, "c", {"score": 5, "color": "red", "meta": {"team": "x", "n": 3}})

    def keys(**filters: object) -> set[str]:
        return {i.key for i in store.search(ns, filter=filters)}

    assert keys(color="red") == {"a", "c"}
    assert keys(color={"$eq": "blue"}) == {"b"}
    assert keys(color={"$ne": "red"}) == {"b"}
    assert keys(score={"$gt": 4}) == {"a", "c"}
    assert keys(score={"$gte": 4.5}) == {"a", "c"}
    assert keys(score={"$lt": 4}) == {"b"}
    assert keys(score={"$lte": 4.5}) == {"a", "b"}
    assert keys(score={"$gt": 3, "$lt": 5}) == {"a"}
    assert keys(meta={"team": "x"}) == {"a", "c"}
    assert keys(meta={"n": {"$gte": 2}}) == {"b", "c"}
    assert keys(tags=[1, 2]) == {"a"}
    assert keys(color="red", score={"$lt": 5}) == {"a"}
    assert keys(missing="x") == set()
    with pytest.raises(ItemError):
        keys(score={"$like": 1})
    # The filter is a mask before the top-k of a ranked search.
    ranked = store.search(ns, query="red", filter={"score": {"$gte": 5}})
    assert [i.key for i in ranked] == ["c"]


def test_search_limit_offset_and_order(store: EnhancedMemoryStore) -> None:
    ns = ("paging",)
    for n in range(7):
        store.put(ns, f"k{n}", {"n": n})
        time.sleep(0.002)
    newest_first = [f"k{n}" for n in reversed(range(7))]
    assert [i.key for i in store.search(ns, limit=3)] == newest_first[:3]
    assert [i.key for i in store.search(ns, limit=3, offset=3)] == newest_first[3:6]
    assert [i.key for i in store.search(ns, limit=10, offset=6)] == newest_first[6:]
    assert all(i.score is None for i in store.search(ns))


def test_search_with_a_query_ranks_and_scores(store: EnhancedMemoryStore) -> None:
    ns = ("memories", "u1")
    store.put(ns, "coffee", {"content": "The user prefers dark roast coffee in the morning"})
    store.put(ns, "billing", {"content": "The team migrated billing to Postgres last week"})
    store.put(ns, "pets", {"content": "Their cat is called Miso"})
    store.put(("memories", "u2"), "coffee", {"content": "Another user who loves coffee"})
    hits = store.search(ns, query="what coffee does the user like?")
    assert hits[0].key == "coffee" and hits[0].namespace == ns
    assert all(h.namespace == ns for h in hits)
    assert all(isinstance(h.score, float) and 0 < h.score <= 1 for h in hits)
    assert [h.key for h in store.search(ns, query="postgres migration")][:1] == ["billing"]
    # The field names are headers: a query naming the field finds the item.
    store.put(ns, "prefs", {"favourite_colour": "green"})
    assert store.search(ns, query="favourite colour")[0].key == "prefs"
    assert [h.key for h in store.search(ns, query="coffee", limit=1, offset=0)] == ["coffee"]


def test_a_query_pages_through_items_of_many_sections(store: EnhancedMemoryStore) -> None:
    # Ranking builds hits for a few sections an item needed, and asks again when items
    # of many sections fill them: every page still holds whole, distinct items in order.
    ns = ("paging", "query")
    for n in range(40):
        fields = {f"part{p}": f"harbour ferry note {n} part {p}" for p in range(8)}
        store.put(ns, f"k{n}", fields)
    everything = [i.key for i in store.search(ns, query="harbour ferry", limit=40)]
    assert sorted(everything) == sorted(f"k{n}" for n in range(40))
    pages = [store.search(ns, query="harbour ferry", limit=7, offset=o) for o in range(0, 40, 7)]
    assert [i.key for page in pages for i in page] == everything
    scores = [i.score for page in pages for i in page]
    assert scores == sorted(scores, reverse=True)


def test_vectors_are_embedded_once_per_text(make_store: MakeStore) -> None:
    embeddings = WordEmbeddings(dim=64)
    store = make_store(index={"embed": embeddings, "dims": 64, "fields": ["content"]})
    ns = ("vec",)
    store.batch(
        [
            PutOp(ns, "a", {"content": "espresso beans from the roastery", "n": 1}),
            PutOp(ns, "b", {"content": "a walk in the park with the dog"}),
            PutOp(ns, "c", {"content": "not embedded", "other": 1}, index=False),
        ]
    )
    assert embeddings.calls == 1  # one batch, one call
    assert sorted(embeddings.texts) == [
        "a walk in the park with the dog",
        "espresso beans from the roastery",
    ]
    store.put(ns, "a", {"content": "espresso beans from the roastery", "n": 2})  # same text
    assert embeddings.calls == 1
    store.put(ns, "b", {"content": "a walk by the river"})
    assert embeddings.calls == 2 and embeddings.texts[-1] == "a walk by the river"
    hits = store.search(ns, query="espresso roastery")
    assert hits[0].key == "a"
    assert {h.key for h in store.search(ns)} == {"a", "b", "c"}
    # A put's own fields (paths into the value) replace the store's.
    trip = {"trip": {"title": "kayak on the fjord", "days": ["mon", "tue"]}, "content": "x y"}
    store.put(ns, "d", trip, index=["trip.title", "trip.days[*]"])
    assert embeddings.texts[-3:] == ["kayak on the fjord", "mon", "tue"]
    assert store.search(ns, query="kayak fjord")[0].key == "d"


def test_ttl_expires_and_a_read_refreshes_it(make_store: MakeStore) -> None:
    store = make_store(ttl={"default_ttl": 0.05, "refresh_on_read": True})  # 3 s
    ns = ("ttl",)
    store.put(ns, "kept", {"v": "read"})
    store.put(ns, "left", {"v": "unread"})
    store.put(ns, "forever", {"v": "none"}, ttl=None)
    time.sleep(2)
    assert store.get(ns, "kept") is not None  # refreshed: 3 s from now
    time.sleep(1.6)
    assert store.get(ns, "left", refresh_ttl=False) is None
    assert store.get(ns, "kept", refresh_ttl=False) is not None
    assert {i.key for i in store.search(ns, refresh_ttl=False)} == {"kept", "forever"}
    time.sleep(3.2)
    assert store.get(ns, "kept") is None
    assert store.sweep_ttl() == 2
    assert [i.key for i in store.search(ns)] == ["forever"]


def test_the_sweeper_deletes_expired_items(make_store: MakeStore) -> None:
    store = make_store(ttl={"default_ttl": 0.005, "sweep_interval_minutes": 0.005})
    store.put(("sweep",), "k", {"v": 1})
    store.put(("sweep",), "stays", {"v": 2}, ttl=None)
    store.start_ttl_sweeper()
    deadline = time.monotonic() + 20
    # The storage itself, not a search: a search hides an expired item before any sweep.
    while len(store._storage.under(("sweep",))) > 1:
        assert time.monotonic() < deadline, "the sweeper never deleted the expired item"
        time.sleep(0.1)
    assert store.stop_ttl_sweeper(timeout=10)
    assert store.sweep_ttl() == 0  # nothing left to sweep: the sweeper did it
    assert [i.key for i in store.search(("sweep",))] == ["stays"]


def test_the_sweeper_is_a_future_as_langgraphs_stores_return(store: EnhancedMemoryStore) -> None:
    """``start_ttl_sweeper`` returns what PostgresStore's and SqliteStore's do: a future
    resolved when the sweeper stops; cancelling it stops the sweeper."""
    done = store.start_ttl_sweeper(sweep_interval_minutes=60)
    assert isinstance(done, Future) and not done.done()
    assert store.start_ttl_sweeper() is done  # running: not started twice
    assert store.stop_ttl_sweeper(timeout=10)
    assert done.result(timeout=10) is None
    again = store.start_ttl_sweeper(sweep_interval_minutes=60)  # stopped: a new one
    assert again is not done and not again.done()
    thread = store._sweeper.thread  # type: ignore[union-attr]
    assert again.cancel()
    thread.join(10)
    assert not thread.is_alive()  # cancelled: its thread ended, with no stop_ttl_sweeper
    third = store.start_ttl_sweeper(sweep_interval_minutes=60)
    assert third is not again and not third.done()
    store.close()  # stops it too
    assert third.result(timeout=10) is None


def test_async_variants(store: EnhancedMemoryStore) -> None:
    async def run() -> None:
        ns = ("async", "u")
        await store.aput(ns, "k", {"content": "an asynchronous note about herons"})
        got = await store.aget(ns, "k")
        assert got is not None and got.value["content"].endswith("herons")
        found = await store.asearch(("async",), query="herons")
        assert [i.key for i in found] == ["k"]
        assert await store.alist_namespaces(prefix=("async",)) == [ns]
        results = await store.abatch([GetOp(ns, "k"), GetOp(ns, "none")])
        assert results[0] is not None and results[1] is None
        await store.adelete(ns, "k")
        assert await store.aget(ns, "k") is None

    asyncio.run(run())


def test_concurrent_writers_from_threads(store: EnhancedMemoryStore) -> None:
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for n in range(10):
                store.put(("threads", f"t{t}"), f"k{n}", {"t": t, "n": n})
                store.put(("threads", "shared"), "same", {"t": t, "n": n})
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    for t in range(6):
        assert sorted(i.key for i in store.search(("threads", f"t{t}"), limit=20)) == sorted(
            f"k{n}" for n in range(10)
        )
    shared = store.get(("threads", "shared"), "same")
    assert shared is not None and shared.value["n"] == 9


def test_a_second_store_sees_the_first_ones_writes(make_store: MakeStore) -> None:
    one, two = make_store(), make_store()
    one.put(("shared",), "k", {"content": "heron by the lake"})
    assert [i.key for i in two.search(("shared",), query="heron")] == ["k"]  # cached empty? no
    one.put(("shared",), "k", {"content": "kingfisher by the lake"})
    assert [i.key for i in two.search(("shared",), query="kingfisher")] == ["k"]
    assert two.search(("shared",), query="heron") == []


# ------------------------------------------------------- in a graph, and under LangMem's tools
def test_compile_with_the_store_and_get_store_in_a_node(store: EnhancedMemoryStore) -> None:
    from langgraph.config import get_store
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        user: str
        fact: str
        recalled: list[str]

    def remember(state: State) -> dict:
        get_store().put(("memories", state["user"]), "fact", {"content": state["fact"]})
        return {}

    def recall(state: State) -> dict:
        hits = get_store().search(("memories", state["user"]), query="which tea")
        return {"recalled": [h.value["content"] for h in hits]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    graph = builder.compile(store=store)
    out = graph.invoke({"user": "ada", "fact": "Ada drinks green tea", "recalled": []})
    assert out["recalled"] == ["Ada drinks green tea"]
    assert store.get(("memories", "ada"), "fact") is not None


def _scripted_model(turns: list[list[object]]) -> object:
    """A chat model that answers each call with the next scripted message (tools bound as is)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: object, **kwargs: object) -> Scripted:  # type: ignore[override]
            return self

    return Scripted(messages=iter([m for turn in turns for m in turn]))


def test_langmem_tools_in_an_agent_store_then_find_a_memory(store: EnhancedMemoryStore) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langmem import create_manage_memory_tool, create_search_memory_tool

    namespace = ("memories", "{langgraph_user_id}")
    tools = [create_manage_memory_tool(namespace), create_search_memory_tool(namespace)]
    create = {"content": "The user's dog is called Biscuit", "action": "create"}
    model = _scripted_model(
        [
            [AIMessage("", tool_calls=[{"name": "manage_memory", "args": create, "id": "c1"}])],
            [AIMessage("I will remember that.")],
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "search_memory", "args": {"query": "dog name"}, "id": "s1"}
                    ],
                )
            ],
            [AIMessage("Your dog is Biscuit.")],
        ]
    )
    agent = create_agent(model, tools=tools, store=store)  # type: ignore[arg-type]
    config = {"configurable": {"langgraph_user_id": "u42"}}
    agent.invoke({"messages": [("user", "My dog is called Biscuit")]}, config)  # type: ignore[arg-type]
    [kept] = store.search(("memories", "u42"))
    assert kept.value == {"content": "The user's dog is called Biscuit"}
    later = agent.invoke({"messages": [("user", "What is my dog called?")]}, config)  # type: ignore[arg-type]
    found = [m for m in later["messages"] if isinstance(m, ToolMessage)]
    assert "Biscuit" in str(found[-1].content)
    assert later["messages"][-1].content == "Your dog is Biscuit."
    assert store.search(("memories", "u1")) == []  # another user's namespace holds nothing


def test_text_enters_clean_and_unicode_round_trips(store: EnhancedMemoryStore) -> None:
    value = {"content": "caf\u00e9 \u4e2d\u6587 \U0001f600", "lone": "a\ud800b", "k\udcff": 1}
    store.put(("unicode",), "k\u00e9y \u4e2d", value)
    got = store.get(("unicode",), "k\u00e9y \u4e2d")
    assert got is not None
    assert got.value == {
        "content": "caf\u00e9 \u4e2d\u6587 \U0001f600",
        "lone": "a\ufffdb",
        "k\ufffd": 1,
    }
    assert [i.key for i in store.search(("unicode",), query="\u4e2d\u6587")] == ["k\u00e9y \u4e2d"]


def test_a_store_keeps_only_the_prefixes_it_searched_last(make_store: MakeStore) -> None:
    store = make_store(cached_prefixes=3)
    for n in range(5):
        store.put(("users", f"u{n}"), "k", {"content": f"note {n} about herons"})
    for n in range(5):
        assert [i.key for i in store.search(("users", f"u{n}"), query="herons")] == ["k"]
    assert list(store._held) == [("users", "u2"), ("users", "u3"), ("users", "u4")]
    store.put(("users", "u0"), "k", {"content": "note about kingfishers"})  # evicted: read again
    assert [i.key for i in store.search(("users", "u0"), query="kingfishers")] == ["k"]


def test_delete_leaves_no_row_holding_the_text_in_postgres(database_url: str) -> None:
    import psycopg

    token = "zebra-quartz-7731"
    with EnhancedMemoryStore(database_url=database_url, index={"embed": WordEmbeddings(16)}) as s:
        s.put(("users", "ada"), "secret", {"content": f"The vault code is {token}"})
        s.put(("users", "ada"), "other", {"content": "Ada likes herons"})
        s.delete(("users", "ada"), "secret")
        assert s.search(("users",), query=token) == []
    with psycopg.connect(database_url) as conn:
        tables = [
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'em_%'")
        ]
        for table in tables:
            rows = conn.execute(f"SELECT t::text FROM {table} t").fetchall()  # noqa: S608
            assert not [r for r in rows if token in r[0]], table
        [(left,)] = conn.execute("SELECT count(*) FROM em_items").fetchall()
        assert left == 1


def test_a_text_the_embedder_missed_at_put_gets_its_vector_at_a_search(
    make_store: MakeStore,
) -> None:
    embeddings = WordEmbeddings(dim=32)
    store = make_store(index={"embed": embeddings, "dims": 32})
    embeddings.fail = True  # down while the item is put: it is kept, keyword-searchable
    store.put(("down",), "k", {"content": "osprey nest by the river"})
    assert [i.key for i in store.search(("down",), query="osprey")] == ["k"]
    embeddings.fail = False
    store.put(("down",), "other", {"content": "a heron"})  # a new version of the prefix
    assert [i.key for i in store.search(("down",), query="osprey nest")][:1] == ["k"]
    assert "osprey nest by the river" in embeddings.texts
    calls = embeddings.calls
    again = make_store(index={"embed": embeddings, "dims": 32})  # kept: not embedded again
    assert [i.key for i in again.search(("down",), query="osprey nest")][:1] == ["k"]
    assert embeddings.calls == calls


def test_a_write_committed_after_a_later_one_is_seen_by_the_next_search(
    database_url: str,
) -> None:
    """Two writers under one prefix (each as ``put_many`` writes: the item, then its
    namespace's version), the one that wrote first committing last."""
    import psycopg

    from langchain_enhanced_memory.store.database.items import _bump

    def write(conn: psycopg.Connection, key: str, value: str) -> None:
        conn.execute("UPDATE em_items SET value = %s::jsonb WHERE key = %s", (value, key))
        with conn.cursor() as cur:
            _bump(cur, [f"race/{key}/"])

    with EnhancedMemoryStore(database_url=database_url) as store:
        store.put(("race", "x"), "x", {"v": "x old"})
        store.put(("race", "y"), "y", {"v": "y old"})
        with psycopg.connect(database_url) as a, psycopg.connect(database_url) as b:
            write(a, "x", '{"v": "x new"}')  # written first, still open
            write(b, "y", '{"v": "y new"}')  # written later, committed first
            b.commit()
            seen = {i.key: i.value["v"] for i in store.search(("race",))}
            assert seen == {"x": "x old", "y": "y new"}  # and that snapshot is kept
            a.commit()
        seen = {i.key: i.value["v"] for i in store.search(("race",))}
    assert seen == {"x": "x new", "y": "y new"}


def test_a_search_of_an_unchanged_prefix_reads_no_item_row(database_url: str) -> None:
    """The version check reads the namespaces' version rows only: with every item row
    locked away from readers, a search of a prefix already searched still answers."""
    import psycopg

    with EnhancedMemoryStore(database_url=database_url) as store:
        store.put(("users", "ada"), "k", {"content": "heron by the lake"})
        assert [i.key for i in store.search(("users", "ada"), query="heron")] == ["k"]
        found: list[list[str]] = []
        with psycopg.connect(database_url) as locker:
            locker.execute("LOCK TABLE em_items IN ACCESS EXCLUSIVE MODE")
            reader = threading.Thread(
                target=lambda: found.append(
                    [i.key for i in store.search(("users", "ada"), query="heron")]
                ),
                daemon=True,
            )
            reader.start()
            reader.join(30)  # not a speed bound: a search reading em_items waits for good
            blocked = reader.is_alive()
            locker.rollback()
        reader.join()
    assert not blocked, "the search waited for the item rows"
    assert found == [["k"]]


def test_every_write_moves_its_prefixes_versions_and_only_theirs(database_url: str) -> None:
    with EnhancedMemoryStore(database_url=database_url, ttl={"default_ttl": 60}) as store:
        storage = store._storage
        ada, bob = ("users", "ada"), ("users", "bob")
        store.put(ada, "k", {"v": 1})
        store.put(bob, "k", {"v": 1}, ttl=None)
        seen = {p: storage.version(p) for p in [(), ("users",), ada, bob]}

        def moved() -> set[tuple[str, ...]]:
            now = {p: storage.version(p) for p in seen}
            changed = {p for p in seen if now[p] != seen[p]}
            seen.update(now)
            return changed

        store.put(ada, "k2", {"v": 2})
        assert moved() == {(), ("users",), ada}
        assert store.get(ada, "k", refresh_ttl=True) is not None  # a TTL refresh
        assert moved() == {(), ("users",), ada}
        assert store.get(bob, "k", refresh_ttl=True) is not None  # no TTL: nothing written
        assert moved() == set()
        store.delete(bob, "k")
        assert moved() == {(), ("users",), bob}
        store.delete(bob, "k")  # nothing there: nothing written
        assert moved() == set()
        store.put(ada, "gone", {"v": 3}, ttl=0.0001)
        moved()
        time.sleep(0.05)
        assert store.sweep_ttl() == 1
        assert moved() == {(), ("users",), ada}


def test_a_schema_4_database_is_upgraded_in_place(database_url: str) -> None:
    """Items written under schema 4 (a write number per row) gain their namespaces'
    version rows; the upgraded store finds them and versions every write after."""
    import psycopg

    from langchain_enhanced_memory.store.database.schema import MIGRATIONS

    with psycopg.connect(database_url) as conn:  # a database as schema 4 left it
        conn.execute("CREATE TABLE em_schema (version integer NOT NULL)")
        for sql in [s for steps in MIGRATIONS[:4] for s in steps]:
            conn.execute(sql)
        conn.execute("INSERT INTO em_schema VALUES (4)")
        conn.execute(
            "INSERT INTO em_items (namespace, key, value, created_at, updated_at, rev) VALUES"
            " ('users/ada/', 'k', '{\"content\": \"heron by the lake\"}', now(), now(),"
            " nextval('em_item_revs'))"
        )
    with EnhancedMemoryStore(database_url=database_url) as store:
        assert [i.key for i in store.search(("users",), query="heron")] == ["k"]
        store.put(("users", "ada"), "k2", {"content": "a heron again"})
        assert {i.key for i in store.search(("users",), query="heron")} == {"k", "k2"}
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT version FROM em_schema").fetchall() == [(5,)]
        rows = conn.execute("SELECT namespace, version FROM em_item_versions").fetchall()
        assert rows == [("users/ada/", 2)]  # the item counted at the upgrade, the put after
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'em_items'"
        ).fetchall()
        assert ("rev",) not in columns
        assert conn.execute("SELECT to_regclass('em_item_revs')").fetchone() == (None,)
