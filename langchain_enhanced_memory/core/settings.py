"""Every tunable constant in one pydantic model.

Field defaults are the measured default recipe: ``MemorySettings()`` is what
a user gets. A ``profile`` is a preset of fields (see :data:`PROFILES`) laid
under the fields the caller sets: ``MemorySettings(profile="original")``
replays the original OpenClaw "enhanced-memory" skill with its own constants,
``bm25`` and ``vector`` are single-signal baselines, and an explicit field
always wins over the preset.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Profile = Literal["default", "original", "bm25", "vector"]
PROFILE_NAMES: tuple[str, ...] = ("default", "original", "bm25", "vector")

CORE_FILES: tuple[str, ...] = (
    "MEMORY.md",
    "memory.md",
    "AGENTS.md",
    "USER.md",
    "SOUL.md",
    "research.md",
)


class FusionWeights(BaseModel):
    """Linear weights of the four signals."""

    model_config = ConfigDict(frozen=True)

    # benchmarks/tune.py: best on all five dev workspaces (held-out 0.855), header 0.1 kept
    vector: float = 0.25
    keyword: float = 0.25
    header: float = 0.1
    filepath: float = 0.25


class MemorySettings(BaseModel):
    """Settings of discovery, chunking, indexing and scoring.

    The field defaults are the default recipe (README "Quality" says how each
    was chosen); ``profile`` lays a preset under the fields you set.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: Profile = "default"

    # --- recipe switches (each one is a line of the ablation in the README) ---
    chunking: Literal["sections", "original"] = Field(
        "sections",
        description="sections: fence-aware, header-only sections folded; original: every header",
    )
    lexical: Literal["bm25", "substring"] = Field(
        "bm25", description="bm25: whole stemmed terms; substring: the original's overlap"
    )
    date_routing: bool = True
    date_parser: Literal["default", "original"] = "default"
    vector_norm: Literal["minmax", "raw"] = Field(
        "minmax",
        description="minmax rescales cosines per query, so embedders with narrow cosine bands fuse",
    )
    embed_headers: bool = Field(True, description="embed the header chain with the chunk")
    line_vector_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="share of the vector signal taken by a chunk's best-matching line"
        " (each line is embedded too); 0 embeds chunks only, as the original did",
    )
    chunk_vectors: Literal["lines", "embedded"] = Field(
        "lines",
        description="lines: a chunk with two or more embedded lines takes the mean of their"
        " vectors instead of a second embedding of the same text (a third of the model time;"
        ' README "The first query never waits"); embedded: chunk texts are embedded too.'
        " Chunks always embed their own text when line_vector_share is 0",
    )
    scan_threads: int = Field(
        0,
        ge=0,
        description="threads of the exact vector scan of a workspace of 100k chunks or more"
        " (0: one per core): 12 instead of 19 ms at 1M on an idle 2-core machine, about"
        " even when the other core is busy",
    )
    line_candidates: int = Field(
        200, ge=1, description="best chunks by the other signals whose lines are scored"
    )
    prf_reembed: bool = Field(
        True, description="PRF re-embeds the expanded query (the original did)"
    )

    # --- discovery -------------------------------------------------------
    include: tuple[str, ...] = ("memory/**/*.md",) + CORE_FILES
    exclude: tuple[str, ...] = ()

    # --- chunking --------------------------------------------------------
    max_header_level: int = Field(4, ge=1, le=6)
    min_chunk_chars: int = Field(20, ge=0, description="chunks this short or shorter are dropped")
    max_chunk_chars: int = Field(4000, ge=200, description="longer sections split at blank lines")

    # --- embedding -------------------------------------------------------
    embed_batch_size: int = Field(20, ge=1)
    embed_concurrency: int = Field(
        4, ge=1, description="batches in flight at once (hides per-request latency)"
    )
    embed_max_chars: int = Field(2000, ge=100)
    embed_timeout_s: float = Field(30.0, gt=0)
    embed_retries: int = Field(3, ge=0)
    local_threads: int = Field(
        0, ge=0, description="threads of the local model (0: one per core; see local_model.py)"
    )
    embed_inline_max: int = Field(
        64,
        ge=0,
        description="a search embeds up to this many missing texts before answering (an"
        " edit's); more are embedded in the background or by `index`, answering keyword-only",
    )

    # --- fusion ----------------------------------------------------------
    fusion: Literal["linear", "rrf"] = Field(
        "linear",
        description="linear: weighted sum of the signals; rrf: reciprocal rank fusion of the"
        " signals with a non-zero weight (a baseline: it ranks below BM25 alone on LoCoMo)",
    )
    rrf_k: float = Field(60.0, gt=0)
    weights: FusionWeights = FusionWeights()
    adaptive_keyword_threshold: float = 0.1
    adaptive_weights: FusionWeights = FusionWeights(
        vector=0.85, keyword=0.05, header=0.05, filepath=0.05
    )

    # --- temporal routing -----------------------------------------------
    temporal_boost: float = 3.0
    range_boost: float = 1.5
    date_prior: float = Field(0.05, ge=0, description="added per unit of boost above 1")

    # --- pseudo-relevance feedback (off: it did not pay, README "Quality") --
    prf_enabled: bool = False
    prf_threshold: float = 0.45
    prf_top_docs: int = 3
    prf_max_terms: int = 5
    prf_min_term_len: int = 4
    prf_min_count: int = 2

    # --- BM25 -------------------------------------------------------------
    bm25_k1: float = 1.2
    bm25_b: float = 0.5
    phrase_weight: float = Field(
        0.5, ge=0, description="weight of BM25 over adjacent term pairs, added to the keyword score"
    )

    # --- output ----------------------------------------------------------
    snippet_chars: int = Field(700, ge=1)

    # --- query/access logs (read by salience) ----------------------------
    log_queries: bool = Field(True, description="env ENHANCED_MEMORY_LOG=0 turns it off")
    query_log_max: int = Field(1000, ge=1, description="newest query-log entries kept")

    # --- cross-references -------------------------------------------------
    crossref_representatives: int = Field(5, ge=1)
    crossref_threshold: float = 0.75
    crossref_calibrate: float | None = Field(
        2.0, description="raise the threshold to median + this many robust SDs of cosines"
    )
    crossref_refs_per_chunk: int = Field(5, ge=1)
    crossref_files_per_file: int = Field(10, ge=1)
    related_per_hit: int = Field(3, ge=0, description="'related' chunks listed per hit")
    graph_neighbors: bool = Field(False, description="add graph neighbours of top hits")
    graph_neighbor_top: int = Field(3, ge=1)
    graph_neighbor_weight: float = Field(0.5, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _apply_profile(cls, data: Any) -> Any:
        if isinstance(data, dict):
            preset = PROFILES.get(data.get("profile", "default"), {})
            return {**preset, **data}
        return data


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
