"""Settings say what you get: field defaults are the default recipe, profiles are presets."""

from __future__ import annotations

from dataclasses import asdict

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
from langchain_enhanced_memory.core.settings import PROFILES, FusionWeights, MemorySettings


def test_field_defaults_are_the_default_profile() -> None:
    assert MemorySettings() == MemorySettings(profile="default")
    assert PROFILES["default"] == {}
    s = MemorySettings()
    assert s.ranking.weights == FusionWeights(vector=0.25, keyword=0.25, header=0.1, filepath=0.25)
    assert (s.vectors.line_vector_share, s.vectors.vector_norm, s.ranking.prf_enabled) == (
        0.5,
        "minmax",
        False,
    )
    assert (s.ranking.bm25_b, s.ranking.phrase_weight, s.embedding.embed_headers) == (
        0.5,
        0.5,
        True,
    )


def test_original_preset_holds_the_original_constants() -> None:
    # SPEC.md section 2: weights 0.4/0.25/0.1/0.25, PRF, substring overlap, header chunks.
    o = MemorySettings(profile="original")
    assert o.ranking.weights == FusionWeights(vector=0.4, keyword=0.25, header=0.1, filepath=0.25)
    assert o.ranking.adaptive_weights == FusionWeights(
        vector=0.85, keyword=0.05, header=0.05, filepath=0.05
    )
    assert (o.chunker.chunking, o.ranking.lexical, o.ranking.date_parser) == (
        "original",
        "substring",
        "original",
    )
    assert (o.ranking.prf_enabled, o.ranking.prf_threshold, o.ranking.temporal_boost) == (
        True,
        0.45,
        3.0,
    )
    assert (o.vectors.line_vector_share, o.embedding.embed_headers, o.vectors.vector_norm) == (
        0.0,
        False,
        "raw",
    )
    assert (
        o.chunker.min_chunk_chars,
        o.embedding.embed_batch_size,
        o.embedding.embed_max_chars,
    ) == (20, 20, 2000)


@pytest.mark.parametrize("profile", ["bm25", "vector"])
def test_baselines_are_single_signals(profile: str) -> None:
    s = MemorySettings(profile=profile)
    weights = asdict(s.ranking.weights)
    assert sorted(weights.values()) == [0, 0, 0, 1]
    assert (
        not s.ranking.date_routing
        and not s.ranking.prf_enabled
        and s.ranking.adaptive_keyword_threshold == 0
    )
    assert (s.ranking.bm25_b, s.ranking.phrase_weight, s.vectors.line_vector_share) == (
        0.75,
        0.0,
        0.0,
    )


def test_an_explicit_field_beats_the_preset() -> None:
    s = MemorySettings(profile="original", prf_enabled=False, temporal_boost=5)
    assert (
        not s.ranking.prf_enabled
        and s.ranking.temporal_boost == 5
        and s.ranking.lexical == "substring"
    )


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
    with pytest.raises(SettingsError):
        o.replace(line_vector_share=-1)
    with pytest.raises(AttributeError):
        o.prf_enabled = False  # type: ignore[misc]


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
