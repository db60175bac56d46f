"""Options are one typed object from the flag to the park (issue 33): `RunOptions` is built by
keyword only, nowhere from a positional list, and a command's run flags are made from its
fields — so a new option is one field plus its use, and no list of flags has to keep an order.

Read from the code (every call in the package), and through the installed butler: a new field
reaches `run`, `resume` and `chat` as a flag without touching a command."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest
from conftest import call

from butler_cli.app.config.options import RunOptions, flag_of, options_from

PACKAGE = Path(__file__).resolve().parent.parent / "butler_cli"
#: The one place RunOptions is made from a mapping of the flags as parsed, by name.
FROM_MAPPING = {("app/config/options.py", "options_from")}


def _calls() -> list[tuple[str, str, ast.Call]]:
    """Every call of ``RunOptions`` in the package: (file, enclosing function, call)."""
    found: list[tuple[str, str, ast.Call]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))

        def visit(node: ast.AST, function: str, where: str = where) -> None:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                function = node.name
            if isinstance(node, ast.Call) and _named(node.func) == "RunOptions":
                found.append((where, function, node))
            for child in ast.iter_child_nodes(node):
                visit(child, function)

        visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def _named(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def test_runoptions_is_built_by_keyword_only_everywhere() -> None:
    calls = _calls()
    assert len(calls) > 5  # the reading sees the calls at all
    positional = [(f, fn, c.lineno) for f, fn, c in calls if c.args]
    assert positional == []
    unpacked = {(f, fn) for f, fn, c in calls if any(k.arg is None for k in c.keywords)}
    assert unpacked <= FROM_MAPPING


def test_a_positional_build_fails_at_once() -> None:
    """The class itself refuses a positional list (kw_only): an order cannot be got wrong."""
    with pytest.raises(TypeError):
        RunOptions("scripted:x")  # type: ignore[misc]


def test_no_positional_flag_tuple_is_left() -> None:
    """The chat's 9-tuple of flags in RunOptions' order (repl/session.py `Flags`) is gone:
    no module of the package spells RunOptions(*...)."""
    for path in PACKAGE.rglob("*.py"):
        assert not re.search(r"RunOptions\(\*[^*]", path.read_text(encoding="utf-8")), path


def test_every_option_declares_its_flag_and_the_commands_take_it() -> None:
    """Every field is declared with its flag; `run` and `resume` take every one, the chat
    every one the chat takes — from the declaration, not from a list in each command."""
    from typer.main import get_command_from_info
    from typer.models import CommandInfo

    from butler_cli.cli.chat import chat
    from butler_cli.cli.resume import resume
    from butler_cli.cli.run import run

    def flags_of(command: object) -> set[str]:
        click_command = get_command_from_info(
            CommandInfo(callback=command),  # type: ignore[arg-type]
            pretty_exceptions_short=True,
            rich_markup_mode=None,
        )
        return {name for p in click_command.params for name in p.opts}

    for field in dataclasses.fields(RunOptions):
        declared = flag_of(field.name)
        assert declared.names and declared.help, field.name
        name = declared.names[0].split("/")[0]  # --stream/--no-stream: a pair
        assert name in flags_of(run)
        assert name in flags_of(resume)
        assert (name in flags_of(chat)) == declared.chat


def test_options_from_checks_model_options() -> None:
    opts = options_from({"model": "scripted:x", "model_options": ["temperature=0.5"]})
    assert opts == RunOptions(model="scripted:x", model_options={"temperature": 0.5})


def test_the_installed_butler_gives_flags_to_the_park_by_name(butler, workdir, script) -> None:
    """Through the installed butler: each flag lands in the field of its own name in the
    park (an order mistake between the flags and RunOptions would swap system and policy)."""
    model = script(
        {"tool_calls": [call("write_file", "w", path="a.txt", content="x")]}, {"text": "ok"}
    )
    r = butler(
        "run",
        "--model",
        model,
        "--system",
        "be brief",
        "--max-rounds",
        "3",
        "--profile",
        "work",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "-o",
        "seed",
        "7",
        "go",
    )
    assert r.returncode == 3, r.stderr
    [park] = json.loads(butler("pending", "--json").stdout)
    shown = json.loads(butler("show", park["id"], "--json").stdout)
    context = shown["context"]
    assert context["system"] == "be brief"
    assert context["max_rounds"] == 3
    assert context["profile"] == "work"
    assert context["base_url"] == "http://127.0.0.1:9/v1"
    assert context["model_options"] == {"seed": 7}
    assert context["policy"] == "ask"


def test_a_recorded_option_goes_from_the_flag_to_the_park_and_the_resume(butler, workdir, script):
    """`--no-stream` (issue 32's option, recorded since issue 33: one word in its declaration
    plus one park field): `run` records it, a resume without the flag goes on with it, as it
    does with the model and the base URL."""
    model = script(
        {"tool_calls": [call("write_file", "a", path="a.txt", content="x")]},
        {"tool_calls": [call("write_file", "b", path="b.txt", content="x")]},
        {"text": "ok"},
    )

    def recorded(park_id: str) -> object:
        return json.loads(butler("show", park_id, "--json").stdout)["context"].get("no_stream")

    r = butler("run", "--model", model, "--no-stream", "go")
    assert r.returncode == 3, r.stderr
    [park] = json.loads(butler("pending", "--json").stdout)
    assert recorded(park["id"]) is True
    resumed = butler("resume", park["id"], "--approve")
    assert resumed.returncode == 3, resumed.stderr
    [second] = json.loads(butler("pending", "--json").stdout)
    assert recorded(second["id"]) is True  # the park's record, not the default
    assert butler("resume", second["id"], "--deny").returncode == 0
    assert butler("run", "--model", model, "again").returncode == 3
    [third] = json.loads(butler("pending", "--json").stdout)
    assert recorded(third["id"]) is None  # not given: left out, as older parks have it
