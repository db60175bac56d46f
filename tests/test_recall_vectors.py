"""The search over the embeddings a process holds (memory/vectors.py): above EXACT_UP_TO
memories a sign-bit prefilter picks the few scored exactly — it must find what scoring every
memory finds, on real embeddings, and keep each memory's rowid and id through growth."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from butler_cli.memory import vectors
from butler_cli.memory.dense import FLOOR
from butler_cli.memory.encoder import Encoder

ROOT = Path(__file__).resolve().parent.parent


def _exact(matrix: np.ndarray, query: np.ndarray, wide: int, floor: float = FLOOR) -> np.ndarray:  # type: ignore[type-arg]
    """Every memory scored: the ranking the prefilter must reproduce."""
    scores = matrix.astype(np.float32) @ query
    top = np.argsort(-scores, kind="stable")[:wide]
    return top[scores[top] >= floor]


def _docs() -> tuple[list[str], list[str]]:
    """Real English: the sentences of the README and docs/ as memories, headings as queries."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = " ".join(" ".join(f.read_text(encoding="utf-8").split()) for f in files)
    sentences = sorted({s for s in re.split(r"(?<=[.!?])\s+", text) if 30 <= len(s) <= 200})
    headings = [
        line.lstrip("# ")
        for f in files
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.startswith("## ")
    ]
    return sentences, sorted(set(headings))


def test_the_prefilter_finds_what_scoring_every_memory_finds(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """~800 real memories, a quarter of them rescored (≥ 20 for each of the 10 best asked
    for); at scale — 4,000 rescored for the 50 best — bench/bench_prefilter.py measures it
    (BENCHMARKS.md). Bits that do not follow the vectors, or positions mixed up, fail it."""
    sentences, queries = _docs()
    assert len(sentences) > 500 and len(queries) > 50
    encoder = Encoder()
    matrix = encoder.encode(sentences).astype(np.float16)
    monkeypatch.setattr(vectors, "EXACT_UP_TO", 0)  # the prefilter from the first memory
    monkeypatch.setattr(vectors, "RESCORED", len(sentences) // 4)
    held = vectors.Vectors()
    held.add(range(len(sentences)), [f"m{i}" for i in range(len(sentences))], matrix)
    differ = []
    for query, vector in zip(queries, encoder.encode(queries), strict=True):
        found = held.nearest(vector, 10, FLOOR)
        if not np.array_equal(found, _exact(matrix, vector, 10)):
            differ.append(query)
    assert not differ, differ


@pytest.mark.parametrize("exact_up_to", [10**9, 0, 37])
def test_each_memory_keeps_its_rowid_and_id_one_at_a_time(monkeypatch, exact_up_to: int) -> None:  # type: ignore[no-untyped-def]
    """Added one by one, across the switch to float16 and bits (at 37) and the buffers'
    growth: scoring all (RESCORED above the count) gives the exact ranking, equal ones oldest
    first, each position with the rowid and id it came with."""
    monkeypatch.setattr(vectors, "EXACT_UP_TO", exact_up_to)
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((1500, 384)).astype(np.float32)
    rows[700] = rows[20]  # the same memory twice: the older first
    matrix = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float16)
    held = vectors.Vectors()
    for i, vector in enumerate(matrix):
        held.add([1000 + i], [f"id{i}"], vector[None, :])
    query = matrix[20].astype(np.float32)
    found = held.nearest(query, 50, -1.0)
    assert list(found) == list(_exact(matrix, query, 50, -1.0))
    assert list(found[:2]) == [20, 700]
    assert held.pairs(found[:2]) == [(1020, "id20"), (1700, "id700")]
