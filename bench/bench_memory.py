"""Memory: recall p50 and p95 at 1k, 10k and 100k entries beside a plain SQLite FTS5 query
over the same texts (same run, interleaved); frozen block build at 10k entries; remember
throughput; adding all the entries.

Recall is timed lexical (``BUTLER_RECALL=lexical``), and, where the dense extra is installed,
hybrid too (issue 36): every entry given an embedding first — random unit vectors of the
model's size straight into the table (embedding 100,000 word-salad texts with the real model
would take more than an hour here and rank no differently), the query embedded for real by
the model at each recall.

Run: python bench/bench_memory.py [SIZES]   (e.g. 100000; default 1000,10000,100000)
"""

from __future__ import annotations

import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from butler_cli.memory import hybrid  # noqa: E402
from butler_cli.memory.entries import Entry  # noqa: E402
from butler_cli.memory.store import BLOCK_WINDOW, open_memory  # noqa: E402

WORDS = [
    "tea",
    "coffee",
    "garden",
    "invoice",
    "meeting",
    "harbour",
    "passport",
    "dentist",
    "birthday",
    "train",
    "ticket",
    "recipe",
    "sister",
    "brother",
    "project",
    "deadline",
    "budget",
    "guitar",
    "lesson",
    "flight",
    "hotel",
    "museum",
    "library",
    "printer",
    "laptop",
    "router",
    "backup",
    "photo",
    "album",
    "marathon",
    "yoga",
    "doctor",
    "insurance",
    "mortgage",
    "plumber",
    "paint",
    "kitchen",
    "window",
    "balcony",
    "tomato",
    "basil",
    "pepper",
    "lemon",
    "ginger",
    "honey",
    "bread",
    "cheese",
    "wine",
    "jazz",
    "opera",
]
CJK = "我开了家卖奶茶的小店喜欢喝咖啡明天去北京出差周末爬山看电影"
# A vocabulary like a person's: a few everyday words, a long tail of rarer ones (Zipf-like).
RARE = [
    f"{a}{b}{c}"
    for a in "bcdfgklmnprst"
    for b in "aeiou"
    for c in ("ran", "lo", "mit", "vek", "sa", "dor", "pin", "zu")
]
VOCAB = WORDS + RARE
WEIGHTS = [1 / (rank + 1) ** 0.9 for rank in range(len(VOCAB))]


def pick(rng: random.Random, k: int) -> list[str]:
    return rng.choices(VOCAB, WEIGHTS, k=k)


def text(rng: random.Random) -> str:
    words = " ".join(pick(rng, rng.randint(6, 14)))
    if rng.random() < 0.2:
        start = rng.randrange(len(CJK) - 6)
        words += " " + CJK[start : start + rng.randint(3, 6)]
    return words


def percentiles(fns, queries, passes: int = 3) -> list[tuple[float, float, float, float]]:  # type: ignore[no-untyped-def]
    """(p50, p95) of each function's wall time over every query, ``passes`` times, and
    (p50, p95) of its CPU time: interleaved query by query so machine noise falls on all of
    them alike; the CPU time is what a query costs whatever else the machine is running."""
    walls: list[list[float]] = [[] for _ in fns]
    cpus: list[list[float]] = [[] for _ in fns]
    for _ in range(passes):
        for q in queries:
            for i, fn in enumerate(fns):
                start, cpu = time.perf_counter(), time.process_time()
                fn(q)
                cpus[i].append(time.process_time() - cpu)
                walls[i].append(time.perf_counter() - start)
    out = []
    for wall, used in zip(walls, cpus, strict=True):
        wall.sort()
        used.sort()
        out.append(
            (
                statistics.median(wall),
                wall[int(len(wall) * 0.95)],
                statistics.median(used),
                used[int(len(used) * 0.95)],
            )
        )
    return out


def hybrid_percentiles(mem, queries):  # type: ignore[no-untyped-def]
    """Recall's (p50, p95, CPU p50, CPU p95) with the dense half on, every entry embedded."""
    import numpy as np

    rows = mem.db.execute("SELECT rowid, id FROM entries").fetchall()
    vectors = np.random.default_rng(7).standard_normal((len(rows), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    mem.db.execute("BEGIN")
    mem.db.executemany(
        "INSERT INTO embeddings (entry, id, model, vector) VALUES (?, ?, 'all-MiniLM-L6-v2', ?)",
        ((r, i, v.astype(np.float16).tobytes()) for (r, i), v in zip(rows, vectors, strict=True)),
    )
    mem.db.execute("COMMIT")
    os.environ[hybrid.SWITCH] = ""
    try:
        mem.recall(queries[0])  # loads the model and the matrix: the first recall's cost
        return percentiles([lambda q: mem.recall(q, k=12)], queries)[0]
    finally:
        os.environ[hybrid.SWITCH] = "lexical"


def main() -> None:
    rng = random.Random(7)
    queries = [" ".join(pick(rng, 2)) for _ in range(60)] + ["奶茶店", "茶", "北京"]
    print(
        f"Vocabulary {len(VOCAB)} words, Zipf-like; {len(queries) - 3} two-word queries drawn the same way, and 3 CJK queries."
    )
    print()
    dense = hybrid.active()
    os.environ[hybrid.SWITCH] = "lexical"
    print(
        "| entries | butler recall p50 | p95 | CPU p50 | CPU p95 "
        "| plain FTS5 query p50 (same texts) | p95 | CPU p50 | CPU p95 | target |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    added: dict[int, float] = {}
    block_row = None
    hybrid_rows: list[tuple[int, tuple[float, float, float, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        sizes = sys.argv[1] if len(sys.argv) > 1 else "1000,10000,100000"
        for n in (int(x) for x in sizes.split(",")):
            home = Path(tmp) / f"h{n}"
            mem = open_memory(home)
            texts = [text(rng) for _ in range(n)]
            start = time.perf_counter()
            mem.add_entries(
                Entry(
                    f"b{i:07d}",
                    "semantic" if i % 10 == 0 else "episodic",
                    t,
                    f"2026-01-01T00:00:00.{i:06d}+00:00",
                    {"importance": 1 + i % 5},
                )
                for i, t in enumerate(texts)
            )
            added[n] = time.perf_counter() - start
            plain = sqlite3.connect(home / "plain.db")
            plain.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
            plain.executemany("INSERT INTO t(x) VALUES (?)", ((t,) for t in texts))
            plain.commit()

            def plain_query(q: str) -> None:
                match = " ".join(f'"{w}"' for w in q.split())  # FTS5's default: every term
                plain.execute(
                    "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT 12", (match,)
                ).fetchall()

            mem.recall(queries[0])  # warm the page cache for both, then time
            plain_query(queries[0])
            (ours, ours95, cpu, cpu95), (base, base95, bcpu, bcpu95) = percentiles(
                [lambda q: mem.recall(q, k=12), plain_query], queries
            )
            met = "✓" if ours <= 0.005 and ours95 <= 0.015 else "✗"
            target = f"p50 ≤ 5 ms, p95 ≤ 15 ms {met}" if n == 100_000 else ""
            print(
                f"| {n:,} | {ours * 1000:.2f} ms | {ours95 * 1000:.2f} ms "
                f"| {cpu * 1000:.2f} ms | {cpu95 * 1000:.2f} ms "
                f"| {base * 1000:.2f} ms | {base95 * 1000:.2f} ms "
                f"| {bcpu * 1000:.2f} ms | {bcpu95 * 1000:.2f} ms | {target} |"
            )
            if dense:
                hybrid_rows.append((n, hybrid_percentiles(mem, queries)))
            if n == 10_000:
                start = time.perf_counter()
                for _ in range(10):
                    block = mem.block()
                build = (time.perf_counter() - start) / 10
                start = time.perf_counter()
                for _ in range(10):
                    mem.db.execute(
                        "SELECT text, meta FROM entries WHERE kind='semantic' "
                        f"ORDER BY importance DESC, ts DESC, id LIMIT {BLOCK_WINDOW}"
                    ).fetchall()
                sort_base = (time.perf_counter() - start) / 10
                block_row = (build, sort_base, len(block))
        if hybrid_rows:
            print("\n| entries | hybrid recall p50 | p95 | CPU p50 | CPU p95 |")
            print("|---|---|---|---|---|")
            for n, (p50, p95, c50, c95) in hybrid_rows:
                print(
                    f"| {n:,} | {p50 * 1000:.2f} ms | {p95 * 1000:.2f} ms "
                    f"| {c50 * 1000:.2f} ms | {c95 * 1000:.2f} ms |"
                )
        print("\n| entries added in one `add_entries` | time |\n|---|---|")
        for n, took in added.items():
            print(f"| {n:,} | {took * 1000:.0f} ms |")
        print()
        if block_row is None:
            return
        build, sort_base, size = block_row
        print("| measure | figure | baseline (same run) |")
        print("|---|---|---|")
        print(
            f"| frozen block build, 10k entries (1k semantic) | {build * 1000:.1f} ms ({size} chars) | plain SELECT of the same window: {sort_base * 1000:.2f} ms |"
        )
        mem = open_memory(Path(tmp) / "throughput")
        mem.remember("warm up")
        n = 500
        start = time.perf_counter()
        for i in range(n):
            mem.remember(f"fact number {i} about {rng.choice(WORDS)}")
        ours = n / (time.perf_counter() - start)
        plain = sqlite3.connect(Path(tmp) / "plain-insert.db", isolation_level=None)
        plain.execute("PRAGMA journal_mode=WAL")
        plain.execute("PRAGMA synchronous=NORMAL")
        plain.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        start = time.perf_counter()
        for i in range(n):
            plain.execute("INSERT INTO t(x) VALUES (?)", (f"fact number {i}",))
        base = n / (time.perf_counter() - start)
        print(
            f"| remember throughput (one transaction each) | {ours:,.0f} /s | plain FTS5 insert, autocommit, same pragmas: {base:,.0f} /s |"
        )


if __name__ == "__main__":
    main()
