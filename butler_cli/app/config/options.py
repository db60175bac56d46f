"""What a person chose on the command line, before anything is built (cheap to import).

:class:`RunOptions` is the one shape options have from the flag to the park: every option is
declared once, as one of its fields, with its flag (:func:`flag`: names, help, whether a park
records it, whether the chat takes it). The commands' flags are made from these declarations
(:func:`butler_cli.cli.options.run_options`), ``run``, ``resume`` and the chat build it by
keyword only, and the one resolver (:func:`butler_cli.app.config.config.resolve_options`) fills
what was not given — a setting's way for a field that is a row of
:mod:`butler_cli.app.config.settings` (``resolved``), the park's record for a recorded one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from butler_cli.app.config.config_file import MODEL_ENV as MODEL_ENV
from butler_cli.core.model_options import model_options


@dataclass(frozen=True)
class Flag:
    """How an option of :class:`RunOptions` is given on the command line."""

    names: tuple[str, ...]
    help: str
    #: A park records it, and a resume goes on with the recorded value unless a flag gives one.
    recorded: bool = False
    #: The chat takes it (`--yes-safe` is for unattended runs: a person is present there).
    chat: bool = True
    #: A whole number must be at least this.
    min: int | None = None
    #: Given on the command line as a list of KEY=VALUE texts (``-o``), checked into a dict.
    pairs: bool = False


def flag(*names: str, help: str, default: Any = None, **how: Any) -> Any:
    """The declaration of one option: a :class:`RunOptions` field with its :class:`Flag`."""
    return field(default=default, metadata={"flag": Flag(names, help, **how)})


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What a person chose on the command line; None means "not given". What a command then
    runs with is :func:`butler_cli.app.config.config.resolve_options` of these. Built by
    keyword only (a test reads every call): adding an option is one field here plus its use.
    """

    model: str | None = flag(
        "--model",
        "-m",
        help="Model as PROVIDER:TARGET or an [aliases] name, e.g. openai:gpt-4o-mini "
        "(`butler models` lists the providers). Default: $BUTLER_MODEL, else the config's "
        "model (butler config set model SPEC).",
        recorded=True,
    )
    policy: str | None = flag(
        "--policy",
        "-p",
        help="Risk policy: an installed name (ask, readonly), module:attr or file.py:attr. "
        "Default: ask.",
        recorded=True,
    )
    max_rounds: int | None = flag(
        "--max-rounds",
        help="Tool rounds allowed before the task stops. Default: 8.",
        recorded=True,
        min=1,
    )
    system: str | None = flag("--system", "-s", help="System prompt for the model.", recorded=True)
    template: str | None = flag(
        "--template",
        "-t",
        help="A saved system prompt: NAME.md in the templates folder (`butler templates list`).",
    )
    yes_safe: bool = flag(
        "--yes-safe",
        help="Let governed calls the policy allows run unattended. Without it they park too. "
        "Never approves anything the policy asks a person about.",
        default=False,
        chat=False,
    )
    profile: str | None = flag(
        "--profile",
        help="Memory profile: separate memories per profile. Default: default.",
        recorded=True,
    )
    policy_file: str | None = flag(
        "--policy-file",
        help="Rule file for policies that read one (tiered). Default: $BUTLER_HOME/policy.toml.",
        recorded=True,
    )
    base_url: str | None = flag(
        "--base-url",
        help="Server for the model's provider, e.g. http://127.0.0.1:8080/v1. Recorded in parks.",
        recorded=True,
    )
    no_stream: bool = flag(
        "--no-stream",
        help="Ask the model for every answer whole, never streamed (for a server whose streams "
        "go wrong). Default: the config's stream (true). Recorded in parks.",
        default=False,
        recorded=True,
    )
    #: Model options from `-o KEY=VALUE`, checked (None: none given).
    model_options: dict[str, int | float] | None = flag(
        "--option",
        "-o",
        help="A model option, -o KEY VALUE (or KEY=VALUE), repeatable: temperature, top_p, "
        "top_k, max_tokens, seed (checked; recorded in parks, so a resume uses the same).",
        recorded=True,
        pairs=True,
    )


def flag_of(name: str) -> Flag:
    """The flag an option of :class:`RunOptions` is given with."""
    found: Flag = next(f.metadata["flag"] for f in fields(RunOptions) if f.name == name)
    return found


def recorded_options() -> tuple[str, ...]:
    """The options a park records (a resume goes on with them unless a flag gives another)."""
    return tuple(f.name for f in fields(RunOptions) if f.metadata["flag"].recorded)


def options_from(given: dict[str, Any]) -> RunOptions:
    """The options a command was given, by field name (as its flags parsed them): ``-o``'s
    KEY=VALUE texts checked into model options. The one place RunOptions is made from a
    mapping (tests/test_options_typed.py)."""
    for name, value in given.items():
        if flag_of(name).pairs:
            given[name] = model_options(value)
    return RunOptions(**given)
