import pytest

from langchain_enhanced_memory.core.errors import ScopeError
from langchain_enhanced_memory.core.results import Hit
from langchain_enhanced_memory.core.scopes import ScopeRef, merge_hits, validate_scope


def _hit(path: str, score: float) -> Hit:
    return Hit(path, 1, 1, "", "", "t", score, {}, "note", None)


@pytest.mark.parametrize("name", ["alpha", "team-1", "a.b_c", "0", "x" * 63])
def test_valid_names(name):
    assert validate_scope(name) == name


@pytest.mark.parametrize(
    "name", ["", "Alpha", "-x", "a b", "a/b", "x" * 64, "é", None, 3, "a;drop"]
)
def test_invalid_names_are_one_line_errors(name):
    with pytest.raises(ScopeError) as err:
        validate_scope(name)
    assert "\n" not in str(err.value)


def test_parse_weight():
    assert ScopeRef.parse("team:0.5") == ScopeRef("team", 0.5)
    assert ScopeRef.parse("alpha") == ScopeRef("alpha", 1.0)
    for bad in ("team:x", "team:0", "team:-1", "team:inf", "Team"):
        with pytest.raises(ScopeError):
            ScopeRef.parse(bad)


def test_merge_ranks_by_weighted_score_and_tags():
    a = [_hit("a1", 0.9), _hit("a2", 0.5)]
    b = [_hit("b1", 0.8), _hit("b2", 0.7)]
    merged = merge_hits([(ScopeRef("alpha"), a), (ScopeRef("team", 0.5), b)], k=3)
    assert [h.path for h in merged] == ["a1", "a2", "b1"]
    assert [h.scope for h in merged] == ["alpha", "alpha", "team"]
    assert merged[2].score == 0.8  # the scope's own score is kept


def test_merge_is_brute_force_order():
    import random

    rng = random.Random(3)
    for _ in range(50):
        ranked = []
        for s in range(rng.randint(1, 4)):
            hits = sorted(
                (_hit(f"{s}-{i}", rng.random()) for i in range(rng.randint(0, 6))),
                key=lambda h: -h.score,
            )
            ranked.append((ScopeRef(f"s{s}", rng.choice([0.5, 1.0, 2.0])), hits))
        k = rng.randint(1, 10)
        expect = sorted(
            ((r.weight * h.score, h.path) for r, hs in ranked for h in hs), key=lambda p: -p[0]
        )[:k]
        got = merge_hits(ranked, k)
        assert [h.path for h in got] == [p for _, p in expect]
