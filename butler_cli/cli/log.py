"""`butler log`: the saved conversations — list (latest first), search, show one.

A reading command: on a fresh home it creates nothing. No rich: plain lines, every word the
model chose shown through the neutraliser (:func:`butler_cli.ui.text.visible`).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from butler_cli.app.chat.conversations import load, recent
from butler_cli.app.config.completions import conversation_ids, quietly
from butler_cli.cli.options import Json
from butler_cli.core.errors import UsageError
from butler_cli.ui.conversations import conversation_lines, summary_lines

app = typer.Typer(
    name="log",
    help="Saved conversations (every chat and every `run` task): list, search, show one.",
    invoke_without_command=True,
    rich_markup_mode=None,
)


@app.callback()
def log(
    ctx: typer.Context,
    number: Annotated[
        int, typer.Option("-n", "--number", help="How many to list, latest first.")
    ] = 20,
    query: Annotated[
        str | None,
        typer.Option(
            "-q",
            "--query",
            help="Only conversations holding every word of TEXT (Chinese and Japanese too).",
            show_default=False,
        ),
    ] = None,
    json_out: Json = False,
) -> None:
    """List saved conversations, latest first; `butler log show ID` prints one.
    `butler chat -c` carries on this folder's last one, `--conversation ID` any."""
    if ctx.invoked_subcommand is not None:
        return

    if number < 1:
        raise UsageError("-n must be at least 1")
    found = recent(number, query)
    if json_out:
        _print_json([s.to_json() for s in found])
    elif found:
        sys.stdout.write("\n".join(summary_lines(found)) + "\n")
    else:
        sys.stdout.write("No conversations match.\n" if query else "No conversations yet.\n")


@app.command("show")
def show(
    conversation_id: Annotated[
        str,
        typer.Argument(
            metavar="ID",
            help="Conversation id (c-…) or a unique prefix.",
            autocompletion=quietly(conversation_ids),
        ),
    ],
    json_out: Json = False,
) -> None:
    """Print one conversation whole: what was said, the tools called, its parks."""
    record = load(conversation_id)
    if json_out:
        _print_json(
            {
                **record.summary.to_json(),
                "parks": [p.__dict__ for p in record.parks],
                "messages": record.messages,
            }
        )
        return

    sys.stdout.write("\n".join(conversation_lines(record)) + "\n")


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
