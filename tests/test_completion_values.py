"""Shell completion of the ids and names the butler keeps (issue 35 item 8): `log show` and
`--conversation` complete conversation ids, `schedule pause|resume|remove|run` schedule ids,
`grants revoke` kept approvals' numbers, `--model` the config's aliases, the models `butler
models` listed and the providers — in bash, zsh and fish, through the installed `butler` and
the completion protocol each script speaks, with real state in this test's home. A corrupt
state file completes nothing and never fails; an id of another shape never reaches the shell.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest
from test_version_completion import complete


@pytest.fixture
def kept(butler, script, butler_home, workdir) -> dict[str, str]:
    """A conversation, a schedule, an alias, a kept approval and a cached model list."""
    model = script({"text": "done"})
    assert butler("run", "--model", model, "hello").returncode == 0
    [conversation] = json.loads(butler("log", "--json").stdout)
    assert butler("schedule", "add", "0 9 * * *", "plan", "--model", model).returncode == 0
    [job] = json.loads(butler("schedule", "list", "--json").stdout)
    assert butler("config", "set", "aliases.fast", model).returncode == 0
    (butler_home / "approvals.toml").write_text(
        f'[[approval]]\ntool = "write_file"\nfolder = {json.dumps(str(workdir))}\n'
        'patterns = { path = "notes/*" }\n\n'
    )
    cache = {"openai https://api.openai.com/v1": {"at": time.time(), "models": ["openai:gpt-4o"]}}
    (butler_home / "models-cache.json").write_text(json.dumps(cache))
    (workdir / "a-file-not-an-id.txt").write_text("x")
    return {"conversation": conversation["id"], "job": job["id"]}


def offered(shell: str, words: str, home) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(complete(shell, words, home))


def bash_values(words: str, home) -> list[str]:  # type: ignore[no-untyped-def]
    return [line for line in complete("bash", words, home) if line]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_ids_and_models_complete_in_each_shell(shell, kept, butler_home) -> None:
    assert kept["conversation"] in offered(shell, "butler log show ", butler_home)
    assert kept["job"] in offered(shell, "butler schedule pause ", butler_home)
    assert "1" in complete(shell, "butler grants revoke ", butler_home)[0]
    models = offered(shell, "butler run --model ", butler_home).replace("\\", "")  # zsh: \\:
    for name in ("fast", "openai:gpt-4o", "anthropic:", "openai-compatible:"):
        assert name in models, (name, models)


def test_every_place_an_id_or_a_model_goes_completes_it(kept, butler_home) -> None:
    conversation, job = kept["conversation"], kept["job"]
    assert bash_values(f"butler log show {conversation[:3]}", butler_home) == [conversation]
    assert bash_values("butler chat --conversation ", butler_home) == [conversation]
    assert bash_values("butler run -c --conversation c-", butler_home) == [conversation]
    for verb in ("resume", "remove", "run"):
        assert bash_values(f"butler schedule {verb} ", butler_home) == [job], verb
    assert bash_values("butler run --model fa", butler_home) == ["fast"]
    assert "fast" in bash_values("butler resume x --model ", butler_home)
    assert "fast" in bash_values("butler chat -m ", butler_home)
    assert bash_values("butler log show a-", butler_home) == []  # no file names for an id


def test_a_corrupt_state_file_completes_nothing_and_is_left_as_it_is(butler_home) -> None:
    butler_home.mkdir(parents=True, exist_ok=True)
    junk = {
        "conversations.db": b"not a database\x00" * 40,
        "schedule.db": b"SQLite format 3\x00" + b"\xff" * 600,
        "approvals.toml": b"[[approval]\nbroken",
        "config.toml": b"model = [1\n",
        "models-cache.json": b'{"x": {"at": "soon", "models": [1, 2]}',
    }
    for name, body in junk.items():
        (butler_home / name).write_bytes(body)
    (butler_home / "parks").write_text("a file where the folder goes")
    for words in (
        "butler log show ",
        "butler schedule pause ",
        "butler grants revoke ",
        "butler resume ",
        "butler show ",
    ):
        assert bash_values(words, butler_home) == [], words
    assert bash_values("butler run --model ", butler_home) == [
        "openai:", "anthropic:", "ollama:", "openai-compatible:", "scripted:",
    ]  # fmt: skip
    for name, body in junk.items():
        assert (butler_home / name).read_bytes() == body, name
    assert sorted(os.listdir(butler_home)) == sorted([*junk, "parks"])  # nothing created


def test_an_id_or_name_of_another_shape_never_reaches_the_shell(kept, butler_home) -> None:
    db = sqlite3.connect(butler_home / "conversations.db")
    with db:
        db.execute("UPDATE conversations SET id = ?", ("c-ab\x1b]0;owned\x07",))
    db.close()
    assert bash_values("butler log show ", butler_home) == []
    with (butler_home / "config.toml").open("a") as f:
        f.write('"sl\\u001b[2Jow" = "scripted:x.json"\n')
    assert butler_home.joinpath("config.toml").read_text().count("[aliases]") == 1
    models = offered("bash", "butler run --model ", butler_home)
    assert "\x1b" not in models and "fast" in models
