"""The ``butler`` typer app (the entry point is ``butler_cli.cli.entry``); its commands are
named in ``butler_cli.cli.commands`` and imported only when run."""

from __future__ import annotations

import sys
from typing import Annotated

import click
import typer

from butler_cli import __version__
from butler_cli.cli.commands import COMMANDS, LazyGroup, load
from butler_cli.core.errors import ExitCode

HELP = """A personal butler in the terminal. Sensitive actions (changing, deleting, sending,
spending) wait for you: a task that needs one parks, and `butler resume ID` decides it.
Plain `butler` opens the chat; `butler demo` shows it offline.

Plain English is a task: words that are no command run as one task, as `butler "…"` would
(`butler what time is it --model fast`), with butler's options anywhere on the line. A command
keeps its name while the words after it fit it (`butler log`, `butler show ID`; `butler show
me the plan` is a task). One word that is a near miss of a command (`butler logs`) gets "Did
you mean" and runs nothing. `butler run the tests` is one task; `--each` runs each word as
its own task.

Exit codes: 0 done · 1 a task failed · 2 usage or config error (nothing ran) · 3 a task
parked · 4 a task hit the round limit · 5 a park cannot be resumed."""

#: The commands are in :data:`butler_cli.cli.commands.COMMANDS`, loaded when run.
app = typer.Typer(
    name="butler",
    cls=LazyGroup,
    help=HELP,
    invoke_without_command=True,
    add_completion=True,  # --install-completion, --show-completion
    pretty_exceptions_enable=False,  # tracebacks with locals can print API keys
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"butler {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Plain `butler` opens the chat."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(load("chat", COMMANDS["chat"]))  # through the table, as `butler chat` is


def run_app(as_json: bool, started: float) -> None:
    """Run the app; with ``as_json``, click's own usage errors (an unknown option, a bad value)
    become the same JSON error object as the butler's."""
    if not as_json:
        app()
        return
    try:
        code = app(standalone_mode=False)
    except click.ClickException as exc:
        from butler_cli.cli.failure import json_error

        json_error("usage", exc.format_message(), exc.exit_code, started)
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        print("butler: aborted", file=sys.stderr)
        sys.exit(ExitCode.FAILED)
    sys.exit(code if isinstance(code, int) else 0)  # a command's own ExitCode, else OK
