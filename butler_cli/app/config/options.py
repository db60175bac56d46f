"""What a person chose on the command line, before anything is built (cheap to import)."""

from __future__ import annotations

from dataclasses import dataclass

from butler_cli.app.config.config_file import MODEL_ENV as MODEL_ENV
from butler_cli.providers.options import parse_options


@dataclass(frozen=True)
class RunOptions:
    """What a person chose on the command line; None means "not given". What a command then
    runs with is :func:`butler_cli.app.config.config.resolve_options` of these."""

    model: str | None = None
    policy: str | None = None
    system: str | None = None
    max_rounds: int | None = None
    yes_safe: bool = False
    profile: str | None = None
    policy_file: str | None = None
    base_url: str | None = None
    #: Model options from `-o KEY=VALUE`, checked (None: none given).
    model_options: dict[str, int | float] | None = None


def check_model_options(pairs: list[tuple[str, str]]) -> dict[str, int | float]:
    """The `-o KEY VALUE` pairs checked — a known name, a number in range — so a typo is a
    usage error before anything runs."""
    return parse_options(pairs)
