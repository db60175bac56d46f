"""Plain English is a task (README "Plain English is a task", `butler --help`): words that
are no command become one task, butler's options may stand anywhere on the line, a near miss
of a command still asks "Did you mean", and `run` with bare words is one task. Through the
installed `butler` (the fork server, and exec with BUTLER_TESTS_EXEC=1)."""

from __future__ import annotations

import json

import pexpect
from conftest import json_lines, spawn_butler


def tasks_run(r) -> list[str]:  # type: ignore[no-untyped-def]
    assert r.returncode == 0, r.stderr
    return [report["task"] for report in json_lines(r.stdout)]


def test_plain_english_is_one_task_with_options_anywhere(butler, script) -> None:
    model = script({"text": "It is noon."})
    lines = {
        ("what", "time", "is", "it", "--model", model, "--json"): "what time is it",
        ("show", "me", "the", "plan", "--model", model, "--json"): "show me the plan",
        ("--model", model, "summarize", "my", "notes", "--json"): "summarize my notes",
        ("chat", "about", "the", "weather", "-m", model, "--json"): "chat about the weather",
        ("schedule", "a", "call", "with", "Ana", "--json", "-m", model): "schedule a call with Ana",
        ("summarize my notes", "--model", model, "--json"): "summarize my notes",
        ("hello", "-o", "temperature", "0.2", "-m", model, "--json"): "hello",
    }
    for args, task in lines.items():
        assert tasks_run(butler(*args)) == [task], args


def test_run_the_tests_is_one_task_not_two(butler, script) -> None:
    model = script({"text": "Ran them."})
    assert tasks_run(butler("run", "the", "tests", "--model", model, "--json")) == ["the tests"]
    # the explicit forms of several tasks still make several
    each = butler("run", "the", "tests", "--each", "--model", model, "--json")
    assert tasks_run(each) == ["the", "tests"]
    quoted = butler("run", "plan my week", "tidy notes", "--model", model, "--json")
    assert tasks_run(quoted) == ["plan my week", "tidy notes"]
    piped = butler("run", "-", "--model", model, "--json", input="plan\ntidy\n")
    assert tasks_run(piped) == ["plan", "tidy"]
    mixed = butler("run", "fix", "the bug", "--model", model)
    assert (
        mixed.returncode == 2 and "--each" in mixed.stderr and 'run "fix the bug"' in mixed.stderr
    )
    assert (
        len(json.loads(butler("log", "--json").stdout)) == 7
    )  # 1+2+2+2: the refused line ran nothing


def test_a_near_miss_of_a_command_asks_and_runs_nothing(butler, script) -> None:
    model = script({"text": "should not run"})
    for args in (("",), ("  ", "--json"), ("run", "plan", "  ", "--each")):  # an empty task
        r = butler(*args, "--model", model)
        assert r.returncode == 2 and "a task is empty" in r.stderr, (args, r.stderr)
    for args, hint in (
        (("logs",), "Did you mean 'log'?"),
        (("lgo", "--model", model), "Did you mean 'log'?"),
        (("pendng", "--json"), "Did you mean 'pending'?"),
        (("memroy", "list"), "'memory'"),
        (("--model", model, "rnu"), "Did you mean 'run'?"),
    ):
        r = butler(*args)
        assert r.returncode == 2 and hint in r.stderr + r.stdout, (args, r.stderr)
    assert json.loads(butler("log", "--json").stdout) == []


def test_a_command_with_words_that_fit_stays_the_command(butler, script) -> None:
    r = butler("log")
    assert r.returncode == 0 and "No conversations yet." in r.stdout
    r = butler("show", "me")  # show takes one id: `me` is read as one, and the way out is said
    assert r.returncode == 2
    assert "no park with id 'me'" in r.stderr and 'butler "show me"' in r.stderr
    assert json.loads(butler("pending", "--json").stdout) == []
    model = script({"text": "hi"})
    assert tasks_run(butler("--json", "run", "hi", "--model", model)) == ["hi"]  # moved after
    assert json.loads(butler("log", "--json").stdout)[0]["title"] == "hi"


def test_the_rule_is_stated_in_help(butler) -> None:
    root = " ".join(butler("--help").stdout.split())
    assert "butler what time is it" in root and "Did you mean" in root
    run = " ".join(butler("run", "--help").stdout.split())
    assert "--each" in run and "butler run the tests" in run


def test_options_alone_open_the_chat_on_either_entry(butler_home, workdir, script) -> None:
    """`butler --model M` is read by the fast entry (cli/fast_chat.py); the same option given
    twice is left to typer, where this rule reads it: both open the chat on that model."""
    model = script({"text": "hello from the model"})
    for args in (["--model", model], ["--model", model, "-m", model]):
        child = spawn_butler(args, butler_home, workdir)
        child.expect("you ›")
        child.sendline("hi")
        child.expect("hello from the model")
        child.expect("you ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, args
