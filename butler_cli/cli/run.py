"""``butler run``: scripted, unattended batches. Never reads a decision from anywhere."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from butler_cli.app.chat.piped import may_be_piped
from butler_cli.app.config.options import RunOptions
from butler_cli.app.run.report import exit_code_for
from butler_cli.app.run.tasks import run_tasks
from butler_cli.cli import render
from butler_cli.cli.options import (
    ContinueLast,
    Conversation,
    Files,
    Json,
    Output,
    output_format,
    run_options,
)
from butler_cli.cli.stream import Printer
from butler_cli.core.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from butler_cli.app.chat.attach import Attachment


@run_options()
def run(
    tasks: Annotated[
        list[str] | None,
        typer.Argument(
            help="The task. Bare words are one task (butler run the tests); several quoted "
            'tasks are one each (butler run "plan my week" "tidy notes"), as is every word '
            "with --each. A lone - reads tasks from standard input, one a line.",
            show_default=False,
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
    each: Annotated[
        bool,
        typer.Option("--each", help="Run every word given as its own task."),
    ] = False,
    files: Files = None,
    json_out: Json = False,
    output: Output = None,
    continue_last: ContinueLast = False,
    conversation: Conversation = None,
    *,
    opts: RunOptions,
) -> None:
    """Run tasks unattended. A task that needs approval parks (the file is written first),
    prints its id and `butler resume ID`, and the batch goes on with the next task.
    `butler run the tests` is one task; `--each`, several quoted tasks or a tasks file make
    several.

    Piped standard input (`cat notes.md | butler run "summarize"`) and every --file are given
    to each task as context, each cut at 64 KiB with a note saying so. `butler "TASK"` is
    `butler run "TASK"`, and so are plain words that are no command: see `butler --help`."""
    started = time.perf_counter()
    fmt = output_format(output, json_out)
    all_tasks = _gather_tasks(_one_or_each(list(tasks or []), each), tasks_file)
    if not all_tasks:
        raise UsageError('no task given: butler run "TASK" (or --tasks-file PATH)')
    if not all(task.strip() for task in all_tasks):  # `butler ""`: a model call for nothing
        raise UsageError('a task is empty: say what to do, butler "TASK"')
    _check_shape(all_tasks, continue_last or conversation is not None)
    attachments = _attachments(files or [], tasks_file == "-" or "-" in (tasks or []))
    for item in attachments:
        if item.cut:
            name = "standard input" if item.source == "stdin" else item.source
            render.warn(f"{name} {item.cut_note()}; the model sees only the first part")
    printer = Printer(fmt, started, len(all_tasks), _described(attachments))
    prompt, images = None, []
    if attachments:
        from butler_cli.app.chat.attach import image_blocks, prompter

        prompt, images = prompter(attachments), image_blocks(attachments)
    reports = []
    continuing = (continue_last or conversation is not None, conversation)
    try:
        for rep in run_tasks(all_tasks, opts, printer.observer_for, prompt, continuing, images):
            printer.report(rep)
            reports.append(rep)
    except KeyboardInterrupt:
        # Caught here, not left to typer (which turns it into a bare exit 130): the task's
        # conversation is marked interrupted by now, and the ending is said like any other.
        printer.interrupted()
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    raise typer.Exit(int(exit_code_for(reports)))


def _one_or_each(given: list[str], each: bool) -> list[str]:
    """The tasks the words on the line are: bare words are one task (`butler run the tests`
    would otherwise spend a model call on "the" and one on "tests"); each of several quoted
    tasks (each holding a space) is its own, as is every word under ``--each``, and a lone
    ``-`` keeps its place. Bare words beside quoted tasks are refused: which was meant?"""
    if each or len(given) < 2 or "-" in given:
        return given
    quoted = [word for word in given if any(c.isspace() for c in word.strip())]
    if not quoted:
        return [" ".join(given)]
    if len(quoted) == len(given):
        return given
    bare = next(word for word in given if word not in quoted)
    raise UsageError(
        f"{bare!r} is a bare word beside quoted tasks: quote the whole task "
        f'(butler run "{" ".join(given)}"), or pass --each to run each as its own task'
    )


def _check_shape(tasks: list[str], continuing: bool) -> None:
    """A continued conversation takes one turn at a time."""
    if len(tasks) > 1 and continuing:
        raise UsageError("a conversation is carried on one task at a time: give one task")


def _attachments(files: list[str], stdin_is_tasks: bool) -> list[Attachment]:
    """Piped standard input (unless it holds the tasks), then each --file; the attaching code
    loads only when there is something to attach."""
    stdin = sys.stdin.buffer if sys.stdin else None
    piped = not stdin_is_tasks and may_be_piped(stdin)
    if not files and not piped:
        return []
    from butler_cli.app.chat.attach import file_attachment, piped_stdin

    attachments = [file_attachment(path) for path in files]
    found = piped_stdin(stdin) if piped else None
    if found is not None:
        attachments.insert(0, found)
    return attachments


def _read_tasks(source: str) -> list[str]:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read tasks file {source}: {exc}") from exc
    return [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]


def _gather_tasks(given: list[str], tasks_file: str | None) -> list[str]:
    """The tasks named, in order; a lone ``-`` stands for the tasks on standard input."""
    dashes = given.count("-")
    if dashes and (dashes > 1 or tasks_file == "-"):
        raise UsageError("standard input can be read only once: give - a single time")
    if dashes and (sys.stdin is None or sys.stdin.isatty()):
        raise UsageError(
            "- reads tasks from standard input, which is a terminal here: pipe tasks in "
            '(printf "task\\n" | butler run -) or quote the task'
        )
    found: list[str] = []
    for task in given:
        found.extend(_read_tasks("-") if task == "-" else [task])
    return found + (_read_tasks(tasks_file) if tasks_file else [])


def _described(attachments: list[Attachment]) -> list[dict[str, object]]:
    return [
        {"source": a.source, "bytes": a.size, "kept": a.kept, "cut": a.cut} for a in attachments
    ]
