"""Seeded synthetic memory workspaces and a model-free embedder, for the speed benchmarks.

A workspace of about ``n_chunks`` chunks looks like a heavy user's: daily notes
(``memory/YYYY-MM-DD.md``, some ``memory/YYYY-MM-DD-<slug>.md`` and some under
``memory/<year>/``) with a date header and several ``##`` sections, topic files
under ``memory/topics/``, and ``MEMORY.md``. Words follow a Zipf law over real
English, people, projects and invented jargon, so posting lists have realistic
lengths; about one section in ten is written in Chinese or mixes Chinese and
English.

:class:`ProjectionEmbeddings` gives every text a 384-d unit vector: a fixed
random projection (seeded) of its hashed ``\\w+`` tokens, so texts sharing words
are close and no model is needed. It can add a fixed cost per text to stand in
for a real model.

Run ``python benchmarks/synthetic.py DIR --chunks 10000`` to write one.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
import zlib
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

DIM = 384
_BUCKETS = 8192
_TOKEN_RE = re.compile(r"\w+")
NOW = datetime(2026, 3, 1, 9, 0)

COMMON = """team meeting decided plan project release deploy server database migration
backup user customer bug fix test review design api latency cache queue worker config
budget invoice contract vendor hire interview onboarding roadmap sprint retro standup
metrics dashboard alert incident outage postmortem rollback schema index query search
feature flag experiment launch feedback survey call email slack doc spec draft note
idea question answer decision risk issue blocker dependency estimate deadline week
month quarter goal priority lunch dinner coffee trip flight hotel book movie gym run
doctor dentist birthday gift family kids school garden recipe groceries rent tax
insurance bank loan car repair weather weekend holiday vacation conference talk slides
paper research model training data pipeline embedding vector benchmark score recall
precision latency throughput memory disk network storage cloud cluster node pod docker
kubernetes terraform python rust typescript react postgres redis kafka grafana prometheus
nginx linux laptop phone password login auth token permission security audit compliance
legal privacy policy pricing sales marketing growth churn revenue margin forecast hiring
promotion salary review mentor coach learn read write ship merge branch commit ticket""".split()
FILLER = """the a to of and in for on with we i it is was that this at by from about
after before then also still just not but so our my they he she will would should
could have has had did do does been be are were more some all new next last""".split()
PEOPLE = """Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy
Rupert Sybil Trent Victor Walter Yuki Zhang Wei Li Na Chen Jing Priya Omar Lena Marco""".split()
PROJECTS = """Alpha Borealis Cobalt Dynamo Ember Falcon Granite Helix Ion Juniper Kestrel
Lumen Meridian Nimbus Onyx Pulsar Quartz Raven Sierra Tundra""".split()
ZH = """项目 会议 讨论 数据库 迁移 部署 测试 用户 设计 上线 回滚 性能 缓存 接口 延迟
预算 合同 招聘 面试 周报 计划 决定 问题 风险 需求 版本 发布 服务器 监控 告警
星河 北极星 团队 客户 反馈 文档 代码 评审 分支 合并 午饭 咖啡 周末 旅行 医生 生日""".split()
ZH_GLUE = ["的", "了", "和", "在", "我们", "今天", "已经", "还要", "关于", "需要"]
SECTION_TITLES = """Standup Decisions Notes Todo Ideas Meeting Lunch Review Plans Blockers
Retro Learnings Calls Errands Reading Health Family Travel Finance Follow-ups""".split()
SLUGS = """planning incident offsite interview retro review launch trip research sync""".split()


def _pseudo_words(rng: np.random.Generator, n: int) -> list[str]:
    """Invented jargon (``"tavolen"``, ``"krimoza"``): the long tail of a real vocabulary."""
    cons = list("bdfgklmnprstvz") + ["ch", "sh", "tr", "kr"]
    vows = list("aeiou")
    out: set[str] = set()
    while len(out) < n:
        k = int(rng.integers(2, 4))
        out.add("".join(cons[rng.integers(len(cons))] + vows[rng.integers(5)] for _ in range(k)))
    return sorted(out)


class _Words:
    """Zipf-distributed word sampler over one seeded vocabulary."""

    def __init__(self, rng: np.random.Generator, tail: int = 20000) -> None:
        self.rng = rng
        self.vocab = (
            COMMON + PEOPLE + PROJECTS + [p.lower() for p in PROJECTS] + _pseudo_words(rng, tail)
        )
        ranks = np.arange(1, len(self.vocab) + 1, dtype=np.float64)
        p = ranks**-1.05
        self.cdf = np.cumsum(p / p.sum())

    def sample(self, n: int) -> list[str]:
        idx = np.searchsorted(self.cdf, self.rng.random(n))
        return [self.vocab[min(int(i), len(self.vocab) - 1)] for i in idx]


def _sentence(words: _Words, rng: np.random.Generator) -> str:
    content = words.sample(int(rng.integers(4, 11)))
    out: list[str] = []
    for w in content:
        out.append(w)
        if rng.random() < 0.45:
            out.append(FILLER[rng.integers(len(FILLER))])
    return " ".join(out).capitalize() + "."


def _zh_sentence(words: _Words, rng: np.random.Generator) -> str:
    parts = []
    for _ in range(int(rng.integers(3, 7))):
        parts.append(ZH[rng.integers(len(ZH))])
        if rng.random() < 0.5:
            parts.append(ZH_GLUE[rng.integers(len(ZH_GLUE))])
        if rng.random() < 0.2:  # code-switching: English terms inside Chinese notes
            parts.append(" " + words.sample(1)[0] + " ")
    return "".join(parts).strip() + "。"


def _section(words: _Words, rng: np.random.Generator, title: str) -> str:
    zh = rng.random() < 0.1
    make = _zh_sentence if zh else _sentence
    paras = []
    for _ in range(int(rng.integers(1, 4))):
        sentences = [make(words, rng) for _ in range(int(rng.integers(1, 5)))]
        if not zh and rng.random() < 0.3:
            sentences = ["- " + s for s in sentences]
            paras.append("\n".join(sentences))
        else:
            paras.append(" ".join(sentences))
    return f"## {title}\n\n" + "\n\n".join(paras) + "\n"


def generate(root: str | Path, n_chunks: int, seed: int = 0) -> Path:
    """Write a workspace of about ``n_chunks`` chunks under ``root`` (deterministic).

    Args:
        root: The workspace folder (created; existing files are overwritten).
        n_chunks: Sections to write; the indexed chunk count is close to it.
        seed: Seed of every random choice.

    Returns:
        ``root`` as a ``Path``.
    """
    root = Path(root)
    rng = np.random.default_rng(seed)
    words = _Words(rng)
    (root / "memory" / "topics").mkdir(parents=True, exist_ok=True)
    left = n_chunks
    topic_budget = max(5, n_chunks // 7)

    memory = ["# Long-term memory\n"]
    for title in ("Preferences", "People", "Projects", "Decisions", "Routines"):
        memory.append(_section(words, rng, title))
    (root / "MEMORY.md").write_text("\n".join(memory), encoding="utf-8")
    left -= 5

    topic_no = 0
    while topic_budget > 0 and left > 0:
        n = min(int(rng.integers(10, 60)), topic_budget, left)
        name = f"{PROJECTS[topic_no % len(PROJECTS)].lower()}-{topic_no // len(PROJECTS)}"
        parts = [f"# Project {name}\n"] + [
            _section(words, rng, " ".join(words.sample(2)).title()) for _ in range(n)
        ]
        (root / "memory" / "topics" / f"{name}.md").write_text("\n".join(parts), encoding="utf-8")
        topic_no += 1
        topic_budget -= n
        left -= n

    day = NOW.date()
    while left > 0:
        day -= timedelta(days=1)
        for variant in range(int(rng.integers(1, 4))):
            if left <= 0:
                break
            n = min(int(rng.integers(3, 13)), left)
            parts = [f"# {day.isoformat()}\n"] + [
                _section(words, rng, SECTION_TITLES[rng.integers(len(SECTION_TITLES))])
                for _ in range(n)
            ]
            if variant == 0:
                folder = root / "memory" / (str(day.year) if day.year < NOW.year - 3 else "")
                rel = folder / f"{day.isoformat()}.md"
            else:
                rel = root / "memory" / f"{day.isoformat()}-{SLUGS[rng.integers(len(SLUGS))]}.md"
            rel.parent.mkdir(parents=True, exist_ok=True)
            rel.write_text("\n".join(parts), encoding="utf-8")
            left -= n
    return root


def transcript_line(role: str, text: str, when: datetime, name: str) -> str:
    """One OpenClaw session message line."""
    msg = {"role": role, "name": name, "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": "message", "timestamp": when.isoformat(), "message": msg})


def generate_transcripts(
    root: str | Path, n_turns: int, seed: int = 0, per_file: int = 250
) -> Path:
    """Write a workspace of ``n_turns`` turns of session transcripts under ``root/sessions``.

    A session a day going back from :data:`NOW`, ``per_file`` turns each (a
    question and its answer, a minute apart), in OpenClaw's session JSONL, plus a
    ``MEMORY.md``. The newest session is ``sessions/s000000.jsonl``.
    """
    root = Path(root)
    rng = np.random.default_rng(seed)
    words = _Words(rng)
    (root / "sessions").mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Long-term memory\n\n" + _section(words, rng, "People"))
    for no in range((n_turns + per_file - 1) // per_file):
        start = datetime.combine(NOW.date() - timedelta(days=no + 1), NOW.time())
        header = {"type": "session", "version": 3, "id": f"s{no:06d}"}
        lines = [json.dumps({**header, "timestamp": start.isoformat()})]
        for i in range(min(per_file, n_turns - no * per_file)):
            who, role = (PEOPLE[no % len(PEOPLE)], "user") if i % 2 == 0 else ("agent", "assistant")
            text = " ".join(_sentence(words, rng) for _ in range(int(rng.integers(1, 3))))
            lines.append(transcript_line(role, text, start + timedelta(minutes=i), who))
        (root / "sessions" / f"s{no:06d}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def texts(n: int, seed: int = 0) -> list[str]:
    """``n`` seeded texts of one to three sentences each, as a memory item holds."""
    rng = np.random.default_rng(seed)
    words = _Words(rng)
    return [
        " ".join(_sentence(words, rng) for _ in range(int(rng.integers(1, 4)))) for _ in range(n)
    ]


def queries(n: int, seed: int = 1) -> list[str]:
    """``n`` seeded queries: topical, people/project, dated, relative-date and Chinese."""
    rng = np.random.default_rng(seed)
    words = _Words(np.random.default_rng(0))
    out = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            q = "what did we decide about the " + " ".join(words.sample(2)) + "?"
        elif kind == 1:
            q = f"{PEOPLE[rng.integers(len(PEOPLE))]} {PROJECTS[rng.integers(len(PROJECTS))]} "
            q += words.sample(1)[0]
        elif kind == 2:
            d = NOW.date() - timedelta(days=int(rng.integers(1, 300)))
            q = f"notes from {d.isoformat()} about " + words.sample(1)[0]
        elif kind == 3:
            q = "what did I do yesterday?"
        elif kind == 4:
            q = ZH[rng.integers(len(ZH))] + ZH[rng.integers(len(ZH))] + "讨论了什么"
        else:
            q = " ".join(words.sample(int(rng.integers(3, 7))))
        out.append(q)
    return out


def project(texts: list[str]) -> np.ndarray:
    """Unit 384-d vectors: a fixed random projection of each text's hashed tokens."""
    matrix = _projection()
    ids = [[zlib.crc32(t.encode()) % _BUCKETS for t in _TOKEN_RE.findall(s.lower())] for s in texts]
    counts = np.fromiter(map(len, ids), dtype=np.int64, count=len(texts))
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    some = np.flatnonzero(counts)
    if some.size:
        # One gather and one sum per run of rows, in the order a per-text sum adds them.
        rows = matrix[np.fromiter(itertools.chain.from_iterable(ids), np.int64, int(counts.sum()))]
        starts = np.r_[0, np.cumsum(counts)[:-1]][some]
        for i, a, n in zip(some.tolist(), starts.tolist(), counts[some].tolist(), strict=True):
            out[i] = rows[a : a + n].sum(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)


_MATRIX: list[np.ndarray] = []


def _projection() -> np.ndarray:
    if not _MATRIX:
        _MATRIX.append(np.random.default_rng(12345).standard_normal((_BUCKETS, DIM), np.float32))
    return _MATRIX[0]


class ProjectionEmbeddings(Embeddings):
    """A model-free LangChain embedder (see :func:`project`) with an optional fixed cost.

    Like the local model (:class:`..embeddings.local.LocalEmbeddings`), one
    call computes at a time (a lock), so the index run's batches in flight
    wait for it instead of contending for the GIL; and it counts the CPU time
    it spends itself, which is the stand-in model's and not the index's.

    Args:
        cost_s: Seconds slept per text, standing in for a real model (0: none).

    Attributes:
        calls: ``embed_documents`` calls so far; ``texts``: how many texts;
            ``cpu_s``: CPU seconds spent in them (projection and the lists
            LangChain's interface returns; the sleeps are not CPU).
    """

    model = "synthetic-projection-384"

    def __init__(self, cost_s: float = 0.0) -> None:
        self.cost_s = cost_s
        self.calls = 0
        self.texts = 0
        self.cpu_s = 0.0
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            t0 = time.thread_time()
            self.calls += 1
            self.texts += len(texts)
            if self.cost_s:
                time.sleep(self.cost_s * len(texts))
            out = project(list(texts)).tolist()
            self.cpu_s += time.thread_time() - t0
            return out

    def embed_query(self, text: str) -> list[float]:
        return project([text])[0].tolist()


def main() -> None:
    """Write one workspace from the command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root")
    p.add_argument("--chunks", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    t0 = time.perf_counter()
    generate(a.root, a.chunks, a.seed)
    print(f"wrote {a.root} ({a.chunks} sections) in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
