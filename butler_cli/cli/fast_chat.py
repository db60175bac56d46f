"""The chat's command line read without typer, so `butler chat --model X` (plain `butler`'s and
`butler demo`'s options too) opens the chat on the fast entry: importing and building the typer
app made that start 1.14x the wall time of a bare prompt-toolkit prompt (issue 34).

Only a line this reader understands whole is read here: each option once (``-o`` as often as
wanted), ``--name VALUE`` or ``--name=VALUE`` or ``-x VALUE``, a value that does not start with
``-``, a round count that is plain digits of at least 1. Anything else — an unknown or misspelt
option, a missing or bad value, ``--help``, words, ``--``, an option given twice — is left to
the typer app, so every error a person sees is typer's own. ``-o``'s values are checked here,
by the same function and so with the same error as through typer, before the prompt.
tests/test_fast_chat.py checks that this table is the flags the commands declare, and that a
line read here gives the options typer gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from butler_cli.core.model_options import model_options

#: Each option of `butler chat` (and plain `butler`): its flag → (its parameter, its kind:
#: ``text``, ``count`` (a whole number of at least 1), ``switch`` (takes no value), ``pairs``
#: (``-o KEY VALUE`` or ``-o KEY=VALUE``, repeatable)).
CHAT: dict[str, tuple[str, str]] = {
    "--model": ("model", "text"),
    "-m": ("model", "text"),
    "--policy": ("policy", "text"),
    "-p": ("policy", "text"),
    "--max-rounds": ("max_rounds", "count"),
    "--system": ("system", "text"),
    "-s": ("system", "text"),
    "--template": ("template", "text"),
    "-t": ("template", "text"),
    "--profile": ("profile", "text"),
    "--policy-file": ("policy_file", "text"),
    "--base-url": ("base_url", "text"),
    "--no-stream": ("no_stream", "switch"),
    "--continue": ("continue_last", "switch"),
    "-c": ("continue_last", "switch"),
    "--conversation": ("conversation", "text"),
    "--option": ("model_options", "pairs"),
    "-o": ("model_options", "pairs"),
}
#: `butler demo`'s options (the demo's model is its own).
DEMO = {k: v for k, v in CHAT.items() if v[0] in ("policy", "profile", "policy_file")}


class FastStart(NamedTuple):
    """A chat start read from the command line: the run options given, by field name (what
    typer's command would hand ``options_from``), and what the chat carries on."""

    options: dict[str, str | int | bool | list[str]]
    continue_last: bool
    conversation: str | None
    demo: bool


def read(argv: Sequence[str]) -> FastStart | None:
    """The chat start ``argv`` asks for, or None when it is not a chat start this reader
    understands whole (the typer app then reads it)."""
    command = argv[0] if argv and not argv[0].startswith("-") else None
    if command not in (None, "chat", "demo"):
        return None
    table = DEMO if command == "demo" else CHAT
    given: dict[str, str | int | bool | list[str]] = {}
    pairs: list[str] = []
    rest = list(argv[1:] if command else argv)
    while rest:
        arg = rest.pop(0)
        name, eq, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        known = table.get(name)
        if known is None or known[0] in given:
            return None
        field, kind = known
        if kind == "pairs":  # as cli/commands.py's join_pairs joins them for typer
            pair = _pair(attached if eq else None, rest)
            if pair is None:
                return None
            pairs.append(pair)
            continue
        if kind == "switch":
            if eq:
                return None
            given[field] = True
            continue
        value = attached if eq else rest.pop(0) if rest else None
        if value is None or value.startswith("-"):
            return None
        if kind == "count":
            if not (value.isascii() and value.isdigit() and int(value) >= 1):
                return None
            given[field] = int(value)
        else:
            given[field] = value
    if pairs:
        model_options(pairs)  # a bad one: the usage error typer's command would raise
        given["model_options"] = pairs
    continue_last = given.pop("continue_last", False) is True
    conversation = given.pop("conversation", None)
    named = conversation if isinstance(conversation, str) else None
    return FastStart(given, continue_last, named, command == "demo")


def _pair(attached: str | None, rest: list[str]) -> str | None:
    """``-o``'s ``KEY=VALUE``: given joined (``--option=KEY=VALUE``, ``-o KEY=VALUE``) or as
    ``-o KEY VALUE`` (taken from ``rest``); None for anything else."""
    if attached is not None:
        pair = attached
    elif rest and "=" in rest[0]:
        pair = rest.pop(0)
    elif len(rest) >= 2:  # a key and its value (join_pairs joins only then)
        pair = f"{rest.pop(0)}={rest.pop(0)}"
    else:
        return None
    return None if pair.startswith("-") else pair
