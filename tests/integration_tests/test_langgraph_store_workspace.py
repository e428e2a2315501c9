"""EnhancedMemoryStore over a workspace: items are markdown notes a person reads, edits and
searches with the rest of the memory; a delete leaves no byte of the item's text behind."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from langchain_enhanced_memory import EnhancedMemoryStore, ItemError
from langchain_enhanced_memory.store.items import item_path
from tests.cli_run import run_cli
from tests.fakes import WordEmbeddings
from tests.workspaces import copy_workspace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
TOKEN = "zebra-quartz-7731"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return copy_workspace(EXAMPLE, tmp_path / "ws")


def files_holding(folder: Path, text: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``text`` (any letter case)."""
    needle = text.lower().encode("utf-8")
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and needle in p.read_bytes().lower()
    )


def test_an_item_is_a_note_a_person_reads_and_edits(workspace: Path) -> None:
    with EnhancedMemoryStore(workspace) as store:
        store.put(("users", "ada"), "coffee", {"content": "Ada takes her coffee black", "n": 2})
        note = workspace / "memory/items/users.ada/coffee.md"
        text = note.read_text(encoding="utf-8")
        assert "# coffee\n\n## content\n\nAda takes her coffee black\n" in text
        assert "## n\n\n```json\n2\n```" in text
        # A person edits the section and adds one: the next get returns what they wrote.
        note.write_text(
            text.replace("Ada takes her coffee black", "Ada now drinks oat flat whites")
            + "\n## mood\n\nsleepy\n",
            encoding="utf-8",
        )
        item = store.get(("users", "ada"), "coffee")
        assert item is not None
        assert item.value == {"content": "Ada now drinks oat flat whites", "n": 2, "mood": "sleepy"}
        assert [i.key for i in store.search(("users",), query="oat flat white")] == ["coffee"]


def test_names_are_encoded_for_files_and_read_back_exactly(workspace: Path) -> None:
    odd = ("Ünïcode labels", "with/slash", "a" * 300, "x", "y", "z")
    key = "../../etc/passwd and a key: ünïcode " + "k" * 300
    with EnhancedMemoryStore(workspace) as store:
        store.put(odd, key, {"v": 1})
        store.put(("users",), ".hidden", {"v": 2})
        assert store.get(odd, key).value == {"v": 1}  # type: ignore[union-attr]
        assert store.list_namespaces() == sorted([odd, ("users",)])
        assert [i.key for i in store.search(odd[:2])] == [key]
        assert store.get(("users",), ".hidden").value == {"v": 2}  # type: ignore[union-attr]
    items = workspace / "memory/items"
    names = [p.relative_to(items) for p in items.rglob("*.md")]
    assert len(names) == 2
    for name in names:  # two levels, nothing hidden, no name over the file system's limit
        assert len(name.parts) == 2 and not any(p.startswith(".") for p in name.parts)
        assert all(len(p.encode()) <= 200 for p in name.parts)
    assert (workspace / item_path((("users",), ".hidden"))).name == "%2Ehidden.md"


def test_a_note_that_is_not_an_item_is_never_replaced(workspace: Path) -> None:
    note = workspace / "memory/items/users/plans.md"
    note.parent.mkdir(parents=True)
    note.write_text("# My plans\n\nWritten by hand.\n", encoding="utf-8")
    with EnhancedMemoryStore(workspace) as store:
        with pytest.raises(ItemError, match="not an item"):
            store.put(("users",), "plans", {"content": "overwritten?"})
        assert store.get(("users",), "plans") is None
    assert note.read_text(encoding="utf-8") == "# My plans\n\nWritten by hand.\n"


def test_the_notes_search_sees_items(workspace: Path) -> None:
    with EnhancedMemoryStore(workspace) as store:
        store.put(("users", "ada"), "bike", {"content": f"Ada's bike lock code is {TOKEN}"})
    r = run_cli("search", f"bike lock code {TOKEN}", "--workspace", str(workspace), "--json")
    assert r.returncode == 0, r.stderr
    results = json.loads(r.stdout)["results"]
    assert results[0]["path"] == "memory/items/users.ada/bike.md"
    assert TOKEN in results[0]["snippet"]
    # The item's description line is no hit of its own, even for its namespace's words.
    r = run_cli("search", "users ada bike created", "--workspace", str(workspace), "--json")
    ours = [x for x in json.loads(r.stdout)["results"] if x["path"].startswith("memory/items/")]
    assert ours and all(x["snippet"].startswith("# bike") for x in ours)

    from langchain_enhanced_memory import EnhancedMemoryRetriever

    docs = EnhancedMemoryRetriever(workspace=str(workspace), embedder="none").invoke(TOKEN)
    assert docs[0].metadata["path"] == "memory/items/users.ada/bike.md"


def test_delete_leaves_no_byte_of_the_text(workspace: Path) -> None:
    embeddings = WordEmbeddings(dim=32)
    with EnhancedMemoryStore(workspace, index={"embed": embeddings, "dims": 32}) as store:
        store.put(("users", "ada"), "secret", {"content": f"The vault code is {TOKEN}"})
        store.put(("users", "ada"), "other", {"content": "Ada likes herons"})
        r = run_cli("index", "--workspace", str(workspace))
        assert r.returncode == 0, r.stderr
        search = run_cli("search", TOKEN, "--workspace", str(workspace), "--json")
        assert TOKEN in search.stdout  # now in the index and its query log
        assert files_holding(workspace, TOKEN) != []
        store.delete(("users", "ada"), "secret")
        assert store.get(("users", "ada"), "secret") is None
        assert store.search(("users",), query=TOKEN) == []
        assert store.get(("users", "ada"), "other") is not None
    assert files_holding(workspace, TOKEN) == []  # notes, index, vectors, logs
    vectors = next(workspace.rglob("items.sqlite"))
    assert stat.S_IMODE(vectors.stat().st_mode) == 0o600  # as private as the index


def test_a_store_is_told_plainly_what_is_wrong(tmp_path: Path) -> None:
    from langchain_enhanced_memory import SettingsError

    with pytest.raises(SettingsError, match="is not a folder"):
        EnhancedMemoryStore(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(SettingsError, match="one of workspace and database_url"):
        EnhancedMemoryStore()
    with pytest.raises(SettingsError, match="index.fields"):
        EnhancedMemoryStore(tmp_path, index={"fields": "content"})


def test_a_section_edited_by_hand_gets_its_vector_once(workspace: Path) -> None:
    embeddings = WordEmbeddings(dim=32)
    with EnhancedMemoryStore(workspace, index={"embed": embeddings, "dims": 32}) as store:
        store.put(("users", "ada"), "pet", {"content": "Ada has a cat"})
        note = workspace / "memory/items/users.ada/pet.md"
        note.write_text(note.read_text().replace("Ada has a cat", "Ada adopted a greyhound"))
        assert store.search(("users",), query="greyhound")[0].key == "pet"
        assert embeddings.texts[-1] == "Ada adopted a greyhound"
    calls = embeddings.calls
    with EnhancedMemoryStore(workspace, index={"embed": embeddings, "dims": 32}) as store:
        assert store.search(("users",), query="greyhound")[0].key == "pet"
    assert embeddings.calls == calls  # the vector was kept


def test_a_put_racing_a_first_put_keeps_its_created_at(workspace: Path) -> None:
    from dataclasses import replace

    from langchain_enhanced_memory.store.items import WorkspaceItems

    with EnhancedMemoryStore(workspace) as store:
        store.put(("users",), "k", {"v": 1})
        first = store.get(("users",), "k")
    assert first is not None
    # What a second writer that read before the first one's file existed writes: its own
    # created_at. The file's, read under the notes' lock, is kept.
    items = WorkspaceItems(workspace)
    [stored] = items.under(("users",))
    late = replace(stored, value={"v": 2}, created_at=first.created_at.replace(year=2030))
    items.put_many([late], [])
    [kept] = items.under(("users",))
    assert kept.value == {"v": 2} and kept.created_at == first.created_at
    items.close()


def test_a_ttl_refresh_on_read_keeps_text_written_above_the_sections(workspace: Path) -> None:
    with EnhancedMemoryStore(workspace, ttl={"default_ttl": 60}) as store:
        store.put(("users",), "tea", {"content": "Ada likes green tea"})
        note = workspace / item_path((("users",), "tea"))
        text = note.read_text(encoding="utf-8")
        edited = text.replace("# tea\n", "# Ada's tea\r\n\nA note by hand, above the sections.\n")
        note.write_bytes(edited.encode("utf-8"))
        before = store.get(("users",), "tea", refresh_ttl=False)
        assert before is not None
        item = store.get(("users",), "tea", refresh_ttl=True)
        assert item is not None and item.value == {"content": "Ada likes green tea"}
        after = note.read_bytes().decode("utf-8")
    assert after.split("<!-- enhanced-memory item ")[0] == edited.split("<!-- enhanced-memory")[0]
    assert after != edited  # the expiry moved on, in the description line only


@pytest.mark.parametrize(
    ("fields", "value", "indexed"),
    [
        (["meta.bio"], {"meta": {"bio": f"Ada keeps bees, {TOKEN}"}}, f"Ada keeps bees, {TOKEN}"),
        (["tags[*]"], {"tags": [f"beekeeper {TOKEN}", "x"]}, f"beekeeper {TOKEN}"),
    ],
)
def test_delete_purges_the_texts_the_stores_fields_index(
    workspace: Path, fields: list[str], value: dict, indexed: str
) -> None:
    from langchain_enhanced_memory.core.items import text_hash

    index = {"fields": fields, "embed": WordEmbeddings(dim=32), "dims": 32}
    with EnhancedMemoryStore(workspace, index=index) as store:
        store.put(("users", "ada"), "bio", value)
        store.put(("users", "ada"), "other", {"meta": {"bio": "herons"}, "tags": ["herons"]})
        assert store.search(("users",), query=TOKEN)[0].key == "bio"
        kept = text_hash(indexed)  # the vector is kept under the text's hash
        assert files_holding(workspace, kept) != []
        store.delete(("users", "ada"), "bio")
        assert store.search(("users",), query="herons")[0].key == "other"
    assert files_holding(workspace, TOKEN) == []  # notes, index, logs
    assert files_holding(workspace, kept) == []  # items.sqlite and its -wal
