"""Model options (`-o KEY VALUE`) checked: a known name, a number in range, so a typo is a
usage error before anything runs. Pure: the command line's fast entry checks them before the
chat's first prompt (cli/fast_chat.py), the provider table which provider takes which
(:mod:`butler_cli.providers.options`)."""

from __future__ import annotations

from collections.abc import Iterable

from butler_cli.core.errors import UsageError

OptionValue = int | float
#: name → (type, lowest, highest)
OPTIONS: dict[str, tuple[type[int] | type[float], float, float]] = {
    "temperature": (float, 0.0, 2.0),
    "top_p": (float, 0.0, 1.0),
    "top_k": (int, 1, 1_000_000),
    "max_tokens": (int, 1, 1_000_000),
    "seed": (int, 0, 2**63 - 1),
}


def parse_options(pairs: Iterable[tuple[str, str]]) -> dict[str, OptionValue]:
    """``[("temperature", "0.2")]`` → ``{"temperature": 0.2}``; a bad one is a usage error."""
    out: dict[str, OptionValue] = {}
    for key, raw in pairs:
        spec = OPTIONS.get(key)
        if spec is None:
            raise UsageError(f"unknown model option '{key}'; known: {', '.join(OPTIONS)}")
        kind, low, high = spec
        try:
            value: OptionValue = int(raw) if kind is int else float(raw)
        except ValueError:
            word = "a whole number" if kind is int else "a number"
            raise UsageError(f"model option {key} must be {word}, not {raw!r}") from None
        if not low <= value <= high or value != value:  # NaN compares false to everything
            raise UsageError(f"model option {key} must be between {low:g} and {high:g}")
        out[key] = value
    return out


def model_options(given: list[str] | None) -> dict[str, OptionValue] | None:
    """``["temperature=0.2"]`` → ``{"temperature": 0.2}``, checked; None when none given."""
    if not given:
        return None
    pairs = []
    for item in given:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"-o takes KEY VALUE (e.g. -o temperature 0.2), not {item!r}")
        pairs.append((key.strip(), value.strip()))
    return parse_options(pairs)
