"""`-o KEY VALUE`: the model options of `chat`, `run` and `resume`, declared and checked.

The command table parses the pairs (:class:`butler_cli.cli.commands.PairedOptions` joins
``-o KEY VALUE`` into ``-o KEY=VALUE``); this module declares the option and turns what was
given into checked model options. Only the commands that take ``-o`` import it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from butler_cli.app.config.options import check_model_options
from butler_cli.core.errors import UsageError

ModelOption = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        help="A model option, -o KEY VALUE (or KEY=VALUE), repeatable: temperature, top_p, "
        "top_k, max_tokens, seed (checked; recorded in parks, so a resume uses the same).",
        show_default=False,
    ),
]


def model_options(given: list[str] | None) -> dict[str, int | float] | None:
    """``["temperature=0.2"]`` → ``{"temperature": 0.2}``, checked; None when none given."""
    if not given:
        return None
    pairs = []
    for item in given:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"-o takes KEY VALUE (e.g. -o temperature 0.2), not {item!r}")
        pairs.append((key.strip(), value.strip()))
    return check_model_options(pairs)
