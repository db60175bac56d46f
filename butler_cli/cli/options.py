"""Options shared by several commands, declared once.

The options a run takes are declared once, as the fields of
:class:`~butler_cli.app.config.options.RunOptions`; :func:`run_options` makes a command's flags
from them and hands the command one ``opts`` (never a positional list), and the aliases below
(``Model``, ``Policy``…) are the same declarations for the commands that take one or two.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import Field, fields
from typing import Annotated, Any, TypeVar, get_type_hints

import typer

from butler_cli.app.config.completions import conversation_ids, model_specs, quietly
from butler_cli.app.config.options import RunOptions, flag_of, options_from
from butler_cli.core.errors import UsageError

Command = TypeVar("Command", bound=Callable[..., None])
#: What the shell completes for an option of RunOptions (none named: typer's own, files).
_COMPLETES: dict[str, Callable[[str], list[str]]] = {"model": quietly(model_specs)}


def typer_option(name: str) -> Any:
    """The typer option of the option ``name`` of RunOptions: its flag's names and help."""
    found = flag_of(name)
    return typer.Option(
        *found.names,
        help=found.help,
        min=found.min,
        show_default=False,
        autocompletion=_COMPLETES.get(name),
    )


def option_type(name: str) -> Any:
    """The typer parameter type of the option ``name`` of RunOptions: its type as declared
    (``-o``: a list of KEY=VALUE texts, checked into a dict by ``options_from``)."""
    kind: Any = list[str] | None if flag_of(name).pairs else get_type_hints(RunOptions)[name]
    return Annotated[kind, typer_option(name)]


def _taken(field: Field[Any], names: tuple[str, ...], chat: bool) -> bool:
    if names:
        return field.name in names
    return field.metadata["flag"].chat or not chat


def run_options(*names: str, chat: bool = False) -> Callable[[Command], Command]:
    """The command takes the options ``names`` of RunOptions as flags (every one when none is
    named; ``chat``: every one the chat takes), and gets them as one keyword argument,
    ``opts: RunOptions``. A new option is a new field of RunOptions: it reaches every command
    that takes them all, by name."""

    def wrap(command: Command) -> Command:
        chosen = [f for f in fields(RunOptions) if _taken(f, names, chat)]
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "opts"]
        kw = inspect.Parameter.KEYWORD_ONLY
        added = [
            inspect.Parameter(f.name, kw, default=f.default, annotation=option_type(f.name))
            for f in chosen
        ]

        @functools.wraps(command)
        def with_options(**given: Any) -> None:
            opts = options_from({f.name: given.pop(f.name) for f in chosen})
            command(**given, opts=opts)

        params = [*own, *added]
        # typer reads the parameters from the signature and the types from the annotations
        with_options.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        with_options.__annotations__ = {p.name: p.annotation for p in params}
        return with_options  # type: ignore[return-value]

    return wrap


#: The same declarations, for the commands that take one or two of them.
Model = Annotated[str | None, typer_option("model")]
Policy = Annotated[str | None, typer_option("policy")]
MaxRounds = Annotated[int | None, typer_option("max_rounds")]
System = Annotated[str | None, typer_option("system")]
PolicyFile = Annotated[str | None, typer_option("policy_file")]
Profile = Annotated[str | None, typer_option("profile")]
BaseUrl = Annotated[str | None, typer_option("base_url")]

Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of text.")]
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
        autocompletion=quietly(conversation_ids),
    ),
]
