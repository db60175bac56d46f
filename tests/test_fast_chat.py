"""`butler chat` with options opens on the fast entry (issue 34: through typer it was 1.14x the
wall time of a bare prompt-toolkit prompt), reading them exactly as typer does: the reader's
table is the flags the commands declare, a line it reads gives the options typer gives, and a
line it does not understand whole — every bad one — gets typer's own error."""

from __future__ import annotations

from typing import Any

import click
import pytest
from conftest import imported_before_prompt, spawn_butler

from butler_cli.app.config.options import RunOptions, options_from
from butler_cli.cli import fast_chat
from butler_cli.cli.commands import COMMANDS, load

#: What the fast reader leaves to typer on purpose: help.
LEFT = {"--help", "-h"}


def declared(command: str) -> dict[str, tuple[str, str]]:
    """The command's flags as typer builds them: flag → (parameter, kind)."""
    found = {}
    for param in load(command, COMMANDS[command]).params:
        assert isinstance(param, click.Option)
        kind = "switch" if param.is_flag else "pairs" if param.multiple else "text"
        kind = "count" if isinstance(param.type, click.IntRange) else kind
        if kind == "count":
            assert param.type.min == 1 and param.type.max is None
        for name in [*param.opts, *param.secondary_opts]:
            if name not in LEFT:
                found[name] = (str(param.name), kind)
    return found


def test_the_table_is_the_flags_the_commands_declare() -> None:
    assert declared("chat") == fast_chat.CHAT
    assert declared("demo") == fast_chat.DEMO


def through_typer(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, Any]]:
    """What the typer app hands the chat for ``argv``: its options and the start's keywords."""
    from butler_cli.cli import chat
    from butler_cli.cli.main import app

    seen: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(chat, "start_chat", lambda opts, **kw: seen.append((opts, kw)))
    app(argv, standalone_mode=False)
    [got] = seen
    return got


LINES = [
    [],
    ["chat"],
    ["demo"],
    ["chat", "--model", "scripted:x.json"],
    ["chat", "-m", "fast", "-p", "readonly", "--max-rounds", "3", "--no-stream"],
    ["chat", "--model=a:b", "--system=be brief", "--profile", "work", "--policy-file", "p.toml"],
    ["chat", "--base-url", "http://127.0.0.1:8080/v1", "--max-rounds", "012"],
    ["chat", "-c", "--model", "x:y"],
    ["chat", "--conversation", "c-abc123"],
    ["chat", "--conversation="],
    ["chat", "--continue", "--conversation", "c-1", "--model", ""],
    ["--model", "scripted:x.json", "--policy", "ask"],
    ["-c"],
    ["demo", "--policy", "readonly", "--profile", "p", "--policy-file=r.toml"],
    ["chat", "-o", "temperature", "0.2"],
    ["chat", "-o", "temperature", "0.2", "--model", "x:y", "--option", "seed", "7"],
    ["chat", "-o", "temperature=0.5", "--option=top_p=0.9", "-o", "max_tokens", "64"],
    ["--option", "seed=3", "-m", "x:y"],
    ["--model", "chat"],  # a value that is a command's name is still the value
    ["-m", "demo", "--policy", "run"],
]


@pytest.mark.parametrize("argv", LINES, ids=" ".join)
def test_a_line_read_fast_gives_the_options_typer_gives(argv, monkeypatch) -> None:
    start = fast_chat.read(argv)
    assert start is not None, argv
    opts, kw = through_typer(argv, monkeypatch)
    assert options_from(dict(start.options)) == (opts or RunOptions())
    continuing = (start.continue_last or start.conversation is not None, start.conversation)
    assert continuing == kw.get("continuing", (False, None))
    assert start.demo == kw.get("demo", False)


@pytest.mark.parametrize(
    "argv",
    [
        ["chat", "--modle", "x"],
        ["chat", "--model"],
        ["chat", "--model", "-p"],
        ["chat", "--max-rounds", "0"],
        ["chat", "--max-rounds", "+3"],
        ["chat", "--max-rounds", "٣"],  # an Arabic-Indic three: a digit, not ASCII
        ["chat", "-o", "temperature"],
        ["chat", "-o", "-x", "1"],
        ["chat", "--help"],
        ["chat", "-mfast"],
        ["chat", "--model", "a", "--model", "b"],
        ["chat", "hello", "there"],
        ["chat", "--", "--model"],
        ["chat", "--no-stream=1"],
        ["demo", "--model", "x"],
        ["run", "--model", "x"],
        ["--version"],
    ],
    ids=" ".join,
)
def test_a_line_not_understood_whole_is_left_to_typer(argv) -> None:
    assert fast_chat.read(argv) is None


@pytest.mark.parametrize(
    "argv,said",
    [
        (
            ["chat", "--max-rounds", "0"],
            "Invalid value for '--max-rounds': 0 is not in the range x>=1.",
        ),
        (["chat", "--modle", "x"], "No such option '--modle'"),
        (["chat", "--model"], "Option '--model' requires an argument."),
        (["demo", "--model", "x"], "No such option '--model'"),
        (["chat", "-o", "temprature", "1"], "unknown model option 'temprature'"),
        (["chat", "-o", "temperature", "9"], "model option temperature must be between 0 and 2"),
        (["chat", "-o", "temperature"], "-o takes KEY VALUE"),
    ],
)
def test_a_bad_chat_option_gets_typers_error(argv, said, butler) -> None:
    """The same one error, exit 2, before any chat starts (on a pipe too: the error comes
    before the chat asks for a terminal)."""
    r = butler(*argv)
    assert r.returncode == 2 and said in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "needs a terminal" not in r.stderr


def test_chat_with_options_draws_its_prompt_without_typer(
    butler_home, workdir, script, tmp_path
) -> None:
    """The attack: options on a real terminal. No typer or click before the first prompt, and
    the options are the chat's (its first line names them; the model answers)."""
    model = script({"text": "quokka"})
    argv = ["chat", "--model", model, "--policy", "readonly", "--max-rounds", "2"]
    child = spawn_butler(argv, butler_home, workdir, PYTHONPROFILEIMPORTTIME="1")
    loaded = imported_before_prompt(child)
    assert "butler_cli.repl.start" in loaded  # the check sees the imports at all
    assert {name.split(".")[0] for name in loaded} & {"typer", "click"} == set()
    child = spawn_butler(argv, butler_home, workdir)
    child.expect(f"model {model} · policy readonly")
    child.expect("you ›")
    child.sendline("hello")
    child.expect("quokka")
    child.expect("you ›")
    child.sendcontrol("d")
    child.expect("Goodbye")
