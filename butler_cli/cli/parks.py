"""``butler pending``: the parks awaiting a decision, in plain text or JSON (no rich, no park
models: ``butler show`` is :mod:`butler_cli.cli.show`)."""

from __future__ import annotations

import sys

from butler_cli.app.config.home import home
from butler_cli.app.parks.parks import waiting_parks
from butler_cli.cli import render
from butler_cli.cli.options import Json
from butler_cli.ui.console import plain_writer


def pending(json_out: Json = False) -> None:
    """List parks awaiting a decision. A corrupt park file is named on stderr and skipped."""
    rows, problems = waiting_parks(home())
    for problem in problems:
        render.warn(f"skipped {problem.problem}")
    if json_out:
        render.print_json([r.to_dict() for r in rows])
    else:
        render.pending_table(plain_writer(sys.stdout), rows)
