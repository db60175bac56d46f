"""Issue 35 item 10: `-s` for `--system` and saved templates (llm's `-t NAME`): a template is
a file the person wrote beside the config file; its text is the system prompt a real provider
on 127.0.0.1 receives, a park records it, and no tool of the model's reaches the folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import call, tool_results
from fake_llm import Reply, openai_stream, split
from test_memory_block import provider_args, system_of


def test_s_and_t_set_the_system_prompt_the_model_receives(
    fake: Any, butler: Any, butler_home: Path
) -> None:
    args, env = provider_args("openai", fake)
    fake.replies = [Reply(events=openai_stream("ok")) for _ in range(2)]
    r = butler("run", *args, "-s", "Answer like a pirate.", "hi", env=env)
    assert r.returncode == 0, r.stderr
    assert "Answer like a pirate." in system_of("openai", fake.requests[-1]["body"])
    (butler_home / "templates").mkdir(parents=True)
    (butler_home / "templates" / "review.md").write_text("Review code for bugs only.\n")
    r = butler("run", *args, "-t", "review", "look", env=env)
    assert r.returncode == 0, r.stderr
    assert "Review code for bugs only." in system_of("openai", fake.requests[-1]["body"])
    listed = butler("templates", "list")
    assert "review" in listed.stdout and str(butler_home / "templates") in listed.stdout
    assert butler("templates", "show", "review").stdout.strip() == "Review code for bugs only."


def test_a_bad_template_is_one_line_and_nothing_runs(butler: Any, butler_home: Path) -> None:
    (butler_home / "templates").mkdir(parents=True)
    (butler_home / "templates" / "link.md").symlink_to("/etc/hostname")
    for name, said in [
        ("nope", "no template 'nope'"),
        ("../config", "-t takes a template's name"),
        ("link", "a link is never followed"),
    ]:
        r = butler("run", "--model", "scripted:none.json", "-t", name, "hi")
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert said in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = butler("run", "--model", "x", "-t", "nope", "-s", "also", "hi")
    assert r.returncode == 2 and "not both" in r.stderr


def test_a_park_keeps_the_templates_words(fake: Any, butler: Any, butler_home: Path) -> None:
    """The template is read when the task starts; a resume sends the same words even after
    the file changed (as --system is recorded)."""
    (butler_home / "templates").mkdir(parents=True)
    template = butler_home / "templates" / "tidy.md"
    template.write_text("Keep files tidy.\n")
    args, env = provider_args("openai", fake)
    write = split({"path": "plan.txt", "content": "- tea"})
    fake.replies = [Reply(events=openai_stream("", [("w1", "write_file", write)]))]
    r = butler("run", *args, "-t", "tidy", "plan", "--json", env=env)
    assert r.returncode == 3, r.stderr
    park_id = json.loads(r.stdout)["park_id"]
    template.write_text("Delete everything.\n")
    fake.replies = [Reply(events=openai_stream("done"))]
    assert butler("resume", park_id, "--approve", env=env).returncode == 0
    system = system_of("openai", fake.requests[-1]["body"])
    assert "Keep files tidy." in system and "Delete everything." not in system


def test_the_model_never_reaches_the_templates_folder(
    butler: Any, script: Any, tmp_path: Path, workdir: Path
) -> None:
    """Templates live beside the config file (the user config dir when BUTLER_HOME is unset,
    inside the home folder, where file tools may reach): they are the person's words, so the
    folder is one of the butler's own — no read, write, edit, move or listing; the same for
    the user's slash commands beside it."""
    me = tmp_path / "me"
    config_dir = tmp_path / "xdg-config" / "butler"
    for folder in ("templates", "commands"):
        (config_dir / folder).mkdir(parents=True)
        (config_dir / folder / "mine.md").write_text("the person's own words\n")
    me.mkdir()
    # with the config file and the stored keys' file there, those files alone are the gate's
    (config_dir / "config.toml").write_text("max_rounds = 8\n")
    (config_dir / "keys.toml").write_text("[file]\n[keyring]\nnames = []\n")
    (workdir / "pol.py").write_text(
        "from butler_cli import allow\n\ndef classify(name, args):\n    return allow()\n"
    )
    calls = []
    for folder in ("templates", "commands"):
        target = str(config_dir / folder / "mine.md")
        calls += [
            call("read_file", path=target),
            call("write_file", path=target, content="the model's words"),
            call("edit_file", path=target, old_string="own", new_string="model's"),
            call("write_file", path=str(config_dir / folder / "new.md"), content="planted"),
            call("delete_file", path=target),
            call("list_dir", path=str(config_dir / folder)),
        ]
    model = script({"tool_calls": calls}, {"text": "k"})
    env = {"BUTLER_HOME": "", "HOME": str(tmp_path)}
    r = butler(
        "run", "--model", model, "x", "--json", "--policy", "./pol.py:classify", "--yes-safe",
        env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    results = tool_results(r.stdout)
    assert len(results) == len(calls)
    for res in results:
        assert res["is_error"] and "Unknown tool" not in res["content"], res
        assert "own words" not in res["content"]
    for folder in ("templates", "commands"):
        assert sorted(p.name for p in (config_dir / folder).iterdir()) == ["mine.md"]
        assert (config_dir / folder / "mine.md").read_text() == "the person's own words\n"
