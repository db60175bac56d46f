"""Shell completion: ``butler completion SHELL`` prints the script, and the values completed for
arguments that name things on disk (park ids).

The scripts are typer's: the shell runs ``butler`` again with ``_BUTLER_COMPLETE`` set, and the
entry point sends that to the typer app, never to the chat.
"""

from __future__ import annotations

from typing import Annotated

import typer
from typer._completion_shared import get_completion_script

from butler_cli.app.config.completions import quietly
from butler_cli.app.config.home import park_ids as ids
from butler_cli.cli.entry import COMPLETE_VAR
from butler_cli.core.errors import UsageError

SHELLS = ("bash", "zsh", "fish")


def completion(
    shell: Annotated[
        str,
        typer.Argument(
            metavar="SHELL",
            help="bash, zsh or fish.",
            autocompletion=lambda: list(SHELLS),
            show_default=False,
        ),
    ],
) -> None:
    """Print the completion script for SHELL. Load it now with
    `eval "$(butler completion bash)"` (zsh alike; fish: `butler completion fish | source`),
    or let `butler --install-completion` add it to your shell's start-up file."""
    if shell not in SHELLS:
        raise UsageError(f"no completion for {shell!r}: choose one of {', '.join(SHELLS)}")
    typer.echo(get_completion_script(prog_name="butler", complete_var=COMPLETE_VAR, shell=shell))


@quietly
def park_ids(incomplete: str) -> list[str]:
    """Ids of parks awaiting a decision that start with what is typed."""
    return ids(incomplete, done=False)


@quietly
def any_park_ids(incomplete: str) -> list[str]:
    """Ids of every park, decided ones too (for ``butler show``)."""
    return ids(incomplete, done=True)
