"""Damage to the dense half never breaks recall nor misleads it (issue 36).

The embeddings are derived from the memories: a vector of the wrong size or type (a bad
write, another tool, a hand edit) is skipped, never read into another memory's place, and
made again from its memory's text at the next recall; the memories themselves are untouched.
A model package cut short or garbled, or any library of the dense half failing, leaves the
recall to words, never a traceback."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

HYBRID = {"BUTLER_RECALL": ""}  # the suite runs lexical (conftest): these tests turn it on
TAEKWONDO = "John practices taekwondo twice a week"
PEANUTS = "Ana is allergic to peanuts"


def _found(done) -> list[str]:  # type: ignore[no-untyped-def]
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return [e["text"] for e in json.loads(done.stdout)]


def _vectors(home: Path) -> dict[str, tuple[str, int]]:
    with sqlite3.connect(home / "memory.db") as db:
        return {
            text: (kind, size)
            for text, kind, size in db.execute(
                "SELECT e.text, typeof(v.vector), length(v.vector) FROM embeddings v "
                "JOIN entries e ON e.rowid = v.entry"
            )
        }


@pytest.mark.parametrize(
    "damage",
    [
        "x'010203'",  # an odd number of bytes: not float16 at all
        "CAST(vector AS TEXT)",  # the right bytes, stored as text
        "vector || vector",  # two vectors' worth: would shift every later one by a row
        "zeroblob(768)",  # the right size, no direction: matches nothing
    ],
)
def test_a_damaged_vector_is_skipped_and_made_again(butler, butler_home: Path, damage: str) -> None:
    for fact in (TAEKWONDO, PEANUTS, "The car is parked on level 3"):
        assert butler("memory", "add", fact).returncode == 0
    assert butler("memory", "embed", env=HYBRID).returncode == 0
    with sqlite3.connect(butler_home / "memory.db") as db:
        db.execute(
            f"UPDATE embeddings SET vector = {damage} WHERE entry = "
            "(SELECT rowid FROM entries WHERE text = ?)",
            (TAEKWONDO,),
        )
    # the other memories are still found by meaning, each in its own place
    assert _found(butler("memory", "search", "food allergy", "--json", env=HYBRID))[0] == PEANUTS
    # and the damaged one was made again from its text: found by meaning again
    assert _vectors(butler_home)[TAEKWONDO] == ("blob", 768)
    assert _found(butler("memory", "search", "martial arts", "--json", env=HYBRID))[0] == TAEKWONDO


def _model_copy(tmp_path: Path) -> Path:
    """A copy of the installed model package on PYTHONPATH, ahead of the real one."""
    from butler_cli.memory.encoder import PACKAGE, packaged_model

    real = packaged_model()
    copy = tmp_path / "site" / PACKAGE
    (copy / "model" / "1_Pooling").mkdir(parents=True)
    (copy / "__init__.py").write_text("raise SystemExit('the model package is never imported')")
    for name in ("tokenizer.json", "model.safetensors", "1_Pooling/config.json"):
        (copy / "model" / name).symlink_to(real / name)
    return copy / "model"


def test_a_model_that_fails_while_the_words_are_ranked_leaves_recall_by_words(
    butler, butler_home: Path, tmp_path: Path
) -> None:
    """The query is embedded while the words are ranked on a second thread: a model that
    fails to load then (its weights gone from the package) must leave the recall lexical,
    answered, with no traceback and no "Exception in thread" (seen failing before: the
    error ended `memory search` with a traceback)."""
    for fact in ("Ana is allergic to peanuts", "John practices taekwondo twice a week"):
        assert butler("memory", "add", fact).returncode == 0
    assert butler("memory", "embed", env=HYBRID).returncode == 0  # nothing left to embed
    model = _model_copy(tmp_path)
    (model / "model.safetensors").unlink()
    env = {**HYBRID, "PYTHONPATH": str(model.parent.parent)}  # no model.safetensors in it
    found = butler("memory", "search", "peanuts", "--json", env=env)
    assert _found(found) == ["Ana is allergic to peanuts"]
    assert found.stderr == ""
    # the same store with the whole package: the dense half is back
    assert _found(butler("memory", "search", "martial arts", "--json", env=HYBRID))[:1] == [
        "John practices taekwondo twice a week"
    ]


@pytest.mark.parametrize(
    ("damaged", "content"),
    [
        ("model.safetensors", b"\x08\x00\x00\x00\x00\x00\x00\x00{}"),  # cut short
        ("model.safetensors", b""),
        ("tokenizer.json", b'{"model": 1}'),
        ("1_Pooling/config.json", b"{not json"),
        ("1_Pooling/config.json", b'{"pooling_mode_cls_token": true}'),
    ],
)
def test_a_damaged_model_leaves_recall_to_words(
    butler, butler_home: Path, tmp_path: Path, damaged: str, content: bytes
) -> None:
    """The packaged model's files cut short or garbled: recall answers by words, with no
    traceback; `memory embed` says in one line that the model could not be read, and
    `doctor` that recall is lexical, why, and how to reinstall the model."""
    model = _model_copy(tmp_path)
    (model / damaged).unlink()
    (model / damaged).write_bytes(content)
    env = {**HYBRID, "PYTHONPATH": str(model.parent.parent)}
    assert butler("memory", "add", PEANUTS, env=env).returncode == 0
    assert _found(butler("memory", "search", "peanuts", "--json", env=env)) == [PEANUTS]
    assert _found(butler("memory", "search", "food allergy", "--json", env=env)) == []
    done = butler("memory", "embed", env=env)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "model" in line and damaged.split("/")[-1] in line, line
    # and doctor names it: the one place a recall by words alone is explained
    doctor = butler("doctor", env=env)
    [said] = [line for line in doctor.stdout.splitlines() if line.startswith("recall:")]
    assert said.startswith("recall:    lexical — the packaged model's"), said
    assert damaged.split("/")[-1] in said and "--force-reinstall" in said, said


def test_any_failure_of_the_dense_half_leaves_recall_to_words(
    butler, butler_home: Path, tmp_path: Path
) -> None:
    """The dense half is optional: a library of it failing in a way nobody listed (here the
    BLAS threads' limit raising RuntimeError, as an older NumPy without ``bitwise_count``
    raises AttributeError) still leaves a recall by words, never a traceback."""
    fake = tmp_path / "site" / "threadpoolctl"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "class ThreadpoolController:\n"
        "    def limit(self, **_):\n"
        "        raise RuntimeError('no BLAS library found')\n"
    )
    env = {**HYBRID, "PYTHONPATH": str(fake.parent)}
    assert butler("memory", "add", PEANUTS, env=env).returncode == 0
    assert _found(butler("memory", "search", "peanuts", "--json", env=env)) == [PEANUTS]
