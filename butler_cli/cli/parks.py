"""``butler pending`` and ``butler show``: read-only views of parked tasks."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from butler_cli.cli.completion import any_park_ids
from butler_cli.cli.options import Json


def pending(json_out: Json = False) -> None:
    """List parks awaiting a decision. A corrupt park file is named on stderr and skipped."""
    from butler_cli.app.config.home import home
    from butler_cli.app.parks.parks import waiting_parks
    from butler_cli.cli import render

    rows, problems = waiting_parks(home())
    for problem in problems:
        render.warn(f"skipped {problem.problem}")
    if json_out:
        render.print_json([r.to_dict() for r in rows])
    else:
        render.pending_table(sys.stdout.write, rows)


def show(
    park_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="Park id or a unique prefix.", autocompletion=any_park_ids
        ),
    ],
    json_out: Json = False,
) -> None:
    """Show one park in full: status, approval, calls, verdicts, decision, results, messages."""
    from butler_cli.app.parks.decisions import load_park
    from butler_cli.app.parks.parks import pending_approval
    from butler_cli.cli import render
    from butler_cli.cli.views import park_details

    state = load_park(park_id)
    if json_out:  # the exact arguments, as the park keeps them
        render.print_json(state.model_dump(mode="json"))
    else:
        park_details(render.out(), state, pending_approval(state))
