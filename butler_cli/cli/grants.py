"""`butler grants …`: the approvals a person kept ("always allow this here")."""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.app.config.completions import quietly
from butler_cli.app.config.home import home
from butler_cli.app.parks.approvals import list_kept
from butler_cli.app.parks.approvals import revoke as revoke_kept
from butler_cli.cli import render
from butler_cli.cli.options import Json
from butler_cli.ui.text import visible

app = typer.Typer(
    name="grants",
    help='Approvals you kept ("always allow this here"): list them, take one back. Each lets '
    "one tool run without asking, in one folder only; they live in approvals.toml in the "
    "butler's home, a file you may also edit.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def kept_numbers(typed: str) -> list[str]:
    """The kept approvals' numbers that start with what is typed (for shell completion)."""
    return [n for n in (str(k.number) for k in list_kept(home())) if n.startswith(typed)]


@app.command("list")
def list_(json_out: Json = False) -> None:
    """Every kept approval, numbered: the tool, the folder, and exactly what it covers."""
    kept = list_kept(home())
    if json_out:
        render.print_json(
            [
                {
                    "number": k.number,
                    "tool": k.grant.tool,
                    "folder": k.folder,
                    "arguments": k.grant.exact,
                    "patterns": dict(k.grant.patterns) or None,
                    "granted_at": k.granted_at,
                    "sandboxed": k.sandboxed,
                }
                for k in kept
            ]
        )
        return
    if not kept:
        print("No kept approvals.")
    for k in kept:
        print(visible(f"{k.number}. {k.grant.describe()}"))
        kept_at = f" · kept {k.granted_at}" if k.granted_at else ""
        only = " · only while sandboxed" if k.sandboxed else ""
        print(visible(f"   in {k.folder}{kept_at}{only}"))
    # a session grant lives in its chat's memory alone: another process cannot list it
    print("Session grants (s/w in a chat) last as long as that chat; /grants there lists them")
    print("beside the approvals kept for its folder.")


@app.command("revoke")
def revoke(
    number: Annotated[
        int,
        typer.Argument(
            help="The approval's number in `butler grants list`.",
            autocompletion=quietly(kept_numbers),
        ),
    ],
) -> None:
    """Take back one kept approval: the next such call asks again."""
    gone = revoke_kept(home(), number)
    print(visible(f"Revoked {number}: {gone.grant.describe()} in {gone.folder}"))
