"""Tokenization shared by every lexical signal (keyword, header, path, PRF, logs).

Latin words are matched whole and stemmed (Snowball English); runs of CJK
ideographs are cut at Chinese function words, then become overlapping
character bigrams (a lone ideograph stays a unigram), so "星河项目" matches
"星河" without a segmenter. Common words that merely contain a function
character ("过敏", "对账", "现在") are not cut. Kana and hangul runs are kept
whole (no segmenter; Korean separates words with spaces anyway). Text is NFKC
normalised first, which folds full-width digits, letters and punctuation.

Character bigrams were measured against jieba on ``benchmarks/zh``
(``benchmarks/zh/tokenizers.py``): jieba was no better and costs seconds of
dictionary load in every fresh process, so it is not used (docs/design.md).

:func:`escape_controls` is how any text from a note or a file name is printed
for people: what a terminal would act on instead of show is written as its
escape. :func:`clean_text` is what text that comes in (a transcript's turn, a
command-line argument, a note to write, a tool's input, an HTTP body through
:func:`clean_json`) becomes before anything encodes it.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

# The original skill's English stopword list (64 words).
STOPWORDS_EN: frozenset[str] = frozenset(
    """a an the and or but if then else when at by for with about against between into
    through during before after above below to from up down in out on off over under again
    further once here there all any both each few more most other some such no nor not only
    own same so than too very can will just should now what which who whom this that these
    those is are was were be been being have has had having do does did doing i me my we our
    you your he him his she her it its they them their""".split()
)
# The stoplist the default profile uses on top: question words and chat filler that
# carry no topic ("how", "tell", "remember" appear in queries, rarely in answers).
STOPWORDS_QUERY: frozenset[str] = STOPWORDS_EN | frozenset(
    """how why where whose would could may might must shall also yet us am let lets get got
    tell know remember recall discuss discussed talk talked chat say said mention mentioned
    like much many thing things something anything please ever""".split()
)
# Function words of written Chinese; a CJK run is cut at them before bigramming.
STOPWORDS_ZH: tuple[str, ...] = (
    "什么",
    "怎么",
    "怎样",
    "哪些",
    "哪个",
    "哪里",
    "我们",
    "你们",
    "他们",
    "她们",
    "一个",
    "这个",
    "那个",
    "这些",
    "那些",
    "为什么",
    "是否",
    "的",
    "了",
    "是",
    "在",
    "我",
    "你",
    "他",
    "她",
    "它",
    "吗",
    "呢",
    "吧",
    "啊",
    "呀",
    "和",
    "与",
    "及",
    "或",
    "也",
    "都",
    "就",
    "还",
    "又",
    "被",
    "把",
    "给",
    "对",
    "从",
    "向",
    "着",
    "过",
    "个",
    "有",
    "没",
)

# Bumped whenever the terms of a text change, so that stored indexes re-tokenize.
TOKENIZER_VERSION = 3

# Words that contain a one-character function word but are content words
# themselves: the run is not cut inside them.
ZH_KEEP: tuple[str, ...] = tuple(
    """过敏 对账 对象 对比 对方 对手 对话 对应 对接 面对 针对 反对 相对 绝对 核对 了解 为了 除了
    目的 的确 现在 正在 存在 所在 实在 在线 但是 还是 就是 可是 于是 只是 总是 没有 所有 有效
    有关 有限 拥有 有些 个人 个月 各个 整个 和平 以及 及时 来得及 或者 或许 也许 首都 都市 成就
    方向 向往 着急 接着 从而 从来 自从 给予 供给 把握 经过 过去 不过 超过 通过 过程 过期 还款 归还
    参与 给付 他人 其他 我国 自我 你好 吧台 啊呀 被子 又称 一起 有人""".split()
)
_CJK = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_KANA_HANGUL = "\u3040-\u30ff\u31f0-\u31ff\uac00-\ud7af"
_TOKEN_RE = re.compile(
    rf"(?P<cjk>[{_CJK}]+)|(?P<kana>[{_KANA_HANGUL}]+)|(?P<word>[^\W_{_CJK}{_KANA_HANGUL}]+)"
)
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")
# At each position a protected word wins over a stopword that starts there or inside it.
_ZH_STOP_RE = re.compile(
    "(?P<keep>"
    + "|".join(sorted(map(re.escape, ZH_KEEP), key=len, reverse=True))
    + ")|"
    + "|".join(sorted(map(re.escape, STOPWORDS_ZH), key=len, reverse=True))
)


def normalize(text: str) -> str:
    """NFKC-normalise and casefold ``text``."""
    return unicodedata.normalize("NFKC", text).casefold()


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer  # PyStemmer: Snowball in C, imported on first use only

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball English stem of a lowercase word (digits and mixed tokens unchanged)."""
    if not word.isalpha() or not word.isascii():
        return word
    return str(_stemmer().stemWord(word))


def _zh_pieces(run: str) -> list[str]:
    """``run`` cut at Chinese stopwords, protected words left whole inside their piece."""
    pieces: list[str] = []
    start = 0
    for m in _ZH_STOP_RE.finditer(run):
        if m.group("keep") is None:
            pieces.append(run[start : m.start()])
            start = m.end()
    pieces.append(run[start:])
    return [p for p in pieces if p]


def _cjk_grams(run: str) -> list[str]:
    out: list[str] = []
    for piece in _zh_pieces(run):
        if len(piece) == 1:
            out.append(piece)
        else:
            out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
    return out


class _WordTerms(dict):
    """Lowercase ASCII word -> its term, or "" when the word is dropped (filled on lookup)."""

    LIMIT = 200_000  # words remembered (a bound for long-running servers)

    def __init__(self, stopwords: frozenset[str], stemmed: bool) -> None:
        super().__init__()
        self.stopwords, self.stemmed = stopwords, stemmed

    def __missing__(self, word: str) -> str:
        dropped = word in self.stopwords or (len(word) < 2 and not word.isdigit())
        term = "" if dropped else stem(word) if self.stemmed else word
        if len(self) < self.LIMIT:
            self[word] = term
        return term


@lru_cache(maxsize=8)
def _ascii_terms(stopwords: frozenset[str], stemmed: bool) -> _WordTerms:
    return _WordTerms(stopwords, stemmed)


def tokenize(
    text: str, *, stopwords: frozenset[str] = STOPWORDS_EN, stemmed: bool = True
) -> list[str]:
    """Split ``text`` into index terms.

    Args:
        text: Any text; normalised with :func:`normalize`.
        stopwords: Latin words to drop (after casefolding, before stemming).
        stemmed: Whether Latin words are reduced to their Snowball stem.

    Returns:
        Terms in text order, repeats kept (term frequency matters to BM25).
    """
    if text.isascii():
        # The same terms, twice as fast: on ASCII, NFKC and casefold are lower() and
        # only the word group can match. Each word's term (or "": dropped) is looked
        # up, not worked out again at each occurrence.
        terms = _ascii_terms(stopwords, stemmed)
        return list(filter(None, map(terms.__getitem__, _ASCII_WORD_RE.findall(text.lower()))))
    out: list[str] = []
    for m in _TOKEN_RE.finditer(normalize(text)):
        word = m.group("word")
        if word is not None:
            if word in stopwords or (len(word) < 2 and not word.isdigit()):
                continue
            out.append(stem(word) if stemmed else word)
        elif m.group("cjk") is not None:
            out.extend(_cjk_grams(m.group("cjk")))
        else:
            # Kana/hangul: no segmenter, so whole runs are single terms.
            out.append(m.group("kana"))
    return out


PHRASE_SEP = "_"  # never inside a term, so a pair cannot collide with a term


def phrases(terms: list[str]) -> list[str]:
    """Adjacent term pairs ("meteor_shower"): a phrase match outranks scattered words.

    The index builds the same pairs from term ids (:meth:`.scoring.Postings.build_with_pairs`).
    """
    return [a + PHRASE_SEP + b for a, b in zip(terms, terms[1:], strict=False)]


def query_terms(text: str) -> list[str]:
    """Unique terms of a query, in order, with the query stoplist applied."""
    return list(dict.fromkeys(tokenize(text, stopwords=STOPWORDS_QUERY)))


def path_text(path: str) -> str:
    """A path as words: ``-``, ``_``, ``/`` and the ``.md`` suffix read as spaces."""
    return re.sub(r"[-_/.]+", " ", path.removesuffix(".md"))


def snippet(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, never splitting a surrogate pair."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if cut and "\ud800" <= cut[-1] <= "\udbff":
        cut = cut[:-1]
    return cut


# A UTF-16 half (a lone surrogate): what a JSON escape of half an emoji or an undecodable
# command-line byte becomes; no UTF-8 writer (SQLite, a segment, a stream) takes one.
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD, what text becomes where it enters the package.

    A half emoji that a program cut (a JSON escape of one UTF-16 half) or a command-line byte
    that is not UTF-8 costs that one character, never the write or the index that
    would have to encode it.
    """
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def clean_json(value: Any) -> Any:
    """A decoded JSON value with :func:`clean_text` applied to every string in it, keys too."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    if isinstance(value, dict):
        return {clean_json(k): clean_json(v) for k, v in value.items()}
    return value


# What a terminal acts on instead of showing, or what splits a line: C0 and C1 controls and DEL
# (escape sequences retitle or clear it, CR overwrites), the Unicode line and paragraph
# separators, the bidirectional embeddings, overrides and isolates (they reorder what a line
# shows), and lone surrogates (no stream can encode them).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def escape_controls(text: str, keep: str = "") -> str:
    r"""``text`` safe to print on a terminal, each control character as its escape (``\x1b``).

    Args:
        text: A note's text, a header, a file name or a message holding one.
        keep: Characters printed as they are (``"\n\t"`` where the layout is the
            note's own lines); by default the result is one line.

    Returns:
        ``text`` with every other control character written as Python writes it in a
        string literal (``\x1b``, ``\n``, ``\u2028``); the rest unchanged.
    """
    return _CONTROLS.sub(lambda m: m[0] if m[0] in keep else repr(m[0])[1:-1], text)
