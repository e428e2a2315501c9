"""Settings say what you get: field defaults are the default recipe, profiles are presets."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

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
    assert s.weights == FusionWeights(vector=0.25, keyword=0.25, header=0.1, filepath=0.25)
    assert (s.line_vector_share, s.vector_norm, s.prf_enabled) == (0.5, "minmax", False)
    assert (s.bm25_b, s.phrase_weight, s.embed_headers) == (0.5, 0.5, True)


def test_original_preset_holds_the_original_constants() -> None:
    # SPEC.md section 2: weights 0.4/0.25/0.1/0.25, PRF, substring overlap, header chunks.
    o = MemorySettings(profile="original")
    assert o.weights == FusionWeights(vector=0.4, keyword=0.25, header=0.1, filepath=0.25)
    assert o.adaptive_weights == FusionWeights(
        vector=0.85, keyword=0.05, header=0.05, filepath=0.05
    )
    assert (o.chunking, o.lexical, o.date_parser) == ("original", "substring", "original")
    assert (o.prf_enabled, o.prf_threshold, o.temporal_boost) == (True, 0.45, 3.0)
    assert (o.line_vector_share, o.embed_headers, o.vector_norm) == (0.0, False, "raw")
    assert (o.min_chunk_chars, o.embed_batch_size, o.embed_max_chars) == (20, 20, 2000)


@pytest.mark.parametrize("profile", ["bm25", "vector"])
def test_baselines_are_single_signals(profile: str) -> None:
    s = MemorySettings(profile=profile)
    weights = s.weights.model_dump()
    assert sorted(weights.values()) == [0, 0, 0, 1]
    assert not s.date_routing and not s.prf_enabled and s.adaptive_keyword_threshold == 0
    assert (s.bm25_b, s.phrase_weight, s.line_vector_share) == (0.75, 0.0, 0.0)


def test_an_explicit_field_beats_the_preset() -> None:
    s = MemorySettings(profile="original", prf_enabled=False, temporal_boost=5)
    assert not s.prf_enabled and s.temporal_boost == 5 and s.lexical == "substring"


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValidationError):
        MemorySettings(profile="nope")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        MemorySettings(line_vector_share=2)
    with pytest.raises(ValidationError):
        MemorySettings(no_such_field=1)  # type: ignore[call-arg]


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
