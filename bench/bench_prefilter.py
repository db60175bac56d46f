"""How often the sign-bit prefilter of memory/vectors.py misses one of the exact best, on real
all-MiniLM-L6-v2 embeddings, and what its search costs beside scoring every memory.

Memories: LoCoMo's tuning conversations (26, 30, 41, 42, 43: observations and dialog turns;
the held-out half is never read), and as many distractors as asked — sentences of the
docstrings of Python's standard library and of the installed packages, and of /usr/share/doc
(real English, none of it about the questions). Queries: the tuning half's 760 questions.
Embedding 60,000 texts takes about ten minutes of one core: ``--cache FILE`` keeps them.

Run: python bench/bench_prefilter.py PATH/locomo10.zip [DISTRACTORS] [--cache FILE]
     (default 56,409 distractors: 60,379 memories with LoCoMo's)
"""

from __future__ import annotations

import random
import re
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from bench_recall import TUNING, conversations  # noqa: E402

from butler_cli.memory import vectors  # noqa: E402
from butler_cli.memory.dense import _WIDE, FLOOR  # noqa: E402
from butler_cli.memory.encoder import Encoder  # noqa: E402


def distractors(n: int) -> list[str]:
    """Sentences of 30–250 characters from docstrings and documentation on this machine."""
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    found: set[str] = set()
    for root in [*roots, Path("/usr/share/doc")]:
        for path in sorted(root.rglob("*")):
            if path.suffix not in (".py", ".txt", ".md", ".rst") or "test" in path.parts:
                continue
            try:
                text = path.read_text(errors="ignore")
            except OSError:
                continue
            blocks = re.findall(r'"""(.*?)"""', text, re.S) if path.suffix == ".py" else [text]
            for block in blocks:
                for s in re.split(r"(?<=[.!?])\s+", " ".join(block.split())):
                    if 30 <= len(s) <= 250 and re.search(r"[a-z]{3} [a-z]{3}", s):
                        found.add(s)
    ordered = sorted(found)
    random.Random(3).shuffle(ordered)
    return ordered[:n]


def exact(matrix: np.ndarray, query: np.ndarray, wide: int) -> np.ndarray:  # type: ignore[type-arg]
    scores = matrix @ query
    top = np.argpartition(-scores, wide - 1)[:wide]
    top = top[np.lexsort((top, -scores[top]))]
    return top[scores[top] >= FLOOR]


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    cache = Path(sys.argv[sys.argv.index("--cache") + 1]) if "--cache" in sys.argv else None
    count = int(args[1]) if len(args) > 1 and args[1] != str(cache) else 56_409
    with tempfile.TemporaryDirectory() as tmp:
        tuning = [c for c in conversations(Path(args[0]), Path(tmp)) if c.name in TUNING]
    texts = [m.text for c in tuning for m in c.facts + c.turns]
    questions = [q.text for c in tuning for q in c.questions]
    if cache and cache.exists():
        saved = np.load(cache)
        memories, queries = saved["memories"], saved["queries"]
    else:
        encoder = Encoder()
        queries = encoder.encode(questions)
        memories = encoder.encode(texts + distractors(count)).astype(np.float16)
        if cache:
            np.savez(cache, memories=memories, queries=queries)
    matrix = memories.astype(np.float32)
    held = vectors.Vectors()
    held.add(range(len(memories)), [str(i) for i in range(len(memories))], memories)
    print(f"{len(memories):,} memories ({len(texts):,} LoCoMo), {len(queries)} questions\n")
    print("| memories scored exactly | top 50 differs | rows missed (their exact ranks) "
          "| top 200 differs | search p50 | scoring all p50 |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for rescored in (1_000, 2_000, 4_000):
        vectors.RESCORED = rescored
        differ = {50: 0, _WIDE: 0}
        missed: list[int] = []
        took: list[float] = []
        full: list[float] = []
        for query in queries:
            for wide in (50, _WIDE):
                start = time.perf_counter()
                got = held.nearest(query, wide, FLOOR)
                took.append(time.perf_counter() - start)
                start = time.perf_counter()
                want = exact(matrix, query, wide)
                full.append(time.perf_counter() - start)
                if not np.array_equal(got, want):
                    differ[wide] += 1
                    if wide == 50:
                        missed += [r + 1 for r, row in enumerate(want) if row not in set(got)]
        print(
            f"| {rescored:,} | {differ[50]} of {len(queries)} | {len(missed)} {sorted(missed)} "
            f"| {differ[_WIDE]} of {len(queries)} | {np.median(took) * 1e3:.2f} ms "
            f"| {np.median(full) * 1e3:.2f} ms |"
        )


if __name__ == "__main__":
    main()
