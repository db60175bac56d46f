"""The ``butler`` typer app (the entry point is ``butler_cli.cli.entry``); its commands are
named in ``butler_cli.cli.commands`` and imported only when run."""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.cli.commands import LazyGroup

HELP = """A personal butler in the terminal. Sensitive actions (changing, deleting, sending,
spending) wait for you: a task that needs one parks, and `butler resume ID` decides it.
Plain `butler` opens the chat; `butler demo` shows it offline.

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
        from butler_cli import __version__

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
        from butler_cli.cli.chat import chat

        chat()
