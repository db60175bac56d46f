"""Options shared by several commands, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.core.errors import UsageError

Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model as PROVIDER:TARGET or an [aliases] name, e.g. scripted:examples/plan.json. "
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
Output = Annotated[
    str | None,
    typer.Option(
        "--output",
        help="text (the default), json (one object per task when it ends) or stream-json (one "
        "event per line as things happen). See docs/output.md.",
        show_default=False,
        metavar="text|json|stream-json",
        autocompletion=lambda: ["text", "json", "stream-json"],
    ),
]
Files = Annotated[
    list[str] | None,
    typer.Option(
        "--file",
        "-f",
        help="Attach a text file as context for every task (repeatable; cut at 64 KiB).",
        show_default=False,
    ),
]
OUTPUT_FORMATS = ("text", "json", "stream-json")


def output_format(output: str | None, json_out: bool) -> str:
    """The output chosen with ``--output``, or ``--json`` (its alias for ``json``)."""
    if output is not None and output not in OUTPUT_FORMATS:
        raise UsageError(f"--output must be one of {', '.join(OUTPUT_FORMATS)}, not {output!r}")
    if json_out and output not in (None, "json"):
        raise UsageError(f"--json means --output json; it cannot go with --output {output}")
    return "json" if json_out else output or "text"


ContinueLast = Annotated[
    bool,
    typer.Option(
        "--continue",
        "-c",
        help="Carry on the last conversation of this folder (a chat's or a run's).",
    ),
]
Conversation = Annotated[
    str | None,
    typer.Option(
        "--conversation",
        metavar="ID",
        help="Carry on the conversation ID (see `butler log`).",
        show_default=False,
    ),
]
