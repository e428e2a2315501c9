"""The LangGraph store's pure pieces: the markdown codec, names, namespaces, filters, sections."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_enhanced_memory.core.errors import ItemError
from langchain_enhanced_memory.core.items import (
    StoredItem,
    check_namespace,
    decode_name,
    encode_name,
    matches,
    namespace_matches,
    namespace_path,
    sections,
    snapshot_of,
)
from langchain_enhanced_memory.core.itemtext import parse_item, render_item

NOW = datetime(2026, 12, 7, 9, 30, tzinfo=timezone.utc)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def _item(value: dict, **kwargs: object) -> StoredItem:
    return StoredItem(("users", "u1"), "k", value, NOW, NOW, **kwargs)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(value=st.dictionaries(st.text(), json_values, max_size=6), key=st.text(min_size=1))
def test_the_markdown_of_an_item_gives_its_value_back_exactly(value: dict, key: str) -> None:
    key = key.replace("\x00", "")
    if not key:
        return
    item = StoredItem(
        ("a b", "ü"), key, value, NOW, NOW + timedelta(seconds=1), NOW, 1.5, ["x.y"], model="m"
    )
    back = parse_item(render_item(item))
    assert back == item
    assert list(back.value) == list(value)  # the fields keep their order


def test_strings_a_person_can_edit_are_written_bare() -> None:
    text = render_item(_item({"content": "line one\n\nline two", "tricky": "# a header"}))
    assert "## content\n\nline one\n\nline two\n" in text
    assert '## tricky\n\n```json\n"# a header"\n```' in text


def test_a_missing_or_damaged_description_is_refused() -> None:
    with pytest.raises(ItemError, match="not an item"):
        parse_item("# just a note\n")
    with pytest.raises(ItemError, match="damaged"):
        parse_item('# k\n\n<!-- enhanced-memory item {"key": 1} -->\n')


@given(st.text())
def test_names_encode_to_safe_file_names_and_back(name: str) -> None:
    encoded = encode_name(name)
    assert decode_name(encoded) == name
    assert all(c.isascii() and (c.isalnum() or c in "_-%") for c in encoded)


labels = st.lists(
    st.text(min_size=1).filter(lambda s: "." not in s and "\x00" not in s), max_size=3
)


@given(labels, labels)
def test_a_namespace_path_starts_with_a_prefix_path_exactly_when_it_is_under_it(
    a: list[str], b: list[str]
) -> None:
    under = tuple(b[: len(a)]) == tuple(a) and len(b) >= len(a)
    assert namespace_path(tuple(b)).startswith(namespace_path(tuple(a))) == under


def test_namespaces_are_checked_as_langgraph_checks_them() -> None:
    assert check_namespace(("users", "u1")) == ("users", "u1")
    assert check_namespace((), root=False) == ()
    for bad in [(), ("a.b",), ("",), ("langgraph",), ["users"], ("a", 1)]:
        with pytest.raises(ItemError):
            check_namespace(bad)


def test_match_conditions_with_wildcards() -> None:
    ns = ("a", "b", "c")
    assert namespace_matches(ns, "prefix", ("a", "*"))
    assert not namespace_matches(ns, "prefix", ("b",))
    assert namespace_matches(ns, "suffix", ("*", "c"))
    assert not namespace_matches(("c",), "suffix", ("b", "c"))


def test_filters_compare_as_langgraph_stores_do() -> None:
    value = {"n": 3, "s": "b", "flag": True, "nested": {"x": [1, 2]}}
    assert matches(value, {"n": 3, "nested": {"x": [1, 2]}})
    assert matches(value, {"n": {"$gt": 2, "$lte": 3}, "s": {"$gte": "a"}})
    assert not matches(value, {"n": {"$gt": "2"}})  # a number is not ordered against a string
    assert not matches(value, {"flag": {"$gt": 0}})  # nor is a boolean
    assert matches(value, {"missing": {"$ne": 1}})
    assert not matches(value, {"nested": {"x": [1]}})
    with pytest.raises(ItemError, match="operator"):
        matches(value, {"n": {"$in": [3]}})


def test_sections_are_fields_or_paths() -> None:
    value = {"content": "tea", "meta": {"tags": ["a", "b"]}, "empty": "", "n": None}
    assert sections(value, None) == [("content", "tea"), ("meta", '{"tags": ["a", "b"]}')]
    assert sections(value, ["meta.tags[*]", "meta.tags[-1]", "nope"]) == [
        ("meta.tags[*]", "a"),
        ("meta.tags[*]", "b"),
        ("meta.tags[-1]", "b"),
    ]


def test_a_snapshot_has_a_row_per_section_dated_by_the_item() -> None:
    items = [_item({"content": "tea", "tags": ["x"]}), _item({"content": "coffee"})]
    snap, of_item = snapshot_of(items, None, None)
    assert len(snap) == 3 and of_item.tolist() == [0, 0, 1]
    assert snap.header == ["content", "tags", "content"]
    assert snap.paths == ["users/u1/k"] * 3 and snap.dates == ["2026-12-07"] * 3
    assert snap.start.tolist() == [1, 2, 3]


def test_an_item_delete_takes_the_notes_one_lock() -> None:
    from langchain_enhanced_memory.store import append, items

    # One name, in store.append: a copy could drift, and two writers would not exclude each other.
    assert items.NOTES_LOCK is append.NOTES_LOCK == ".enhanced-memory-notes.lock"
    assert not [v for k, v in vars(items).items() if k != "NOTES_LOCK" and v == append.NOTES_LOCK]
