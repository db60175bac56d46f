"""Hybrid recall through the installed `butler` (issue 36): the real all-MiniLM-L6-v2 from its
package, fused with the lexical ranking; off with ``BUTLER_RECALL=lexical``; embeddings made
at a recall, never when a memory is stored; an older store migrates and is embedded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from butler_cli.memory.encoder import Encoder, packaged_model

OLD = Path(__file__).parent / "old_stores"
HYBRID = {"BUTLER_RECALL": ""}  # the suite runs lexical (conftest): these tests turn it on
LEXICAL = {"BUTLER_RECALL": "lexical"}


def _texts(done) -> list[str]:  # type: ignore[no-untyped-def]
    assert done.returncode == 0, done.stderr
    return [e["text"] for e in json.loads(done.stdout)]


def _embeddings(home: Path) -> int:
    with sqlite3.connect(home / "memory.db") as db:
        return int(db.execute("SELECT count(*) FROM embeddings").fetchone()[0])


def test_a_paraphrase_is_found_only_with_the_dense_half_on(butler, butler_home: Path) -> None:
    for fact in (
        "John practices taekwondo twice a week",
        "Ana is allergic to peanuts",
        "The car is parked on level 3",
    ):
        assert butler("memory", "add", fact).returncode == 0
    # no word of the query is in the memory: words alone find nothing
    lexical = butler("memory", "search", "martial arts", "--json", env={"BUTLER_RECALL": "lexical"})
    assert _texts(lexical) == []
    hybrid = butler("memory", "search", "martial arts", "--json", env=HYBRID)
    assert _texts(hybrid)[0] == "John practices taekwondo twice a week"
    # and a query near nothing stays empty: no unrelated memory is offered as a match
    assert _texts(butler("memory", "search", "quarterly tax filing", "--json", env=HYBRID)) == []
    assert "recall:    hybrid" in butler("doctor", env=HYBRID).stdout
    assert "3 of 3 memories embedded" in butler("doctor", env=HYBRID).stdout
    off = butler("doctor", env={"BUTLER_RECALL": "lexical"}).stdout
    assert "recall:    lexical (BUTLER_RECALL=lexical" in off


def test_a_forgotten_memory_leaves_no_vector(butler, butler_home: Path) -> None:
    added = butler("memory", "add", "Mei works as a counsellor at the youth centre")
    mei = added.stdout.split()[2]
    butler("memory", "add", "Mei lives in Lisbon and visits every August")
    found = _texts(butler("memory", "search", "what is her job", "--json", env=HYBRID))
    assert found[0] == "Mei works as a counsellor at the youth centre"  # job ≈ works as
    assert _embeddings(butler_home) == 2
    assert butler("memory", "forget", mei).returncode == 0
    assert _embeddings(butler_home) == 1  # its vector went with it: never matched again
    found = _texts(butler("memory", "search", "what is her job", "--json", env=HYBRID))
    assert "Mei works as a counsellor at the youth centre" not in found


def test_storing_a_memory_never_loads_the_model(butler, butler_home: Path, tmp_path: Path) -> None:
    """Stand-ins for the model's libraries that end the process when imported: adding and
    importing memories must not reach them (embeddings are made at a recall)."""
    fake = tmp_path / "fake"
    for name in ("numpy", "safetensors", "tokenizers"):
        (fake / name).mkdir(parents=True)
        (fake / name / "__init__.py").write_text(f"raise SystemExit('{name} loaded on insert')")
    env = {**HYBRID, "PYTHONPATH": str(fake)}
    assert butler("memory", "add", "Ana is allergic to peanuts", env=env).returncode == 0
    export = tmp_path / "e.json"
    entry = {"id": "m00test000001", "kind": "semantic", "text": "Mei lives in Lisbon",
             "ts": "2026-01-01T00:00:00+00:00", "meta": {}}  # fmt: skip
    data = {"format": "butler-memory", "version": 1, "profile": "default", "entries": [entry]}
    export.write_text(json.dumps(data))
    done = butler("memory", "import", str(export), env=env)
    assert done.returncode == 0, done.stderr
    assert _embeddings(butler_home) == 0
    # and where the model's libraries are broken, a recall still answers, by words
    for name in ("numpy", "safetensors", "tokenizers"):
        (fake / name / "__init__.py").write_text(f"raise ImportError('{name} is broken')")
    found = butler("memory", "search", "peanuts", "--json", env=env)
    assert _texts(found) == ["Ana is allergic to peanuts"]


def test_an_older_store_migrates_and_is_embedded(butler, butler_home: Path) -> None:
    """A memory.db made before embeddings existed (tests/old_stores, dcadb60): the first
    open adds the table, keeps every row, and hybrid recall finds what words cannot."""
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "memory.db").write_bytes((OLD / "profile_memory.db").read_bytes())
    # embedded whole first: a recall embeds only about a second's worth of the newest, which
    # under a loaded CI machine may be just 16 of the 36 (the answer among the rest)
    done = butler("memory", "embed", env=HYBRID)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("36 of 36 have an embedding.")
    assert _embeddings(butler_home) == 36
    found = _texts(butler("memory", "search", "food she cannot eat", "--json", env=HYBRID))
    assert "Ana is allergic to peanuts" in found[:3], found
    words = _texts(butler("memory", "search", "food she cannot eat", "--json", env=LEXICAL))
    assert "Ana is allergic to peanuts" not in words, words  # what words alone cannot find
    assert len(json.loads(butler("memory", "list", "--json").stdout)) == 36
    off = butler("memory", "embed", env={"BUTLER_RECALL": "lexical"})
    assert off.returncode == 2 and "hybrid recall is off" in off.stderr


def test_the_numpy_forward_pass_equals_the_model_run_by_torch() -> None:
    """Reference vectors from the same packaged model run by transformers' BertModel on
    PyTorch 2.13.0 (tests/make_dense_reference.py, made once): cosine ≥ 0.999 for each text,
    CJK, accents, an emoji, an empty one and one past the 256-token cut among them."""
    reference = np.load(Path(__file__).parent / "dense_reference.npz")
    texts = [str(t) for t in reference["texts"]]
    mine = Encoder(packaged_model()).encode(texts)
    cosines = (mine * reference["vectors"]).sum(axis=1)
    assert cosines.min() >= 0.999, dict(zip(texts, cosines.round(5), strict=True))


@pytest.mark.parametrize("text", ["", " ", "日本語のテキスト", "x" * 5000])
def test_any_text_gives_a_unit_vector(text: str) -> None:
    [vector] = Encoder().encode([text])
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3


def test_the_switch_knows_every_library_the_dense_path_imports() -> None:
    """``hybrid.MODULES`` decides whether recall is hybrid (and what doctor says is missing):
    a library the dense path imports that is not in it (``threadpoolctl`` was not) left a
    user without it on a recall by words while doctor said `hybrid`."""
    import ast
    import sys

    from butler_cli.memory import hybrid

    root = Path(__file__).parent.parent / "butler_cli" / "memory"
    imported: set[str] = set()
    for module in ("dense.py", "encoder.py", "vectors.py"):
        for node in ast.walk(ast.parse((root / module).read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    outside = {name for name in imported if name not in sys.stdlib_module_names}
    assert outside - {"butler_cli"} <= set(hybrid.MODULES), outside
