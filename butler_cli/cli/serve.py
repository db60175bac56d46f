"""`butler serve`: the scheduler and the approval inbox, in one long-running process."""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.app.config.home import home as butler_home
from butler_cli.serve.server import serve as run_server
from butler_cli.ui.text import visible


def serve(
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")
    ] = 8765,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on. Default: this machine only.")
    ] = "127.0.0.1",
    expose: Annotated[
        bool,
        typer.Option(
            "--expose",
            help="Allow a non-loopback --host: the inbox (every parked action, approve and "
            "deny) becomes reachable from other machines, over plain HTTP, with the token.",
        ),
    ] = False,
    no_scheduler: Annotated[
        bool, typer.Option("--no-scheduler", help="Serve the inbox only; run no schedules.")
    ] = False,
) -> None:
    """Run the scheduler and the inbox page until Ctrl-C or SIGTERM. Prints the inbox's URL,
    which holds a fresh random token: every request without it is refused."""

    def say(line: str) -> None:
        print(visible(line), flush=True)  # the one step: masked, then neutralised

    run_server(butler_home(), host, port, expose=expose, scheduler=not no_scheduler, say=say)
