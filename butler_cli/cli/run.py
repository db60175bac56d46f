"""``butler run``: scripted, unattended batches. Never reads a decision from anywhere."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from butler_cli.cli.options import (
    BaseUrl,
    Json,
    MaxRounds,
    Model,
    ModelOption,
    Policy,
    PolicyFile,
    Profile,
    System,
    YesSafe,
    model_options,
)


def run(
    tasks: Annotated[
        list[str] | None,
        typer.Argument(
            help="Tasks, each its own conversation (quote a task with spaces).", show_default=False
        ),
    ] = None,
    tasks_file: Annotated[
        str | None,
        typer.Option(
            "--tasks-file",
            help="Read tasks from a file (or - for stdin), one a line; "
            "blank lines and lines starting with # are skipped.",
            show_default=False,
        ),
    ] = None,
    model: Model = None,
    policy: Policy = None,
    max_rounds: MaxRounds = None,
    system: System = None,
    yes_safe: YesSafe = False,
    profile: Profile = None,
    policy_file: PolicyFile = None,
    base_url: BaseUrl = None,
    option: ModelOption = None,
    json_out: Json = False,
) -> None:
    """Run tasks unattended. A task that needs approval parks (the file is written first),
    prints its id and `butler resume ID`, and the batch goes on with the next task."""
    from butler_cli.app.butler import run_tasks
    from butler_cli.app.options import RunOptions
    from butler_cli.app.report import exit_code_for
    from butler_cli.cli import render
    from butler_cli.core.errors import UsageError
    from butler_cli.ui.progress import Progress

    all_tasks = list(tasks or []) + (_read_tasks(tasks_file) if tasks_file else [])
    if not all_tasks:
        raise UsageError('no task given: butler run "TASK" (or --tasks-file PATH)')
    opts = RunOptions(model, policy, system, max_rounds, yes_safe, profile, policy_file, base_url)
    opts = replace(opts, model_options=model_options(option))
    console = render.err()

    def observer_for(i: int, task: str) -> Progress | None:
        if json_out:
            return None
        render.task_header(console, i, len(all_tasks), task)
        return Progress(console)

    reports = []
    for rep in run_tasks(all_tasks, opts, observer_for):
        render.report(rep, json_out)
        reports.append(rep)
    raise typer.Exit(int(exit_code_for(reports)))


def _read_tasks(source: str) -> list[str]:
    from butler_cli.core.errors import UsageError

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read tasks file {source}: {exc}") from exc
    return [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]
