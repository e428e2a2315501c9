"""Build and check the Chinese and mixed-language retrieval set.

The workspace ``linxiao/`` is hand-written (ours, not licensed data). Each
query names its gold evidence by a file and a piece of text on the gold line;
``build`` resolves every needle to exactly one line number and writes
``queries.jsonl`` in the shared benchmark format, so a gold line can never
point at the wrong place. ``check`` fails when ``queries.jsonl`` differs from
what ``build`` would write. ``first-day RESULTS`` reads ``enhanced-memory eval
--out`` results and reports, for every date query, whether the first hit is a
chunk of the gold day's note.

Usage:
    python benchmarks/zh/zhbench.py build
    python benchmarks/zh/zhbench.py check
    python benchmarks/zh/zhbench.py first-day /tmp/results.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKSPACE = "linxiao"
QUERIES = HERE / "queries.jsonl"
DATE_CATEGORIES = ("zh-date-relative", "zh-date-absolute")

FRI = "2026-10-23T09:00:00"  # a Friday; most queries are asked then
D = "memory/2026-"
STAR = "memory/topics/项目-星河.md"
HUAYUAN = "memory/topics/客户-华远.md"
BOOKS = "memory/topics/读书笔记.md"
GYM = "memory/topics/健身计划.md"
TRIP = "memory/topics/家庭-旅行.md"

# (id, query, category, now, [(path, needle), ...])
SPEC: list[tuple[str, str, str, str, list[tuple[str, str]]]] = [
    # --- relative Chinese dates (now = Friday 2026-10-23 unless stated)
    ("rel-01", "昨天看牙花了多少钱", "zh-date-relative", FRI, [(D + "10-22.md", "花了 800 元")]),
    ("rel-02", "我昨天下午干嘛去了", "zh-date-relative", FRI, [(D + "10-22.md", "请假去看牙医")]),
    ("rel-03", "前天写的 OKR 有哪些目标", "zh-date-relative", FRI, [(D + "10-21.md", "O1 星河")]),
    (
        "rel-04",
        "三天前和谁开的会",
        "zh-date-relative",
        FRI,
        [(D + "10-20.md", "Alice 开了英文会议")],
    ),
    (
        "rel-05",
        "大前天会议上汇率多久刷新一次",
        "zh-date-relative",
        FRI,
        [(D + "10-20.md", "每 5 分钟刷新")],
    ),
    (
        "rel-06",
        "上周一周会决定了什么",
        "zh-date-relative",
        FRI,
        [(D + "10-12.md", "决定10月26日")],
    ),
    (
        "rel-07",
        "上礼拜五晚上去了哪里",
        "zh-date-relative",
        FRI,
        [(D + "10-16.md", "参加朵朵的家长会")],
    ),
    (
        "rel-08",
        "上周四修了什么 bug",
        "zh-date-relative",
        FRI,
        [(D + "10-15.md", "排查发现是时区问题")],
    ),
    ("rel-09", "上星期二面试的人怎么样", "zh-date-relative", FRI, [(D + "10-13.md", "候选人张伟")]),
    ("rel-10", "十天前面试了谁", "zh-date-relative", FRI, [(D + "10-13.md", "候选人张伟")]),
    ("rel-11", "上个月15号体检结果", "zh-date-relative", FRI, [(D + "09-15.md", "血脂偏高")]),
    ("rel-12", "这周一 p99 降到多少", "zh-date-relative", FRI, [(D + "10-19.md", "降到 85ms")]),
    ("rel-13", "上上周五的训练成绩", "zh-date-relative", FRI, [(D + "10-09.md", "深蹲 80kg")]),
    (
        "rel-14",
        "昨天订的火车票几点出发",
        "zh-date-relative",
        "2026-10-01T08:00:00",
        [(D + "09-30.md", "G35 早上 8 点 05 分")],
    ),
    (
        "rel-15",
        "上周五下午买了什么茶",
        "zh-date-relative",
        "2026-10-05T20:00:00",
        [(D + "10-02.md", "两斤明前龙井")],
    ),
    (
        "rel-16",
        "上周一压测的结果",
        "zh-date-relative",
        "2026-10-05T20:00:00",
        [(D + "09-28.md", "p99 latency 是 180ms")],
    ),
    (
        "rel-17",
        "两天前豆包去医院做了什么",
        "zh-date-relative",
        "2026-09-20T10:00:00",
        [(D + "09-18.md", "猫三联疫苗")],
    ),
    (
        "rel-18",
        "前天的事故根因是什么",
        "zh-date-relative",
        "2026-10-10T10:00:00",
        [(D + "10-08.md", "根因是 DNS 解析")],
    ),
    # --- absolute Chinese dates
    ("abs-01", "10月2日去了哪座寺庙", "zh-date-absolute", FRI, [(D + "10-02.md", "去灵隐寺")]),
    (
        "abs-02",
        "十月二号下午在龙井村买了什么",
        "zh-date-absolute",
        FRI,
        [(D + "10-02.md", "两斤明前龙井")],
    ),
    ("abs-03", "国庆节那天晚饭吃了什么", "zh-date-absolute", FRI, [(D + "10-01.md", "西湖醋鱼")]),
    (
        "abs-04",
        "9月28日压测瓶颈在哪",
        "zh-date-absolute",
        FRI,
        [(D + "09-28.md", "瓶颈在签名验证")],
    ),
    (
        "abs-05",
        "2026年9月10日选了什么语言",
        "zh-date-absolute",
        FRI,
        [(D + "09-10.md", "最后选择 Go")],
    ),
    (
        "abs-06",
        "10月8号发生了什么事故",
        "zh-date-absolute",
        FRI,
        [(D + "10-08.md", "大面积 timeout")],
    ),
    ("abs-07", "九月十八号兽医怎么说", "zh-date-absolute", FRI, [(D + "09-18.md", "豆包有点胖")]),
    (
        "abs-08",
        "2026/10/09 跑步用了多久",
        "zh-date-absolute",
        FRI,
        [(D + "10-09.md", "用时 28 分钟")],
    ),
    (
        "abs-09",
        "9月16日 华远提了什么要求",
        "zh-date-absolute",
        FRI,
        [(D + "09-16.md", "凌晨 2 点自动对账")],
    ),
    ("abs-10", "9月24号给爸妈寄了什么", "zh-date-absolute", FRI, [(D + "09-24.md", "稻香村月饼")]),
    (
        "abs-11",
        "10月5日在高铁上读完了哪本书",
        "zh-date-absolute",
        FRI,
        [(D + "10-05.md", "读完了《三体》第二部")],
    ),
    (
        "abs-12",
        "9月21日 code review 发现了什么问题",
        "zh-date-absolute",
        FRI,
        [(D + "09-21.md", "Redis 连接池 leak")],
    ),
    # --- Chinese, no date
    (
        "zh-01",
        "星河项目为什么选 Go 不选 Rust",
        "zh-single-hop",
        FRI,
        [(D + "09-10.md", "最后选择 Go")],
    ),
    ("zh-02", "华远集团的财务总监是谁", "zh-single-hop", FRI, [(HUAYUAN, "财务总监刘敏")]),
    (
        "zh-03",
        "体检血脂偏高医生有什么建议",
        "zh-single-hop",
        FRI,
        [(D + "09-15.md", "医生建议少吃油炸")],
    ),
    (
        "zh-04",
        "朵朵语文作文老师怎么说",
        "zh-single-hop",
        FRI,
        [(D + "10-16.md", "语文作文需要加强")],
    ),
    ("zh-05", "回调超时事故持续了多久", "zh-single-hop", FRI, [(D + "10-08.md", "持续 23 分钟")]),
    ("zh-06", "对账少算订单的原因", "zh-single-hop", FRI, [(D + "10-15.md", "跨日订单被漏算")]),
    ("zh-07", "我对什么过敏", "zh-single-hop", FRI, [("MEMORY.md", "对花生过敏")]),
    ("zh-08", "猫叫什么名字", "zh-single-hop", FRI, [("MEMORY.md", "橘猫")]),
    ("zh-09", "张伟的面试评价", "zh-single-hop", FRI, [(D + "10-13.md", "倾向录用")]),
    ("zh-10", "补牙花了多少钱", "zh-single-hop", FRI, [(D + "10-22.md", "花了 800 元")]),
    ("zh-11", "国庆期间豆包谁照顾", "zh-single-hop", FRI, [(D + "09-30.md", "张阿姨")]),
    (
        "zh-12",
        "SLA 超出部分怎么赔付",
        "zh-single-hop",
        FRI,
        [(D + "09-16.md", "按月服务费的 10% 赔付")],
    ),
    # --- mixed Chinese and English
    (
        "mix-01",
        "星河项目 p99 latency 上线",
        "mixed",
        FRI,
        [(D + "10-19.md", "降到 85ms"), (STAR, "p99 latency 目标")],
    ),
    (
        "mix-02",
        "Redis 连接池 leak 是谁发现的",
        "mixed",
        FRI,
        [(D + "09-21.md", "Redis 连接池 leak")],
    ),
    (
        "mix-03",
        "canary 灰度先放多少流量",
        "mixed",
        FRI,
        [(D + "10-12.md", "先切 10% 流量"), (STAR, "先放 10% 流量")],
    ),
    ("mix-04", "FX rate API 跟谁讨论的", "mixed", FRI, [(D + "10-20.md", "FX rate 汇率 API")]),
    (
        "mix-05",
        "signature verification 为什么慢",
        "mixed",
        FRI,
        [(D + "09-28.md", "瓶颈在签名验证")],
    ),
    (
        "mix-06",
        "public key cache 是谁做的",
        "mixed",
        FRI,
        [(D + "10-19.md", "公钥缓存（public key cache）")],
    ),
    (
        "mix-07",
        "CoreDNS postmortem 的行动项",
        "mixed",
        FRI,
        [(D + "10-08.md", "行动项是加 DNS 缓存")],
    ),
    (
        "mix-08",
        "full rollout 定在哪天",
        "mixed",
        FRI,
        [(D + "10-12.md", "全量上线（full rollout）"), (STAR, "计划全量上线")],
    ),
    (
        "mix-09",
        "DDIA replication 笔记",
        "mixed",
        FRI,
        [(BOOKS, "第五章 replication"), (D + "09-24.md", "DDIA 第五章")],
    ),
    ("mix-10", "CI pipeline 单测覆盖率", "mixed", FRI, [(D + "09-18.md", "覆盖率 71%")]),
    # --- paraphrases: few or no words shared with the note
    (
        "para-01",
        "上次体检后医生让我注意什么",
        "zh-paraphrase",
        FRI,
        [(D + "09-15.md", "医生建议少吃油炸")],
    ),
    (
        "para-02",
        "女儿期中数学考得怎么样",
        "zh-paraphrase",
        FRI,
        [(D + "10-16.md", "期中考了 96 分")],
    ),
    ("para-03", "猫咪太胖了吗", "zh-paraphrase", FRI, [(D + "09-18.md", "豆包有点胖")]),
    ("para-04", "假期在杭州拜了哪座寺庙", "zh-paraphrase", FRI, [(D + "10-02.md", "去灵隐寺")]),
    ("para-05", "新网关的延迟优化效果", "zh-paraphrase", FRI, [(D + "10-19.md", "降到 85ms")]),
    ("para-06", "招聘的运维工程师候选人", "zh-paraphrase", FRI, [(D + "10-13.md", "候选人张伟")]),
    ("para-07", "中秋送了什么礼物", "zh-paraphrase", FRI, [(D + "09-24.md", "稻香村月饼")]),
    ("para-08", "我喝咖啡的口味", "zh-paraphrase", FRI, [("MEMORY.md", "只喝美式")]),
    (
        "para-09",
        "这周二开了什么会",
        "zh-date-relative",
        FRI,
        [(D + "10-20.md", "Alice 开了英文会议")],
    ),
    (
        "para-10",
        "国庆假期第一天去了哪些地方",
        "zh-date-absolute",
        FRI,
        [(D + "10-01.md", "断桥和白堤")],
    ),
    # --- English questions about Chinese notes (only a multilingual embedder can bridge them)
    (
        "en-01",
        "What did the vet say about the cat's weight?",
        "cross-lingual",
        FRI,
        [(D + "09-18.md", "豆包有点胖")],
    ),
    (
        "en-02",
        "How much did the dental filling cost?",
        "cross-lingual",
        FRI,
        [(D + "10-22.md", "花了 800 元")],
    ),
    (
        "en-03",
        "What was the root cause of the payment callback outage?",
        "cross-lingual",
        FRI,
        [(D + "10-08.md", "根因是 DNS 解析")],
    ),
    (
        "en-04",
        "Which tea did we buy in Hangzhou?",
        "cross-lingual",
        FRI,
        [(D + "10-02.md", "两斤明前龙井")],
    ),
    ("en-05", "What am I allergic to?", "cross-lingual", FRI, [("MEMORY.md", "对花生过敏")]),
    (
        "en-06",
        "What did I do yesterday?",
        "cross-lingual",
        FRI,
        [(D + "10-22.md", "请假去看牙医"), (D + "10-22.md", "下个月洗牙")],
    ),
    # --- file names in Chinese
    ("path-01", "项目-星河 的里程碑", "zh-path", FRI, [(STAR, "9月10日：项目启动")]),
    ("path-02", "读书笔记里对三体的评价", "zh-path", FRI, [(BOOKS, "面壁计划的设定")]),
    ("path-03", "客户华远 合同什么时候续签", "zh-path", FRI, [(HUAYUAN, "每年十二月续签")]),
    ("path-04", "健身计划 的目标体重", "zh-path", FRI, [(GYM, "体重降到 72 公斤")]),
    ("path-05", "家庭旅行 寒假计划", "zh-path", FRI, [(TRIP, "冰雪大世界")]),
]


def _line_of(path: str, needle: str) -> int:
    lines = (HERE / WORKSPACE / path).read_text(encoding="utf-8").splitlines()
    found = [i for i, line in enumerate(lines, 1) if needle in line]
    if len(found) != 1:
        raise SystemExit(f"{path}: needle {needle!r} found on {len(found)} lines, need exactly 1")
    return found[0]


def build_rows() -> list[dict]:
    """The queries in the shared format, gold needles resolved to line numbers."""
    ids = [spec[0] for spec in SPEC]
    if len(set(ids)) != len(ids):
        raise SystemExit("duplicate query ids")
    return [
        {
            "id": f"zh/{qid}",
            "workspace": WORKSPACE,
            "query": query,
            "category": category,
            "now": now,
            "gold": [{"path": p, "line": _line_of(p, needle)} for p, needle in gold],
        }
        for qid, query, category, now, gold in SPEC
    ]


def render() -> str:
    """``queries.jsonl`` as ``build`` writes it."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in build_rows())


def first_day(results_path: str) -> int:
    """Print, for each date query, whether its first hit lies in the gold day's note."""
    rows = {row["id"]: row for row in build_rows()}
    misses = 0
    total = 0
    with open(results_path, encoding="utf-8") as fh:
        for line in fh:
            got = json.loads(line)
            row = rows.get(got["id"])
            if row is None or row["category"] not in DATE_CATEGORIES:
                continue
            total += 1
            days = {g["path"] for g in row["gold"]}
            top = got["results"][0]["path"] if got["results"] else None
            if top not in days:
                misses += 1
                print(f"MISS {row['id']} {row['query']!r}: first hit {top}, gold {sorted(days)}")
    print(f"date queries with the right day's note first: {total - misses}/{total}")
    return 1 if misses else 0


def main(argv: list[str]) -> int:
    """Entry point; see the module docstring."""
    if argv[:1] == ["build"]:
        QUERIES.write_text(render(), encoding="utf-8")
        print(f"wrote {len(SPEC)} queries to {QUERIES}")
        return 0
    if argv[:1] == ["check"]:
        if not QUERIES.exists() or QUERIES.read_text(encoding="utf-8") != render():
            print(f"{QUERIES} is out of date: run 'python {__file__} build'", file=sys.stderr)
            return 1
        print(f"{len(SPEC)} queries, every gold line verified")
        return 0
    if len(argv) == 2 and argv[0] == "first-day":
        return first_day(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
