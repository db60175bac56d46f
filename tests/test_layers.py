"""Rooms that show the layers: nothing below the terminal layers prints, every exit code is an
``ExitCode``, and what the layers below have to say (a notice) reaches stderr, never the JSON
on stdout."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from fake_llm import Reply, openai_stream
from test_providers import run_args

PACKAGE = Path(__file__).resolve().parent.parent / "butler_cli"
#: The terminal layers: they own the process's output.
TERMINAL = {"cli", "repl", "ui"}


def _calls(path: Path) -> list[tuple[int, str, list[ast.expr]]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            found.append((node.lineno, ast.unparse(node.func), node.args))
    return found


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_nothing_below_the_terminal_layers_prints() -> None:
    """core, app, the adapters, serve and schedule say a line through
    ``butler_cli.core.notices`` (or a ``say`` the command hands them), never ``print``."""
    below = [p for p in _modules() if p.relative_to(PACKAGE).parts[0] not in TERMINAL]
    assert any(p.name == "butler.py" for p in below) and len(below) > 50  # the scan sees them
    printing = [
        f"{p.relative_to(PACKAGE)}:{line} {func}(…)"
        for p in below
        for line, func, _ in _calls(p)
        if func in ("print", "sys.stdout.write", "sys.stderr.write")
    ]
    assert printing == []


def test_every_exit_code_is_an_exit_code() -> None:
    """``typer.Exit`` and ``sys.exit`` are given an ``ExitCode`` (or a computed one), never a
    bare number."""
    bare = [
        f"{p.relative_to(PACKAGE)}:{line} {func}({ast.unparse(args[0])})"
        for p in _modules()
        for line, func, args in _calls(p)
        if func in ("typer.Exit", "sys.exit", "SystemExit")
        and args
        and isinstance(args[0], ast.Constant)
    ]
    assert bare == []


def test_a_providers_notice_goes_to_stderr_and_the_stream_stays_json(fake, butler) -> None:
    """A retry notice during `--output stream-json`: every stdout line is one JSON event, the
    notice is one `butler:` line on stderr."""
    fake.replies = [
        Reply(429, body={"error": {"message": "slow down"}}, headers={"retry-after": "0.1"}),
        Reply(events=openai_stream("made it")),
    ]
    args, env = run_args("openai", fake)
    r = butler("run", *args, "hi", "--output", "stream-json", env=env)
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events[-1]["type"] == "done" and "made it" in events[-1]["text"]
    notices = [ln for ln in r.stderr.splitlines() if "retrying in 0.1 s" in ln]
    assert len(notices) == 1 and notices[0].startswith("butler: ")
    assert len(fake.requests) == 2


def test_a_conversation_that_cannot_be_saved_is_a_notice_beside_pure_json(
    butler, butler_home, script
) -> None:
    """The conversation store cannot be opened (a folder where its file goes): the task still
    runs, `--json` stdout is one JSON object, the notice (neutralised) is on stderr."""
    butler_home.mkdir(parents=True, exist_ok=True)
    (butler_home / "conversations.db").mkdir()
    model = script({"text": "fine"})
    r = butler("run", "--model", model, "hi", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["text"] == "fine"
    assert len(r.stdout.splitlines()) == 1
    assert "butler: the conversation was not saved" in r.stderr
