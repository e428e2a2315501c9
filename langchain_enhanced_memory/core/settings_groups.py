"""The groups of :class:`~.settings.MemorySettings`, one frozen dataclass a concern.

Each group checks its own fields (bounds, choices, types) when it is made, and
a field's name is unique across the groups, so a flat keyword
(``MemorySettings(bm25_b=0.6)``) lands in exactly one of them
(``settings.ranking.bm25_b``). Field defaults are the measured default recipe.
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields
from typing import Any, Literal

from .errors import SettingsError

CORE_FILES: tuple[str, ...] = (
    "MEMORY.md",
    "memory.md",
    "AGENTS.md",
    "USER.md",
    "SOUL.md",
    "research.md",
)


def _spec(
    default: Any,
    *,
    ge: float | None = None,
    le: float | None = None,
    gt: float | None = None,
    choices: tuple[str, ...] = (),
    optional: bool = False,
) -> Any:
    """A field whose value :func:`_checked` holds to these bounds or choices."""
    meta = {"ge": ge, "le": le, "gt": gt, "choices": choices, "optional": optional}
    return field(default=default, metadata=meta)


def _checked(f: Field[Any], value: Any) -> Any:
    """``value`` as field ``f`` holds it (a float from an int, a tuple from a list).

    Raises:
        SettingsError: A value of the wrong type, out of bounds or not a choice.
    """
    meta, default = f.metadata, f.default
    if value is None and meta.get("optional"):
        return None
    kind = type(default)
    if kind is bool and not isinstance(value, bool):
        raise SettingsError("must be true or false", f.name)
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise SettingsError("must be an integer", f.name)
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingsError("must be a number", f.name)
        value = float(value)
    if kind is tuple:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise SettingsError("must be a list of strings", f.name)
        value = tuple(value)
    if kind is FusionWeights:
        value = FusionWeights.of(value, f.name)
    if meta.get("choices") and value not in meta["choices"]:
        raise SettingsError(f"must be one of {', '.join(meta['choices'])}, got {value!r}", f.name)
    if meta.get("ge") is not None and value < meta["ge"]:
        raise SettingsError(f"must be at least {meta['ge']}, got {value}", f.name)
    if meta.get("le") is not None and value > meta["le"]:
        raise SettingsError(f"must be at most {meta['le']}, got {value}", f.name)
    if meta.get("gt") is not None and value <= meta["gt"]:
        raise SettingsError(f"must be more than {meta['gt']}, got {value}", f.name)
    return value


class _Checked:
    """A frozen dataclass that holds each field as :func:`_checked` makes it."""

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            object.__setattr__(self, f.name, _checked(f, getattr(self, f.name)))


@dataclass(frozen=True)
class FusionWeights(_Checked):
    """Linear weights of the four signals."""

    # benchmarks/tune.py: best on all five dev workspaces (held-out 0.855), header 0.1 kept
    vector: float = 0.25
    keyword: float = 0.25
    header: float = 0.1
    filepath: float = 0.25

    @classmethod
    def of(cls, value: Any, name: str = "weights") -> FusionWeights:
        """Weights from an instance or a dict of them (``--set weights={...}``).

        Raises:
            SettingsError: Neither, or a dict with an unknown or bad weight.
        """
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise SettingsError("must be weights: vector, keyword, header, filepath", name)
        unknown = sorted(value.keys() - {f.name for f in fields(cls)})
        if unknown:
            raise SettingsError(f"has no weight {unknown[0]!r}", name)
        try:
            return cls(**value)
        except SettingsError as exc:
            raise SettingsError(exc.problem, f"{name}.{exc.field}") from None


@dataclass(frozen=True)
class DiscoverySettings(_Checked):
    """Which files of a workspace are memory (``settings.discovery``)."""

    include: tuple[str, ...] = ("memory/**/*.md",) + CORE_FILES
    exclude: tuple[str, ...] = ()
    #: folders of session transcripts (``*.jsonl``): relative to the workspace or absolute;
    #: env ENHANCED_MEMORY_SESSION_DIRS adds more (separated by the path separator)
    session_dirs: tuple[str, ...] = ("sessions",)
    #: an OpenClaw workspace (STATE/workspace, STATE/workspace-<agent>) also searches its
    #: agent's transcripts in STATE/agents/<agent>/sessions
    openclaw_sessions: bool = True


@dataclass(frozen=True)
class TranscriptSettings(_Checked):
    """How session transcripts are read, cut and weighed (``settings.transcripts``)."""

    #: turns of a transcript chunk (a question is not cut from its answer below twice this;
    #: 8 ranked best on locomo-dev-sessions: 2: 0.733, 4: 0.801, 6: 0.823, 8: 0.844, 12: 0.845)
    session_window: int = _spec(8, ge=1)
    #: index thinking, tool calls and tool results too, not only what was said
    session_extras: bool = False
    #: a transcript chunk's score times this (below 1: the curated notes first). 1.3 won
    #: 4 of 5 held-out folds keyword-only on locomo-dev-sessions but 3 of 5 with the local
    #: embedder, and put a transcript that misses first for 17.7% (not 11.1%) of the
    #: queries a note answers: not adopted (docs: "Conversations")
    session_prior: float = _spec(1.0, ge=0)


@dataclass(frozen=True)
class ChunkerSettings(_Checked):
    """How notes become chunks (``settings.chunker``)."""

    #: sections: fence-aware, header-only sections folded; original: every header
    chunking: Literal["sections", "original"] = _spec("sections", choices=("sections", "original"))
    max_header_level: int = _spec(4, ge=1, le=6)
    #: chunks this short or shorter are dropped
    min_chunk_chars: int = _spec(20, ge=0)
    #: longer sections split at blank lines
    max_chunk_chars: int = _spec(4000, ge=200)
    #: a run of list items (remembered facts) is cut between items into chunks of at
    #: most this many characters (0: only max_chunk_chars). Caps that cut locomo-dev's
    #: lists (1000, 1200) lost on 3-4 of 5 held-out folds; 1600 cuts none of them
    #: (docs/benchmarks.md, "Appends")
    max_list_chars: int = _spec(1600, ge=0)


@dataclass(frozen=True)
class EmbeddingSettings(_Checked):
    """What is embedded, and how the embedder is called (``settings.embedding``)."""

    #: embed the header chain with the chunk
    embed_headers: bool = True
    #: lines: a chunk with two or more embedded lines takes the mean of their vectors
    #: instead of a second embedding of the same text (a third of the model time;
    #: docs/engine.md, "The first query never waits"); embedded: chunk texts are embedded too.
    #: Chunks always embed their own text when line_vector_share is 0
    chunk_vectors: Literal["lines", "embedded"] = _spec("lines", choices=("lines", "embedded"))
    embed_batch_size: int = _spec(20, ge=1)
    #: batches in flight at once (hides per-request latency)
    embed_concurrency: int = _spec(4, ge=1)
    embed_max_chars: int = _spec(2000, ge=100)
    embed_timeout_s: float = _spec(30.0, gt=0)
    embed_retries: int = _spec(3, ge=0)
    #: threads of the local model (0: one per core; see local_model.py)
    local_threads: int = _spec(0, ge=0)
    #: a search embeds up to this many missing texts before answering (an edit's);
    #: more are embedded in the background or by `index`, answering keyword-only
    embed_inline_max: int = _spec(64, ge=0)


@dataclass(frozen=True)
class VectorSettings(_Checked):
    """The vector signal: its scan and how its cosines are scored (``settings.vectors``)."""

    #: minmax rescales cosines per query, so embedders with narrow cosine bands fuse
    vector_norm: Literal["minmax", "raw"] = _spec("minmax", choices=("minmax", "raw"))
    #: share of the vector signal taken by a chunk's best-matching line (each line
    #: is embedded too); 0 embeds chunks only, as the original did
    line_vector_share: float = _spec(0.5, ge=0, le=1)
    #: best chunks by the other signals whose lines are scored
    line_candidates: int = _spec(200, ge=1)
    #: threads of the vector scan of a workspace of 100k chunks or more (0: one per
    #: core, but one for a sign-bit scan running beside the keyword signals, which
    #: outlast it; docs/design.md, "The vector scan beside the keyword signals")
    scan_threads: int = _spec(0, ge=0)
    #: chunk rows from which one vector segment is scanned by its sign bits and only
    #: its best candidates exactly (docs/benchmarks.md, "One million chunks"); 0: always exact
    approximate_rows: int = _spec(250_000, ge=0)


@dataclass(frozen=True)
class RankingSettings(_Checked):
    """Keyword scoring, date routing, fusion and feedback (``settings.ranking``)."""

    #: bm25: whole stemmed terms; substring: the original's overlap
    lexical: Literal["bm25", "substring"] = _spec("bm25", choices=("bm25", "substring"))
    bm25_k1: float = 1.2
    bm25_b: float = 0.5
    #: weight of BM25 over adjacent term pairs, added to the keyword score
    phrase_weight: float = _spec(0.5, ge=0)
    date_routing: bool = True
    date_parser: Literal["default", "original"] = _spec("default", choices=("default", "original"))
    #: multiplier of a named day's note
    temporal_boost: float = 3.0
    range_boost: float = 1.5
    #: added per unit of boost above 1
    date_prior: float = _spec(0.05, ge=0)
    #: linear: weighted sum of the signals; rrf: reciprocal rank fusion of the signals
    #: with a non-zero weight (a baseline: it ranks below BM25 alone on LoCoMo)
    fusion: Literal["linear", "rrf"] = _spec("linear", choices=("linear", "rrf"))
    rrf_k: float = _spec(60.0, gt=0)
    weights: FusionWeights = FusionWeights()
    adaptive_keyword_threshold: float = 0.1
    adaptive_weights: FusionWeights = FusionWeights(
        vector=0.85, keyword=0.05, header=0.05, filepath=0.05
    )
    #: pseudo-relevance feedback (off: it did not pay, docs/benchmarks.md, "Quality")
    prf_enabled: bool = False
    prf_threshold: float = 0.45
    prf_top_docs: int = 3
    prf_max_terms: int = 5
    prf_min_term_len: int = 4
    prf_min_count: int = 2
    #: PRF re-embeds the expanded query (the original did)
    prf_reembed: bool = True


@dataclass(frozen=True)
class OutputSettings(_Checked):
    """What a hit shows (``settings.output``)."""

    snippet_chars: int = _spec(700, ge=1)


@dataclass(frozen=True)
class LogSettings(_Checked):
    """The query and access logs salience reads (``settings.logs``)."""

    #: env ENHANCED_MEMORY_LOG=0 turns it off
    log_queries: bool = True
    #: newest query-log entries kept
    query_log_max: int = _spec(1000, ge=1)


@dataclass(frozen=True)
class CrossrefSettings(_Checked):
    """Cross-references between chunks and the graph built of them (``settings.crossref``)."""

    crossref_representatives: int = _spec(5, ge=1)
    crossref_threshold: float = 0.75
    #: raise the threshold to median + this many robust SDs of cosines (None: don't)
    crossref_calibrate: float | None = _spec(2.0, optional=True)
    crossref_refs_per_chunk: int = _spec(5, ge=1)
    crossref_files_per_file: int = _spec(10, ge=1)
    #: 'related' chunks listed per hit
    related_per_hit: int = _spec(3, ge=0)
    #: add graph neighbours of top hits
    graph_neighbors: bool = False
    graph_neighbor_top: int = _spec(3, ge=1)
    graph_neighbor_weight: float = _spec(0.5, ge=0)


#: Each group's attribute on :class:`~.settings.MemorySettings`, in the order it holds them.
GROUPS: dict[str, type[_Checked]] = {
    "discovery": DiscoverySettings,
    "transcripts": TranscriptSettings,
    "chunker": ChunkerSettings,
    "embedding": EmbeddingSettings,
    "vectors": VectorSettings,
    "ranking": RankingSettings,
    "output": OutputSettings,
    "logs": LogSettings,
    "crossref": CrossrefSettings,
}

#: The group of each field: ``FIELD_GROUPS["bm25_b"] == "ranking"``.
FIELD_GROUPS: dict[str, str] = {
    f.name: name
    for name, group in GROUPS.items()
    for f in fields(group)  # type: ignore[arg-type]
}
