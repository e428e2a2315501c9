"""The tokenizer on Latin, Chinese, mixed, full-width, Japanese and Korean text."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_enhanced_memory.core.text import (
    STOPWORDS_QUERY,
    STOPWORDS_ZH,
    ZH_KEEP,
    clean_json,
    clean_text,
    escape_controls,
    normalize,
    path_text,
    query_terms,
    snippet,
    tokenize,
)


def test_cjk_runs_become_overlapping_bigrams() -> None:
    assert tokenize("星河项目") == ["星河", "河项", "项目"]


def test_a_lone_ideograph_is_a_unigram() -> None:
    assert tokenize("猫") == ["猫"]
    assert tokenize("猫 狗") == ["猫", "狗"]


def test_mixed_chinese_and_english() -> None:
    assert tokenize("星河项目 p99 latency 上线") == [
        "星河",
        "河项",
        "项目",
        "p99",
        "latenc",
        "上线",
    ]
    # no space between scripts: the boundary still splits
    assert tokenize("星河项目p99延迟") == ["星河", "河项", "项目", "p99", "延迟"]


def test_full_width_forms_are_folded_by_nfkc() -> None:
    assert normalize("ＡＢＣ１２３") == "abc123"
    assert tokenize("Ｒｅｄｉｓ　连接池，ｐ９９！") == ["redi", "连接", "接池", "p99"]
    # full-width punctuation separates runs like ASCII punctuation
    assert tokenize("灵隐寺，龙井村") == ["灵隐", "隐寺", "龙井", "井村"]


def test_chinese_stopwords_cut_runs() -> None:
    assert tokenize("我的猫叫什么名字") == ["猫叫", "名字"]
    assert tokenize("他们在杭州吗") == ["杭州"]
    assert query_terms("星河项目是什么") == ["星河", "河项", "项目"]
    for word in ("的", "了", "是", "吗", "什么", "我们"):
        assert word in STOPWORDS_ZH
        assert tokenize(word) == []


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("我对花生过敏", "过敏"),
        ("对账少了订单", "对账"),
        ("现在几点", "现在"),
        ("了解需求", "了解"),
    ],
)
def test_content_words_holding_a_function_character_stay_whole(text: str, word: str) -> None:
    assert word in ZH_KEEP
    assert word in tokenize(text)


def test_query_and_document_cut_the_same_way() -> None:
    doc = set(tokenize("- 我对花生过敏，不吃香菜。"))
    assert set(query_terms("我对什么过敏")) <= doc


def test_latin_words_are_whole_and_stemmed() -> None:
    assert tokenize("Deployments deployed") == ["deploy", "deploy"]
    assert "art" not in tokenize("start")
    assert tokenize("the a and") == []


def test_kana_and_hangul_do_not_break() -> None:
    assert tokenize("よろしくお願いします") == ["よろしくお", "願", "いします"]
    assert tokenize("감사합니다 회의") == ["감사합니다", "회의"]
    assert tokenize("カタカナ") == ["カタカナ"]


def test_ideographs_beyond_the_basic_block() -> None:
    assert tokenize("𠀋𠀋") == ["𠀋𠀋"]  # CJK extension B, outside the BMP
    assert tokenize("〇八年") == ["〇八", "八年"]


def test_chinese_paths_read_as_words() -> None:
    assert path_text("memory/topics/项目-星河.md") == "memory topics 项目 星河"
    assert tokenize(path_text("memory/topics/项目-星河.md")) == ["memori", "topic", "项目", "星河"]


def test_snippet_keeps_characters_whole() -> None:
    assert snippet("星河项目上线", 4) == "星河项目"
    assert snippet("ab𠀋", 3) == "ab𠀋"
    assert snippet("ab\ud842\udc0b", 3) == "ab"  # never half a surrogate pair


@given(st.text(max_size=200))
def test_tokenize_never_raises_and_yields_clean_terms(text: str) -> None:
    for term in tokenize(text):
        assert term and not term.isspace()
        assert term not in STOPWORDS_ZH


def test_no_protected_word_is_a_stopword() -> None:
    assert not set(ZH_KEEP) & set(STOPWORDS_ZH)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_the_ascii_fast_path_yields_the_general_paths_terms(text: str) -> None:
    # An em dash is no term but makes the text non-ASCII: the general path runs.
    assert tokenize(text) == tokenize(text + " \u2014")
    assert tokenize(text, stemmed=False) == tokenize(text + " \u2014", stemmed=False)
    query = {"stopwords": STOPWORDS_QUERY}
    assert tokenize(text, **query) == tokenize(text + " \u2014", **query)


def test_the_fast_paths_word_memory_is_bounded_and_still_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langchain_enhanced_memory.core import text as module

    monkeypatch.setattr(module._WordTerms, "LIMIT", 2)
    module._ascii_terms.cache_clear()
    words = "Running the jam jars, 7 a b cd tea teas running"
    want = tokenize(words + " \u2014")
    assert tokenize(words) == want == tokenize(words)
    assert len(module._ascii_terms(module.STOPWORDS_EN, True)) == 2
    module._ascii_terms.cache_clear()


@given(st.text(max_size=200))
def test_escaped_text_is_one_inert_line_and_printable_text_is_kept(text: str) -> None:
    out = escape_controls(text)
    assert len(out.splitlines()) <= 1
    assert all(unicodedata.category(ch) not in ("Cc", "Cs", "Zl", "Zp") for ch in out)
    assert not set(out) & set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    out.encode("utf-8")  # no lone surrogate left
    if text.isprintable():
        assert out == text
    kept = escape_controls(text, keep="\n\t")
    assert kept.count("\n") == text.count("\n") and kept.count("\t") == text.count("\t")


def test_escapes_read_as_python_writes_them() -> None:
    assert escape_controls("a\x1b]0;x\x07b\nc\u2028\udcff 中文 👨\u200d👩") == (
        "a\\x1b]0;x\\x07b\\nc\\u2028\\udcff 中文 👨\u200d👩"
    )
    assert escape_controls("l1\n\tl2\r", keep="\n\t") == "l1\n\tl2\\r"


def test_clean_text_replaces_only_lone_surrogates() -> None:
    text = "ok 😀 cut \ud83d \udcff 中文 \ufffd"
    assert clean_text(text) == "ok 😀 cut \ufffd \ufffd 中文 \ufffd"
    clean_text(text).encode("utf-8")
    assert clean_text("plain") == "plain"
    body = {"q\ud800": ["a\udfff", {"k": "\udc00"}, 3, None], "n": 1.5}
    assert clean_json(body) == {"q\ufffd": ["a\ufffd", {"k": "\ufffd"}, 3, None], "n": 1.5}
