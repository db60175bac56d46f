"""From no model to a real one in one step (issue 35 item 7): when no model is chosen, the
chat, `run` and `schedule add` say how to choose one — `butler config set model …`, one
example a kind of provider, `butler models` — in lines that fit 80 columns, each command
pasteable and working, and never a path that only a clone of the repository has."""

from __future__ import annotations

import json

import pexpect
from conftest import spawn_butler

KINDS = ("openai:", "anthropic:", "ollama:", "openai-compatible:", "LiteLLM", "llama.cpp")


def check_directions(text: str) -> list[str]:
    """The directions are all there, and the lines that choose a model."""
    assert "no model chosen" in text, text
    for kind in (*KINDS, "butler models", "butler demo", "butler keys set"):
        assert kind in text, (kind, text)
    assert "examples/" not in text and "scripted:" not in text  # a clone's path, not yours
    return [line for line in text.splitlines() if line.startswith("butler config set")]


def test_run_says_how_to_choose_a_model_and_each_line_works(butler, script, butler_home) -> None:
    r = butler("run", "hi")
    assert r.returncode == 2 and r.stdout == ""
    lines = check_directions(r.stderr)
    assert all(len(line) < 80 for line in r.stderr.splitlines()), r.stderr
    assert len(lines) >= 5
    for line in lines:  # pasted as they are (the `# …` after one is the shell's comment)
        words = line.split("#")[0].split()[1:]
        done = butler(*words)
        assert done.returncode == 0, (line, done.stderr)
    shown = butler("config", "show").stdout
    assert "openai-compatible:local" in shown and "LITELLM_KEY" in shown
    # one step: after `config set model`, the same command runs
    assert butler("config", "set", "model", script({"text": "hello"})).returncode == 0
    assert butler("run", "hi").stdout == "hello\n"


def test_json_and_schedule_say_it_too(butler) -> None:
    r = butler("run", "hi", "--json")
    [error] = [json.loads(line) for line in r.stdout.splitlines()]
    assert (error["code"], error["exit_code"]) == ("no_model", 2)
    check_directions(r.stderr)
    r = butler("schedule", "add", "0 9 * * *", "plan my day")
    assert r.returncode == 2
    check_directions(r.stderr)


def test_the_chat_says_how_to_choose_a_model(butler_home, workdir) -> None:
    child = spawn_butler([], butler_home, workdir)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2
    check_directions(child.before.replace("\r\n", "\n"))
