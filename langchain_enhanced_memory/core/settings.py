"""Every tunable constant, in one frozen object of frozen groups.

Field defaults are the measured default recipe: ``MemorySettings()`` is what
a user gets. A ``profile`` is a preset of fields (see :data:`PROFILES`) laid
under the fields the caller sets: ``MemorySettings(profile="original")``
replays the original OpenClaw "enhanced-memory" skill with its own constants,
``bm25`` and ``vector`` are single-signal baselines, and an explicit field
always wins over the preset. Fields are set by their flat names and read
through their group (:mod:`.settings_groups`): ``MemorySettings(bm25_b=0.6)``,
``settings.ranking.bm25_b``.

Plain dataclasses, not pydantic models: every one-shot ``search`` process
imports this module, and pydantic's import and model build cost it more than
its search (docs/benchmarks.md, "Every path users take").
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from .errors import SettingsError
from .settings_groups import (
    CORE_FILES,
    FIELD_GROUPS,
    GROUPS,
    ChunkerSettings,
    CrossrefSettings,
    DiscoverySettings,
    EmbeddingSettings,
    FusionWeights,
    LogSettings,
    OutputSettings,
    RankingSettings,
    TranscriptSettings,
    VectorSettings,
    _checked,
    _spec,
)

__all__ = ["CORE_FILES", "FIELD_GROUPS", "PROFILES", "FusionWeights", "MemorySettings"]

Profile = Literal["default", "original", "bm25", "vector"]
PROFILE_NAMES: tuple[str, ...] = ("default", "original", "bm25", "vector")


@dataclass(frozen=True, init=False)
class MemorySettings:
    """Settings of discovery, chunking, indexing and scoring, one group a concern.

    The field defaults are the default recipe (docs/benchmarks.md, "Quality", says how each
    was chosen); ``profile`` lays a preset under the fields you set. Build one
    with flat keywords (``MemorySettings(profile="original", prf_enabled=False)``),
    read a field through its group (``settings.ranking.prf_enabled``) and change
    one with :meth:`replace`; either checks every field.

    Raises:
        SettingsError: An unknown field, or a value of the wrong type, out of
            bounds or not one of its choices.
    """

    profile: Profile = _spec("default", choices=PROFILE_NAMES)
    #: which files are memory: include, exclude, session_dirs, openclaw_sessions
    discovery: DiscoverySettings = DiscoverySettings()
    #: session_window, session_extras, session_prior
    transcripts: TranscriptSettings = TranscriptSettings()
    #: chunking, max_header_level, min/max_chunk_chars, max_list_chars
    chunker: ChunkerSettings = ChunkerSettings()
    #: embed_headers, chunk_vectors, the embedder's batches, retries and threads
    embedding: EmbeddingSettings = EmbeddingSettings()
    #: vector_norm, line_vector_share, line_candidates, the scan's threads and rows
    vectors: VectorSettings = VectorSettings()
    #: BM25, date routing and boosts, fusion weights, pseudo-relevance feedback
    ranking: RankingSettings = RankingSettings()
    #: snippet_chars
    output: OutputSettings = OutputSettings()
    #: log_queries, query_log_max
    logs: LogSettings = LogSettings()
    #: cross-references and graph neighbours
    crossref: CrossrefSettings = CrossrefSettings()

    def __init__(self, **values: Any) -> None:
        """Settings from flat keywords: the profile's preset, then ``values``, then the defaults."""
        preset = PROFILES.get(values.get("profile", "default"))
        if preset is None:
            names = ", ".join(PROFILE_NAMES)
            raise SettingsError(f"must be one of {names}, got {values['profile']!r}", "profile")
        given = {**preset, **values}
        profile = given.pop("profile", "default")
        unknown = sorted(given.keys() - FIELD_GROUPS.keys())
        if unknown:
            name = unknown[0]
            if GROUPS.keys() <= given.keys():  # every group: what dataclasses.replace passes
                raise SettingsError(
                    "dataclasses.replace is not supported: use settings.replace(field=...)",
                    "settings",
                )
            if name in GROUPS:
                raise SettingsError(
                    "is a group: set its fields by name (settings.replace(field=...), "
                    "--set field=...)",
                    name,
                )
            raise SettingsError("is not a known setting", name)
        by_group: dict[str, dict[str, Any]] = {name: {} for name in GROUPS}
        for name, value in given.items():
            by_group[FIELD_GROUPS[name]][name] = value
        object.__setattr__(self, "profile", _checked(fields(self)[0], profile))  # the first
        for name, group in GROUPS.items():
            object.__setattr__(self, name, group(**by_group[name]))

    @classmethod
    def of(cls, value: Any) -> MemorySettings:
        """Settings from an instance or a dict of fields (a config, a pydantic field).

        Raises:
            SettingsError: Neither, or a dict with an unknown or bad field.
        """
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise SettingsError("must be a MemorySettings or a dict of its fields", "settings")
        return cls(**value)

    def replace(self, **changes: Any) -> MemorySettings:
        """These settings with ``changes`` (flat keywords), checked as when made.

        Raises:
            SettingsError: An unknown field, a bad value, or ``profile``: a profile
                is a preset of the fields not given, chosen when settings are made.
        """
        if "profile" in changes:
            raise SettingsError(
                "is chosen when settings are made: MemorySettings(profile=...)", "profile"
            )
        flat = {name: getattr(getattr(self, group), name) for name, group in FIELD_GROUPS.items()}
        return MemorySettings(profile=self.profile, **{**flat, **changes})

    if not TYPE_CHECKING:  # mypy keeps refusing flat reads; a user is told where they went

        def __getattr__(self, name: str) -> Any:
            group = FIELD_GROUPS.get(name)
            if group is None:
                raise AttributeError(f"'MemorySettings' object has no attribute {name!r}")
            raise AttributeError(f"MemorySettings reads {name} as settings.{group}.{name}")


#: The original skill's constants and algorithm (SPEC.md): its header chunks,
#: substring overlap, date parser, raw cosines, weights and PRF.
ORIGINAL: dict[str, Any] = {
    "chunking": "original",
    "lexical": "substring",
    "date_parser": "original",
    "vector_norm": "raw",
    "embed_headers": False,
    "line_vector_share": 0.0,
    "weights": FusionWeights(vector=0.4, keyword=0.25, header=0.1, filepath=0.25),
    "date_prior": 0.0,
    "prf_enabled": True,
    "bm25_b": 0.75,
    "phrase_weight": 0.0,
}

# Textbook single signals for the baselines: BM25 with Lucene's b and no
# phrase pairs, the raw cosine of the bare chunk, nothing else.
_SINGLE_SIGNAL: dict[str, Any] = {
    "vector_norm": "raw",
    "embed_headers": False,
    "line_vector_share": 0.0,
    "bm25_b": 0.75,
    "phrase_weight": 0.0,
    "date_routing": False,
    "prf_enabled": False,
    "adaptive_keyword_threshold": 0.0,
}

#: Presets applied under the fields a caller sets (``default`` is the field defaults).
PROFILES: dict[str, dict[str, Any]] = {
    "default": {},
    "original": ORIGINAL,
    "bm25": {**_SINGLE_SIGNAL, "weights": FusionWeights(vector=0, keyword=1, header=0, filepath=0)},
    "vector": {
        **_SINGLE_SIGNAL,
        "weights": FusionWeights(vector=1, keyword=0, header=0, filepath=0),
    },
}
