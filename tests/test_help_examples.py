"""Every example `--help` cites is run, through the installed `butler`: a file it names must
exist, a command it shows must work. `butler run --help` once cited examples/tidy-notes.json,
which never existed.

The examples are found in the help text itself (every `e.g. VALUE`, and every backquoted
snippet that runs `butler` or gives an option), and each must have a runner below: an example
added to the help without one fails here until someone runs it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
from conftest import BIN_DIR, spawn_butler

REPO = Path(__file__).resolve().parent.parent
PLAN = "scripted:examples/plan.json"  # relative: the examples run from the repository's root


#: Every command's help, as `butler CMD --help` prints it, from one process of the installed
#: butler (one `--help` per command was 45 processes).
WALK = """
import json, click, typer.main
from butler_cli.cli.main import app
found = {}
def walk(command, path, parent):
    ctx = click.Context(command, info_name=path[-1] if path else "butler", parent=parent)
    found[" ".join(path)] = command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            walk(command.get_command(ctx, name), [*path, name], ctx)
walk(typer.main.get_command(app), [], None)
print(json.dumps(found))
"""


def every_help() -> dict[str, str]:
    """The help of `butler` and of every command and sub-command, by command line."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-c", WALK], capture_output=True, text=True, check=True, env=env
    )
    found: dict[str, str] = json.loads(done.stdout)
    return found


def cited(text: str) -> set[str]:
    """The examples a help text cites: `e.g. VALUE`, and backquoted `butler …` or `--option`."""
    flat = re.sub(r"(?<=\w-)\n\s+(?=\w)", "", text)  # click may break a word at its hyphen
    flat = re.sub(r"\s+", " ", flat)
    found = {f"e.g. {m}" for m in re.findall(r"e\.g\. (\S+?)[.,;)]?(?= |$)", flat)}
    found |= {m for m in re.findall(r"`([^`]+)`", flat) if "butler" in m or m.startswith("-")}
    return found


def test_every_example_the_help_cites_runs(
    butler: Any, butler_home: Path, tmp_path: Path, fake: Any
) -> None:
    helps = every_help()
    assert len(helps) > 30  # the walk saw the sub-commands
    examples = set().union(*(cited(text) for text in helps.values()))

    def run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return butler(*args, cwd=REPO, **kw)

    def parks(r: subprocess.CompletedProcess[str]) -> None:
        assert r.returncode == 3 and "parked" in r.stdout, r.stdout + r.stderr

    def in_a_terminal(args: list[str], then: Callable[[Any], None]) -> None:
        child = spawn_butler(args, butler_home, REPO, BUTLER_MODEL=PLAN)
        then(child)
        child.expect(pexpect.EOF)
        child.close()

    def chat(child: Any) -> None:
        child.expect("you ›")
        child.sendcontrol("d")

    def resume_id() -> None:
        r = run("run", "--model", PLAN, "Write today's plan", "--json")
        park = json.loads(r.stdout)["park_id"]

        def deny(child: Any) -> None:
            child.expect(r"\[y/n\]|y/n")
            child.sendline("n")
            child.expect("Note for the model")
            child.sendline("")

        in_a_terminal(["resume", park], deny)
        assert park not in [p["id"] for p in json.loads(butler("pending", "--json").stdout)]

    def base_url(example: str) -> None:
        from fake_llm import Reply, openai_stream

        fake.replies = [Reply(events=openai_stream("from the server"))]
        url = example.removeprefix("e.g. ").replace(":8080", f":{fake.url.rsplit(':', 1)[1]}")
        r = run(
            "run", "--model", "openai:gpt-test", "--base-url", url, "hi",
            env={"OPENAI_API_KEY": "sk-test-123456789"},
        )  # fmt: skip
        assert r.returncode == 0 and "from the server" in r.stdout, r.stderr

    def openai_model() -> None:
        from fake_llm import Reply, openai_stream

        fake.replies = [Reply(events=openai_stream("from gpt-4o-mini"))]
        r = run(
            "run", "--model", "openai:gpt-4o-mini", "--base-url", fake.url + "/v1", "hi",
            env={"OPENAI_API_KEY": "sk-test-123456789"},
        )  # fmt: skip
        assert r.returncode == 0 and "from gpt-4o-mini" in r.stdout, r.stderr
        assert fake.requests[-1]["body"]["model"] == "gpt-4o-mini"

    def alias() -> None:
        assert butler("config", "set", "aliases.fast", PLAN).returncode == 0
        parks(run("run", "--model", "fast", "Write today's plan"))

    def install_completion() -> None:
        home = tmp_path / "person"
        home.mkdir()
        # typer finds the shell among the process's parents (shellingham), so it runs from
        # bash as a person's would; `; exit $?` keeps bash from exec-ing it in its own place
        line = f"HOME={shlex.quote(str(home))} SHELL=/bin/bash butler --install-completion"
        done = shell(f"{line}; exit $?")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "butler" in (home / ".bashrc").read_text()

    def serve() -> None:
        from serve_support import start_serve

        served = start_serve(butler_home, REPO, "--no-scheduler")
        assert served.request("/")[0] == 200
        served.stop()

    def shell(line: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "PATH": f"{BIN_DIR}:{os.environ['PATH']}",
            "BUTLER_HOME": str(butler_home),
        }
        return subprocess.run(
            ["bash", "-c", line], capture_output=True, text=True, cwd=REPO, env=env, timeout=60
        )

    def one_task(task: str, *args: str, env: dict[str, str] | None = None) -> None:
        r = run(*args, "--json", env=env)
        assert r.returncode == 3, r.stderr
        assert [line["task"] for line in map(json.loads, r.stdout.splitlines())] == [task]

    def show_id() -> None:
        r = run("run", "--model", PLAN, "Write today's plan", "--json")
        assert_ok(run("show", json.loads(r.stdout)["park_id"]))

    def typo() -> None:
        r = run("logs")
        assert r.returncode == 2 and "Did you mean 'log'?" in r.stderr, r.stderr

    with_plan = {"BUTLER_MODEL": PLAN}
    runners: dict[str, Callable[[], None]] = {
        'butler "…"': lambda: one_task("Write today's plan", "Write today's plan", env=with_plan),
        "butler what time is it --model fast": lambda: (
            alias(),
            one_task("what time is it", "what", "time", "is", "it", "--model", "fast"),
        )[-1],
        "butler show ID": show_id,
        "butler show me the plan": lambda: one_task(
            "show me the plan", "show", "me", "the", "plan", env=with_plan
        ),
        "butler logs": typo,
        "butler --help": lambda: assert_ok(run("--help")),
        "e.g. openai:gpt-4o-mini": openai_model,
        "butler models": lambda: assert_ok(run("models")),
        "butler templates list": lambda: assert_ok(run("templates", "list")),
        "butler run the tests": lambda: one_task("the tests", "run", "the", "tests", env=with_plan),
        "--each": lambda: assert_ok(
            run("run", "a", "b", "--each", "--model", PLAN, "--json"), codes=(3,)
        ),
        "e.g. scripted:examples/plan.json": lambda: parks(run("run", "--model", PLAN, "x")),
        "e.g. http://127.0.0.1:8080/v1": lambda: base_url("e.g. http://127.0.0.1:8080/v1"),
        "--model fast": alias,
        "butler": lambda: in_a_terminal([], chat),
        "butler demo": lambda: in_a_terminal(["demo"], chat),
        'butler "TASK"': lambda: parks(run("Write today's plan", "--model", PLAN)),
        'butler run "TASK"': lambda: parks(run("run", "Write today's plan", "--model", PLAN)),
        "butler resume ID": resume_id,
        "butler log": lambda: assert_ok(run("log")),
        "butler mcp list": lambda: assert_ok(run("mcp", "list")),
        "butler serve": serve,
        "butler --install-completion": install_completion,
        "butler completion fish | source": lambda: assert_ok(run("completion", "fish")),
        'eval "$(butler completion bash)"': lambda: assert_ok(
            shell('eval "$(butler completion bash)" && complete -p butler')
        ),
        'cat notes.md | butler run "summarize"': lambda: assert_ok(
            run("run", "summarize", input="# notes\n- oat milk\n", env={"BUTLER_MODEL": PLAN}),
            codes=(3,),
        ),
    }
    missing = examples - set(runners)
    assert not missing, f"examples in --help with no runner here: {sorted(missing)}"
    for example, runner in runners.items():
        if example not in examples:
            continue  # the help no longer cites it
        try:
            runner()
        except AssertionError as exc:
            raise AssertionError(f"the help's example {example!r} does not work: {exc}") from exc
    for path in re.findall(r"examples/[\w./-]+\.json", " ".join(examples)):
        assert (REPO / path).is_file(), path


def assert_ok(r: subprocess.CompletedProcess[str], codes: tuple[int, ...] = (0,)) -> None:
    assert r.returncode in codes, (r.returncode, r.stdout, r.stderr)
