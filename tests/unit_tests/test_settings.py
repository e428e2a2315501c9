"""Settings say what you get: field defaults are the default recipe, profiles are presets."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import Field, asdict, fields
from pathlib import Path
from typing import Any

import pytest

from langchain_enhanced_memory.core.errors import SettingsError
from langchain_enhanced_memory.core.original import OriginalChunker, OriginalDates, SubstringLexical
from langchain_enhanced_memory.core.recipe import (
    BM25Lexical,
    NoDates,
    SectionChunker,
    SectionDates,
    recipe,
)
from langchain_enhanced_memory.core.settings import (
    PROFILE_NAMES,
    PROFILES,
    FusionWeights,
    MemorySettings,
)
from langchain_enhanced_memory.core.settings_groups import FIELD_GROUPS, GROUPS


def test_field_defaults_are_the_default_profile() -> None:
    assert MemorySettings() == MemorySettings(profile="default")
    assert PROFILES["default"] == {}
    s = MemorySettings()
    r, v = s.ranking, s.vectors
    assert r.weights == FusionWeights(vector=0.25, keyword=0.25, header=0.1, filepath=0.25)
    assert (v.line_vector_share, v.vector_norm, r.prf_enabled) == (0.5, "minmax", False)
    assert (r.bm25_b, r.phrase_weight, s.embedding.embed_headers) == (0.5, 0.5, True)


def test_original_preset_holds_the_original_constants() -> None:
    # SPEC.md section 2: weights 0.4/0.25/0.1/0.25, PRF, substring overlap, header chunks.
    o = MemorySettings(profile="original")
    r, v, e = o.ranking, o.vectors, o.embedding
    assert r.weights == FusionWeights(vector=0.4, keyword=0.25, header=0.1, filepath=0.25)
    assert r.adaptive_weights == FusionWeights(
        vector=0.85, keyword=0.05, header=0.05, filepath=0.05
    )
    assert (o.chunker.chunking, r.lexical, r.date_parser) == ("original", "substring", "original")
    assert (r.prf_enabled, r.prf_threshold, r.temporal_boost) == (True, 0.45, 3.0)
    assert (v.line_vector_share, e.embed_headers, v.vector_norm) == (0.0, False, "raw")
    assert (o.chunker.min_chunk_chars, e.embed_batch_size, e.embed_max_chars) == (20, 20, 2000)


@pytest.mark.parametrize("profile", ["bm25", "vector"])
def test_baselines_are_single_signals(profile: str) -> None:
    s = MemorySettings(profile=profile)
    r = s.ranking
    assert sorted(asdict(r.weights).values()) == [0, 0, 0, 1]
    assert not r.date_routing and not r.prf_enabled and r.adaptive_keyword_threshold == 0
    assert (r.bm25_b, r.phrase_weight, s.vectors.line_vector_share) == (0.75, 0.0, 0.0)


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_each_preset_field_lands_in_its_group(profile: str) -> None:
    s = MemorySettings(profile=profile)
    for name, value in PROFILES[profile].items():
        assert getattr(getattr(s, FIELD_GROUPS[name]), name) == value, name


def test_an_explicit_field_beats_the_preset() -> None:
    r = MemorySettings(profile="original", prf_enabled=False, temporal_boost=5).ranking
    assert not r.prf_enabled and r.temporal_boost == 5 and r.lexical == "substring"


@pytest.mark.parametrize(
    ("values", "field", "fragment"),
    [
        ({"profile": "nope"}, "profile", "must be one of default, original"),
        ({"line_vector_share": 2}, "line_vector_share", "must be at most 1, got 2.0"),
        ({"max_header_level": 0}, "max_header_level", "must be at least 1"),
        ({"embed_timeout_s": 0}, "embed_timeout_s", "must be more than 0"),
        ({"no_such_field": 1}, "no_such_field", "is not a known setting"),
        ({"chunking": "words"}, "chunking", "must be one of sections, original"),
        ({"prf_enabled": "yes"}, "prf_enabled", "must be true or false"),
        ({"line_candidates": 2.5}, "line_candidates", "must be an integer"),
        ({"bm25_k1": "1.2"}, "bm25_k1", "must be a number"),
        ({"include": "memory/*.md"}, "include", "must be a list of strings"),
        ({"weights": {"vector": 1, "bogus": 0}}, "weights", "has no weight 'bogus'"),
        ({"weights": {"vector": "high"}}, "weights.vector", "must be a number"),
    ],
)
def test_bad_values_are_refused_naming_the_field(values: dict, field: str, fragment: str) -> None:
    with pytest.raises(SettingsError) as err:
        MemorySettings(**values)
    assert err.value.field == field and fragment in err.value.problem
    assert isinstance(err.value, ValueError)


def test_values_are_held_in_the_fields_types() -> None:
    s = MemorySettings(
        bm25_k1=2,
        include=["notes/*.md"],
        weights={"vector": 1, "keyword": 0},
        crossref_calibrate=None,
    )
    assert s.ranking.bm25_k1 == 2.0 and isinstance(s.ranking.bm25_k1, float)
    assert s.discovery.include == ("notes/*.md",) and s.crossref.crossref_calibrate is None
    assert s.ranking.weights == FusionWeights(vector=1.0, keyword=0.0, header=0.1, filepath=0.25)
    assert hash(s) == hash(s.replace())  # frozen and hashable: the recipe cache keys on it


def test_replace_checks_the_new_value_and_keeps_the_rest() -> None:
    o = MemorySettings(profile="original")
    changed = o.replace(prf_enabled=False)
    assert (
        not changed.ranking.prf_enabled
        and changed.ranking.lexical == "substring"
        and o.ranking.prf_enabled
    )
    with pytest.raises(AttributeError):
        o.ranking.prf_enabled = False  # type: ignore[misc]


def test_replace_refuses_what_making_would() -> None:
    s = MemorySettings()
    for changes, field in [
        ({"line_vector_share": -1}, "line_vector_share"),
        ({"no_such_field": 1}, "no_such_field"),
        ({"profile": "original"}, "profile"),  # a preset is laid under unset fields only
    ]:
        with pytest.raises(SettingsError) as err:
            s.replace(**changes)
        assert err.value.field == field
    with pytest.raises(SettingsError) as err:
        dataclasses.replace(s, bm25_b=0.6)  # the groups come back as keywords; codemod: keep
    assert "dataclasses.replace is not supported" in err.value.problem
    assert err.value.field == "settings"  # not the first group's name, which the user never gave


def _other(f: Field[Any]) -> Any:
    """A value field ``f`` holds that is not its default."""
    default, meta = f.default, f.metadata
    if meta.get("choices"):
        return next(c for c in meta["choices"] if c != default)
    if isinstance(default, bool):
        return not default
    if isinstance(default, FusionWeights):
        return FusionWeights(vector=1, keyword=0, header=0, filepath=0)
    if isinstance(default, tuple):
        return ("notes/*.md",)
    step = 1 if isinstance(default, int) else 0.25
    if meta.get("le") is not None and default + step > meta["le"]:
        step = -step
    return default + step


def test_field_names_are_unique_and_apart_from_the_groups() -> None:
    names = [f.name for group in GROUPS.values() for f in fields(group)]
    assert len(names) == len(set(names)) == len(FIELD_GROUPS)
    # a group named as a field would turn an old flat read into a silent comparison
    assert not set(names) & {*GROUPS, "profile"}


@pytest.mark.parametrize("name", sorted(FIELD_GROUPS))
def test_every_flat_keyword_lands_in_exactly_one_group(name: str) -> None:
    group = FIELD_GROUPS[name]
    value = _other(next(f for f in fields(GROUPS[group]) if f.name == name))
    s, default = MemorySettings(**{name: value}), MemorySettings()
    assert [g for g in GROUPS if getattr(s, g) != getattr(default, g)] == [group]
    assert getattr(getattr(s, group), name) == value
    assert s.replace(**{name: getattr(getattr(default, group), name)}) == default


def test_a_flat_read_says_where_the_field_went() -> None:
    with pytest.raises(AttributeError, match=r"settings\.ranking\.temporal_boost"):
        MemorySettings().temporal_boost  # type: ignore[attr-defined]  # noqa: B018  codemod: keep
    with pytest.raises(AttributeError, match="no_such_field"):
        MemorySettings().no_such_field  # type: ignore[attr-defined]  # noqa: B018


def test_equal_settings_are_one_cache_key() -> None:
    a, b = MemorySettings(bm25_b=0.6), MemorySettings().replace(bm25_b=0.6)
    assert a == b and hash(a) == hash(b) and len({a, b, MemorySettings()}) == 2


def test_recipe_strategies_are_chosen_once_from_the_settings() -> None:
    default = recipe(MemorySettings())
    assert isinstance(default.chunker, SectionChunker)
    assert isinstance(default.dates, SectionDates) and isinstance(default.lexical, BM25Lexical)
    original = recipe(MemorySettings(profile="original"))
    assert isinstance(original.chunker, OriginalChunker)
    assert isinstance(original.dates, OriginalDates)
    assert isinstance(original.lexical, SubstringLexical)
    assert isinstance(recipe(MemorySettings(date_routing=False)).dates, NoDates)
    assert recipe(MemorySettings()) is default  # settings are frozen and hashable: cached


def test_the_docs_list_every_field_in_its_group() -> None:
    text = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = text.split("### The groups", 1)[1].split("\n\n", 2)[1]
    listed = {
        name: row.split("|")[1].strip(" `")
        for row in table.splitlines()[2:]
        for name in re.findall(r"`(\w+)`", row.split("|")[3])
    }
    assert listed == FIELD_GROUPS
