"""The ``butler`` typer app and its commands (the entry point is ``butler_cli.cli.entry``)."""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.cli import (
    chat,
    completion,
    config,
    doctor,
    log,
    mcp,
    memory,
    parks,
    policy,
    resume,
    run,
    tools,
)
from butler_cli.cli import keys as keys_cmd
from butler_cli.cli import models as models_cmd
from butler_cli.cli import schedule as schedule_cmd
from butler_cli.cli import serve as serve_cmd
from butler_cli.cli.option_pairs import PairedOptions

HELP = """A personal butler in the terminal. Sensitive actions (changing, deleting, sending,
spending) wait for you: a task that needs one parks, and `butler resume ID` decides it.
Plain `butler` opens the chat; `butler demo` shows it offline.

Exit codes: 0 done · 1 a task failed · 2 usage or config error (nothing ran) · 3 a task
parked · 4 a task hit the round limit · 5 a park cannot be resumed."""

app = typer.Typer(
    name="butler",
    help=HELP,
    invoke_without_command=True,
    add_completion=True,  # --install-completion, --show-completion
    pretty_exceptions_enable=False,  # tracebacks with locals can print API keys
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command("chat", cls=PairedOptions)(chat.chat)
app.command("demo")(chat.demo)
app.command("run", cls=PairedOptions)(run.run)
app.command("resume", cls=PairedOptions)(resume.resume)
app.command("pending")(parks.pending)
app.command("show")(parks.show)
app.command("doctor")(doctor.doctor)
app.command("completion")(completion.completion)
app.command("serve")(serve_cmd.serve)
app.add_typer(log.app, name="log")
app.add_typer(memory.app, name="memory")
app.add_typer(policy.app, name="policy")
app.add_typer(config.app, name="config")
app.add_typer(mcp.app, name="mcp")
app.add_typer(tools.app, name="tools")
app.add_typer(schedule_cmd.app, name="schedule")
app.add_typer(keys_cmd.app, name="keys")
app.command("models")(models_cmd.models)


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
        chat.chat()
