"""Options shared by several commands, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model as PROVIDER:TARGET, e.g. scripted:examples/tidy-notes.json. "
        "Default: $BUTLER_MODEL.",
        show_default=False,
    ),
]
Policy = Annotated[
    str | None,
    typer.Option(
        "--policy",
        "-p",
        help="Risk policy: an installed name (ask, readonly), module:attr or file.py:attr. "
        "Default: ask.",
        show_default=False,
    ),
]
MaxRounds = Annotated[
    int | None,
    typer.Option(
        "--max-rounds", min=1, help="Tool rounds allowed before the task stops. Default: 8."
    ),
]
System = Annotated[
    str | None, typer.Option("--system", help="System prompt for the model.", show_default=False)
]
YesSafe = Annotated[
    bool,
    typer.Option(
        "--yes-safe",
        help="Let governed calls the policy allows run unattended. Without it they park too. "
        "Never approves anything the policy asks a person about.",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of text.")]
PolicyFile = Annotated[
    str | None,
    typer.Option(
        "--policy-file",
        help="Rule file for policies that read one (tiered). Default: $BUTLER_HOME/policy.toml.",
        show_default=False,
    ),
]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="Server for the model's provider, e.g. http://127.0.0.1:8080/v1. Recorded in parks.",
        show_default=False,
    ),
]
Profile = Annotated[
    str | None,
    typer.Option(
        "--profile",
        help="Memory profile: separate memories per profile. Default: default.",
        show_default=False,
    ),
]
