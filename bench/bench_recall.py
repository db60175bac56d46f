"""Recall quality on LoCoMo (Maharana et al., ACL 2024): does `recall` find the evidence?

Ten long two-person conversations; each question (categories 1–4: multi-hop, temporal,
open-domain, single-hop) names the dialog turns that are its evidence. Every conversation
becomes one person's memory, stored through the product's own store, in two ways:

- **facts**: the dataset's per-session observations ("Caroline attended an LGBTQ support
  group"), each tied to the turn it came from, stored as semantic memories;
- **turns**: every dialog turn, ``Speaker: text`` (with ``[shares a photo: caption]`` when
  it has one), stored as episodic memories.

Each memory carries its session's date as its time. recall@k is the share of a question's
evidence turns that the first k results cover, averaged over questions. Compared in the
same run over the same texts: ``rank_bm25`` (BM25Okapi over lower-cased words, stop words
removed: the textbook baseline) and plain SQLite FTS5 (the default tokenizer, the question's
words OR-ed, bm25 order). `butler` goes through the recall tool itself (MemoryTools.recall on
the MemoryStore the chat uses), so what it finds is what the model is given.

The tuning half is conversations 26, 30, 41, 42 and 43; the other five are held out: the
product's ranking was tuned on the first half only, so the second says whether it generalises.

The data is not in this repository (its licence is not stated for redistribution): pass the
path of ``locomo10.zip`` (from github.com/snap-research/locomo, ``data/``), of a folder of its
``NN.json`` files, or set ``BUTLER_LOCOMO``. A zip is unpacked into a temporary folder.

Run: python bench/bench_recall.py /path/to/locomo10.zip   (needs the ``bench`` extra)
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rank_bm25 import BM25Okapi

from butler_cli.memory.entries import Entry
from butler_cli.memory.search import STOP_WORDS
from butler_cli.memory.store import open_memory
from butler_cli.memory.tools import MemoryTools

TUNING = ("26", "30", "41", "42", "43")
KS = (1, 5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"D\d+:\d+")
_WORD = re.compile(r"\w+")
_LINE_ID = re.compile(r"^\[(\S+)\]")


@dataclass(frozen=True)
class Memory:
    text: str
    ts: str
    dia: frozenset[str]


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    name: str
    facts: list[Memory]
    turns: list[Memory]
    questions: list[Question]


def session_ts(when: str, offset: int) -> str:
    """'1:56 pm on 8 May, 2023' → an ISO time, ``offset`` seconds on (turns keep their order)."""
    stamp = datetime.strptime(when.replace(",", ""), "%I:%M %p on %d %B %Y")
    return (
        stamp.replace(second=offset % 60, minute=(stamp.minute + offset // 60) % 60).isoformat(
            timespec="microseconds"
        )
        + "+00:00"
    )


def load(name: str, data: dict) -> Conversation:  # type: ignore[type-arg]
    facts: list[Memory] = []
    turns: list[Memory] = []
    for key, when in data.items():
        m = re.fullmatch(r"session_(\d+)_date_time", key)
        if not m:
            continue
        s = m.group(1)
        for i, turn in enumerate(data.get(f"session_{s}") or []):
            text = f"{turn['speaker']}: {turn.get('text', '')}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append(Memory(text, session_ts(when, i), frozenset([turn["dia_id"]])))
        for i, items in enumerate((data.get(f"session_{s}_observation") or {}).values()):
            for j, (text, dia) in enumerate(items):
                facts.append(
                    Memory(text, session_ts(when, i * 30 + j), frozenset(_DIA.findall(str(dia))))
                )
    questions = [
        Question(q["question"], q["category"], frozenset(_DIA.findall(" ".join(q["evidence"]))))
        for q in data["qa"]
        if q.get("category") in CATEGORIES and _DIA.findall(" ".join(q.get("evidence", [])))
    ]
    return Conversation(name, facts, turns, questions)


def conversations(source: Path, tmp: Path) -> list[Conversation]:
    if source.is_file():
        with zipfile.ZipFile(source) as z:
            z.extractall(tmp / "locomo")
        source = tmp / "locomo"
    files = sorted(p for p in source.rglob("*.json") if re.fullmatch(r"\d+\.json", p.name))
    if len(files) != 10:
        sys.exit(f"expected the ten LoCoMo conversations (NN.json) under {source}")
    return [load(p.stem, json.loads(p.read_text())) for p in files]


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


Ranker = Callable[[str], list[frozenset[str]]]


def butler_ranker(home: Path, memories: list[Memory], kind: str) -> tuple[Ranker, float]:
    store = open_memory(home)
    entries = [
        Entry(f"m{i:07d}", kind, m.text, m.ts, {"importance": 3})  # type: ignore[arg-type]
        for i, m in enumerate(memories)
    ]
    dia = {e.id: m.dia for e, m in zip(entries, memories, strict=True)}
    start = time.perf_counter()
    store.add_entries(entries)
    added = time.perf_counter() - start
    tools = MemoryTools(store)

    def rank(question: str) -> list[frozenset[str]]:
        lines = tools.recall({"query": question, "k": max(KS)}).splitlines()
        return [dia[m.group(1)] for line in lines if (m := _LINE_ID.match(line))]

    return rank, added


def bm25_ranker(memories: list[Memory]) -> tuple[Ranker, float]:
    start = time.perf_counter()
    bm25 = BM25Okapi([words(m.text) for m in memories])
    added = time.perf_counter() - start

    def rank(question: str) -> list[frozenset[str]]:
        scores = bm25.get_scores(words(question))
        best = sorted(range(len(memories)), key=lambda i: -scores[i])[: max(KS)]
        return [memories[i].dia for i in best if scores[i] > 0]

    return rank, added


def fts5_ranker(memories: list[Memory]) -> tuple[Ranker, float]:
    db = sqlite3.connect(":memory:")
    start = time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(m.text for m in memories))
    db.commit()
    added = time.perf_counter() - start

    def rank(question: str) -> list[frozenset[str]]:
        terms = dict.fromkeys(_WORD.findall(question.lower()))
        if not terms:
            return []
        match = " OR ".join('"' + t + '"' for t in terms)
        rows = db.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?", (match, max(KS))
        ).fetchall()
        return [memories[r[0]].dia for r in rows]

    return rank, added


@dataclass
class Score:
    hits: dict[tuple[int, int], list[float]]  # (category, k) → per-question recall
    latency: list[float]
    added: float = 0.0


def evaluate(rank: Ranker, questions: list[Question], score: Score) -> None:
    for q in questions:
        start = time.perf_counter()
        found = rank(q.text)
        score.latency.append(time.perf_counter() - start)
        for k in KS:
            covered: set[str] = set()
            for dia in found[:k]:
                covered |= dia
            share = len(q.evidence & covered) / len(q.evidence)
            score.hits.setdefault((q.category, k), []).append(share)
            score.hits.setdefault((0, k), []).append(share)


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def main() -> None:
    given = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BUTLER_LOCOMO")
    if not given or not Path(given).exists():
        sys.exit(__doc__)
    only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None  # e.g. tuning
    with tempfile.TemporaryDirectory() as tmp:
        convs = conversations(Path(given), Path(tmp))
        halves = {"tuning": [c for c in convs if c.name in TUNING]}
        halves["held-out"] = [c for c in convs if c.name not in TUNING]
        if only:
            halves = {h: cs for h, cs in halves.items() if h in only}
        results: dict[tuple[str, str, str], Score] = {}
        for half, cs in halves.items():
            for c in cs:
                for view in ("facts", "turns"):
                    memories = c.facts if view == "facts" else c.turns
                    kind = "semantic" if view == "facts" else "episodic"
                    home = Path(tmp) / f"{c.name}-{view}"
                    for name, (rank, added) in {
                        "butler": butler_ranker(home, memories, kind),
                        "bm25": bm25_ranker(memories),
                        "fts5": fts5_ranker(memories),
                    }.items():
                        s = results.setdefault((half, view, name), Score({}, []))
                        s.added += added
                        evaluate(rank, c.questions, s)
        report(results, halves)


NAMES = {
    "butler": "butler `recall`",
    "bm25": "BM25 (rank_bm25, stop words out)",
    "fts5": "plain FTS5 (OR, bm25)",
}


def report(
    results: dict[tuple[str, str, str], Score], halves: dict[str, list[Conversation]]
) -> None:
    for half, cs in halves.items():
        n_q = len(cs and [q for c in cs for q in c.questions])
        print(f"\n### {half}: conversations {', '.join(c.name for c in cs)} ({n_q} questions)\n")
        for view in ("facts", "turns"):
            n_m = sum(len(c.facts if view == "facts" else c.turns) for c in cs)
            print(f"**{view} as memories** ({n_m} memories)\n")
            cats = " | ".join(f"@10 cat {c} ({CATEGORIES[c]})" for c in CATEGORIES)
            print(f"| ranker | @1 | @5 | @10 | @25 | {cats} | query p50 | p95 | add all |")
            print("|---|" + "---|" * (7 + len(CATEGORIES)))
            for name in NAMES:
                s = results.get((half, view, name))
                if s is None:
                    continue
                ks = " | ".join(f"{mean(s.hits[(0, k)]):.3f}" for k in KS)
                per = " | ".join(f"{mean(s.hits.get((c, 10), [])):.3f}" for c in CATEGORIES)
                lat = sorted(s.latency)
                p50 = statistics.median(lat) * 1000
                p95 = lat[int(len(lat) * 0.95)] * 1000
                print(
                    f"| {NAMES[name]} | {ks} | {per} | {p50:.2f} ms | {p95:.2f} ms "
                    f"| {s.added * 1000:.0f} ms |"
                )
            print()


if __name__ == "__main__":
    main()
